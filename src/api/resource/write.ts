/**
 * The writes of the generic resource endpoints: create, update, patch and delete (dry run, the
 * admission checks above the store), a review kind's create, and deletecollection.
 */
import { alreadyExists, badRequest, methodNotAllowed, notFound } from "../../k8s/errors.ts";
import { apiVersionOf, type CreatedSecret } from "../../k8s/kind.ts";
import { isJsonObject, type KubeObject } from "../../k8s/meta.ts";
import { LIST_CHUNK_ROWS } from "../../store/store.ts";
import { computeWrite, decode, type WriteRequest } from "../../k8s/write.ts";
import { admitNamespace } from "../../namespaces/lifecycle.ts";
import { authorizeRequest, isPrivileged, rbacWriteExtras } from "../../auth/rbac-store.ts";
import { isNonResourceRequest } from "../../auth/rbac-types.ts";
import { admitApiWrite, OCM_ADMITTED_KINDS, type ClusterTransition } from "../../auth/ocm-admission.ts";
import { answerReview } from "../reviews.ts";
import { clock } from "../../clock.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import { ORPHAN_WARNED_KINDS, orphanWorkWarning } from "../../work/orphan-warning.ts";
import { dropUnknownFields, fieldValidationOf, unknownFieldMessages, warningHeader } from "../fieldvalidation.ts";
import { decodesProtobuf } from "../protobuf.ts";
import { decodeDelete, decodeObjectBody } from "../request.ts";
import { type Ctx, type Target } from "./target.ts";
import { present, json, shape } from "./answer.ts";
import { selectorOf } from "./selectors.ts";

/**
 * A server-side apply of an object that does not exist creates it: as kube-apiserver's patch
 * handler, the user must then also be allowed to `create` it (the request was authorized as
 * `patch`). `system:masters` is not checked (nothing is read).
 * @throws ApiError 403 as kube-apiserver words it
 */
async function authorizeCreateOnApply(c: Ctx, t: Target, req: WriteRequest): Promise<void> {
  if (req.verb !== "patch" || req.patchType !== "apply" || req.subresource || t.name === undefined || isPrivileged(c.var.user)) return;
  if (await admittedStoreOf(c.env, t.def).get(t.namespace, t.name)) return;
  const attrs = c.var.attributes;
  if (isNonResourceRequest(attrs)) return;
  await authorizeRequest(c.env, c.var.user, { ...attrs, verb: "create" });
}

/** Runs a decoded write; `warnings` (from decoding the body under `fieldValidation=Warn`) become `Warning` headers. */
export async function write(c: Ctx, t: Target, req: WriteRequest, warnings: string[] = []): Promise<Response> {
  if (t.def.systemOwned) throw methodNotAllowed(`${t.def.plural}.${t.def.group} are written by the hub's scheduler only`);
  const mode = req.verb === "delete" ? "Strict" : fieldValidationOf(c);
  const dropped = dropUnknownFields(t.def.schema, req, mode);
  const dryRun = c.req.queries("dryRun") ?? [];
  for (const v of dryRun) if (v !== "All") throw badRequest(`dryRun: Unsupported value: ${JSON.stringify(v)}: supported values: "All"`, "dryRun");
  await authorizeCreateOnApply(c, t, req);
  const response = dryRun.length > 0 ? await writeDryRun(c, t, req) : await writeValidated(c, t, req);
  if (mode === "Warn") warnings.push(...unknownFieldMessages(dropped));
  const orphan = ORPHAN_WARNED_KINDS.has(t.def) ? await orphanWorkWarning(c.env, t.def, t.namespace, response.status) : undefined;
  if (orphan !== undefined) warnings.push(orphan);
  for (const w of warnings) response.headers.append("Warning", warningHeader(w));
  return response;
}

/** The verbs of a request whose one write commits the request's audit record with it (src/store/types.ts `CommitAudit`). */
const AUDITED_WITH_COMMIT: ReadonlySet<string> = new Set(["create", "update", "patch", "delete"]);

/**
 * A write stored: the kind's create secret (`KindDefinition.createSecret`), a subresource's
 * extras, the RBAC kinds' extras and OCM's admission, then the store's write; answers the object
 * (201 when created) or, for a delete that removed it at once, a Status.
 * @throws ApiError as the store and the admission checks refuse
 */
