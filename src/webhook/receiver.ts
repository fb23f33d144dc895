/**
 * The webhook receiver endpoint, `POST /hooks/{id}`, after Flux's notification-controller
 * Receiver: no bearer token, the HMAC signature is the credential.
 *
 * Steps, each failure a Kubernetes Status that changes nothing:
 * 1. `id` must be the path of a WebhookReceiver (`status.webhookPath`), else 404 NotFound.
 * 2. The body is read raw, at most `MAX_HOOK_BODY_BYTES` (1 MiB), else 413.
 * 3. The receiver's Secret must exist with a non-empty `data.token`, else 401 (the signature
 *    cannot be verified); the signature header (`X-Signature-256` for `generic`,
 *    `X-Hub-Signature-256` for `github`) must be `sha256=<hex HMAC-SHA256 of the raw body>`,
 *    compared in constant time, else 401.
 * 4. `github` with `X-GitHub-Event: ping`: 200, nothing else.
 * 5. The delivery ID header (`X-Delivery-Id` / `X-GitHub-Delivery`, 1-256 printable ASCII
 *    characters) is required (400); payload templates are resolved (400 when the payload is not
 *    JSON, 422 `payload has no .a.b` when a field is absent).
 * 6. The delivery is claimed (src/store/d1/deliveries.ts, through the Storage); an ID already claimed is 409.
 * 7. The action runs through the store (src/store/store.ts: the target's validation, the scheduler, works
 *    delivery) or the re-evaluation; a target that is missing or would become invalid is 422 and
 *    the claim is released so the same delivery may be retried.
 *
 * Success is 200 with `{message, action, deliveryId, changed, target: {apiVersion, kind,
 * namespace, name, resourceVersion}}`.
 */
