/**
 * The hub's OpenAPI documents, generated from the same zod schemas that validate requests
 * (`KindDefinition.schema`), in the layout the kube-apiserver serves them so that kubectl can use
 * them unchanged:
 *
 * - `GET /openapi/v3`: the OpenAPI v3 discovery document
 *   `{"paths": {"apis/<group>/<version>": {"serverRelativeURL": "/openapi/v3/apis/<group>/<version>?hash=<HASH>"}}}`
 *   (kube-openapi `handler3`); one entry per served group-version. The core group (Secrets) is
 *   `api/v1`, at `/openapi/v3/api/v1`, as the apiserver serves it.
 * - `GET /openapi/v3/apis/<group>/<version>`: an OpenAPI 3.0 document for one group-version:
 *   `components.schemas` keyed by Kubernetes-style names (`io.open-cluster-management.cluster.v1.ManagedCluster`,
 *   `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`, ...), each kind and list kind carrying
 *   `x-kubernetes-group-version-kind`, and `paths` for the resource endpoints whose operations
 *   carry `x-kubernetes-action` and `x-kubernetes-group-version-kind` as the apiserver's do.
 *   With `?hash=` equal to the current hash the response is `Cache-Control: public, immutable`;
 *   a stale hash is redirected (301) to the current URL, as kube-openapi does.
 * - `GET /openapi/v2`: the same schemas and paths as one Swagger 2.0 document (`definitions`).
 *   Served as JSON only; a client that accepts only the protobuf encoding gets 406.
 *
 * What kubectl (1.27+) does with them: `kubectl explain` reads the v3 document of the resource's
 * group-version and finds the kind's schema by its `x-kubernetes-group-version-kind`;
 * `kubectl apply/create/replace` (client-side and `--server-side`) look in the v3 document for a
 * `fieldValidation` query parameter on the kind's PATCH operation and, finding it, send
 * `fieldValidation=Strict` and leave validation to the server, which validates with these very zod
 * schemas. The PATCH operations list only the patch types the hub accepts (JSON merge patch and
 * apply), so client-side `kubectl apply` computes a JSON merge patch, as for custom resources.
 * The core Namespace's PATCH does not list `fieldValidation` (the hub honours it all the same):
 * kubectl's QueryParamVerifier, for a kind it finds no PATCH operation of (a read-only kind, a
 * kind the hub does not serve), asks whether the Namespace's lists it and, if so, lists
 * `customresourcedefinitions.apiextensions.k8s.io`, which the hub did not serve when this was
 * decided (it does now: docs/crds.md), and failed the command; without it, kubectl validates such
 * a kind itself, as before namespaces were served.
 *
 * These endpoints, like `/docs`, are served WITHOUT authentication: they describe the API and hold
 * no data. (The kube-apiserver serves them to any authenticated user; the hub has no
 * authenticated-but-unprivileged users, so the choice is between admin-only and public.)
 */
import { Hono, type Context } from "hono";
import { mediaRanges } from "./negotiate.ts";
import { encodeOpenAPIV2 } from "./openapi-proto.ts";
import { ApiError } from "../k8s/errors.ts";
import { apiAccess } from "../auth/request.ts";
import { ensureBuiltins } from "./builtins.ts";
import type { ApiEnv } from "./context.ts";
import { groupVersionPath } from "./openapi/names.ts";
import { groupVersions, openAPIV3 } from "./openapi/v3.ts";
import { openAPIV2 } from "./openapi/v2.ts";
import { customKindsVersion } from "../kinds/index.ts";

interface Built {
  /** Serialized v3 document and its hash, by path (`apis/<group>/<version>` or `api/<version>`). */
  v3: Map<string, { body: string; hash: string }>;
  v2: string;
  /** The v2 document as gnostic protobuf, encoded the first time a client asks for it. */
  v2Proto?: Uint8Array;
}

/** The media type of the Swagger 2.0 document as gnostic protobuf (what kubectl requests). */
const OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/** Whether an Accept header asks for the protobuf v2 document before JSON. */
function prefersProtobuf(accept: string | undefined): boolean {
  for (const r of mediaRanges(accept ?? "")) {
    if (r.type === OPENAPI_V2_PROTOBUF) return true;
    if (r.type === "application/json" || r.type === "*/*" || r.type === "application/*") return false;
  }
  return false;
}

let built: Promise<Built> | null = null;
/** The custom kinds' version (src/kinds/index.ts `customKindsVersion`) `built` was made at: a CRD change rebuilds the documents. */
let builtAt = 0;

async function sha512Hex(s: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-512", new TextEncoder().encode(s));
  return [...new Uint8Array(d)]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("")
    .toUpperCase();
}

