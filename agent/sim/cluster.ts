/**
 * The API semantics of the simulated cluster, independent of HTTP: what kube-apiserver's generic
 * registry does for get/list/create/update/patch/apply/delete, plus a synchronous stand-in for the
 * garbage collector, the namespace controller and the status controllers, run after every write.
 *
 * Kubernetes behaviours followed (see /work/shared/reference/kubernetes-semantics.md §1-4):
 * - server-owned metadata: uid (UUID v4), resourceVersion (global counter), generation (bumped on
 *   any change outside metadata/status), creationTimestamp; writes that change nothing are skipped
 *   (resourceVersion unchanged), as kube-apiserver's GuaranteedUpdate does;
 * - optimistic concurrency: a PUT/PATCH/apply carrying a stale resourceVersion → 409 Conflict;
 * - status subresource: main-resource writes keep `status`, `/status` writes change only `status`;
 * - deletion: finalizers keep an object (with deletionTimestamp) until an update empties them;
 *   `propagationPolicy` Orphan/Foreground add the `orphan`/`foregroundDeletion` finalizers that the
 *   GC sweep then processes; Background (default) deletes dependents whose ownerReferences point
 *   at the deleted uid; dependents with some owners left only lose the dangling references;
 * - namespaces: deleting one deletes its content first; default/kube-system/kube-public → 403;
 * - CustomResourceDefinitions: deleting one adds the finalizer
 *   `customresourcecleanup.apiextensions.k8s.io` (apiextensions-apiserver's REST `Delete`; a CRD
 *   may also carry it from its creator, e.g. a manifest copied from another cluster); while it is
 *   being deleted its resources are still read and deleted but not created (405), the cleanup
 *   (apiextensions' `crd_finalizer.go`) deletes every resource of it, each held by its own
 *   finalizers, and removes the finalizer once none is left, so the CRD goes with its resources.
 */
import { randomUUID } from "node:crypto";
import { parse as parseYaml } from "yaml";
import {
  applyCreateDefaults,
  applyWriteDefaults,
  clusterClaimCrd,
  clusterPropertyCrd,
  clusterPropertyObject,
  desiredStatus,
  namespaceObject,
  neverReady,
  nodeObject,
  normaliseData,
  readyDelayOf,
  scheduleNode,
  type Progress,
} from "./controllers.ts";
import { alreadyExists, ApiError, badRequest, conflict, forbidden, invalid, notFound, unsupportedMediaType } from "./errors.ts";
import { jsonPatch, MERGE_KEYS, mergePatch, strategicMergePatch } from "./patch.ts";
import { groupVersion, Registry, type ResourceType } from "./resources.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { generatedName } from "../../src/k8s/names.ts";
import { fieldNameType, recordUpdate, requestedManagedFields, serverSideApply, type FieldManagerContext } from "../../src/k8s/fieldmanager.ts";
import type { Store } from "./store.ts";
import { clone, deepEqual, isObj, nowRfc3339, type KubeObject, type Obj, type OwnerReference } from "./types.ts";
import { validateAgainstSchema, validateName } from "./validation.ts";

const FIELD_TYPE = fieldNameType(MERGE_KEYS);

/** The field manager's context for a write of `rt` now (lists known by their field names: the simulator has no schemas). */
function ssaContext(rt: { statusSubresource: boolean }): FieldManagerContext {
  return { type: FIELD_TYPE, statusSubresource: rt.statusSubresource, now: nowRfc3339() };
}

/** The object a request addresses: resource type, namespace ("" for cluster-scoped) and name. */
export interface Target {
  rt: ResourceType;
  namespace: string;
  name: string;
}

/** Options shared by writes: the field manager recorded in managedFields and `?dryRun=All`. */
export interface WriteOptions {
  manager: string;
  dryRun: boolean;
}

/** Parsed `DeleteOptions` (from the JSON body or the query string). */
export interface DeleteOptions {
  propagationPolicy?: string;
  orphanDependents?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun: boolean;
}

/** Result of a delete: HTTP 200 with either the object (still being deleted) or a Success Status. */
export interface DeleteResult {
  body: Obj;
}

const PROTECTED_NAMESPACES = ["default", "kube-system", "kube-public"];
/** apiextensions-apiserver's finalizer holding a deleted CRD until its custom resources are gone. */
const CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io";
const isCrd = (group: string, plural: string) => group === "apiextensions.k8s.io" && plural === "customresourcedefinitions";

/** 405 for a create of a resource whose CRD is being deleted (apiextensions' crdHandler: `NewMethodNotSupported`). */
function refuseTerminating(rt: ResourceType): void {
  if (rt.terminating) throw new ApiError(405, "MethodNotAllowed", `create is not supported on resources of kind "${rt.plural}.${rt.group}"`);
}

