/**
 * The Swagger 2.0 document in the protobuf form kubectl downloads from `/openapi/v2`
 * (`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`): gnostic's
 * `openapi.v2.Document` message (github.com/google/gnostic-models, openapiv2/OpenAPIv2.proto),
 * which client-go parses with `openapi_v2.ParseDocument` and kubectl reads for validation and
 * `explain`. Written with a small protobuf encoder for the messages the hub's document uses;
 * vendor extensions (`x-kubernetes-group-version-kind`, ...) are gnostic's `NamedAny`, whose
 * value is the YAML text of the JSON value, as gnostic writes them.
 */
import { stringify as yamlText } from "yaml";

type Json = Record<string, unknown>;

/** Protobuf wire types used here (varint, 64-bit, length-delimited). */
const VARINT = 0;
const FIXED64 = 1;
const BYTES = 2;

/**
 * A protobuf message being written: fields in the order given (proto3 defaults skipped). Its
 * parts are single bytes (tags, varints), byte strings, and embedded messages kept as they are
 * (each complete, with its size known, when it is added); the bytes are copied once, into the
 * outermost message's buffer, by {@link Message.encode}.
 */
class Message {
  private readonly parts: (number | Uint8Array | Message)[] = [];
  /** The encoded size of the parts so far, in bytes. */
  size = 0;
  private static readonly text = new TextEncoder();

  private push(part: Uint8Array): void {
    this.parts.push(part);
    this.size += part.length;
  }

  private varint(n: number): void {
    let v = Math.trunc(n);
    // Lengths, tags and most ints: a non-negative integer below 2^31, a byte at a time.
    if (v >= 0 && v < 0x80000000) {
      while (v >= 0x80) {
        this.parts.push((v & 0x7f) | 0x80);
        this.size++;
        v >>>= 7;
      }
      this.parts.push(v);
      this.size++;
      return;
    }
    const out: number[] = [];
    let big = BigInt.asUintN(64, BigInt(v));
    while (big >= 0x80n) {
      out.push(Number(big & 0x7fn) | 0x80);
      big >>= 7n;
    }
    out.push(Number(big));
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  /** A string field (skipped when empty or absent). */
  string(field: number, s: unknown): this {
    if (typeof s !== "string" || s === "") return this;
    return this.raw(field, Message.text.encode(s));
  }

  /** A repeated string field. */
  strings(field: number, xs: unknown): this {
    if (Array.isArray(xs)) for (const x of xs) if (typeof x === "string") this.raw(field, Message.text.encode(x));
    return this;
  }

  /** A bool field (skipped when false or absent). */
  bool(field: number, b: unknown): this {
    if (b !== true) return this;
    this.tag(field, VARINT);
    this.varint(1);
    return this;
  }

  /** An int64 field (skipped when 0 or absent). */
  int(field: number, n: unknown): this {
    if (typeof n !== "number" || n === 0) return this;
    this.tag(field, VARINT);
    this.varint(n);
    return this;
  }

  /** A double field (skipped when 0 or absent). */
  double(field: number, n: unknown): this {
    if (typeof n !== "number" || n === 0) return this;
    this.tag(field, FIXED64);
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, n, true);
    this.push(b);
    return this;
  }

  /** An embedded message field, complete (written even when empty: its presence matters in a oneof). */
  message(field: number, m: Message | undefined): this {
    if (!m) return this;
    this.tag(field, BYTES);
    this.varint(m.size);
    this.parts.push(m);
    this.size += m.size;
    return this;
  }

  /** A length-delimited field of bytes encoded already (an embedded message's). */
  raw(field: number, data: Uint8Array): this {
    this.tag(field, BYTES);
    this.varint(data.length);
    this.push(data);
    return this;
  }

  /** The encoded message. */
  encode(): Uint8Array {
    const out = new Uint8Array(this.size);
    this.write(out, 0);
    return out;
  }

  /** Writes the encoded message into `out` at `at`; returns the offset after it. */
  private write(out: Uint8Array, at: number): number {
    for (const p of this.parts) {
      if (typeof p === "number") out[at++] = p;
      else if (p instanceof Message) at = p.write(out, at);
      else {
        out.set(p, at);
        at += p.length;
      }
    }
    return at;
  }
}

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The encoded gnostic `Any`s of one document's encoding, by the JSON of their value: a document
 * repeats few distinct values (`x-kubernetes-list-type: atomic`, the same group-version-kinds,
 * defaults) many times, and their YAML text is the costly part of the encoding.
 */
