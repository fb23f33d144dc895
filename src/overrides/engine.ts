/**
 * The one patch engine of per-cluster overrides (docs/overrides.md): applies, for one object and
 * one cluster, the steps its override sources yield, in order: RFC 6902 JSON Patch operations
 * (applied by fast-json-patch, never a patcher of ours) or the deletion of the object.
 *
 * - **All or nothing**: the steps run on a copy of the object; the first failing operation fails
 *   the whole object for that cluster (`{ ok: false, source, message }`), and the caller keeps
 *   whatever that cluster had before, never a half-patched object. Once a step deletes the
 *   object, the steps after it do nothing (KubeFleet's `applyOverrides`: a patch of a deleted
 *   resource is a no-op).
 * - **Variables**, substituted in each operation's `value` as KubeFleet's work generator does
 *   (kubefleet-dev/kubefleet `pkg/controllers/workgenerator/override.go`
 *   `applyJSONPatchOverride`, `replaceClusterLabelKeyVariables`): `${MEMBER-CLUSTER-NAME}` is
 *   the cluster's name; `${MEMBER-CLUSTER-LABEL-KEY-<key>}` the value of its label `<key>`
 *   (case-sensitive), an error when the cluster has no such label or the `}` is missing. Any
 *   other `${...}` is left as written (KubeFleet's "typo in template variable should just be
 *   rendered as is"), except in Flotilla's reserved prefix `${MEMBER-CLUSTER-`: an unknown
 *   variable there (`${MEMBER-CLUSTER-REGION}`) is an error for the cluster rather than a
 *   literal that would reach it.
 * - **Limits** ({@link OVERRIDE_LIMITS}): operations per object, bytes of values per object,
 *   and the bytes the operations may add to it (a `copy` that doubles the document is refused
 *   before it runs), so a hostile override costs bounded CPU and memory per cluster.
 * - **Types**: a value that is exactly one variable takes the type of the field it replaces (a
 *   number or a boolean; see {@link typedAs}): `replicas` from a label works.
 * - **Identity**: a patch may not change the object's `apiVersion`, `kind`, `metadata.name` or
 *   `metadata.namespace` (what the agent's manifest configs and status name it by).
 *
 * Sources (KubeFleet's ClusterResourceOverride and ResourceOverride: src/overrides/kubefleet.ts;
 * Karmada's OverridePolicy and ClusterOverridePolicy: src/overrides/karmada.ts, whose steps are
 * built from the object as the steps before left it ({@link BuiltStep}); replica sets and add-ons
 * later) turn their own API into
 * {@link OverrideStep}s per cluster and object and feed them here. Pure.
 */
import { applyOperation, getValueByPointer, JsonPatchError, type Operation } from "fast-json-patch";
import type { KubeObject } from "../k8s/meta.ts";

/** A member cluster as overrides see it: its name and labels (a ManagedCluster's, src/fleet/schedule.ts `memberClusterOf`). */
export interface OverrideCluster {
  name: string;
  labels: Readonly<Record<string, string>>;
}

/** KubeFleet's `OverrideClusterNameVariable`. */
export const CLUSTER_NAME_VARIABLE = "${MEMBER-CLUSTER-NAME}";
/** KubeFleet's `OverrideClusterLabelKeyVariablePrefix`: `${MEMBER-CLUSTER-LABEL-KEY-<key>}`. */
export const CLUSTER_LABEL_VARIABLE_PREFIX = "${MEMBER-CLUSTER-LABEL-KEY-";
/** The prefix of the variables Flotilla reserves (an unknown one is an error, not a literal). */
export const RESERVED_VARIABLE_PREFIX = "${MEMBER-CLUSTER-";

/** One RFC 6902 operation, its `value` before variables are substituted. */
export interface OverrideOperation {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  from?: string;
  value?: unknown;
}

/**
 * One step a source yields for an object in a cluster: operations applied as one patch, or the
 * object's deletion. `source` names who asked, for the error (e.g.
 * `ClusterResourceOverrideSnapshot "cro-1"`).
 */