async function writeValidated(c: Ctx, t: Target, req: WriteRequest): Promise<Response> {
  let name = t.name;
  let extras: Record<string, unknown> | undefined;
  let secret: CreatedSecret | undefined;
  if (req.verb === "create") {
    const meta = isJsonObject(req.body) && isJsonObject(req.body.metadata) ? req.body.metadata : {};
    name = typeof meta.name === "string" && meta.name ? meta.name : undefined;
    if (t.def.createSecret) {
      secret = await t.def.createSecret(req.body, false);
      // The kind may have named the object (a BootstrapToken after its chosen token's ID).
      if (isJsonObject(req.body) && isJsonObject(req.body.metadata) && typeof req.body.metadata.name === "string") name = req.body.metadata.name;
      extras = secret.extras;
    }
  }
  if (t.update) extras = t.update.extras;
  const rbac = await rbacWriteExtras(c.env, t.def, c.var.user);
  if (rbac) extras = { ...extras, ...rbac };
  const admitted = await admitOcm(c, t, req, name);
  // The request's audit record commits with its write (one D1 call for both), unless the request
  // writes several objects (deletecollection), whose record the audit middleware stores.
  const audit = c.var.audit && AUDITED_WITH_COMMIT.has(c.var.attributes.verb) ? c.var.audit : undefined;
  const outcome = await admittedStoreOf(c.env, t.def).write(t.namespace, name, req, { extras, ...(admitted ? { admitted } : {}), ...(audit ? { audit } : {}) });
  if (!outcome.object) {
    return json({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details: { name, group: t.def.group, kind: t.def.plural } });
  }
  if (outcome.created) c.set("createdName", outcome.object.metadata.name);
  // A copy only for the kind that reveals a secret in its answer (the stored object stays as stored).
  const reveal = secret?.reveal && outcome.created ? secret.reveal : undefined;
  const out = reveal ? structuredClone(outcome.object) : outcome.object;
  reveal?.(out);
  return json(shape(c, t.def, out, "object"), outcome.created ? 201 : 200);
}

/** OCM's checks of the write (src/auth/ocm-admission.ts `admitApiWrite`) on the object as stored, for the kinds they concern. */
function admitOcm(c: Ctx, t: Target, req: WriteRequest, name: string | undefined): Promise<ClusterTransition | undefined> {
  if (!OCM_ADMITTED_KINDS.has(t.def)) return Promise.resolve(undefined);
  return admitApiWrite(c.env, c.var.user, t.def, t.namespace, name, req, () => admittedStoreOf(c.env, t.def).get(t.namespace, name!), clock.now());
}

/**
 * `dryRun=All` (apiserver): the write is decoded, defaulted and validated exactly as a real one
 * and the answer is the object that would be stored, but nothing is stored and nothing is
 * triggered. Server-set fields computed at commit (resourceVersion, the hub controllers'
 * conditions) are absent or stale in the answer. @throws ApiError as the real write would
 */
async function writeDryRun(c: Ctx, t: Target, req: WriteRequest): Promise<Response> {
  const secret = req.verb === "create" && t.def.createSecret ? await t.def.createSecret(req.body, true) : undefined;
  const meta = req.verb === "create" && isJsonObject(req.body) && isJsonObject(req.body.metadata) ? req.body.metadata : {};
  const name = req.verb === "create" ? (typeof meta.name === "string" ? meta.name : undefined) : t.name;
  const current = name ? await admittedStoreOf(c.env, t.def).get(t.namespace, name) : null;
  const ref = { group: t.def.group, plural: t.def.plural, name };
  // NamespaceLifecycle admits a dry run as a real write.
  await admitNamespace(c.env, t.def, t.namespace, name, req, () => Promise.resolve(current !== null));
  if (req.verb === "create" && current) throw alreadyExists(ref);
  // OCM's webhooks check a dry run as a real write.
  await admitOcm(c, t, req, name);
  const extras = { ...(t.update ? t.update.extras : (secret?.extras ?? {})), ...(await rbacWriteExtras(c.env, t.def, c.var.user)) };
  const ctx = { now: clock.now(), newUid: () => crypto.randomUUID(), extras };
  const { next, created } = computeWrite(t.def, { namespace: t.namespace, name }, req.verb === "create" ? null : current, req, ctx);
  if (next && next !== current && t.def.finalize) await t.def.finalize(next, req.verb === "create" ? null : current, ctx);
  const shown = next ?? current;
  if (!shown) throw notFound(ref);
  return json(shape(c, t.def, shown, "object"), created ? 201 : 200);
}

