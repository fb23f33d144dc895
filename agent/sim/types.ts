/**
 * Shared JSON and Kubernetes object shapes used by the simulated member cluster.
 *
 * Objects are kept as plain JSON (the same shape as on the wire); these helpers give
 * typed access to the few parts the simulator interprets (metadata, spec, status).
 */
import type { ManagedFieldsEntry } from "../../src/k8s/fieldmanager.ts";

/** A JSON object (the decoded body of a Kubernetes request or a stored object). */
export type Obj = Record<string, unknown>;

/** One entry of `metadata.ownerReferences` (Kubernetes `metav1.OwnerReference`). */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** The subset of `metav1.ObjectMeta` the simulator reads or writes. Timestamps are RFC 3339 strings. */
export interface ObjectMeta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
  [key: string]: unknown;
}

/** A stored Kubernetes object: `apiVersion`, `kind`, `metadata` plus arbitrary other top-level fields. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: unknown;
  status?: unknown;
  [key: string]: unknown;
}

/** True when `v` is a non-null, non-array object. */
export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A deep copy of a JSON value (objects here never contain functions, dates or cycles). */
export function clone<T>(v: T): T {
  return structuredClone(v);
}

/** Structural equality of two JSON values (key order ignored). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObj(a)) {
    if (!isObj(b)) return false;
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/** The current time as Kubernetes serialises `metav1.Time`: RFC 3339, UTC, second precision. */
export function nowRfc3339(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}