function refsOf(o: KubeObject): OwnerReference[] {
  return Array.isArray(o.metadata.ownerReferences) ? o.metadata.ownerReferences : [];
}

/** Object identity without volatile fields, to detect no-op writes. */
function comparable(o: KubeObject): unknown {
  const c = clone(o);
  delete (c.metadata as Obj).resourceVersion;
  for (const m of c.metadata.managedFields ?? []) m.time = "";
  return c;
}

function specPart(o: KubeObject, statusSubresource: boolean): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === "metadata" || k === "apiVersion" || k === "kind" || (k === "status" && statusSubresource)) continue;
    out[k] = v;
  }
  return out;
}

/** First-start contents, from {@link SimulatedClusterOptions}. */
export interface SeedOptions {
  kubernetesVersion: string;
  nodes: number;
  clusterProperties: Record<string, string>;
}

/** How workloads come up in the simulated cluster (kwok's stages with a delay). */
export interface ProgressOptions {
  /**
   * Milliseconds from the time the simulated controllers first see a workload's generation (or a
   * Pod) until it is ready (Deployment, StatefulSet, DaemonSet, ReplicaSet replicas; a Job
   * completes); default 0 (at once, as kwok's "fast" stages). An object's annotation
   * `sim.flotilla.dev/ready-delay` overrides it.
   */
  readyDelayMs?: number;
  /**
   * The clock, epoch milliseconds; default `Date.now`. When given, the cluster sets no timers:
   * the caller moves its clock and calls {@link Cluster.reconcile}. Without it, a timer runs the
   * controllers when the next workload is due.
   */
  now?: () => number;
}

/** The simulated API server's semantics over a {@link Store}. All methods throw {@link ApiError} on failure. */
export class Cluster {
  readonly registry: Registry;
  private readonly readyDelayMs: number;
  private readonly now: () => number;
  private readonly autoTick: boolean;
  /** When each object's current generation was first seen by the controllers (by uid). */
  private readonly since = new Map<string, { generation: number; at: number }>();
  /** The earliest time a pending workload becomes ready (collected during a sweep). */
  private nextDue: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt: number | undefined;
  private sweeps = 0;

  constructor(
    readonly store: Store,
    opts: ProgressOptions = {},
  ) {
    this.registry = new Registry(() => store.list("apiextensions.k8s.io", "customresourcedefinitions"));
    this.readyDelayMs = Math.max(0, opts.readyDelayMs ?? 0);
    this.now = opts.now ?? Date.now;
    this.autoTick = opts.now === undefined;
  }

  /**
   * Runs the controllers at the clock's current time: workloads whose delay has passed become
   * ready (status written, watch events sent). With an injected clock, call it after moving the
   * clock; otherwise timers call it.
   */
  reconcile(): void {
    this.sweep();
  }

  /** Stops the readiness timer (the cluster is closing). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = undefined;
  }

  /** Whether `obj` is ready at the clock's time (see {@link ProgressOptions}); notes when a pending one is due. */
  private progress(obj: KubeObject): Progress {
    const bad = neverReady(obj);
    if (bad) return { ready: false, bad };
    const now = this.now();
    const gen = obj.metadata.generation ?? 0;
    let s = this.since.get(obj.metadata.uid);
    if (!s || s.generation !== gen) {
      s = { generation: gen, at: now };
      if (obj.metadata.uid) this.since.set(obj.metadata.uid, s);
    }
    const due = s.at + readyDelayOf(obj, this.readyDelayMs);
    if (now >= due) return { ready: true, bad };
    if (this.nextDue === undefined || due < this.nextDue) this.nextDue = due;
    return { ready: false, bad };
  }

