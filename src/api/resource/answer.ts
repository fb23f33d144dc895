/** How the generic resource endpoints answer: the served form of an object, JSON bodies, computed kinds' readers. */
import { ApiError } from "../../k8s/errors.ts";
import { type KindDefinition } from "../../k8s/kind.ts";
import { type KubeObject } from "../../k8s/meta.ts";
import { COMPUTED_READERS, type ComputedReader } from "../leases.ts";
import { clock } from "../../clock.ts";
import { toTable } from "../../k8s/table.ts";
import { negotiate, partialObjectMetadata, type Answering } from "../negotiate.ts";
import { type Ctx } from "./target.ts";

/** The reader of computed kind `def`, or undefined for a stored kind. */
export function computedReader(def: KindDefinition): ComputedReader | undefined {
  return def.computed ? COMPUTED_READERS.get(def) : undefined;
}

/**
 * The 405 of a verb a computed kind does not serve, as kube-apiserver's `NewMethodNotSupported`
 * (details: the group and resource). `message` is the kind's refusal.
 */
export function notServed(def: KindDefinition, message: string): ApiError {
  return new ApiError(405, "MethodNotAllowed", message, { group: def.group, kind: def.plural });
}

/** Object `obj` of kind `def` as served: the kind's `present` (e.g. write-only fields dropped), else as stored. */
export function present(def: KindDefinition, obj: KubeObject): KubeObject {
  return def.present ? def.present(obj) : obj;
}

/** A JSON response of `body` with HTTP status `status` (default 200). */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/**
 * An object as the request's `Accept` asks for it (src/api/negotiate.ts): as served (the kind's
 * `present`), as a one-row Table, or its PartialObjectMetadata. `answering` is what the request
 * answers (an object, or a watch's event objects).
 * @throws ApiError 406 when the Accept header names nothing the hub serves
 */
export function shape(c: Ctx, def: KindDefinition, obj: KubeObject, answering: Answering): unknown {
  const form = negotiate(c.req.header("accept"), answering);
  const shown = present(def, obj);
  if (form.kind === "table") return toTable(def, [shown], obj.metadata.resourceVersion, c.req.query("includeObject"), clock.now());
  if (form.kind === "metadata") return partialObjectMetadata(shown, form.version);
  return shown;
}