import { Hono, type Context } from "hono";
import { ApiError, badRequest, methodNotAllowed, unauthorized, type StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { decodeJson } from "../k8s/decode.ts";
import { isJsonObject, type KubeObject } from "../k8s/meta.ts";
import { ManifestWorkReplicaSetKind } from "../kinds/manifestwork.ts";
import { PlacementKind } from "../kinds/placement.ts";
import { decodeBase64, SecretKind } from "../kinds/secret.ts";
import { HOOKS_PREFIX, WebhookReceiverKind, type WebhookReceiverSpec } from "../kinds/webhookreceiver.ts";
import { readBodyBytes, statusResponse } from "../api/request.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { storageOf } from "../store/storage.ts";
import { rbacAuthorizer } from "../auth/rbac-store.ts";
import type { UserInfo } from "../auth/rbac-types.ts";
import { RBAC_AUTHOR_EXTRA, type RbacAuthor } from "../kinds/rbac.ts";
import { reschedule } from "../placement/controller.ts";
import { reevaluateReplicaSet } from "../work/replicaset.ts";
import type { Env } from "../env.ts";
import { applyJsonPatch } from "../k8s/jsonpatch.ts";
import { verifySignature } from "./signature.ts";
import { recordEvent, refOf, type EventSpec } from "../events/record.ts";
import { resolveTemplates, stringsOf, hasTemplate } from "../kinds/webhook-template.ts";
import { clock } from "../clock.ts";

/** Largest delivery body accepted, in bytes (1 MiB; GitHub caps payloads at 25 MB, Flux reads them whole). */
export const MAX_HOOK_BODY_BYTES = 1024 * 1024;

/** Longest delivery ID accepted, in characters. */
export const MAX_DELIVERY_ID_LENGTH = 256;

/** The headers of each receiver type: signature, delivery ID, and (github) event. */
export const RECEIVER_HEADERS = {
  generic: { signature: "X-Signature-256", delivery: "X-Delivery-Id" },
  github: { signature: "X-Hub-Signature-256", delivery: "X-GitHub-Delivery", event: "X-GitHub-Event" },
} as const;

type Ctx = Context<{ Bindings: Env }>;

/** What a successful delivery did to its target. */
export interface DeliveryResult {
  message: string;
  action: WebhookReceiverSpec["action"]["type"];
  deliveryId: string;
  changed: boolean;
  target: { apiVersion: string; kind: string; namespace: string; name: string; resourceVersion?: string };
}

const notFoundHook = () => new ApiError(404, "NotFound", "the server could not find the requested resource: no webhook receiver at this path");

function unprocessable(message: string, causes?: StatusCause[]): ApiError {
  return new ApiError(422, "Invalid", message, {
    group: WebhookReceiverKind.group,
    kind: WebhookReceiverKind.kind,
    ...(causes && causes.length > 0 ? { causes } : {}),
  });
}

/** Finds the receiver whose `status.webhookPath` is `path` (one indexed scan of the receivers). */
async function findReceiver(env: Env, path: string): Promise<KubeObject | null> {
  const obj = await admittedStoreOf(env, WebhookReceiverKind).findByField("$.status.webhookPath", path);
  return obj && !obj.metadata.deletionTimestamp ? obj : null;
}

/** The HMAC key: the receiver's Secret's `data.token`, decoded (opened with the hub's encryption keys). @throws ApiError 401, 500 when the Secret cannot be decrypted */
async function signingKey(env: Env, namespace: string, secretName: string): Promise<Uint8Array> {
  const secret = await admittedStoreOf(env, SecretKind).get(namespace, secretName);
  if (!secret) throw unauthorized(`the signature cannot be verified: the receiver's Secret "${secretName}" was not found`);
  const token = isJsonObject(secret.data) ? secret.data.token : undefined;
  const key = typeof token === "string" ? decodeBase64(token) : null;
  if (!key || key.length === 0) throw unauthorized(`the signature cannot be verified: the receiver's Secret "${secretName}" has no data key "token"`);
  return key;
}

/**
 * The JSON payload the templates read: the body whatever its content type, or GitHub's
 * form-encoded `payload` field (a form-encoded body that is not itself a JSON object or array).
 * `curl -d` sends `application/x-www-form-urlencoded` unless told otherwise, so a JSON body is
 * read as JSON under that type too. @throws ApiError 400
 */
function parsePayload(c: Ctx, body: Uint8Array): unknown {
  let text = new TextDecoder().decode(body);
  const form = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase() === "application/x-www-form-urlencoded";
  if (form && !/^\s*[[{]/.test(text)) {
    text = new URLSearchParams(text).get("payload") ?? "";
  }
  try {
    return decodeJson(text).value; // at most 100 levels deep: its values may be templated into a patch
  } catch (e) {
    throw badRequest(`the payload is not JSON: ${(e as Error).message}`);
  }
}

function deliveryIdOf(c: Ctx, header: string): string {
  const id = c.req.header(header);
  if (!id) throw badRequest(`missing ${header} header: every delivery needs an ID (replay protection)`, header);
  if (id.length > MAX_DELIVERY_ID_LENGTH || !/^[\x21-\x7e]+$/.test(id)) {
    throw badRequest(`invalid ${header} header: 1-${MAX_DELIVERY_ID_LENGTH} printable ASCII characters without spaces`, header);
  }
  return id;
}

/** The patch to apply with the payload's values in place. @throws ApiError 400, 422 */
function resolvedPatch(c: Ctx, spec: WebhookReceiverSpec, body: Uint8Array): unknown {
  const patch = spec.action.patch;
  const templated = stringsOf(patch, "").some((s) => hasTemplate(s.value));
  if (!templated) return patch;
  const payload = parsePayload(c, body);
  if (spec.action.type === "JSONPatch") {
    const ops: unknown[] = [];
    for (const op of patch as Record<string, unknown>[]) {
      if (!("value" in op)) {
        ops.push(op);
        continue;
      }
      const r = resolveTemplates(op.value, payload);
      if (!r.ok) throw unprocessable(`payload has no ${r.missing}`);
      ops.push({ ...op, value: r.value });
    }
    return ops;
  }
  const r = resolveTemplates(patch, payload);
  if (!r.ok) throw unprocessable(`payload has no ${r.missing}`);
  return r.value;
}

function targetKind(spec: WebhookReceiverSpec): KindDefinition {
  return spec.target.kind === "Placement" ? PlacementKind : ManifestWorkReplicaSetKind;
}

/**
 * The identity a receiver acts as on its target: the user `system:webhookreceiver:<namespace>:<name>`
 * (no groups). It holds no permission unless an admin binds one to it; a delivery that would set or
 * change a ManifestWorkReplicaSet's executor needs `execute-as` for it, as a user's write does
 * (a receiver must not run works as an identity its author could not).
 */
export function receiverUser(namespace: string, name: string): UserInfo {
  return { name: `system:webhookreceiver:${namespace}:${name}`, groups: [] };
}

/** Turns the target write's refusal into the receiver's answer: 422 for what the patch made invalid or a missing target. */
function targetError(e: unknown, def: KindDefinition, namespace: string, name: string): unknown {
  if (!(e instanceof ApiError)) return e;
  const what = `${def.kind} "${namespace}/${name}"`;
  if (e.code === 404) return unprocessable(`the target ${what} was not found`);
  if (e.code === 400 || e.code === 422) return unprocessable(`the patched ${what} is invalid: ${e.message}`, e.details?.causes);
  return e;
}

/** Runs the receiver's action on its target. @throws ApiError 409 (still conflicting after retries), 422 */
async function act(
  env: Env,
  namespace: string,
  receiver: string,
  spec: WebhookReceiverSpec,
  patch: unknown,
): Promise<{ object: KubeObject; changed: boolean }> {
  const def = targetKind(spec);
  const name = spec.target.name;
  const store = admittedStoreOf(env, def);
  // The receiver writes as its own identity, so that what a write of the target admits only for
  // a permitted user (a replica set's executor: src/kinds/manifestwork-executor.ts) is checked for it too.
  const extras =
    def === ManifestWorkReplicaSetKind
      ? { [RBAC_AUTHOR_EXTRA]: { user: receiverUser(namespace, receiver), authorizer: await rbacAuthorizer(env) } satisfies RbacAuthor }
      : undefined;
  try {
    if (spec.action.type === "MergePatch") {
      const before = await store.get(namespace, name);
      const { object } = await store.write(namespace, name, { verb: "patch", patchType: "merge", patch }, { extras });
      return { object: object!, changed: object!.metadata.resourceVersion !== before?.metadata.resourceVersion };
    }
    if (spec.action.type === "JSONPatch") {
      for (let attempt = 0; ; attempt++) {
        const current = await store.get(namespace, name);
        if (!current) throw unprocessable(`the target ${def.kind} "${namespace}/${name}" was not found`);
        const r = applyJsonPatch(current, patch as unknown[]);
        if (!r.ok) throw unprocessable(`cannot patch ${def.kind} "${namespace}/${name}": ${r.message}`);
        if (!isJsonObject(r.value)) throw unprocessable(`the patched ${def.kind} "${namespace}/${name}" is not an object`);
        const body = {
          ...r.value,
          metadata: { ...(isJsonObject(r.value.metadata) ? r.value.metadata : {}), resourceVersion: current.metadata.resourceVersion },
        };
        try {
          const { object } = await store.write(namespace, name, { verb: "update", body }, { extras });
          return { object: object!, changed: object!.metadata.resourceVersion !== current.metadata.resourceVersion };
        } catch (e) {
          if (e instanceof ApiError && e.reason === "Conflict" && attempt < 4) continue;
          throw e;
        }
      }
    }
    const current = await store.get(namespace, name);
    if (!current) throw unprocessable(`the target ${def.kind} "${namespace}/${name}" was not found`);
    if (def === PlacementKind) await reschedule(env, { placements: [`${namespace}/${name}`] });
    else await reevaluateReplicaSet(env, namespace, name);
    return { object: (await store.get(namespace, name)) ?? current, changed: false };
  } catch (e) {
    throw targetError(e, def, namespace, name);
  }
}

async function receive(c: Ctx): Promise<Response> {
  const id = c.req.param("id") ?? "";
  if (!/^[0-9a-f]{64}$/.test(id)) throw notFoundHook();
  const receiver = await findReceiver(c.env, `${HOOKS_PREFIX}${id}`);
  if (!receiver) throw notFoundHook();
  const regarding = refOf(WebhookReceiverKind, receiver);
  const record = (spec: Omit<EventSpec, "regarding" | "reportingController">) =>
    c.executionCtx.waitUntil(
      recordEvent(c.env, { ...spec, regarding, reportingController: WEBHOOK_CONTROLLER }).catch((e: unknown) =>
        console.error("recording a webhook delivery's Event failed", e),
      ),
    );
  let answer: Response;
  try {
    answer = await deliver(c, receiver);
  } catch (e) {
    // Refused after its signature held (a request without the secret records nothing: no one
    // could make the hub write by sending unsigned requests); why, by the Status' code and
    // reason only (never the payload).
    if (e instanceof ApiError && e.code !== 401)
      record({ reason: "WebhookDeliveryRefused", type: "Warning", message: `delivery refused: ${e.code} ${e.reason}` });
    throw e;
  }
  if (answer.status < 300) {
    const result = (await answer.clone().json()) as DeliveryResult | { message: string };
    record({ reason: "WebhookDeliveryAccepted", type: "Normal", message: `delivery accepted: ${result.message}` });
  }
  return answer;
}

/** The Events' reportingController of webhook deliveries. */
export const WEBHOOK_CONTROLLER = "webhook-receiver";

/** Checks and runs one delivery to `receiver` (see the module doc). @throws ApiError 401, 409, 413, 422 */
async function deliver(c: Ctx, receiver: KubeObject): Promise<Response> {
  const namespace = receiver.metadata.namespace ?? "";
  const spec = receiver.spec as unknown as WebhookReceiverSpec;
  const headers = RECEIVER_HEADERS[spec.type];
  const body = await readBodyBytes(c, MAX_HOOK_BODY_BYTES);
  const key = await signingKey(c.env, namespace, spec.secretRef.name);
  const check = await verifySignature(c.req.header(headers.signature), key, body, headers.signature);
  if (!check.ok) throw unauthorized(check.reason);
  if (spec.type === "github" && c.req.header(RECEIVER_HEADERS.github.event) === "ping") {
    return c.json({ message: `pong: receiver ${namespace}/${receiver.metadata.name} is ready` });
  }
  const deliveryId = deliveryIdOf(c, headers.delivery);
  const patch = spec.action.type === "Reevaluate" ? undefined : resolvedPatch(c, spec, body);
  const uid = receiver.metadata.uid;
  if (!(await storageOf(c.env).deliveries.claim(uid, deliveryId, clock.now()))) {
    throw new ApiError(409, "Conflict", `delivery ${JSON.stringify(deliveryId)} was already received by ${namespace}/${receiver.metadata.name} (replay)`, {
      name: receiver.metadata.name,
      group: WebhookReceiverKind.group,
      kind: WebhookReceiverKind.plural,
    });
  }
  let outcome: { object: KubeObject; changed: boolean };
  try {
    outcome = await act(c.env, namespace, receiver.metadata.name, spec, patch);
  } catch (e) {
    await storageOf(c.env).deliveries.release(uid, deliveryId);
    throw e;
  }
  const t = spec.target;
  const done = spec.action.type === "Reevaluate" ? "re-evaluated" : outcome.changed ? `patched (${spec.action.type})` : `unchanged by the ${spec.action.type}`;
  const result: DeliveryResult = {
    message: `${t.kind} ${namespace}/${t.name} ${done}`,
    action: spec.action.type,
    deliveryId,
    changed: outcome.changed,
    target: { apiVersion: t.apiVersion, kind: t.kind, namespace, name: t.name, resourceVersion: outcome.object.metadata.resourceVersion },
  };
  return c.json(result);
}

/**
 * The `/hooks` routes (mount with `app.route("/hooks", webhookRoutes())`): `POST /hooks/{id}`
 * as described in the module comment; any other method is 405. No bearer token is read.
 *
 * @example curl -X POST -H "X-Delivery-Id: $(uuidgen)" -H "X-Signature-256: sha256=$SIG" --data-binary @payload.json $HUB/hooks/<id>
 */
export function webhookRoutes(): Hono<{ Bindings: Env }> {
  const app = new Hono<{ Bindings: Env }>();
  app.post("/:id", (c) => receive(c));
  app.all("/:id", () => {
    throw methodNotAllowed("only POST is allowed on a webhook receiver");
  });
  app.onError((err) => {
    if (err instanceof ApiError) return statusResponse(err);
    throw err;
  });
  return app;
}