  /** Schedules the next sweep at the earliest due time seen (real clock only). */
  private schedule(): void {
    const due = this.nextDue;
    this.nextDue = undefined;
    if (!this.autoTick || due === undefined) return;
    if (this.timer && this.timerAt !== undefined && this.timerAt <= due) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = due;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = undefined;
        this.sweep();
      },
      Math.max(0, due - this.now()) + 1,
    );
    this.timer.unref?.();
  }

  /** Creates the system namespaces, Nodes, the ClusterProperty and ClusterClaim CRDs and the given properties (first start only). */
  seed(opts: SeedOptions): void {
    for (const ns of ["default", "kube-system", "kube-public", "kube-node-lease"]) this.store.put("", "namespaces", namespaceObject(ns));
    for (let i = 1; i <= opts.nodes; i++) this.store.put("", "nodes", nodeObject(i, opts.kubernetesVersion));
    for (const crd of [clusterPropertyCrd(), clusterClaimCrd()]) {
      const st = desiredStatus("apiextensions.k8s.io", "CustomResourceDefinition", crd, { nodes: [] });
      if (st) crd.status = st;
      this.store.put("apiextensions.k8s.io", "customresourcedefinitions", crd);
    }
    for (const [name, value] of Object.entries(opts.clusterProperties)) this.store.put("about.k8s.io", "clusterproperties", clusterPropertyObject(name, value));
  }

  /** `obj` as served at `rt`'s version (apiVersion/kind rewritten; storage is versionless). */
  present(rt: ResourceType, obj: KubeObject): KubeObject {
    return { ...obj, apiVersion: groupVersion(rt), kind: rt.kind };
  }

  /** GET one object → 404 NotFound when missing. */
  get(t: Target): KubeObject {
    const o = this.store.get(t.rt.group, t.rt.plural, t.namespace, t.name);
    if (!o) throw notFound(t.rt, t.name);
    return this.present(t.rt, o);
  }

  /** LIST (namespace undefined = all namespaces), filtered by label and field selectors; with the list's resourceVersion. */
  list(rt: ResourceType, namespace: string | undefined, labelSelector?: string, fieldSelector?: string): { items: KubeObject[]; resourceVersion: string } {
    const lm = parseLabelSelector(labelSelector);
    const fm = parseFieldSelector(fieldSelector);
    const items = this.store
      .list(rt.group, rt.plural, rt.namespaced ? namespace : undefined)
      .map((o) => this.present(rt, o))
      .filter((o) => lm(o) && fm(o));
    return { items, resourceVersion: String(this.store.currentRv()) };
  }

  private checkNamespaceWritable(rt: ResourceType, namespace: string, name: string): void {
    if (!rt.namespaced) return;
    const ns = this.store.get("", "namespaces", "", namespace);
    if (!ns) throw notFound({ group: "", plural: "namespaces" }, namespace);
    if (ns.metadata.deletionTimestamp) {
      throw new ApiError(
        403,
        "Forbidden",
        `${rt.group ? `${rt.plural}.${rt.group}` : rt.plural} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
        {
          name,
          kind: rt.plural,
          ...(rt.group ? { group: rt.group } : {}),
          causes: [{ reason: "NamespaceTerminating", message: `namespace ${namespace} is being terminated`, field: "metadata.namespace" }],
        },
      );
    }
  }

  private checkTypeAndIdentity(rt: ResourceType, body: Obj, namespace: string, urlName?: string): void {
    const gv = groupVersion(rt);
    if (body.apiVersion !== undefined && body.apiVersion !== gv)
      throw badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${gv})`);
    if (body.kind !== undefined && body.kind !== rt.kind)
      throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (${rt.kind})`);
    const meta = isObj(body.metadata) ? body.metadata : {};
    if (rt.namespaced && meta.namespace !== undefined && meta.namespace !== "" && meta.namespace !== namespace) {
      throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    }
    if (urlName !== undefined && meta.name !== undefined && meta.name !== "" && meta.name !== urlName) {
      throw badRequest(`the name of the object (${String(meta.name)}) does not match the name on the URL (${urlName})`);
    }
  }

  /** Applies the write-time defaults, then validates name and (for custom resources) schema → 422. */
  private validate(rt: ResourceType, obj: KubeObject): void {
    applyWriteDefaults(rt.group, rt.kind, obj);
    const causes = [...validateName(rt.kind, obj.metadata.name), ...validateAgainstSchema(rt.schema, obj, rt.statusSubresource)];
    if (causes.length) throw invalid(rt.kind, rt.group, obj.metadata.name ?? "", causes);
  }

  /** Fills server-owned metadata of a new object (uid, creationTimestamp, generation, namespace). */
  private initMetadata(rt: ResourceType, obj: KubeObject, namespace: string): void {
    const m = obj.metadata;
    if (!m.name && m.generateName) m.name = generatedName(m.generateName);
    m.uid = randomUUID();
    m.creationTimestamp = nowRfc3339();
    m.resourceVersion = "";
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    delete m.managedFields;
    if (rt.hasGeneration) m.generation = 1;
    else delete m.generation;
    if (rt.namespaced) m.namespace = namespace;
    else delete m.namespace;
    obj.apiVersion = groupVersion(rt);
    obj.kind = rt.kind;
  }

  /** POST: creates the object in `namespace`. 409 AlreadyExists, 404 missing namespace, 422 invalid. */
  create(rt: ResourceType, namespace: string, body: unknown, opts: WriteOptions): KubeObject {
    refuseTerminating(rt);
    if (!isObj(body)) throw badRequest("the body of the request must be a JSON object");
    this.checkTypeAndIdentity(rt, body, namespace);
    const obj = clone(body) as KubeObject;
    obj.metadata = isObj(obj.metadata) ? obj.metadata : ({} as KubeObject["metadata"]);
    this.initMetadata(rt, obj, namespace);
    if (rt.statusSubresource && rt.kind !== "Node") delete obj.status;
    applyCreateDefaults(rt.kind, rt.group, obj);
    this.validate(rt, obj);
    this.checkNamespaceWritable(rt, namespace, obj.metadata.name);
    if (this.store.get(rt.group, rt.plural, namespace, obj.metadata.name)) throw alreadyExists(rt, obj.metadata.name);
    recordUpdate(undefined, obj, undefined, opts.manager, "main", ssaContext(rt));
    return this.commit(rt, undefined, obj, opts.dryRun);
  }

  /** PUT (main resource or `/status`): replaces the object. 404 when missing, 409 on stale resourceVersion. */
  update(t: Target, body: unknown, subresource: string | undefined, opts: WriteOptions): KubeObject {
    if (!isObj(body)) throw badRequest("the body of the request must be a JSON object");
    this.checkTypeAndIdentity(t.rt, body, t.namespace, t.name);
    const current = this.store.get(t.rt.group, t.rt.plural, t.namespace, t.name);
    if (!current) throw notFound(t.rt, t.name);
    return this.replace(t, current, body as KubeObject, subresource === "status" ? "status" : "main", opts);
  }

  private replace(t: Target, current: KubeObject, body: KubeObject, scope: "main" | "status", opts: WriteOptions): KubeObject {
    const rt = t.rt;
    const rv = isObj(body.metadata) ? body.metadata.resourceVersion : undefined;
    if (rv !== undefined && rv !== "" && rv !== current.metadata.resourceVersion) throw conflict(rt, t.name);
    let after: KubeObject;
    if (scope === "status" && rt.statusSubresource) {
      after = clone(current);
      if (body.status === undefined) delete after.status;
      else after.status = clone(body.status);
    } else {
      after = clone(body);
      const bm: Obj = isObj(after.metadata) ? after.metadata : {};
      const cm = current.metadata;
      after.metadata = {
        ...bm,
        name: cm.name,
        uid: cm.uid,
        creationTimestamp: cm.creationTimestamp,
        resourceVersion: cm.resourceVersion,
      } as KubeObject["metadata"];
      for (const k of ["namespace", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "managedFields"] as const) {
        const meta = after.metadata as Obj;
        if (cm[k] === undefined) delete meta[k];
        else meta[k] = cm[k];
      }
      after.apiVersion = groupVersion(rt);
      after.kind = rt.kind;
      if (rt.statusSubresource) {
        if (current.status === undefined) delete after.status;
        else after.status = clone(current.status);
      }
      if (rt.kind === "Namespace" && rt.group === "") after.spec = current.spec;
      normaliseData(rt.kind, after);
      this.validate(rt, after);
      if (cm.deletionTimestamp) {
        const added = (after.metadata.finalizers ?? []).filter((f) => !(cm.finalizers ?? []).includes(f));
        if (added.length)
          throw invalid(rt.kind, rt.group, t.name, [
            {
              reason: "FieldValueForbidden",
              message: "Forbidden: no new finalizers can be added if the object is being deleted",
              field: "metadata.finalizers",
            },
          ]);
      }
    }
    this.bumpGeneration(rt, current, after);
    // A client may rewrite managedFields (kubectl does when upgrading client-side to server-side
    // apply); `[]` or `[{}]` clears them. Otherwise they are the server's to maintain.
    const sent = isObj(body.metadata) ? body.metadata.managedFields : undefined;
    recordUpdate(current, after, requestedManagedFields(sent, current.metadata.managedFields, scope), opts.manager, scope, ssaContext(rt));
    return this.commit(rt, current, after, opts.dryRun);
  }

  private bumpGeneration(rt: ResourceType, before: KubeObject, after: KubeObject): void {
    if (!rt.hasGeneration) return;
    const g = before.metadata.generation ?? 1;
    after.metadata.generation = deepEqual(specPart(before, rt.statusSubresource), specPart(after, rt.statusSubresource)) ? g : g + 1;
  }

  /**
   * PATCH with `contentType` (parameters like `; charset=utf-8` ignored). Apply (`application/apply-patch+yaml`)
   * creates a missing object (`created` true → HTTP 201); other types give 404 when missing.
   * Errors: 415 unknown type, 422 missing fieldManager for apply or `force` on a non-apply patch,
   * 400 undecodable body or wrong apiVersion/kind/name, 409 stale resourceVersion or apply conflict.
   */
  patch(
    t: Target,
    subresource: string | undefined,
    contentType: string,
    raw: string,
    opts: WriteOptions & { force?: boolean; fieldManagerGiven: boolean },
  ): { object: KubeObject; created: boolean } {
    const ct = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
    const isApply = ct === "application/apply-patch+yaml";
    if (isApply && !opts.fieldManagerGiven) {
      throw invalid("PatchOptions", "meta.k8s.io", "", [
        { reason: "FieldValueRequired", message: "Required value: is required for apply patch", field: "fieldManager" },
      ]);
    }
    if (!isApply && opts.force !== undefined) {
      throw invalid("PatchOptions", "meta.k8s.io", "", [
        { reason: "FieldValueForbidden", message: "Forbidden: may not be specified for non-apply patch", field: "force" },
      ]);
    }
    const scope = subresource === "status" ? "status" : "main";
    if (isApply) {
      let applied: unknown;
      try {
        applied = parseYaml(raw);
      } catch (e) {
        throw badRequest(`error decoding patch: ${(e as Error).message}`);
      }
      if (!isObj(applied)) throw badRequest("error decoding patch: the body is not an object");
      return this.apply(t, applied, scope, opts.manager, opts.force === true, opts.dryRun);
    }
    const fn =
      ct === "application/merge-patch+json"
        ? mergePatch
        : ct === "application/strategic-merge-patch+json"
          ? strategicMergePatch
          : ct === "application/json-patch+json"
            ? jsonPatch
            : undefined;
    if (!fn) throw unsupportedMediaType(contentType);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch (e) {
      throw badRequest(`error decoding patch: ${(e as Error).message}`);
    }
    const current = this.store.get(t.rt.group, t.rt.plural, t.namespace, t.name);
    if (!current) throw notFound(t.rt, t.name);
    const patched = fn(this.present(t.rt, current), body);
    if (!isObj(patched)) throw badRequest("the patch did not produce an object");
    this.checkTypeAndIdentity(t.rt, patched, t.namespace, t.name);
    return { object: this.replace(t, current, patched as KubeObject, scope, opts), created: false };
  }

  private apply(t: Target, applied: Obj, scope: "main" | "status", manager: string, force: boolean, dryRun: boolean): { object: KubeObject; created: boolean } {
    const rt = t.rt;
    const gvk = `${String(applied.apiVersion ?? "")}, Kind=${String(applied.kind ?? "")}`;
    if (applied.apiVersion !== groupVersion(rt) || applied.kind !== rt.kind) throw badRequest(`invalid object type: ${gvk}`);
    const meta: Obj = isObj(applied.metadata) ? applied.metadata : {};
    if (meta.managedFields !== undefined) throw badRequest("metadata.managedFields must be nil");
    this.checkTypeAndIdentity(rt, applied, t.namespace, t.name);
    const body = clone(applied) as KubeObject;
    body.metadata = { ...meta, name: t.name } as KubeObject["metadata"];
    if (rt.namespaced) body.metadata.namespace = t.namespace;
    const current = this.store.get(rt.group, rt.plural, t.namespace, t.name);
    const rv = meta.resourceVersion;
    if (!current) {
      if (scope === "status") throw notFound(rt, t.name);
      if (rv !== undefined && rv !== "") throw conflict(rt, t.name);
      refuseTerminating(rt);
      const obj = serverSideApply({ current: undefined, applied: body, manager, force, scope }, ssaContext(rt));
      const managedFields = obj.metadata.managedFields;
      this.initMetadata(rt, obj, t.namespace);
      if (managedFields) obj.metadata.managedFields = managedFields;
      applyCreateDefaults(rt.kind, rt.group, obj);
      this.validate(rt, obj);
      this.checkNamespaceWritable(rt, t.namespace, t.name);
      return { object: this.commit(rt, undefined, obj, dryRun), created: true };
    }
    if (rv !== undefined && rv !== "" && rv !== current.metadata.resourceVersion) throw conflict(rt, t.name);
    const after = serverSideApply({ current: this.present(rt, current), applied: body, manager, force, scope }, ssaContext(rt));
    after.metadata.resourceVersion = current.metadata.resourceVersion;
    normaliseData(rt.kind, after);
    this.validate(rt, after);
    this.bumpGeneration(rt, current, after);
    return { object: this.commit(rt, current, after, dryRun), created: false };
  }

  /** GET `/scale`: an autoscaling/v1 Scale for Deployments, StatefulSets and ReplicaSets. */
  getScale(t: Target): Obj {
    const o = this.get(t);
    const spec: Obj = isObj(o.spec) ? o.spec : {};
    const status: Obj = isObj(o.status) ? o.status : {};
    const sel =
      isObj(spec.selector) && isObj(spec.selector.matchLabels)
        ? Object.entries(spec.selector.matchLabels)
            .map(([k, v]) => `${k}=${String(v)}`)
            .join(",")
        : "";
    return {
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      metadata: {
        name: o.metadata.name,
        namespace: o.metadata.namespace,
        uid: o.metadata.uid,
        resourceVersion: o.metadata.resourceVersion,
        creationTimestamp: o.metadata.creationTimestamp,
      },
      spec: { replicas: typeof spec.replicas === "number" ? spec.replicas : 1 },
      status: { replicas: typeof status.replicas === "number" ? status.replicas : 0, selector: sel },
    };
  }

  /** PUT/PATCH `/scale`: sets `spec.replicas` from the (patched) Scale; returns the new Scale. */
  updateScale(t: Target, method: "PUT" | "PATCH", contentType: string, raw: string, opts: WriteOptions): Obj {
    const scale = this.getScale(t);
    let next: unknown;
    try {
      const body: unknown = JSON.parse(raw);
      const ct = contentType.split(";")[0]?.trim() ?? "";
      next = method === "PUT" ? body : ct === "application/json-patch+json" ? jsonPatch(scale, body) : mergePatch(scale, body);
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw badRequest(`error decoding body: ${(e as Error).message}`);
    }
    const replicas = isObj(next) && isObj(next.spec) ? next.spec.replicas : undefined;
    if (typeof replicas !== "number" || replicas < 0)
      throw invalid("Scale", "autoscaling", t.name, [
        { reason: "FieldValueInvalid", message: "Invalid value: must be greater than or equal to 0", field: "spec.replicas" },
      ]);
    const current = this.store.get(t.rt.group, t.rt.plural, t.namespace, t.name);
    if (!current) throw notFound(t.rt, t.name);
    const body = clone(current);
    body.spec = { ...(isObj(body.spec) ? body.spec : {}), replicas };
    this.replace(t, current, body, "main", opts);
    return this.getScale(t);
  }

  /** DELETE one object with DeleteOptions (see module doc). 404 when missing, 409 on failed preconditions, 422 bad policy, 403 protected namespace. */
  delete(t: Target, opts: DeleteOptions): DeleteResult {
    const rt = t.rt;
    const policy = opts.propagationPolicy;
    if (policy !== undefined && !["Orphan", "Background", "Foreground"].includes(policy)) {
      throw invalid("DeleteOptions", "meta.k8s.io", "", [
        {
          reason: "FieldValueNotSupported",
          message: `Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"`,
          field: "propagationPolicy",
        },
      ]);
    }
    if (policy !== undefined && opts.orphanDependents !== undefined) {
      throw invalid("DeleteOptions", "meta.k8s.io", "", [
        { reason: "FieldValueInvalid", message: 'Invalid value: "": orphanDependents and deletionPropagation cannot be both set', field: "propagationPolicy" },
      ]);
    }
    const current = this.store.get(rt.group, rt.plural, t.namespace, t.name);
    if (!current) throw notFound(rt, t.name);
    if (rt.group === "" && rt.kind === "Namespace" && PROTECTED_NAMESPACES.includes(t.name)) throw forbidden(rt, t.name, "this namespace may not be deleted");
    const pre = opts.preconditions;
    if (pre?.uid && pre.uid !== current.metadata.uid)
      throw conflict(rt, t.name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`);
    if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(
        rt,
        t.name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
      );
    }
    const effective = policy ?? (opts.orphanDependents === true ? "Orphan" : opts.orphanDependents === false ? "Background" : undefined);
    if (opts.dryRun) return { body: this.present(rt, current) };
    const snapshot = this.markOrRemove(rt.group, rt.plural, current, effective);
    this.sweep();
    if (snapshot.metadata.deletionTimestamp) {
      const still = this.store.get(rt.group, rt.plural, t.namespace, t.name);
      return { body: this.present(rt, still ?? snapshot) };
    }
    const details: Obj = { name: t.name, kind: rt.plural, uid: current.metadata.uid };
    if (rt.group) details.group = rt.group;
    return { body: { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details } };
  }

  /** DELETE on a collection: deletes every matching object (each as {@link delete}); returns the list of what was matched. */
  deleteCollection(
    rt: ResourceType,
    namespace: string | undefined,
    labelSelector: string | undefined,
    fieldSelector: string | undefined,
    opts: DeleteOptions,
  ): Obj {
    const { items } = this.list(rt, namespace, labelSelector, fieldSelector);
    for (const o of items) {
      try {
        this.delete({ rt, namespace: o.metadata.namespace ?? "", name: o.metadata.name }, opts);
      } catch (e) {
        if (!(e instanceof ApiError && (e.code === 404 || e.code === 403))) throw e;
      }
    }
    return { kind: rt.listKind, apiVersion: groupVersion(rt), metadata: { resourceVersion: String(this.store.currentRv()) }, items };
  }

  /**
   * Starts deleting `obj`: adds the GC finalizer the policy asks for and sets deletionTimestamp when
   * any finalizer (or namespace content) must run first, else removes it at once. Returns the
   * object as it was left (with deletionTimestamp) or as removed.
   */
  private markOrRemove(group: string, plural: string, obj: KubeObject, policy: string | undefined): KubeObject {
    if (obj.metadata.deletionTimestamp) return obj;
    let fins = [...(obj.metadata.finalizers ?? [])];
    if (policy === "Orphan") fins = [...fins.filter((f) => f !== "foregroundDeletion" && f !== "orphan"), "orphan"];
    if (policy === "Foreground") fins = [...fins.filter((f) => f !== "foregroundDeletion" && f !== "orphan"), "foregroundDeletion"];
    if (policy === "Background") fins = fins.filter((f) => f !== "foregroundDeletion" && f !== "orphan");
    if (isCrd(group, plural) && !fins.includes(CRD_CLEANUP_FINALIZER)) fins.push(CRD_CLEANUP_FINALIZER);
    const isNamespace = group === "" && plural === "namespaces";
    if (fins.length === 0 && !isNamespace) {
      return this.store.remove(group, plural, obj.metadata.namespace ?? "", obj.metadata.name) ?? obj;
    }
    const next = clone(obj);
    next.metadata.deletionTimestamp = nowRfc3339();
    next.metadata.deletionGracePeriodSeconds = 0;
    if (fins.length) next.metadata.finalizers = fins;
    else delete next.metadata.finalizers;
    if (typeof next.metadata.generation === "number") next.metadata.generation += 1;
    if (isNamespace) next.status = { ...(isObj(next.status) ? next.status : {}), phase: "Terminating" };
    if (isCrd(group, plural)) this.reconcileOne({ group, kind: "CustomResourceDefinition", statusSubresource: true }, next);
    return this.store.put(group, plural, next);
  }

  /**
   * Writes `after` (the result of a create/update) after running the controllers on it. Skips the
   * write when nothing changed, removes the object when it is being deleted and has no finalizers
   * left, then runs the cluster-wide sweep. Returns the object as served.
   */
  private commit(rt: ResourceType, before: KubeObject | undefined, after: KubeObject, dryRun: boolean): KubeObject {
    this.reconcileOne(rt, after);
    if (before && deepEqual(comparable(before), comparable(after))) return this.present(rt, before);
    if (dryRun) return this.present(rt, after);
    const ns = after.metadata.namespace ?? "";
    if (after.metadata.deletionTimestamp && (after.metadata.finalizers ?? []).length === 0 && !(rt.group === "" && rt.kind === "Namespace")) {
      const gone = this.store.remove(rt.group, rt.plural, ns, after.metadata.name);
      this.sweep();
      return this.present(rt, gone ?? after);
    }
    const stored = this.store.put(rt.group, rt.plural, after);
    this.sweep();
    return this.present(rt, this.store.get(rt.group, rt.plural, ns, after.metadata.name) ?? stored);
  }

  /** Runs the scheduler and status controllers on one object (in place). Returns true when it changed. */
  private reconcileOne(rt: { group: string; kind: string; statusSubresource: boolean }, obj: KubeObject): boolean {
    const nodes = this.store.list("", "nodes");
    let changed = false;
    if (rt.group === "" && rt.kind === "Pod" && !obj.metadata.deletionTimestamp) {
      const node = scheduleNode(obj, nodes);
      if (node) {
        obj.spec = { ...(isObj(obj.spec) ? obj.spec : {}), nodeName: node };
        changed = true;
      }
    }
    const st = desiredStatus(rt.group, rt.kind, obj, { nodes, progress: (o) => this.progress(o) });
    if (st) {
      const before = clone(obj);
      obj.status = st;
      recordUpdate(before, obj, before.metadata.managedFields, "kube-controller-manager", rt.statusSubresource ? "status" : "main", ssaContext(rt));
      changed = true;
    }
    return changed;
  }

  /**
   * The garbage collector, namespace controller, CRD cleanup and status controllers, run to a fixed
   * point after every write (bounded to 100 rounds).
   */
  private sweep(): void {
    for (let round = 0; round < 100; round++) {
      if (!this.sweepOnce()) break;
    }
    // Now and then, forget the objects that are gone.
    if (this.since.size > 0 && ++this.sweeps % 64 === 0) {
      const uids = new Set(this.store.all().map((e) => e.object.metadata.uid));
      for (const uid of this.since.keys()) if (!uids.has(uid)) this.since.delete(uid);
    }
    this.schedule();
  }

  private sweepOnce(): boolean {
    const all = this.store.all();
    const uids = new Set(all.map((e) => e.object.metadata.uid));
    const types = this.registry.all();
    const served = new Set(types.map((r) => `${r.group}/${r.plural}`));
    const dependents = (uid: string) => all.filter((e) => refsOf(e.object).some((r) => r.uid === uid));
    let changed = false;
    for (const { group, plural, object: o } of all) {
      const ns = o.metadata.namespace ?? "";
      if (!this.store.get(group, plural, ns, o.metadata.name)) continue;
      if (!served.has(`${group}/${plural}`)) {
        this.store.remove(group, plural, ns, o.metadata.name);
        changed = true;
        continue;
      }
      if (o.metadata.deletionTimestamp) {
        let fins = [...(o.metadata.finalizers ?? [])];
        if (fins.includes("orphan")) {
          for (const d of dependents(o.metadata.uid)) {
            const cur = this.store.get(d.group, d.plural, d.object.metadata.namespace ?? "", d.object.metadata.name);
            if (!cur) continue;
            const refs = refsOf(cur).filter((r) => r.uid !== o.metadata.uid);
            if (refs.length) cur.metadata.ownerReferences = refs;
            else delete cur.metadata.ownerReferences;
            this.store.put(d.group, d.plural, cur);
          }
          fins = fins.filter((f) => f !== "orphan");
        }
        if (fins.includes("foregroundDeletion")) {
          for (const d of dependents(o.metadata.uid)) {
            const cur = this.store.get(d.group, d.plural, d.object.metadata.namespace ?? "", d.object.metadata.name);
            if (cur && !cur.metadata.deletionTimestamp) {
              this.markOrRemove(d.group, d.plural, cur, "Foreground");
              changed = true;
            }
          }
          const blocking = dependents(o.metadata.uid).some(
            (d) =>
              this.store.get(d.group, d.plural, d.object.metadata.namespace ?? "", d.object.metadata.name) &&
              refsOf(d.object).some((r) => r.uid === o.metadata.uid && r.blockOwnerDeletion === true),
          );
          if (!blocking) fins = fins.filter((f) => f !== "foregroundDeletion");
        }
        if (isCrd(group, plural) && fins.includes(CRD_CLEANUP_FINALIZER)) {
          // apiextensions' finalizer controller: delete every resource of the CRD, then let it go.
          const spec = isObj(o.spec) ? o.spec : {};
          const names = isObj(spec.names) ? spec.names : {};
          const resources = this.store.all().filter((e) => e.group === spec.group && e.plural === names.plural);
          for (const r of resources) {
            if (r.object.metadata.deletionTimestamp) continue;
            this.markOrRemove(r.group, r.plural, r.object, undefined);
            changed = true;
          }
          const left = this.store.all().some((e) => e.group === spec.group && e.plural === names.plural);
          if (!left) fins = fins.filter((f) => f !== CRD_CLEANUP_FINALIZER);
        }
        if (group === "" && plural === "namespaces") {
          const content = all.filter(
            (e) => e.object.metadata.namespace === o.metadata.name && this.store.get(e.group, e.plural, o.metadata.name, e.object.metadata.name),
          );
          for (const c of content) {
            this.markOrRemove(c.group, c.plural, c.object, undefined);
            changed = true;
          }
          if (content.length > 0) continue;
        }
        if (fins.length === 0) {
          this.store.remove(group, plural, ns, o.metadata.name);
          changed = true;
        } else if (!deepEqual(fins, o.metadata.finalizers ?? [])) {
          const cur = this.store.get(group, plural, ns, o.metadata.name);
          if (cur) {
            cur.metadata.finalizers = fins;
            this.store.put(group, plural, cur);
            changed = true;
          }
        }
        continue;
      }
      const refs = refsOf(o);
      if (refs.length) {
        const alive = refs.filter((r) => uids.has(r.uid));
        if (alive.length === 0) {
          this.markOrRemove(group, plural, o, "Background");
          changed = true;
          continue;
        }
        if (alive.length < refs.length) {
          const cur = clone(o);
          cur.metadata.ownerReferences = alive;
          this.store.put(group, plural, cur);
          changed = true;
          continue;
        }
      }
      const rt = types.find((r) => r.group === group && r.plural === plural);
      if (rt) {
        const cur = clone(o);
        if (this.reconcileOne(rt, cur)) {
          this.store.put(group, plural, cur);
          changed = true;
        }
      }
    }
    return changed;
  }
}
