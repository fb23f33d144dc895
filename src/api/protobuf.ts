/**
 * Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), which
 * kubectl's typed clients send for the built-in kinds (`kubectl create namespace`, `kubectl create
 * secret`, `kubectl create rolebinding`, `kubectl auth can-i`, `kubectl create serviceaccount`,
 * `kubectl create token`): the envelope apimachinery's
 * protobuf serializer writes (`pkg/runtime/serializer/protobuf`: the 4-byte magic `k8s\0`, then a
 * `runtime.Unknown` whose `raw` is the object's message), and the messages of the built-in kinds
 * the hub serves (core, RBAC, the reviews; a core/v1 Event as client-go's event recorders send
 * it), decoded to the JSON object the rest of the write path
 * takes (field numbers from the `generated.proto` of `k8s.io/api` core/v1, rbac/v1,
 * authorization/v1 and authentication/v1, and of `k8s.io/apimachinery/pkg/apis/meta/v1`). Go's
 * encoder writes every non-pointer field, so empty strings, zero numbers and zero times are
 * dropped, as the JSON encoding omits them. Unknown fields are skipped. Answers stay JSON (the
 * client accepts it).
 */
import { badRequest } from "../k8s/errors.ts";

type Json = Record<string, unknown>;

/** The media type of Kubernetes' protobuf encoding. */
export const PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf";

/** The magic prefix of an encoded object (`protobuf.serializer` `protoEncodingPrefix`). */
const MAGIC = [0x6b, 0x38, 0x73, 0x00];

/** One field read from a message: its number, wire type and value (a bigint for varints, bytes for length-delimited). */
interface Field {
  n: number;
  wire: number;
  varint?: bigint;
  bytes?: Uint8Array;
}

const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** The fields of one message, in order. @throws ApiError 400 for malformed bytes */
function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (i >= buf.length) throw badRequest("the protobuf body is truncated");
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    throw badRequest("the protobuf body holds a malformed varint");
  };
  while (i < buf.length) {
    const key = Number(varint());
    const n = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ n, wire, varint: varint() });
    else if (wire === 2) {
      const len = Number(varint());
      if (len < 0 || i + len > buf.length) throw badRequest("the protobuf body is truncated");
      out.push({ n, wire, bytes: buf.subarray(i, i + len) });
      i += len;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw badRequest(`the protobuf body holds an unsupported wire type ${wire}`);
    if (i > buf.length) throw badRequest("the protobuf body is truncated");
  }
  return out;
}

function str(f: Field): string {
  try {
    return text.decode(f.bytes ?? new Uint8Array());
  } catch {
    throw badRequest("the protobuf body holds a string that is not UTF-8");
  }
}

function base64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** A `map<string, V>` entry (key 1, value 2). */
function entry(f: Field, value: (v: Field) => unknown): [string, unknown] {
  let k = "";
  let v: unknown = "";
  for (const e of fields(f.bytes!)) {
    if (e.n === 1) k = str(e);
    else if (e.n === 2) v = value(e);
  }
  return [k, v];
}

/** metav1.Time (`seconds` 1, `nanos` 2) as RFC 3339, or undefined for the zero time (an empty message). */
function time(f: Field): string | undefined {
  let seconds = 0n;
  for (const t of fields(f.bytes!)) if (t.n === 1) seconds = BigInt.asIntN(64, t.varint ?? 0n);
  if (f.bytes!.length === 0) return undefined;
  return new Date(Number(seconds) * 1000).toISOString().replace(".000Z", "Z");
}

/** metav1.OwnerReference. */
function ownerReference(buf: Uint8Array): Json {
  const o: Json = {};
  for (const f of fields(buf)) {
    if (f.n === 1) o.kind = str(f);
    else if (f.n === 3) o.name = str(f);
    else if (f.n === 4) o.uid = str(f);
    else if (f.n === 5) o.apiVersion = str(f);
    else if (f.n === 6) o.controller = f.varint !== 0n;
    else if (f.n === 7) o.blockOwnerDeletion = f.varint !== 0n;
  }
  return o;
}