type AnyCache = Map<string, Uint8Array>;
let anyCache: AnyCache = new Map();

/** gnostic `Any`: the YAML text of a JSON value (field 2), encoded. */
function any(value: unknown): Uint8Array {
  const key = JSON.stringify(value) ?? "undefined";
  let bytes = anyCache.get(key);
  if (!bytes) anyCache.set(key, (bytes = new Message().string(2, yamlText(value)).encode()));
  return bytes;
}

/** The `x-` keys of a JSON object as repeated gnostic `NamedAny` (name 1, value 2) in `field`. */
function vendorExtensions(m: Message, field: number, obj: Json): Message {
  for (const [k, v] of Object.entries(obj)) if (k.startsWith("x-")) m.message(field, new Message().string(1, k).raw(2, any(v)));
  return m;
}

/** gnostic `Schema` from a Swagger 2.0 schema object. */
function schema(s: Json): Message {
  const m = new Message().string(1, s.$ref).string(2, s.format).string(3, s.title).string(4, s.description);
  if (s.default !== undefined) m.raw(5, any(s.default));
  m.double(6, s.multipleOf).double(7, s.maximum).bool(8, s.exclusiveMaximum).double(9, s.minimum).bool(10, s.exclusiveMinimum);
  m.int(11, s.maxLength).int(12, s.minLength).string(13, s.pattern).int(14, s.maxItems).int(15, s.minItems).bool(16, s.uniqueItems);
  m.int(17, s.maxProperties).int(18, s.minProperties).strings(19, s.required);
  if (Array.isArray(s.enum)) for (const e of s.enum) m.raw(20, any(e));
  if (s.additionalProperties !== undefined) {
    const ap = new Message();
    if (isObject(s.additionalProperties)) ap.message(1, schema(s.additionalProperties));
    else ap.bool(2, s.additionalProperties === true);
    m.message(21, ap);
  }
  if (s.type !== undefined) m.message(22, new Message().strings(1, Array.isArray(s.type) ? s.type : [s.type]));
  if (s.items !== undefined) {
    const items = new Message();
    for (const it of Array.isArray(s.items) ? s.items : [s.items]) if (isObject(it)) items.message(1, schema(it));
    m.message(23, items);
  }
  if (Array.isArray(s.allOf)) for (const a of s.allOf) if (isObject(a)) m.message(24, schema(a));
  if (isObject(s.properties)) {
    const props = new Message();
    for (const [name, p] of Object.entries(s.properties)) if (isObject(p)) props.message(1, new Message().string(1, name).message(2, schema(p)));
    m.message(25, props);
  }
  m.string(26, s.discriminator).bool(27, s.readOnly);
  if (s.example !== undefined) m.raw(30, any(s.example));
  return vendorExtensions(m, 31, s);
}

/** gnostic `ParametersItem` from a Swagger 2.0 parameter (body, query, path or header). */
function parameter(p: Json): Message {
  if (typeof p.$ref === "string") return new Message().message(2, new Message().string(1, p.$ref).string(2, p.description));
  let param: Message;
  if (p.in === "body") {
    const body = new Message().string(1, p.description).string(2, p.name).string(3, p.in).bool(4, p.required);
    if (isObject(p.schema)) body.message(5, schema(p.schema));
    param = new Message().message(1, vendorExtensions(body, 6, p));
  } else {
    // Query (3) and path (4) and header (1) sub-schemas: query has allow_empty_value at 5, shifting
    // the fields after `name` by one; vendor extensions are the last field of each.
    const query = p.in === "query";
    const base = query ? 6 : 5;
    const sub = new Message().bool(1, p.required).string(2, p.in).string(3, p.description).string(4, p.name);
    if (query) sub.bool(5, p.allowEmptyValue);
    sub.string(base, p.type).string(base + 1, p.format);
    if (p.default !== undefined) sub.raw(base + 4, any(p.default));
    sub.bool(base + 14, p.uniqueItems);
    if (Array.isArray(p.enum)) for (const e of p.enum) sub.raw(base + 15, any(e));
    vendorExtensions(sub, base + 17, p);
    const which = query ? 3 : p.in === "path" ? 4 : p.in === "header" ? 1 : 2;
    param = new Message().message(2, new Message().message(which, sub));
  }
  return new Message().message(1, param);
}

