/**
 * Response content negotiation for the Kubernetes API, as kube-apiserver's
 * `negotiation.NegotiateOutputMediaType` does it: the `Accept` header's media ranges are tried by
 * descending `q` (the first listed on a tie), and the first one the hub can serve for the request
 * decides the form of the answer. The hub serves JSON and YAML, and, with the `as`, `g` and `v`
 * parameters (group `meta.k8s.io`, version `v1` or `v1beta1`), the `Table` form and the
 * metadata-only forms (`PartialObjectMetadata` for an object or a watch's objects,
 * `PartialObjectMetadataList` for a list) that client-go's metadata informers and garbage
 * collectors read. Protobuf is not served: a client that lists only it gets 406.
 */
import { ApiError } from "../k8s/errors.ts";
import type { KubeObject } from "../k8s/meta.ts";

/** What an answer is: an object (get, write), a list, or a watch's event objects. */
export type Answering = "object" | "list" | "watch";

/**
 * The form of an answer: plain JSON or YAML (`yaml`), a meta.k8s.io `Table`, or the metadata-only
 * form (`metadata`: PartialObjectMetadata, or PartialObjectMetadataList for a list), with the
 * meta.k8s.io version the client asked for.
 */
export type Form = { kind: "json" } | { kind: "yaml" } | { kind: "table"; version: string } | { kind: "metadata"; version: string };

const META_VERSIONS = ["v1", "v1beta1"];

/** One media range of an Accept header: type, parameters (lower-cased names) and its q. */
export interface MediaRange {
  type: string;
  params: Map<string, string>;
  q: number;
  order: number;
}

/**
 * The media ranges of an `Accept` header in the order a server tries them: by descending `q`, the
 * first listed on a tie; ranges with `q=0` (refused) are left out.
 */
export function mediaRanges(accept: string): MediaRange[] {
  return accept
    .split(",")
    .map((part, order) => {
      const [type = "", ...rest] = part.split(";").map((x) => x.trim());
      const params = new Map<string, string>();
      for (const p of rest) {
        const eq = p.indexOf("=");
        if (eq > 0) params.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim());
      }
      const q = params.has("q") ? Number(params.get("q")) : 1;
      return { type: type.toLowerCase(), params, q: Number.isFinite(q) ? q : 0, order };
    })
    .filter((r) => r.type !== "" && r.q > 0)
    .sort((a, b) => b.q - a.q || a.order - b.order);
}

/** The form a media range asks for, if the hub can serve it for `answering`. */
function formOf(r: MediaRange, answering: Answering): Form | null {
  const json = r.type === "application/json" || r.type === "application/*" || r.type === "*/*";
  const as = r.params.get("as");
  if (as === undefined) {
    if (json) return { kind: "json" };
    return r.type === "application/yaml" && answering !== "watch" ? { kind: "yaml" } : null;
  }
  if (!json || r.params.get("g") !== "meta.k8s.io" || !META_VERSIONS.includes(r.params.get("v") ?? "")) return null;
  const version = r.params.get("v")!;
  if (as === "Table") return { kind: "table", version };
  if (as === "PartialObjectMetadata" && answering !== "list") return { kind: "metadata", version };
  if (as === "PartialObjectMetadataList" && answering === "list") return { kind: "metadata", version };
  return null;
}

/** The most `Accept` headers {@link negotiate} remembers the answer of (past it, it starts afresh). */
const NEGOTIATED_MAX = 64;
/** `<answering> <Accept>` → the form negotiated: the few headers clients send, each parsed once per isolate, not up to three times per request. */
const negotiated = new Map<string, Readonly<Form>>();
const JSON_FORM: Readonly<Form> = Object.freeze({ kind: "json" });

/**
 * The form of the answer to a request with this `Accept` header (absent or empty: JSON). The
 * answer is shared between calls (frozen): remembered per header and `answering`, up to
 * {@link NEGOTIATED_MAX} headers.
 * @throws ApiError 406 NotAcceptable when no media range of the header can be served
 */
export function negotiate(accept: string | undefined, answering: Answering): Readonly<Form> {
  if (!accept) return JSON_FORM;
  const key = `${answering} ${accept}`;
  const hit = negotiated.get(key);
  if (hit) return hit;
  if (accept.trim() === "") return JSON_FORM;
  for (const r of mediaRanges(accept)) {
    const form = formOf(r, answering);
    if (form) {
      if (negotiated.size >= NEGOTIATED_MAX) negotiated.clear();
      negotiated.set(key, Object.freeze(form));
      return form;
    }
  }
  throw new ApiError(
    406,
    "NotAcceptable",
    "only the following media types are accepted: application/json, application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
  );
}

/** An object's metadata-only form (meta.k8s.io PartialObjectMetadata, `version` v1 or v1beta1). */
export function partialObjectMetadata(obj: KubeObject, version: string): KubeObject {
  return { apiVersion: `meta.k8s.io/${version}`, kind: "PartialObjectMetadata", metadata: obj.metadata };
}

/** A list's metadata-only form (meta.k8s.io PartialObjectMetadataList) from its items and list metadata. */
export function partialObjectMetadataList(items: KubeObject[], listMeta: Record<string, unknown>, version: string): Record<string, unknown> {
  return {
    apiVersion: `meta.k8s.io/${version}`,
    kind: "PartialObjectMetadataList",
    metadata: listMeta,
    items: items.map((o) => partialObjectMetadata(o, version)),
  };
}