/** metav1.ObjectMeta (managedFields are not read: a write keeps the stored ones, as for a JSON body without them). */
function objectMeta(buf: Uint8Array): Json {
  const m: Json = {};
  const labels: Record<string, unknown> = {};
  const annotations: Record<string, unknown> = {};
  const finalizers: string[] = [];
  const owners: Json[] = [];
  const strings: Record<number, string> = { 1: "name", 2: "generateName", 3: "namespace", 4: "selfLink", 5: "uid", 6: "resourceVersion" };
  for (const f of fields(buf)) {
    if (strings[f.n] && f.wire === 2) {
      const s = str(f);
      if (s) m[strings[f.n]!] = s;
    } else if (f.n === 7 && f.varint) m.generation = Number(BigInt.asIntN(64, f.varint));
    else if ((f.n === 8 || f.n === 9) && f.bytes) {
      const t = time(f);
      if (t) m[f.n === 8 ? "creationTimestamp" : "deletionTimestamp"] = t;
    } else if (f.n === 10 && f.varint !== undefined) m.deletionGracePeriodSeconds = Number(BigInt.asIntN(64, f.varint));
    else if (f.n === 11) {
      const [k, v] = entry(f, str);
      labels[k] = v;
    } else if (f.n === 12) {
      const [k, v] = entry(f, str);
      annotations[k] = v;
    } else if (f.n === 13) owners.push(ownerReference(f.bytes!));
    else if (f.n === 14) finalizers.push(str(f));
  }
  if (Object.keys(labels).length > 0) m.labels = labels;
  if (Object.keys(annotations).length > 0) m.annotations = annotations;
  if (owners.length > 0) m.ownerReferences = owners;
  if (finalizers.length > 0) m.finalizers = finalizers;
  return m;
}

/** core/v1 NamespaceCondition. */
function namespaceCondition(buf: Uint8Array): Json {
  const c: Json = {};
  for (const f of fields(buf)) {
    if (f.n === 1) c.type = str(f);
    else if (f.n === 2) c.status = str(f);
    else if (f.n === 4) c.lastTransitionTime = time(f);
    else if (f.n === 5) c.reason = str(f);
    else if (f.n === 6) c.message = str(f);
  }
  return c;
}

/** core/v1 Namespace: metadata 1, spec 2 (finalizers 1), status 3 (phase 1, conditions 2). */
function namespace(buf: Uint8Array): Json {
  const o: Json = {};
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) {
      const finalizers = fields(f.bytes!)
        .filter((x) => x.n === 1)
        .map(str);
      o.spec = finalizers.length > 0 ? { finalizers } : {};
    } else if (f.n === 3) {
      const status: Json = {};
      const conditions: Json[] = [];
      for (const s of fields(f.bytes!)) {
        if (s.n === 1 && str(s)) status.phase = str(s);
        else if (s.n === 2) conditions.push(namespaceCondition(s.bytes!));
      }
      if (conditions.length > 0) status.conditions = conditions;
      if (Object.keys(status).length > 0) o.status = status;
    }
  }
  return o;
}

/** core/v1 Secret: metadata 1, data 2 (map of bytes, served base64), type 3, stringData 4, immutable 5. */
function secret(buf: Uint8Array): Json {
  const o: Json = {};
  const data: Record<string, unknown> = {};
  const stringData: Record<string, unknown> = {};
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) {
      const [k, v] = entry(f, (x) => base64(x.bytes ?? new Uint8Array()));
      data[k] = v;
    } else if (f.n === 3 && str(f)) o.type = str(f);
    else if (f.n === 4) {
      const [k, v] = entry(f, str);
      stringData[k] = v;
    } else if (f.n === 5) o.immutable = f.varint !== 0n;
  }
  if (Object.keys(data).length > 0) o.data = data;
  if (Object.keys(stringData).length > 0) o.stringData = stringData;
  return o;
}

/** core/v1 ConfigMap (`kubectl create configmap`): metadata 1, data 2 (map<string,string>), binaryData 3 (map<string,bytes>), immutable 4. */
function configMap(buf: Uint8Array): Json {
  const o: Json = {};
  const data: Record<string, unknown> = {};
  const binaryData: Record<string, unknown> = {};
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) {
      const [k, v] = entry(f, str);
      data[k] = v;
    } else if (f.n === 3) {
      const [k, v] = entry(f, (x) => base64(x.bytes ?? new Uint8Array()));
      binaryData[k] = v;
    } else if (f.n === 4) o.immutable = f.varint !== 0n;
  }
  if (Object.keys(data).length > 0) o.data = data;
  if (Object.keys(binaryData).length > 0) o.binaryData = binaryData;
  return o;
}