/** Builds (once per isolate) every document and its hash. */
function documents(): Promise<Built> {
  if (builtAt !== customKindsVersion()) [built, builtAt] = [null, customKindsVersion()];
  built ??= (async () => {
    const v3 = new Map<string, { body: string; hash: string }>();
    for (const { group, version } of groupVersions()) {
      const body = JSON.stringify(openAPIV3(group, version));
      v3.set(groupVersionPath(group, version), { body, hash: await sha512Hex(body) });
    }
    return { v3, v2: JSON.stringify(openAPIV2()) };
  })().catch((e) => {
    built = null;
    throw e;
  });
  return built;
}

/**
 * The OpenAPI v3 discovery document (`GET /openapi/v3`): one `apis/<group>/<version>` entry per
 * served group-version whose `serverRelativeURL` carries the document's hash, so clients (kubectl's
 * disk cache) can cache each document for as long as its URL is unchanged.
 */
export async function openAPIV3Discovery(): Promise<{ paths: Record<string, { serverRelativeURL: string }> }> {
  const docs = await documents();
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const [gv, { hash }] of docs.v3) paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${hash}` };
  return { paths };
}

function notFound(): ApiError {
  return new ApiError(404, "NotFound", "the server could not find the requested resource");
}

function jsonResponse(body: string, headers: Record<string, string> = {}, status = 200): Response {
  return new Response(body, { status, headers: { "content-type": "application/json", ...headers } });
}

/** Whether the client accepts JSON (no Accept, `*\/*`, `application/*` or `application/json`). */
function acceptsJson(c: Context): boolean {
  const accept = c.req.header("accept");
  if (!accept) return true;
  return accept.split(",").some((part) => {
    const t = part.split(";")[0]!.trim().toLowerCase();
    return t === "*/*" || t === "application/*" || t === "application/json";
  });
}

/**
 * The routes describing the API (authenticated and authorized like the rest of the API; every
 * authenticated user may read them, by the bootstrap system:discovery role): `/openapi/v2`, `/openapi/v3` and
 * `/openapi/v3/apis/{group}/{version}` (see the module comment for the shapes).
 * Unknown group-versions get a 404 Status; a client accepting only protobuf gets 406
 * NotAcceptable (the hub serves JSON only), as the apiserver answers an unsupported Accept.
 *
 * @example app.route("/", openapiRoutes());
 */
export function openapiRoutes(): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();
  // As kube-apiserver: authenticated, and readable by every authenticated user (system:discovery).
  app.use("/openapi/*", apiAccess(ensureBuiltins));
  const notAcceptable = () => new ApiError(406, "NotAcceptable", "only the following media types are accepted: application/json");

  app.get("/openapi/v2", async (c) => {
    const docs = await documents();
    // kubectl asks for gnostic's protobuf (validation, explain); other clients for JSON.
    if (prefersProtobuf(c.req.header("accept"))) {
      docs.v2Proto ??= encodeOpenAPIV2(JSON.parse(docs.v2) as Record<string, unknown>);
      // As kube-openapi's handler: the protobuf is sent as application/octet-stream (Go's MIME
      // parser, which client-go runs on the answer, refuses the requested type's "@").
      return new Response(docs.v2Proto, { headers: { "content-type": "application/octet-stream", "cache-control": "no-cache, private" } });
    }
    if (!acceptsJson(c)) throw notAcceptable();
    return jsonResponse(docs.v2, { "cache-control": "no-cache, private" });
  });

  app.get("/openapi/v3", async (c) => {
    if (!acceptsJson(c)) throw notAcceptable();
    return c.json(await openAPIV3Discovery(), 200, { "cache-control": "no-cache, private" });
  });

  const v3Document = async (c: Context, gv: string): Promise<Response> => {
    if (!acceptsJson(c)) throw notAcceptable();
    const doc = (await documents()).v3.get(gv);
    if (!doc) throw notFound();
    const etag = `"${doc.hash}"`;
    const hash = c.req.query("hash");
    if (hash !== undefined && hash !== doc.hash) {
      return new Response(null, { status: 301, headers: { location: `/openapi/v3/${gv}?hash=${doc.hash}`, "cache-control": "no-cache, private" } });
    }
    const cache = hash === undefined ? "no-cache, private" : "public, immutable";
    if (c.req.header("if-none-match") === etag) return new Response(null, { status: 304, headers: { etag, "cache-control": cache } });
    return jsonResponse(doc.body, { etag, "cache-control": cache });
  };
  app.get("/openapi/v3/apis/:group/:version", (c) => v3Document(c, groupVersionPath(c.req.param("group"), c.req.param("version"))));
  app.get("/openapi/v3/api/:version", (c) => v3Document(c, groupVersionPath("", c.req.param("version"))));

  return app;
}