export type OverrideStep = { source: string; ops: readonly OverrideOperation[] } | { source: string; delete: true };

/** What the engine refuses to do for one object in one cluster. */
export interface OverrideLimits {
  /** Operations per object (all its steps together). */
  maxOperations: number;
  /** Bytes of JSON of the operations' values per object, after variables are substituted. */
  maxValueBytes: number;
  /** Bytes of JSON the operations may add to the object (values and `copy`s together). */
  maxObjectBytes: number;
}

/** The engine's limits per object and cluster: 1,000 operations, 256 KiB of values, 1 MiB added to the object. */
export const OVERRIDE_LIMITS: OverrideLimits = { maxOperations: 1000, maxValueBytes: 256 * 1024, maxObjectBytes: 1024 * 1024 };

/** The outcome for one object in one cluster: the overridden copy (null: deleted there), or why it failed and which step. */
export type OverrideOutcome = { ok: true; object: KubeObject | null } | { ok: false; source: string; message: string };

/** The outcome of substituting variables in a string: the text, or the error (KubeFleet's wording). */
export type Substituted = { ok: true; text: string } | { ok: false; message: string };

/**
 * Substitutes the cluster variables in `input` (see the module comment), as KubeFleet replaces
 * them in the raw JSON of a value.
 * @example substituteVariables('"${MEMBER-CLUSTER-LABEL-KEY-region}-mirror"', { name: "c1", labels: { region: "eu" } }) // { ok: true, text: '"eu-mirror"' }
 */
export function substituteVariables(input: string, cluster: OverrideCluster): Substituted {
  if (!input.includes("${")) return { ok: true, text: input };
  let result = input.split(CLUSTER_NAME_VARIABLE).join(cluster.name);
  for (;;) {
    const start = result.indexOf(CLUSTER_LABEL_VARIABLE_PREFIX);
    if (start === -1) break;
    const keyStart = start + CLUSTER_LABEL_VARIABLE_PREFIX.length;
    const end = result.indexOf("}", keyStart);
    if (end === -1) return { ok: false, message: `input ${input} is missing the closing bracket \`}\`` };
    const key = result.slice(keyStart, end);
    if (!Object.prototype.hasOwnProperty.call(cluster.labels, key)) return { ok: false, message: `label key ${key} not found on cluster ${cluster.name}` };
    result = result.slice(0, start) + cluster.labels[key]! + result.slice(end + 1);
  }
  const reserved = result.indexOf(RESERVED_VARIABLE_PREFIX);
  if (reserved !== -1) {
    const end = result.indexOf("}", reserved);
    const name = end === -1 ? result.slice(reserved) : result.slice(reserved, end + 1);
    return { ok: false, message: `unknown variable ${name}: the variables are ${CLUSTER_NAME_VARIABLE} and ${CLUSTER_LABEL_VARIABLE_PREFIX}<key>}` };
  }
  return { ok: true, text: result };
}

/** The variables a value's JSON uses: whether the cluster's name, and which label keys (for a source's memo key). */
export function variablesOf(text: string): { name: boolean; labels: string[] } {
  const labels: string[] = [];
  let at = 0;
  for (;;) {
    const start = text.indexOf(CLUSTER_LABEL_VARIABLE_PREFIX, at);
    if (start === -1) break;
    const keyStart = start + CLUSTER_LABEL_VARIABLE_PREFIX.length;
    const end = text.indexOf("}", keyStart);
    if (end === -1) break;
    labels.push(text.slice(keyStart, end));
    at = end + 1;
  }
  return { name: text.includes(CLUSTER_NAME_VARIABLE), labels };
}