/** The string fields of a message, by field number, into an object (empty strings dropped, as Go omits them). */
function stringFields(buf: Uint8Array, names: Record<number, string>): Json {
  const o: Json = {};
  for (const f of fields(buf)) {
    const name = names[f.n];
    if (name && f.wire === 2) {
      const v = str(f);
      if (v) o[name] = v;
    }
  }
  return o;
}

/** authorization/v1 ResourceAttributes (namespace 1, verb 2, group 3, version 4, resource 5, subresource 6, name 7). */
const resourceAttributes = (buf: Uint8Array) =>
  stringFields(buf, { 1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name" });
/** authorization/v1 NonResourceAttributes (path 1, verb 2). */
const nonResourceAttributes = (buf: Uint8Array) => stringFields(buf, { 1: "path", 2: "verb" });

/**
 * authorization/v1 SelfSubjectAccessReview and SubjectAccessReview: metadata 1, spec 2
 * (resourceAttributes 1, nonResourceAttributes 2; SubjectAccessReviewSpec also user 3, groups 4,
 * extra 5 as map of ExtraValue (items 1), uid 6); status 3 (the answer's: ignored).
 */
function accessReview(buf: Uint8Array): Json {
  const o: Json = {};
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) {
      const spec: Json = {};
      const groups: string[] = [];
      const extra: Record<string, unknown> = {};
      for (const s of fields(f.bytes!)) {
        if (s.n === 1) spec.resourceAttributes = resourceAttributes(s.bytes!);
        else if (s.n === 2) spec.nonResourceAttributes = nonResourceAttributes(s.bytes!);
        else if (s.n === 3 && str(s)) spec.user = str(s);
        else if (s.n === 4) groups.push(str(s));
        else if (s.n === 5) {
          const [k, v] = entry(s, (x) =>
            fields(x.bytes!)
              .filter((i) => i.n === 1)
              .map(str),
          );
          extra[k] = v;
        } else if (s.n === 6 && str(s)) spec.uid = str(s);
      }
      if (groups.length > 0) spec.groups = groups;
      if (Object.keys(extra).length > 0) spec.extra = extra;
      o.spec = spec;
    }
  }
  return o;
}

/** authorization/v1 SelfSubjectRulesReview: metadata 1, spec 2 (namespace 1), status 3 (ignored). */
function rulesReview(buf: Uint8Array): Json {
  const o: Json = { spec: {} };
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) o.spec = stringFields(f.bytes!, { 1: "namespace" });
  }
  return o;
}

/** authentication/v1 SelfSubjectReview: metadata 1, status 2 (ignored). */
function selfSubjectReview(buf: Uint8Array): Json {
  const o: Json = {};
  for (const f of fields(buf)) if (f.n === 1) o.metadata = objectMeta(f.bytes!);
  return o;
}

/** rbac/v1 PolicyRule: verbs 1, apiGroups 2, resources 3, resourceNames 4, nonResourceURLs 5 (repeated strings). */
function policyRule(buf: Uint8Array): Json {
  const names: Record<number, string> = { 1: "verbs", 2: "apiGroups", 3: "resources", 4: "resourceNames", 5: "nonResourceURLs" };
  const o: Record<string, string[]> = {};
  for (const f of fields(buf)) {
    const name = names[f.n];
    if (name && f.wire === 2) (o[name] ??= []).push(str(f));
  }
  return o;
}

/** meta/v1 LabelSelector: matchLabels 1 (map), matchExpressions 2 (key 1, operator 2, values 3). */
function labelSelector(buf: Uint8Array): Json {
  const o: Json = {};
  const labels: Record<string, unknown> = {};
  const expressions: Json[] = [];
  for (const f of fields(buf)) {
    if (f.n === 1) {
      const [k, v] = entry(f, str);
      labels[k] = v;
    } else if (f.n === 2) {
      const e: Json = {};
      const values: string[] = [];
      for (const x of fields(f.bytes!)) {
        if (x.n === 1) e.key = str(x);
        else if (x.n === 2) e.operator = str(x);
        else if (x.n === 3) values.push(str(x));
      }
      if (values.length > 0) e.values = values;
      expressions.push(e);
    }
  }
  if (Object.keys(labels).length > 0) o.matchLabels = labels;
  if (expressions.length > 0) o.matchExpressions = expressions;
  return o;
}

