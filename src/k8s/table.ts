/**
 * `kubectl get` tables: the apiserver's `meta.k8s.io/v1` Table for a kind with printer columns
 * (a CRD's `additionalPrinterColumns`; apiextensions' table convertor): a Name column, then the
 * kind's columns. `date` columns are shown as ages ("5m", "3h"), as the apiserver renders them;
 * a number or boolean in a `string` column as its text, as apiextensions' table convertor prints it.
 */
import { evaluate } from "./jsonpath.ts";
import type { KindDefinition, PrinterColumn } from "./kind.ts";
import type { KubeObject } from "./meta.ts";
import { humanDuration } from "./duration.ts";

export { humanDuration };

const AGE: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

function columnsOf(def: KindDefinition): PrinterColumn[] {
  return def.printerColumns && def.printerColumns.length > 0 ? def.printerColumns : [AGE];
}

function cell(obj: KubeObject, col: PrinterColumn, nowMs: number): unknown {
  if (col.value) return col.value(obj);
  let values: unknown[];
  try {
    values = evaluate(obj, col.jsonPath);
  } catch {
    return null;
  }
  if (values.length === 0) return null;
  if (col.type === "date") {
    const t = Date.parse(String(values[0]));
    return Number.isNaN(t) ? null : humanDuration(nowMs - t);
  }
  if (values.length > 1) return values.map((v) => (typeof v === "object" ? JSON.stringify(v) : String(v))).join(",");
  const v = values[0];
  if (typeof v === "object" && v !== null) return JSON.stringify(v);
  // apiextensions' table convertor prints a `string` column's value as text (a generation 2 is "2").
  return col.type === "string" && (typeof v === "number" || typeof v === "boolean") ? String(v) : v;
}

/**
 * Builds the Table for `items`. `includeObject` is the request's `includeObject` (None, Metadata
 * — the default — or Object); `nowMs` is epoch milliseconds for ages.
 */
export function toTable(def: KindDefinition, items: KubeObject[], resourceVersion: string, includeObject: string | undefined, nowMs: number) {
  return tableOf(columnsOf(def), items, resourceVersion, includeObject, nowMs, !def.printsName);
}

/**
 * The `meta.k8s.io/v1` Table of `items` with a Name column and then `columns` (a kind's printer
 * columns; the simulated cluster's built-in kinds give theirs with `value` functions), as
 * {@link toTable} describes; `nameFirst` false leaves the Name column out (`columns` have their own).
 */
export function tableOf(
  columns: readonly PrinterColumn[],
  items: readonly KubeObject[],
  resourceVersion: string,
  includeObject: string | undefined,
  nowMs: number,
  nameFirst = true,
) {
  const names = nameFirst ? [{ name: "Name", type: "string", format: "name", description: "Name must be unique within a namespace.", priority: 0 }] : [];
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion },
    columnDefinitions: [
      ...names,
      ...columns.map((c) => ({
        name: c.name,
        type: c.type === "date" ? "string" : c.type,
        format: c.type === "date" ? "date" : "",
        description: c.name,
        priority: c.priority ?? 0,
      })),
    ],
    rows: items.map((o) => ({
      cells: [...(nameFirst ? [o.metadata.name] : []), ...columns.map((c) => cell(o, c, nowMs))],
      object: rowObject(o, includeObject),
    })),
  };
}

/**
 * The `object` of a Table row as `includeObject` asks (kube-apiserver's `IncludeObjectPolicy`):
 * `None` nothing, `Object` the object itself, anything else (`Metadata`, the default) its
 * PartialObjectMetadata.
 */
export function rowObject<T extends { metadata: unknown }>(
  o: T,
  includeObject: string | undefined,
): T | { kind: string; apiVersion: string; metadata: T["metadata"] } | undefined {
  return includeObject === "None"
    ? undefined
    : includeObject === "Object"
      ? o
      : { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o.metadata };
}
