/**
 * The subresources created with a body of another kind (`KindDefinition.createSubresources`),
 * each served by the handler of its request kind, as kube-apiserver gives such a subresource its
 * own REST storage (a ServiceAccount's `token`: `TokenREST`, a TokenRequest in and out).
 */
import { ApiError } from "../../k8s/errors.ts";
import type { CreateSubresource } from "../../k8s/kind.ts";
import type { Env } from "../../env.ts";
import { createToken } from "../../auth/serviceaccounts.ts";
import { clock } from "../../clock.ts";
import { decodesProtobuf } from "../protobuf.ts";
import { decodeObjectBody } from "../request.ts";
import { json } from "./answer.ts";
import type { Ctx, Target } from "./target.ts";

/**
 * Serves a create on the subresource of object `name` in `namespace` (the path's): answers the
 * object of the request kind, `requestUrl` being the request's URL and `now` epoch milliseconds.
 * @throws ApiError as the subresource refuses the request
 */
type CreateHandler = (env: Env, requestUrl: string, namespace: string, name: string, body: unknown, now: number) => Promise<unknown>;

/** The handler of each subresource request kind, by `<group>/<version>/<kind>`. */
const CREATE_HANDLERS: Record<string, CreateHandler> = {
  "authentication.k8s.io/v1/TokenRequest": createToken,
};

/**
 * A POST on subresource `sub` of object `t`: the body decoded as `sub`'s kind (`warnings` gathers
 * what `fieldValidation=Warn` drops) and answered by its handler, 201.
 * @throws ApiError 400 (an undecodable body), as the handler refuses, 404 for a request kind the hub serves no handler for
 */
export async function createSubresource(c: Ctx, t: Target, sub: CreateSubresource, warnings: string[]): Promise<Response> {
  const handler = CREATE_HANDLERS[`${sub.group}/${sub.version}/${sub.kind}`];
  if (!handler) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
  const body = await decodeObjectBody(c, warnings, decodesProtobuf(sub.group ? `${sub.group}/${sub.version}` : sub.version, sub.kind));
  return json(await handler(c.env, c.req.url, t.namespace, t.name!, body, clock.now()), 201);
}
