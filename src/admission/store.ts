/**
 * Admission above the store, as kube-apiserver runs its admission chain in the handler before
 * `registry.Store` (`k8s.io/apiserver/pkg/endpoints/handlers/create.go`), never inside storage:
 * the store of a kind (src/store/store.ts `storeOf`) with NamespaceLifecycle before every create
 * or apply of a namespaced kind (src/namespaces/lifecycle.ts; the Namespaces' own store tells it
 * what it reads and writes, {@link namespaceObserved}), and KubeFleet's overrides' webhook
 * checks against the other overrides ({@link overrideAdmitted}). Routes and controllers read and
 * write objects through {@link admittedStoreOf}; only writers that are admitted already (the
 * cluster's Durable Object, the scheduler's commits) use the store's door directly.
 */
import { resourceKey, type KindDefinition } from "../k8s/kind.ts";
import type { Env } from "../env.ts";
import { storeOf, type Store } from "../store/store.ts";
import { admitNamespace, admitsNamespace, forgetNamespace, namespaceRefusal, sawNamespace } from "../namespaces/lifecycle.ts";
import { NamespaceKind } from "../kinds/namespace.ts";
import { isJsonObject } from "../k8s/meta.ts";
import { FLEET_GROUP } from "../kinds/fleet.ts";
import { OVERRIDE_SIBLINGS_EXTRA } from "../kinds/fleet-override.ts";
import { evictionAdmitted } from "./fleet-eviction.ts";

/** The resource key of the Namespaces' rows, for a create's namespace precondition. */
const NAMESPACES = resourceKey(NamespaceKind);

/**
 * `store` with NamespaceLifecycle before its writes: a create (or apply) of a namespaced kind in
 * a namespace that does not exist is refused with 404, in one being terminated with 403 (an apply
 * that updates an existing object passes). Reads pass through, and so do batched writes
 * (`writeMany`: a controller's fleet writes, the replica set controller's works in cluster
 * namespaces, as before admission left the store; the Events recorder admits its own).
 *
 * A create of a D1-stored kind reads nothing first: the namespace's check is a precondition of
 * the create's own commit batch (src/store/types.ts `NamespaceAdmission`; one D1 call, not two,
 * and exact: no other isolate's delete of the namespace slips between a check and the commit),
 * and its refusal is read only when the commit was refused.
 * An apply to a D1-stored kind reads the object it applies to beside the namespace (at once: one
 * D1 round trip for both, where the write would read it after) and hands it to the write as
 * `known` (null when absent), whose commit precondition refuses it if it went stale meanwhile.
 * For namespaced kinds only ({@link admissionOf}).
 * @throws ApiError from `write`, as src/namespaces/lifecycle.ts `admitNamespace`
 */
function namespaceAdmitted(env: Env, store: Store): Store {
  const def = store.def;
  return {
    ...store,
    async write(namespace, name, req, opts) {
      if (!admitsNamespace(def, req)) return store.write(namespace, name, req, opts);
      // A create of a D1-stored kind: the namespace's check is a precondition of its commit.
      if (req.verb === "create" && def.storage === "d1")
        return store.write(namespace, name, req, {
          ...opts,
          namespaceAdmission: { resource: NAMESPACES, refusal: () => namespaceRefusal(env, def, namespace, name, req) },
        });
      const named = name !== undefined && name !== "";
      const early = named && req.verb !== "create" && def.storage === "d1" && opts?.known === undefined ? store.get(namespace, name) : undefined;
      // Observed now: a refusal below leaves it unawaited.
      early?.catch(() => undefined);
      await admitNamespace(env, def, namespace, name, req, async () => named && (await (early ?? store.get(namespace, name!))) !== null);
      return store.write(namespace, name, req, early ? { ...opts, known: await early } : opts);
    },
  };
}