/** rbac/v1 Role and ClusterRole: metadata 1, rules 2, aggregationRule 3 (clusterRoleSelectors 1). */
function rbacRole(buf: Uint8Array): Json {
  const o: Json = {};
  const rules: Json[] = [];
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) rules.push(policyRule(f.bytes!));
    else if (f.n === 3)
      o.aggregationRule = {
        clusterRoleSelectors: fields(f.bytes!)
          .filter((x) => x.n === 1)
          .map((x) => labelSelector(x.bytes!)),
      };
  }
  if (rules.length > 0) o.rules = rules;
  return o;
}

/** rbac/v1 RoleBinding and ClusterRoleBinding: metadata 1, subjects 2 (kind 1, apiGroup 2, name 3, namespace 4), roleRef 3 (apiGroup 1, kind 2, name 3). */
function rbacBinding(buf: Uint8Array): Json {
  const o: Json = {};
  const subjects: Json[] = [];
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) subjects.push(stringFields(f.bytes!, { 1: "kind", 2: "apiGroup", 3: "name", 4: "namespace" }));
    else if (f.n === 3) o.roleRef = { apiGroup: "", kind: "", name: "", ...stringFields(f.bytes!, { 1: "apiGroup", 2: "kind", 3: "name" }) };
  }
  if (subjects.length > 0) o.subjects = subjects;
  return o;
}

/** core/v1 ObjectReference: kind 1, namespace 2, name 3, uid 4, apiVersion 5, resourceVersion 6, fieldPath 7. */
function objectReference(buf: Uint8Array): Json {
  const o: Json = {};
  const names: Record<number, string> = { 1: "kind", 2: "namespace", 3: "name", 4: "uid", 5: "apiVersion", 6: "resourceVersion", 7: "fieldPath" };
  for (const f of fields(buf)) if (names[f.n] && f.wire === 2 && str(f)) o[names[f.n]!] = str(f);
  return o;
}

/** core/v1 ServiceAccount: metadata 1, secrets 2 (ObjectReference), imagePullSecrets 3 (name 1), automountServiceAccountToken 4. */
function serviceAccount(buf: Uint8Array): Json {
  const o: Json = {};
  const secrets: Json[] = [];
  const pulls: Json[] = [];
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) secrets.push(objectReference(f.bytes!));
    else if (f.n === 3) {
      const name = fields(f.bytes!).find((x) => x.n === 1);
      pulls.push(name && str(name) ? { name: str(name) } : {});
    } else if (f.n === 4) o.automountServiceAccountToken = f.varint !== 0n;
  }
  if (secrets.length > 0) o.secrets = secrets;
  if (pulls.length > 0) o.imagePullSecrets = pulls;
  return o;
}

/**
 * authentication/v1 TokenRequest (what `kubectl create token` sends): metadata 1, spec 2
 * (audiences 1, boundObjectRef 3 (kind 1, apiVersion 2, name 3, uid 4), expirationSeconds 4, a
 * pointer: absent when unset), status 3 (ignored: server-set).
 */
function tokenRequest(buf: Uint8Array): Json {
  const o: Json = {};
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) {
      const spec: Json = {};
      const audiences: string[] = [];
      for (const s of fields(f.bytes!)) {
        if (s.n === 1) audiences.push(str(s));
        else if (s.n === 4 && s.varint !== undefined) spec.expirationSeconds = Number(BigInt.asIntN(64, s.varint));
        else if (s.n === 3) {
          const ref: Json = {};
          const names: Record<number, string> = { 1: "kind", 2: "apiVersion", 3: "name", 4: "uid" };
          for (const r of fields(s.bytes!)) if (names[r.n] && r.wire === 2 && str(r)) ref[names[r.n]!] = str(r);
          spec.boundObjectRef = ref;
        }
      }
      if (audiences.length > 0) spec.audiences = audiences;
      o.spec = spec;
    }
  }
  return o;
}

/** metav1.MicroTime (`seconds` 1, `nanos` 2) as RFC 3339 with microseconds, or undefined for the zero time. */
function microTime(f: Field): string | undefined {
  if (f.bytes!.length === 0) return undefined;
  let seconds = 0n;
  let nanos = 0n;
  for (const t of fields(f.bytes!)) {
    if (t.n === 1) seconds = BigInt.asIntN(64, t.varint ?? 0n);
    else if (t.n === 2) nanos = BigInt.asIntN(32, t.varint ?? 0n);
  }
  const micros = String(nanos / 1000n).padStart(6, "0");
  return new Date(Number(seconds) * 1000).toISOString().replace(/\.000Z$/, `.${micros}Z`);
}