/** An operation ready to apply many times: its value's JSON text (substituted per cluster) and whether it has variables. */
export interface CompiledOperation {
  op: OverrideOperation["op"];
  path: string;
  from?: string;
  /** The value's JSON, absent for remove, move and copy. */
  text?: string;
  /** The text holds `${` (substitution needed). */
  variables: boolean;
  /** The value is a string that is exactly one variable (`"${MEMBER-CLUSTER-LABEL-KEY-size}"`): typed as the field it replaces. */
  single: boolean;
}

const SINGLE_VARIABLE = /^"\$\{MEMBER-CLUSTER-[^"${}]*\}"$/;

/**
 * A value that was exactly one variable, typed as the field it replaces: a number or a boolean
 * where the object has one (replicas from `${MEMBER-CLUSTER-LABEL-KEY-size}`). KubeFleet
 * substitutes in the value's JSON text, so such a value stays a string there, which a member's
 * apiserver refuses for a number field; Flotilla gives the field its type. Anything else is left.
 */
function typedAs(value: unknown, doc: unknown, path: string): unknown {
  if (typeof value !== "string") return value;
  let current: unknown;
  try {
    current = getValueByPointer(doc, path);
  } catch {
    return value;
  }
  if (typeof current === "number" && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(value)) return Number(value);
  if (typeof current === "boolean" && (value === "true" || value === "false")) return value === "true";
  return value;
}

/** Compiles operations once per override, for {@link applyOverrideSteps} to apply in many clusters. */
export function compileOperations(ops: readonly OverrideOperation[]): CompiledOperation[] {
  return ops.map((o) => {
    const hasValue = (o.op === "add" || o.op === "replace" || o.op === "test") && o.value !== undefined;
    const text = hasValue ? JSON.stringify(o.value) : undefined;
    return {
      op: o.op,
      path: o.path,
      ...(o.from !== undefined ? { from: o.from } : {}),
      ...(text !== undefined ? { text } : {}),
      variables: text !== undefined && text.includes("${"),
      single: text !== undefined && SINGLE_VARIABLE.test(text),
    };
  });
}

/**
 * A step whose operations depend on the object as the steps before it left it (Karmada's
 * overriders read the current image, command, labels or field before they patch): `build` gets
 * that object (read only) and returns literal operations (no variables are substituted in their
 * values), or why it cannot.
 */
export type BuiltStep = { source: string; build: (doc: KubeObject) => { ops: OverrideOperation[] } | { error: string } };

/** A step with compiled operations, or one built from the object ({@link BuiltStep}). */
export type CompiledStep = { source: string; ops: readonly CompiledOperation[] } | { source: string; delete: true } | BuiltStep;

/** Operations whose values are taken as they are (no variables). */
function literalOperations(ops: readonly OverrideOperation[]): CompiledOperation[] {
  return ops.map((o) => {
    const text = (o.op === "add" || o.op === "replace" || o.op === "test") && o.value !== undefined ? JSON.stringify(o.value) : undefined;
    return {
      op: o.op,
      path: o.path,
      ...(o.from !== undefined ? { from: o.from } : {}),
      ...(text !== undefined ? { text } : {}),
      variables: false,
      single: false,
    };
  });
}

const identity = (o: KubeObject) => [o.apiVersion, o.kind, o.metadata?.name, o.metadata?.namespace ?? ""].join("\u0000");

/** Why a fast-json-patch error happened, in the words of RFC 6902's failures. */
function describe(e: unknown): string {
  if (!(e instanceof JsonPatchError)) return (e as Error).message ?? String(e);
  switch (e.name) {
    case "OPERATION_PATH_UNRESOLVABLE":
      return "the path does not exist";
    case "OPERATION_FROM_UNRESOLVABLE":
      return "the from path does not exist";
    case "OPERATION_PATH_CANNOT_ADD":
      return "the parent of the path does not exist";
    case "OPERATION_PATH_ILLEGAL_ARRAY_INDEX":
      return "illegal array index";
    case "OPERATION_VALUE_OUT_OF_BOUNDS":
      return "array index out of bounds";
    case "TEST_OPERATION_FAILED":
      return "the test did not hold";
    case "OPERATION_PATH_INVALID":
      return "the path is not a JSON Pointer";
    case "OPERATION_VALUE_REQUIRED":
      return "a value is required";
    case "OPERATION_VALUE_CANNOT_CONTAIN_UNDEFINED":
      return "the value is not JSON";
    default:
      return e.name.toLowerCase().replace(/_/g, " ");
  }
}