/** gnostic `Operation`. */
function operation(op: Json): Message {
  const m = new Message()
    .strings(1, op.tags)
    .string(2, op.summary)
    .string(3, op.description)
    .string(5, op.operationId)
    .strings(6, op.produces)
    .strings(7, op.consumes);
  if (Array.isArray(op.parameters)) for (const p of op.parameters) if (isObject(p)) m.message(8, parameter(p));
  if (isObject(op.responses)) {
    const responses = new Message();
    for (const [code, r] of Object.entries(op.responses)) {
      if (!isObject(r)) continue;
      const response = new Message().string(1, r.description);
      if (isObject(r.schema)) response.message(2, new Message().message(1, schema(r.schema)));
      responses.message(1, new Message().string(1, code).message(2, new Message().message(1, vendorExtensions(response, 5, r))));
    }
    m.message(9, responses);
  }
  m.strings(10, op.schemes).bool(11, op.deprecated);
  return vendorExtensions(m, 13, op);
}

const VERBS: [string, number][] = [
  ["get", 2],
  ["put", 3],
  ["post", 4],
  ["delete", 5],
  ["options", 6],
  ["head", 7],
  ["patch", 8],
];

/**
 * Encodes a Swagger 2.0 document (the JSON of `/openapi/v2`) as gnostic's `openapi.v2.Document`
 * protobuf: swagger, info, paths with their operations, parameters and responses, definitions,
 * security definitions and requirements, and every `x-` vendor extension.
 */
export function encodeOpenAPIV2(doc: Json): Uint8Array {
  anyCache = new Map();
  try {
    return encodeDocument(doc);
  } finally {
    anyCache = new Map();
  }
}

/** {@link encodeOpenAPIV2}'s document, with the `Any` cache set up. */
function encodeDocument(doc: Json): Uint8Array {
  const m = new Message().string(1, doc.swagger);
  if (isObject(doc.info))
    m.message(2, vendorExtensions(new Message().string(1, doc.info.title).string(2, doc.info.version).string(3, doc.info.description), 7, doc.info));
  m.string(3, doc.host).string(4, doc.basePath).strings(5, doc.schemes).strings(6, doc.consumes).strings(7, doc.produces);
  if (isObject(doc.paths)) {
    const paths = new Message();
    for (const [p, item] of Object.entries(doc.paths)) {
      if (!isObject(item)) continue;
      const pi = new Message();
      for (const [verb, field] of VERBS) if (isObject(item[verb])) pi.message(field, operation(item[verb]));
      if (Array.isArray(item.parameters)) for (const prm of item.parameters) if (isObject(prm)) pi.message(9, parameter(prm));
      paths.message(2, new Message().string(1, p).message(2, vendorExtensions(pi, 10, item)));
    }
    m.message(8, paths);
  }
  if (isObject(doc.definitions)) {
    const defs = new Message();
    for (const [name, s] of Object.entries(doc.definitions)) if (isObject(s)) defs.message(1, new Message().string(1, name).message(2, schema(s)));
    m.message(9, defs);
  }
  if (Array.isArray(doc.security)) {
    for (const req of doc.security) {
      if (!isObject(req)) continue;
      const sr = new Message();
      for (const [name, scopes] of Object.entries(req)) sr.message(1, new Message().string(1, name).message(2, new Message().strings(1, scopes)));
      m.message(12, sr);
    }
  }
  if (isObject(doc.securityDefinitions)) {
    const sd = new Message();
    for (const [name, d] of Object.entries(doc.securityDefinitions)) {
      if (!isObject(d) || d.type !== "apiKey") continue;
      const apiKey = vendorExtensions(new Message().string(1, d.type).string(2, d.name).string(3, d.in).string(4, d.description), 5, d);
      sd.message(1, new Message().string(1, name).message(2, new Message().message(2, apiKey)));
    }
    m.message(13, sd);
  }
  return vendorExtensions(m, 16, doc).encode();
}
