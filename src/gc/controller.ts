/**
 * The garbage collector, as kube-controller-manager's deletes dependents by their
 * `ownerReferences` (https://kubernetes.io/docs/concepts/architecture/garbage-collection/):
 * - an owner removed (Background, the default): each dependent whose owners are all gone is
 *   deleted; a dependent with another owner still present only loses the dangling reference;
 * - an owner deleted with `propagationPolicy: Foreground` keeps its `foregroundDeletion`
 *   finalizer while the GC deletes its dependents (in the foreground too), and loses it once no
 *   dependent with `blockOwnerDeletion: true` is left;
 * - an owner deleted with `propagationPolicy: Orphan` keeps its `orphan` finalizer until the GC
 *   has removed the references to it from every dependent;
 * - an object written with references to owners that do not exist (or exist with another UID)
 *   is deleted when none of its owners exists, and loses the absent ones otherwise.
 * Owners are found as the GC's graph finds them: by the reference's group and kind (any served
 * version), its name, the dependent's namespace (cluster-scoped owners: none) and its UID.
 * A reference to a kind the hub does not serve is left alone. It works across every kind the hub
 * serves, as an after-commit hook of the one write path (src/store/hooks.ts), and reads no more
 * than the changed object's dependents, through the owner index (src/store/storage.ts
 * `dependentsOf`), never a scan of all objects.
 */
import { sharedRead, type AfterCommitHook, type HookTarget } from "../store/hooks.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { storageOf } from "../store/storage.ts";
import { ApiError } from "../k8s/errors.ts";
import { FOREGROUND_FINALIZER, ORPHAN_FINALIZER } from "../k8s/write.ts";
import { servedKinds } from "../kinds/index.ts";
import { lookUpKind } from "../kinds/sync.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject, OwnerReference } from "../k8s/meta.ts";
import type { Env } from "../env.ts";

/** What a change owes the collector (stored in the outbox row; keys only, no objects). */
interface GcOwed {
  /** The changed object's own key: its kind's resource key, namespace and name. */
  self: { group: string; kind: string; namespace: string; name: string; uid: string };
  /** It was removed: its dependents are looked at. */
  removed?: boolean;
  /** It is being deleted with the orphan or foregroundDeletion finalizer: the GC does its part. */
  finalizing?: boolean;
  /** It references owners: check that they exist (written), or re-check owners waiting in foreground (removed). */
  owners?: OwnerReference[];
}

function refsOf(obj: KubeObject | null): OwnerReference[] {
  return (obj?.metadata.ownerReferences ?? []).filter((r) => r && typeof r.uid === "string");
}