/**
 * Applies `steps` to `object` for `cluster` (see the module comment). `object` is not changed;
 * the result is a copy when any operation ran, `object` itself when no step applies. With `owned`,
 * `object` is the caller's own copy (an earlier source's output): it is patched in place, not
 * copied again, and must be dropped on failure.
 * Never throws: every failure is an outcome naming its step.
 */
export function applyOverrideSteps(
  object: KubeObject,
  steps: readonly CompiledStep[],
  cluster: OverrideCluster,
  limits: OverrideLimits = OVERRIDE_LIMITS,
  owned = false,
): OverrideOutcome {
  if (steps.length === 0) return { ok: true, object };
  let doc: KubeObject | null = owned ? object : null;
  /** Bytes of JSON the operations may have added (values and copies; removals not deducted). */
  let grown = 0;
  let operations = 0;
  let valueBytes = 0;
  for (const step of steps) {
    if ("delete" in step) return { ok: true, object: null };
    const fail = (message: string): OverrideOutcome => ({ ok: false, source: step.source, message });
    let ops: readonly CompiledOperation[];
    if ("build" in step) {
      const built = step.build(doc ?? object);
      if ("error" in built) return fail(built.error);
      ops = literalOperations(built.ops);
    } else ops = step.ops;
    operations += ops.length;
    if (operations > limits.maxOperations) return fail(`too many JSON patch operations for one object: more than ${limits.maxOperations}`);
    for (const [i, c] of ops.entries()) {
      let value: unknown;
      let valueLength = 0;
      if (c.text !== undefined) {
        let text = c.text;
        if (c.variables) {
          const s = substituteVariables(text, cluster);
          if (!s.ok) return fail(s.message);
          text = s.text;
        }
        valueLength = text.length;
        valueBytes += valueLength;
        if (valueBytes > limits.maxValueBytes) return fail(`the JSON patch values for one object exceed ${limits.maxValueBytes} bytes`);
        try {
          value = JSON.parse(text);
        } catch {
          return fail(`the value of operation ${i} (${c.op} ${c.path}) is not JSON once its variables are substituted`);
        }
      }
      doc ??= structuredClone(object);
      if (c.single && (c.op === "replace" || c.op === "add")) value = typedAs(value, doc, c.path);
      if (c.op === "copy") {
        try {
          grown += JSON.stringify(getValueByPointer(doc, c.from ?? "") ?? null).length;
        } catch {
          // An unresolvable `from`: the operation fails below.
        }
      } else if (c.text !== undefined) grown += valueLength;
      if (grown > limits.maxObjectBytes) return fail(`operation ${i} (${c.op} ${c.path}) would grow the object by more than ${limits.maxObjectBytes} bytes`);
      const op = { op: c.op, path: c.path, ...(c.from !== undefined ? { from: c.from } : {}), ...(c.text !== undefined ? { value } : {}) } as Operation;
      try {
        doc = applyOperation(doc, op, true, true, true, i).newDocument;
      } catch (e) {
        return fail(`JSON patch operation ${i} (${c.op} ${c.path}) failed: ${describe(e)}`);
      }
      if (doc === null || typeof doc !== "object" || Array.isArray(doc) || typeof doc.metadata !== "object" || doc.metadata === null)
        return fail(`JSON patch operation ${i} (${c.op} ${c.path}) left no object`);
    }
    if (doc !== null && identity(doc) !== identity(object)) return fail("an override may not change the object's apiVersion, kind, name or namespace");
  }
  return { ok: true, object: doc ?? object };
}
