/** The `labelSelector` and `fieldSelector` of a list, watch or deletecollection, as kube-apiserver parses them. */
import { badRequest } from "../../k8s/errors.ts";
import { type KindDefinition } from "../../k8s/kind.ts";
import { matches, parseSelector, SelectorParseError } from "../../k8s/labels.ts";
import { FieldSelectorError, matchesFields, parseFieldSelector, type FieldRequirement } from "../../k8s/fields.ts";
import { type KubeObject } from "../../k8s/meta.ts";
import { type LabelIndexRequirement } from "../../store/store.ts";
import { type Ctx } from "./target.ts";

/**
 * The requirement of a parsed label selector that the label index answers (src/store/d1/objects.ts
 * `listPage`): its first `=`, `==` or `in` requirement (a set of values: the most selective kind),
 * else its first `exists`; undefined when it has none (only `!=`, `notin`, `!key`: a scan).
 */
function indexRequirement(sel: ReturnType<typeof parseSelector>): LabelIndexRequirement | undefined {
  const exact = sel.requirements.find((r) => r.operator === "=" || r.operator === "==" || r.operator === "in");
  if (exact) return { key: exact.key, values: [...exact.values] };
  const exists = sel.requirements.find((r) => r.operator === "exists");
  return exists ? { key: exists.key } : undefined;
}

/** The fields of `obj` a field selector of kind `def` may name (`KindDefinition.fieldSelectors`; else metadata.name and metadata.namespace). */
function selectableFields(def: KindDefinition, obj: KubeObject): Record<string, string> {
  return def.fieldSelectors ? def.fieldSelectors(obj) : { "metadata.name": obj.metadata.name, "metadata.namespace": obj.metadata.namespace ?? "" };
}

/** The field selector names kind `def` supports, found from an empty object of it. */
function supportedFields(def: KindDefinition): Set<string> {
  return new Set(Object.keys(selectableFields(def, { apiVersion: "", kind: "", metadata: { name: "", uid: "", resourceVersion: "", creationTimestamp: "" } })));
}

/**
 * The request's `labelSelector` and `fieldSelector` (the kind's selectable fields, by default
 * metadata.name and metadata.namespace): the filter a listed object (in the form of kind `def`)
 * must pass, and the label requirement the label index reads rows by.
 * @throws ApiError 400 for a selector that does not parse, or an unsupported field
 */
export function selectorOf(c: Ctx, def: KindDefinition): { filter: (obj: KubeObject) => boolean; index?: LabelIndexRequirement } {
  const ls = c.req.query("labelSelector");
  const fs = c.req.query("fieldSelector");
  let labelSel: ReturnType<typeof parseSelector> | null = null;
  if (ls) {
    try {
      labelSel = parseSelector(ls);
    } catch (e) {
      if (e instanceof SelectorParseError) throw badRequest(`unable to parse requirement: ${e.message}`, "labelSelector");
      throw e;
    }
  }
  let fields: FieldRequirement[] = [];
  if (fs) {
    try {
      fields = parseFieldSelector(fs);
    } catch (e) {
      if (e instanceof FieldSelectorError) throw badRequest(e.message, "fieldSelector");
      throw e;
    }
    const supported = supportedFields(def);
    for (const r of fields) if (!supported.has(r.field)) throw badRequest(`field label not supported: ${r.field}`, "fieldSelector");
  }
  const filter = (obj: KubeObject) => {
    if (labelSel && !matches(labelSel, obj.metadata.labels ?? {})) return false;
    if (fields.length === 0) return true;
    const values = selectableFields(def, obj);
    return matchesFields(fields, (f) => values[f] ?? "");
  };
  return { filter, index: labelSel ? indexRequirement(labelSel) : undefined };
}