/**
 * core/v1 Event (what client-go's event recorders send with a protobuf client; field numbers as
 * k8s.io/api core/v1 `Event`, `EventSource`, `EventSeries`): metadata 1,
 * involvedObject 2, reason 3, message 4, source 5 (component 1, host 2), firstTimestamp 6,
 * lastTimestamp 7, count 8, type 9, eventTime 10 (MicroTime), series 11 (count 1,
 * lastObservedTime 2), action 12, related 13, reportingComponent 14, reportingInstance 15.
 */
function coreEvent(buf: Uint8Array): Json {
  const o: Json = {};
  const strings: Record<number, string> = { 3: "reason", 4: "message", 9: "type", 12: "action", 14: "reportingComponent", 15: "reportingInstance" };
  for (const f of fields(buf)) {
    if (f.n === 1) o.metadata = objectMeta(f.bytes!);
    else if (f.n === 2) o.involvedObject = objectReference(f.bytes!);
    else if (strings[f.n] && f.wire === 2 && str(f)) o[strings[f.n]!] = str(f);
    else if (f.n === 5) o.source = stringFields(f.bytes!, { 1: "component", 2: "host" });
    else if ((f.n === 6 || f.n === 7) && time(f)) o[f.n === 6 ? "firstTimestamp" : "lastTimestamp"] = time(f);
    else if (f.n === 8 && f.varint) o.count = Number(BigInt.asIntN(32, f.varint));
    else if (f.n === 10 && microTime(f)) o.eventTime = microTime(f);
    else if (f.n === 11) {
      const series: Json = {};
      for (const x of fields(f.bytes!)) {
        if (x.n === 1) series.count = Number(BigInt.asIntN(32, x.varint ?? 0n));
        else if (x.n === 2 && microTime(x)) series.lastObservedTime = microTime(x);
      }
      o.series = series;
    } else if (f.n === 13) o.related = objectReference(f.bytes!);
  }
  return o;
}

/** The message decoders, by `<apiVersion>/<kind>`. */
const DECODERS: Record<string, (raw: Uint8Array) => Json> = {
  "v1/Event": coreEvent,
  "v1/Namespace": namespace,
  "v1/Secret": secret,
  "v1/ConfigMap": configMap,
  "authorization.k8s.io/v1/SelfSubjectAccessReview": accessReview,
  "authorization.k8s.io/v1/SubjectAccessReview": accessReview,
  "authorization.k8s.io/v1/SelfSubjectRulesReview": rulesReview,
  "authentication.k8s.io/v1/SelfSubjectReview": selfSubjectReview,
  "rbac.authorization.k8s.io/v1/Role": rbacRole,
  "rbac.authorization.k8s.io/v1/ClusterRole": rbacRole,
  "rbac.authorization.k8s.io/v1/RoleBinding": rbacBinding,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": rbacBinding,
  "v1/ServiceAccount": serviceAccount,
  "authentication.k8s.io/v1/TokenRequest": tokenRequest,
};

/** Whether a body of kind `kind` (in `apiVersion`) can be decoded from protobuf here. */
export function decodesProtobuf(apiVersion: string, kind: string): boolean {
  return `${apiVersion}/${kind}` in DECODERS;
}

/**
 * Decodes a protobuf-encoded object (see the module comment) to its JSON form, with the
 * `apiVersion` and `kind` its envelope names.
 * @throws ApiError 400 for a body without the envelope, malformed bytes, or a kind not decoded here
 */
export function decodeProtobufObject(body: Uint8Array): Json {
  if (body.length < 4 || MAGIC.some((b, i) => body[i] !== b)) throw badRequest("the protobuf body does not start with the Kubernetes envelope (k8s\\0)");
  let apiVersion = "";
  let kind = "";
  let raw: Uint8Array | undefined;
  for (const f of fields(body.subarray(4))) {
    if (f.n === 1 && f.bytes) {
      for (const t of fields(f.bytes)) {
        if (t.n === 1) apiVersion = str(t);
        else if (t.n === 2) kind = str(t);
      }
    } else if (f.n === 2) raw = f.bytes;
    else if (f.n === 3 && f.bytes && f.bytes.length > 0) throw badRequest(`the protobuf body has a content encoding (${str(f)}) the hub does not take`);
  }
  const decode = DECODERS[`${apiVersion}/${kind}`];
  if (!decode) throw badRequest(`the hub does not decode ${kind || "this kind"} (${apiVersion || "no apiVersion"}) from protobuf; send it as JSON`);
  return { apiVersion, kind, ...decode(raw ?? new Uint8Array()) };
}
