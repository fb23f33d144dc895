/**
 * The objects a hub always has, made on first use by each isolate before it serves the API (as
 * kube-apiserver makes them at start): the built-in namespaces (`default`, `kube-system`,
 * `kube-public`, `kube-node-lease`), the built-in ManagedClusterSets (`default`, `global`, as
 * OCM's hub does) and the RBAC bootstrap policy (src/auth/rbac-store.ts `ensureBootstrapPolicy`:
 * cluster-admin, admin, edit, view, system:discovery, ... and their bindings; missing ones
 * recreated, reconciled by their `rbac.authorization.kubernetes.io/autoupdate` annotation).
 * Each request also brings the isolate's custom resources' kinds up to date (src/kinds/sync.ts
 * `refreshCustomKinds`: no read unless the isolate's last check is older than a few seconds or it
 * wrote a CRD since).
 */
import { ApiError } from "../k8s/errors.ts";
import { BUILTIN_CLUSTER_SETS, ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { BUILTIN_NAMESPACES } from "../kinds/namespace.ts";
import { ensureNamespace } from "../namespaces/controller.ts";
import { ensureBootstrapPolicy } from "../auth/rbac-store.ts";
import { admittedStoreOf } from "../admission/store.ts";
import type { Env } from "../env.ts";
import { refreshCustomKinds } from "../kinds/sync.ts";

/** Whether a request of this isolate has found or created the built-in objects. */
let builtinsDone = false;

/**
 * Creates the built-in objects (see the module comment) when absent, through the write path,
 * until one request of the isolate has seen them there. Each request that comes before that
 * checks for itself (a create that loses the race gets AlreadyExists, which is fine): a request
 * never awaits another's promise, which workerd would cancel as hung had that request been
 * cancelled meanwhile (issue 27).
 * Then refreshes the custom kinds (src/kinds/sync.ts `refreshCustomKinds`).
 * @throws errors of D1 (the next request checks again)
 */
export async function ensureBuiltins(env: Env): Promise<void> {
  if (!builtinsDone) await makeBuiltins(env);
  await refreshCustomKinds(env);
}

/** Creates the built-in objects that are missing (see {@link ensureBuiltins}). */
async function makeBuiltins(env: Env): Promise<void> {
  for (const ns of BUILTIN_NAMESPACES) await ensureNamespace(env, ns);
  const sets = admittedStoreOf(env, ManagedClusterSetKind);
  for (const set of BUILTIN_CLUSTER_SETS) {
    if (await sets.get("", set.name)) continue;
    try {
      await sets.write("", set.name, { verb: "create", body: { metadata: { name: set.name }, spec: set.spec } });
    } catch (e) {
      if (!(e instanceof ApiError && e.reason === "AlreadyExists")) throw e;
    }
  }
  await ensureBootstrapPolicy(env);
  builtinsDone = true;
}