/**
 * A request on a review kind (`createOnly`, src/api/reviews.ts): a POST on the collection is
 * decoded, checked against the kind's schema and answered; any other method is 405, as
 * kube-apiserver's create-only resources answer.
 * @throws ApiError 400 (undecodable or unknown fields), 405, 422
 */
export async function review(c: Ctx, t: Target, method: string, warnings: string[]): Promise<Response> {
  if (method !== "POST" || t.name !== undefined) throw methodNotAllowed("the server does not allow this method on the requested resource");
  const body = await decodeObjectBody(c, warnings, decodesProtobuf(apiVersionOf(t.def), t.def.kind));
  const req: WriteRequest = { verb: "create", body };
  const mode = fieldValidationOf(c);
  const dropped = dropUnknownFields(t.def.schema, req, mode);
  const response = await answerReview(c, t.def, decode(t.def, req.body, undefined) as unknown as Record<string, unknown>);
  if (mode === "Warn") warnings.push(...unknownFieldMessages(dropped));
  const orphan = ORPHAN_WARNED_KINDS.has(t.def) ? await orphanWorkWarning(c.env, t.def, t.namespace, response.status) : undefined;
  if (orphan !== undefined) warnings.push(orphan);
  for (const w of warnings) response.headers.append("Warning", warningHeader(w));
  return response;
}

/** How many objects of a deletecollection are deleted at once. */
const DELETE_COLLECTION_CONCURRENCY = 8;

/**
 * DELETE on a collection (kube-apiserver's `deletecollection`): deletes each object that a list
 * with the request's `labelSelector` and `fieldSelector` selects, one by one as a DELETE of it
 * would (DeleteOptions preconditions, `dryRun`, finalizers, an accepted cluster's leave, the
 * after-commit hooks), and answers the list of those objects as their deletes left them (with
 * `deletionTimestamp` while a finalizer holds one). An object gone meanwhile is skipped; the
 * first other refusal is the answer. The path of a namespaced kind must name a namespace
 * (kube-apiserver serves deletecollection on namespaced paths only).
 * @throws ApiError 405 (system-owned kind, or all namespaces), 400 (bad selector or options)
 */
export async function deleteCollection(c: Ctx, t: Target): Promise<Response> {
  if (t.def.namespaced && !t.namespace) throw methodNotAllowed("DELETE is not allowed on a collection across all namespaces");
  if (t.def.systemOwned) throw methodNotAllowed(`${t.def.plural}.${t.def.group} are written by the hub's scheduler only`);
  if (t.def.deleteCollectionRefusal !== undefined) throw methodNotAllowed(t.def.deleteCollectionRefusal);
  const req = await decodeDelete(c);
  const { filter: selects, index } = selectorOf(c, t.def);
  const conv = t.def.conversion;
  const filter = conv ? (o: KubeObject) => selects(conv.fromStorage(o)) : selects;
  const deleted: KubeObject[] = [];
  let after: { namespace: string; name: string } | undefined;
  let resourceVersion: string;
  do {
    const page = await admittedStoreOf(c.env, conv?.storage ?? t.def).listPage(t.namespace, { after, limit: LIST_CHUNK_ROWS, filter, index });
    resourceVersion = page.resourceVersion;
    for (let i = 0; i < page.items.length; i += DELETE_COLLECTION_CONCURRENCY) {
      const batch = page.items.slice(i, i + DELETE_COLLECTION_CONCURRENCY);
      const answers = await Promise.all(batch.map((o) => write(c, { ...t, name: o.metadata.name }, req)));
      for (const [j, res] of answers.entries()) {
        if (res.status === 404) continue;
        if (res.status >= 300) return res;
        const body = (await res.json()) as KubeObject;
        // A delete that removed the object at once answers a Status: the object is shown as listed.
        deleted.push(body.kind === "Status" ? present(t.def, conv ? conv.fromStorage(batch[j]!) : batch[j]!) : body);
      }
    }
    after = page.next;
  } while (after);
  return json({ apiVersion: apiVersionOf(t.def), kind: t.def.listKind, metadata: { resourceVersion }, items: deleted });
}
