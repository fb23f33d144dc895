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
 * - `GET /openapi/v2`: the same schemas and paths as one Swagger 2.0 document (`definitions`),
 *   as JSON or gnostic protobuf; a client that accepts neither gets 406. Built the first time a
 *   client asks for it (not with the v3 documents, which kubectl needs first), and answered with an
 *   ETag (SHA-512 of the bytes sent) and 304 to a matching `If-None-Match`, as kube-openapi's
 *   handler does.
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
import { groupVersionPath, type JsonSchema } from "./openapi/names.ts";
import { groupVersions, openAPIV3 } from "./openapi/v3.ts";
import { openAPIV2 } from "./openapi/v2.ts";
import { customKindsVersion } from "../kinds/index.ts";

/** The v3 documents of every served group-version: serialized, with their hashes, by path (`apis/<group>/<version>` or `api/<version>`). */
type BuiltV3 = Map<string, { body: string; hash: string }>;

/**
 * The Swagger 2.0 document, built the first time a client asks for it (kubectl asks only when it
 * needs a strategic merge patch's schema, or `--validate` without the v3 documents): its JSON and
 * that JSON's ETag, and its gnostic protobuf with its own ETag, encoded the first time a client
 * asks for that form.
 */
interface BuiltV2 {
  json: string;
  etag: string;
  proto?: { bytes: Uint8Array; etag: string };
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

let builtV3: Promise<BuiltV3> | null = null;
let builtV2: Promise<BuiltV2> | null = null;
/** The custom kinds' version (src/kinds/index.ts `customKindsVersion`) the documents were made at: a CRD change rebuilds them. */
let builtAt = 0;

async function sha512Hex(s: string | Uint8Array): Promise<string> {
  const d = await crypto.subtle.digest("SHA-512", typeof s === "string" ? new TextEncoder().encode(s) : s);
  return [...new Uint8Array(d)]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("")
    .toUpperCase();
}

/** Drops the documents made before the custom kinds last changed. */
function fresh(): void {
  if (builtAt !== customKindsVersion()) [builtV3, builtV2, builtAt] = [null, null, customKindsVersion()];
}

/** Builds (once per isolate, and again after a CRD change) every v3 document and its hash. */
function documents(): Promise<BuiltV3> {
  fresh();
  builtV3 ??= (async () => {
    const v3: BuiltV3 = new Map();
    for (const { group, version } of groupVersions()) {
      const body = JSON.stringify(openAPIV3(group, version));
      v3.set(groupVersionPath(group, version), { body, hash: await sha512Hex(body) });
    }
    return v3;
  })().catch((e) => {
    builtV3 = null;
    throw e;
  });
  return builtV3;
}

/** Builds (once per isolate, and again after a CRD change; only when asked for) the v2 document. */
function documentV2(): Promise<BuiltV2> {
  fresh();
  builtV2 ??= (async () => {
    // From the v3 documents as served (built once), not built again.
    const v3 = await documents();
    const json = JSON.stringify(openAPIV2((group, version) => JSON.parse(v3.get(groupVersionPath(group, version))!.body) as JsonSchema));
    return { json, etag: `"${await sha512Hex(json)}"` };
  })().catch((e) => {
    builtV2 = null;
    throw e;
  });
  return builtV2;
}

/**
 * `body` with its `etag`, or 304 Not Modified when the request's `If-None-Match` names that
 * ETag (or `*`), as kube-openapi's handlers answer through Go's `http.ServeContent`.
 */
function withETag(c: Context, etag: string, body: () => Response): Response {
  const match = c.req.header("if-none-match");
  if (match !== undefined && match.split(",").some((t) => t.trim() === etag || t.trim() === "*" || t.trim() === `W/${etag}`))
    return new Response(null, { status: 304, headers: { etag, "cache-control": "no-cache, private" } });
  const res = body();
  res.headers.set("etag", etag);
  return res;
}

/**
 * The OpenAPI v3 discovery document (`GET /openapi/v3`): one `apis/<group>/<version>` entry per
 * served group-version whose `serverRelativeURL` carries the document's hash, so clients (kubectl's
 * disk cache) can cache each document for as long as its URL is unchanged.
 */
export async function openAPIV3Discovery(): Promise<{ paths: Record<string, { serverRelativeURL: string }> }> {
  const docs = await documents();
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const [gv, { hash }] of docs) paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${hash}` };
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
    // kubectl asks for gnostic's protobuf (validation, explain); other clients for JSON.
    if (prefersProtobuf(c.req.header("accept"))) {
      const doc = await documentV2();
      if (!doc.proto) {
        const bytes = encodeOpenAPIV2(JSON.parse(doc.json) as Record<string, unknown>);
        doc.proto = { bytes, etag: `"${await sha512Hex(bytes)}"` };
      }
      const proto = doc.proto;
      // As kube-openapi's handler: the protobuf is sent as application/octet-stream (Go's MIME
      // parser, which client-go runs on the answer, refuses the requested type's "@").
      return withETag(
        c,
        proto.etag,
        () => new Response(proto.bytes, { headers: { "content-type": "application/octet-stream", "cache-control": "no-cache, private" } }),
      );
    }
    if (!acceptsJson(c)) throw notAcceptable();
    const doc = await documentV2();
    return withETag(c, doc.etag, () => jsonResponse(doc.json, { "cache-control": "no-cache, private" }));
  });

  app.get("/openapi/v3", async (c) => {
    if (!acceptsJson(c)) throw notAcceptable();
    return c.json(await openAPIV3Discovery(), 200, { "cache-control": "no-cache, private" });
  });

  const v3Document = async (c: Context, gv: string): Promise<Response> => {
    if (!acceptsJson(c)) throw notAcceptable();
    const doc = (await documents()).get(gv);
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