function sameRefs(a: OwnerReference[], b: OwnerReference[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

/**
 * The stored kind an owner reference names (by group and kind, any version), or undefined (a
 * computed kind, such as a cluster's Lease, has no rows to look the owner up in: left alone).
 */
function kindOf(env: Env, ref: { apiVersion: string; kind: string }): Promise<KindDefinition | undefined> {
  const group = groupOf(ref.apiVersion);
  return lookUpKind(env, () => servedKinds().find((k) => k.group === group && k.kind === ref.kind && !k.computed));
}

function finalizingWith(obj: KubeObject | null): boolean {
  const f = obj?.metadata.finalizers ?? [];
  return Boolean(obj?.metadata.deletionTimestamp) && (f.includes(ORPHAN_FINALIZER) || f.includes(FOREGROUND_FINALIZER));
}

/**
 * The owner `ref` names for a dependent in `namespace`: the stored object, or null when it is
 * absent (none, or one with another UID), or undefined when its kind is not served (unknown).
 */
async function ownerOf(env: Env, ref: OwnerReference, namespace: string): Promise<KubeObject | null | undefined> {
  const def = await kindOf(env, ref);
  if (!def) return undefined;
  const obj = await admittedStoreOf(env, def).getCommitted(def.namespaced ? namespace : "", ref.name);
  return obj && obj.metadata.uid === ref.uid ? obj : null;
}

/** Deletes `obj` (of kind `def`) with `policy`; gone meanwhile is fine. */
async function deleteObject(env: Env, def: KindDefinition, obj: KubeObject, policy: "Background" | "Foreground"): Promise<void> {
  try {
    await admittedStoreOf(env, def).write(obj.metadata.namespace ?? "", obj.metadata.name, {
      verb: "delete",
      preconditions: { uid: obj.metadata.uid },
      propagationPolicy: policy,
    });
  } catch (e) {
    if (e instanceof ApiError && (e.code === 404 || e.code === 409)) return;
    throw e;
  }
}

/**
 * Removes from `obj` the references whose UIDs are in `uids` (a JSON merge patch of
 * ownerReferences with the resourceVersion as its precondition, computed again on a fresh read
 * when another writer came first, so a reference added meanwhile is kept).
 */
async function dropRefs(env: Env, def: KindDefinition, obj: KubeObject, uids: Set<string>): Promise<void> {
  let current: KubeObject | null = obj;
  for (let attempt = 0; current && attempt < 5; attempt++) {
    const kept = refsOf(current).filter((r) => !uids.has(r.uid));
    if (kept.length === refsOf(current).length) return;
    try {
      const patch = { metadata: { ownerReferences: kept.length > 0 ? kept : null, resourceVersion: current.metadata.resourceVersion } };
      await admittedStoreOf(env, def).write(current.metadata.namespace ?? "", current.metadata.name, { verb: "patch", patchType: "merge", patch });
      return;
    } catch (e) {
      if (!(e instanceof ApiError) || (e.code !== 404 && e.code !== 409)) throw e;
      if (e.code === 404) return;
      current = await admittedStoreOf(env, def).getCommitted(current.metadata.namespace ?? "", current.metadata.name);
      if (current?.metadata.uid !== obj.metadata.uid) return;
    }
  }
}

/** Removes `finalizer` from the owner `obj` (which then goes when no finalizer is left). */
async function dropFinalizer(env: Env, def: KindDefinition, obj: KubeObject, finalizer: string): Promise<void> {
  const finalizers = (obj.metadata.finalizers ?? []).filter((f) => f !== finalizer);
  try {
    await admittedStoreOf(env, def).write(obj.metadata.namespace ?? "", obj.metadata.name, {
      verb: "patch",
      patchType: "merge",
      patch: { metadata: { finalizers: finalizers.length > 0 ? finalizers : null, resourceVersion: obj.metadata.resourceVersion } },
    });
  } catch (e) {
    // Changed meanwhile: the change's own hook runs this again on the fresh object.
    if (e instanceof ApiError && (e.code === 404 || e.code === 409)) return;
    throw e;
  }
}

/** The dependents of the owner with UID `uid`, as stored now, with their kinds. */
async function dependents(env: Env, uid: string): Promise<{ def: KindDefinition; obj: KubeObject }[]> {
  const out: { def: KindDefinition; obj: KubeObject }[] = [];
  for (const d of await storageOf(env).dependentsOf(uid)) {
    const def = await lookUpKind(env, () => servedKinds().find((k) => `${k.group}/${k.plural}` === d.resource));
    if (!def) continue;
    const obj = await admittedStoreOf(env, def).getCommitted(d.namespace, d.name);
    if (obj && refsOf(obj).some((r) => r.uid === uid)) out.push({ def, obj });
  }
  return out;
}

/**
 * Looks at a dependent whose owner with UID `gone` was removed (or that names absent owners):
 * deletes it when none of its owners exists, else removes the references to absent owners.
 */
async function settleDependent(env: Env, def: KindDefinition, obj: KubeObject): Promise<void> {
  const absent = new Set<string>();
  let present = 0;
  let foreground = false;
  for (const ref of refsOf(obj)) {
    const owner = await ownerOf(env, ref, obj.metadata.namespace ?? "");
    if (owner === undefined)
      present++; // a kind the hub does not serve: never taken as absent
    else if (owner === null) absent.add(ref.uid);
    else {
      present++;
      if (owner.metadata.deletionTimestamp && owner.metadata.finalizers?.includes(FOREGROUND_FINALIZER)) foreground = true;
    }
  }
  if (absent.size === 0) return;
  if (present === 0) await deleteObject(env, def, obj, "Background");
  else if (!foreground) await dropRefs(env, def, obj, absent);
}

/** Does the GC's part for an owner deleted with the orphan or foregroundDeletion finalizer. */
async function finalize(env: Env, def: KindDefinition, owner: KubeObject): Promise<void> {
  const uid = owner.metadata.uid!;
  const deps = await dependents(env, uid);
  const finalizers = owner.metadata.finalizers ?? [];
  if (finalizers.includes(ORPHAN_FINALIZER)) {
    for (const d of deps) await dropRefs(env, d.def, d.obj, new Set([uid]));
    await dropFinalizer(env, def, owner, ORPHAN_FINALIZER);
    return;
  }
  if (finalizers.includes(FOREGROUND_FINALIZER)) {
    let blocking = 0;
    for (const d of deps) {
      if (refsOf(d.obj).some((r) => r.uid === uid && r.blockOwnerDeletion)) blocking++;
      if (!d.obj.metadata.deletionTimestamp) await deleteObject(env, d.def, d.obj, "Foreground");
    }
    if (blocking === 0) {
      await dropFinalizer(env, def, owner, FOREGROUND_FINALIZER);
      return;
    }
    // Dependents still there: each one's removal runs this again (their `owners`), until none blocks.
    const left = await dependents(env, uid);
    if (!left.some((d) => refsOf(d.obj).some((r) => r.uid === uid && r.blockOwnerDeletion))) await dropFinalizer(env, def, owner, FOREGROUND_FINALIZER);
  }
}

/**
 * Whether every owner of `refs` (a dependent's in `namespace`) exists, or is of a kind the hub
 * does not serve: the dependent then has nothing to settle ({@link settleDependent} acts only on
 * an absent owner), and is not read. Each owner is read once for the commits finished together
 * (`target.reads`): a placement's chunk of bindings, all owned by the placement, reads it once.
 */
async function ownersPresent(env: Env, refs: OwnerReference[], namespace: string, target: HookTarget): Promise<boolean> {
  for (const ref of refs) {
    if (typeof ref?.uid !== "string") continue;
    const key = `gc-owner/${ref.apiVersion}/${ref.kind}/${namespace}/${ref.name}/${ref.uid}`;
    if ((await sharedRead(target, key, () => ownerOf(env, ref, namespace))) === null) return false;
  }
  return true;
}

/** The garbage collector's after-commit hook (see the module's documentation). */
export const garbageCollectorHook: AfterCommitHook<GcOwed> = {
  name: "garbage-collector",
  plan(change) {
    const { def, namespace, name, before, after } = change;
    const obj = after ?? before;
    if (!obj?.metadata.uid) return null;
    const owed: GcOwed = { self: { group: def.group, kind: def.kind, namespace, name, uid: obj.metadata.uid } };
    let owes = false;
    if (before && !after) {
      owed.removed = true;
      owes = true;
    }
    if (finalizingWith(after) && !(finalizingWith(before) && sameJson(before!.metadata.finalizers, after!.metadata.finalizers))) {
      owed.finalizing = true;
      owes = true;
    }
    const refs = refsOf(obj);
    if (refs.length > 0 && (!after || !before || !sameRefs(refsOf(before), refs))) {
      owed.owners = refs;
      owes = true;
    }
    return owes ? owed : null;
  },
  async run(env, owed, target) {
    // The object, its owners and its dependents may be custom resources: a kind this isolate does
    // not know is looked up again after a check of the custom kinds (src/kinds/sync.ts `lookUpKind`).
    const def = await lookUpKind(env, () => servedKinds().find((k) => k.group === owed.self.group && k.kind === owed.self.kind));
    if (!def) return;
    if (owed.removed) {
      for (const d of await dependents(env, owed.self.uid)) await settleDependent(env, d.def, d.obj);
      // A removed dependent may have been what held an owner in foreground deletion.
      for (const ref of owed.owners ?? []) {
        const owner = await ownerOf(env, ref, owed.self.namespace);
        const ownerDef = await kindOf(env, ref);
        if (owner && ownerDef && finalizingWith(owner)) await finalize(env, ownerDef, owner);
      }
      return;
    }
    if (owed.owners && !owed.finalizing && (await ownersPresent(env, owed.owners, owed.self.namespace, target))) return;
    const current = await admittedStoreOf(env, def).getCommitted(owed.self.namespace, owed.self.name);
    if (!current || current.metadata.uid !== owed.self.uid) return;
    if (owed.finalizing && finalizingWith(current)) await finalize(env, def, current);
    if (owed.owners && !current.metadata.deletionTimestamp) await settleDependent(env, def, current);
  },
};

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