/**
 * `store` of KubeFleet's ClusterResourceOverrides or ResourceOverrides with the other overrides
 * listed before a create, update or patch of the object (not of a subresource), as KubeFleet's
 * validating webhooks list them with an uncached client: they go in the write's extras
 * (`OVERRIDE_SIBLINGS_EXTRA`), where the kind's last write step checks the object about to be
 * stored against them (src/kinds/fleet-override.ts `overrideFinalize`: one override per selected
 * object, at most 100). For those two kinds only ({@link admissionOf}).
 */
function overrideAdmitted(store: Store): Store {
  const def = store.def;
  return {
    ...store,
    async write(namespace, name, req, opts) {
      if (req.verb === "delete" || ((req.verb === "update" || req.verb === "patch") && req.subresource)) return store.write(namespace, name, req, opts);
      const siblings = (await store.list(def.namespaced ? namespace : undefined)).items;
      return store.write(namespace, name, req, { ...opts, extras: { ...opts?.extras, [OVERRIDE_SIBLINGS_EXTRA]: siblings } });
    },
  };
}

/**
 * `store` of Namespaces telling NamespaceLifecycle what it reads and writes
 * (src/namespaces/lifecycle.ts `sawNamespace`, `forgetNamespace`): a namespace read Active spares
 * the next create in it a read of its own for a moment; a write of a namespace forgets it before
 * it starts and once it ended. For the Namespace kind only ({@link admissionOf}).
 */
function namespaceObserved(store: Store): Store {
  return {
    ...store,
    async get(namespace, name) {
      const ns = await store.get(namespace, name);
      sawNamespace(name, ns);
      return ns;
    },
    async write(namespace, name, req, opts) {
      const named = name ?? (req.verb === "create" && isJsonObject(req.body) && isJsonObject(req.body.metadata) ? req.body.metadata.name : undefined);
      if (typeof named === "string") forgetNamespace(named);
      try {
        return await store.write(namespace, name, req, opts);
      } finally {
        if (typeof named === "string") forgetNamespace(named);
      }
    },
    async writeMany(writes) {
      for (const w of writes) forgetNamespace(w.name);
      try {
        return await store.writeMany(writes);
      } finally {
        for (const w of writes) forgetNamespace(w.name);
      }
    },
  };
}

/**
 * The store of kind `def` (its backend chosen by `def.storage`, converted for a kind served from
 * another kind's objects) with admission before its writes (see the module comment): the door
 * through which routes and controllers reach objects.
 */
export function admittedStoreOf(env: Env, def: KindDefinition): Store {
  return storeOf(env, def, (store) => admissionOf(store.def).reduce((admitted, wrap) => wrap(env, admitted), store));
}

/** One step of admission: `store` with a check before its writes (or an observation of them). */
type Admission = (env: Env, store: Store) => Store;

/** The admission of each stored kind, innermost first, chosen once per kind ({@link admissionOf}). */
const admissions = new WeakMap<KindDefinition, readonly Admission[]>();

/**
 * The admission steps the writes of stored kind `def` go through, innermost first (see the
 * module comment): KubeFleet's overrides' or evictions' webhook checks, NamespaceLifecycle for a
 * namespaced kind, the Namespaces' own observation. Chosen by the kind once per isolate (a
 * kind's definition never changes), so a kind that has none of a step's concerns (most) never
 * enters it: a store of a core or OCM kind is wrapped in NamespaceLifecycle alone.
 */
function admissionOf(def: KindDefinition): readonly Admission[] {
  let steps = admissions.get(def);
  if (steps) return steps;
  const fleet = def.group === FLEET_GROUP;
  steps = [
    ...(fleet && (def.kind === "ClusterResourceOverride" || def.kind === "ResourceOverride") ? [(_env: Env, s: Store) => overrideAdmitted(s)] : []),
    ...(fleet && (def.kind === "ClusterResourcePlacementEviction" || def.kind === "ClusterResourcePlacementDisruptionBudget") ? [evictionAdmitted] : []),
    ...(def.namespaced ? [namespaceAdmitted] : []),
    ...(def.group === NamespaceKind.group && def.kind === NamespaceKind.kind ? [(_env: Env, s: Store) => namespaceObserved(s)] : []),
  ];
  admissions.set(def, steps);
  return steps;
}
