/**
 * Kubernetes name, label and annotation validation.
 *
 * Implements the rules of k8s.io/apimachinery `pkg/util/validation` (the
 * `Is*` predicates, which return a list of human-readable problems) and the
 * object-metadata checks built on them (`ValidateLabels`,
 * `ValidateAnnotations`, `ValidateObjectMeta`'s name / generateName /
 * namespace handling), with the same error texts so that Flotilla's API
 * errors read like a real kube-apiserver's.
 *
 * Pure module: no I/O and no platform globals beyond ES2023, so it runs both
 * in the Worker (hub) and in Node (agent).
 *
 * Lengths are measured in UTF-8 bytes, as Go's `len(string)` does; for the
 * ASCII strings these rules accept this is the same as the character count.
 */
import { parseQuantity, QuantityError } from "./quantity.ts";

// ---------------------------------------------------------------------------
// Field errors (k8s.io/apimachinery/pkg/util/validation/field)
// ---------------------------------------------------------------------------

/**
 * The machine-readable cause of a {@link FieldError}; these are the
 * `metav1.CauseType` strings that kube-apiserver puts in
 * `Status.details.causes[].reason`.
 */
export type FieldErrorReason =
  | "FieldValueInvalid"
  | "FieldValueRequired"
  | "FieldValueTooLong"
  | "FieldValueTooMany"
  | "FieldValueNotSupported"
  | "FieldValueDuplicate"
  | "FieldValueForbidden";

/**
 * One validation problem, shaped like a `metav1.StatusCause`:
 *
 * - `field`: the Kubernetes field path, e.g. `metadata.name`,
 *   `spec.selector.matchExpressions[0].values` or `metadata.labels`
 *   (apimachinery reports label/annotation key problems on the map itself,
 *   with the offending key as the bad value; value problems likewise on the
 *   map, with the offending value).
 * - `message`: apimachinery's `field.Error.ErrorBody()`, i.e. the error type's
 *   text, the quoted bad value where the type carries one, then the detail:
 *   `Invalid value: "Foo_": name part must consist of ...`,
 *   `Required value: name or generateName is required`,
 *   `Forbidden: not allowed on this type`.
 * - `reason`: the cause type.
 *
 * Use {@link formatFieldError} for the `field: message` one-line form
 * (`field.Error.Error()`).
 *
 * @example
 * validateObjectName("My_App")
 * // [{ field: "metadata.name", reason: "FieldValueInvalid",
 * //    message: 'Invalid value: "My_App": a lowercase RFC 1123 subdomain must ...' }]
 */
export interface FieldError {
  field: string;
  message: string;
  reason: FieldErrorReason;
}

/** Go's `%q`-ish rendering of a bad value (JSON string quoting for strings, Go-like for the rest). */
function renderValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value);
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return `[]string{${value.map((v) => JSON.stringify(String(v))).join(", ")}}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function withDetail(head: string, detail: string | undefined): string {
  return detail ? `${head}: ${detail}` : head;
}

/**
 * `field.Invalid`: the value is syntactically or semantically wrong.
 *
 * @example
 * fieldInvalid("metadata.name", "A", "must be lowercase")
 * // { field: "metadata.name", reason: "FieldValueInvalid", message: 'Invalid value: "A": must be lowercase' }
 */
export function fieldInvalid(field: string, value: unknown, detail: string): FieldError {
  return { field, reason: "FieldValueInvalid", message: withDetail(`Invalid value: ${renderValue(value)}`, detail) };
}

/**
 * `field.Required`: a required value is missing or empty.
 *
 * @example
 * fieldRequired("metadata.namespace", "") // message "Required value"
 */
export function fieldRequired(field: string, detail = ""): FieldError {
  return { field, reason: "FieldValueRequired", message: withDetail("Required value", detail) };
}

/**
 * `field.Forbidden`: the value is well-formed but not allowed here.
 *
 * @example
 * fieldForbidden("metadata.namespace", "not allowed on this type") // message "Forbidden: not allowed on this type"
 */
export function fieldForbidden(field: string, detail: string): FieldError {
  return { field, reason: "FieldValueForbidden", message: withDetail("Forbidden", detail) };
}

/**
 * `field.TooLong`: the value exceeds `maxLength` bytes (the value itself is not echoed).
 *
 * @example
 * fieldTooLong("metadata.annotations", 262144) // message "Too long: must have at most 262144 bytes"
 */
export function fieldTooLong(field: string, maxLength: number): FieldError {
  return { field, reason: "FieldValueTooLong", message: `Too long: must have at most ${maxLength} bytes` };
}

/**
 * `field.NotSupported`: the value is not one of an enumerated set.
 *
 * @example
 * fieldNotSupported("spec.operator", "Gt", ["In", "NotIn"])
 * // message 'Unsupported value: "Gt": supported values: "In", "NotIn"'
 */
export function fieldNotSupported(field: string, value: unknown, supported: readonly string[]): FieldError {
  const detail = supported.length > 0 ? `supported values: ${supported.map((s) => JSON.stringify(s)).join(", ")}` : "";
  return { field, reason: "FieldValueNotSupported", message: withDetail(`Unsupported value: ${renderValue(value)}`, detail) };
}

/**
 * `field.Duplicate`: the value duplicates another entry of a list that must be unique.
 *
 * @example
 * fieldDuplicate("spec.clusters[2]", "c1") // message 'Duplicate value: "c1"'
 */
export function fieldDuplicate(field: string, value: unknown): FieldError {
  return { field, reason: "FieldValueDuplicate", message: `Duplicate value: ${renderValue(value)}` };
}

/**
 * `field.Error.Error()`: the one-line `field: message` form (just the message
 * when the field path is empty).
 *
 * @example
 * formatFieldError({ field: "metadata.name", reason: "FieldValueRequired", message: "Required value" })
 * // "metadata.name: Required value"
 */
export function formatFieldError(e: FieldError): string {
  return e.field ? `${e.field}: ${e.message}` : e.message;
}

/**
 * Joins errors the way apimachinery's `utilerrors.Aggregate.Error()` does:
 * one error renders alone, several as `[e1, e2]` (duplicates dropped).
 * Returns `""` for an empty list.
 *
 * @example
 * aggregateFieldErrors([a, b]) // "[metadata.name: Required value, metadata.namespace: Required value]"
 */
export function aggregateFieldErrors(errors: readonly FieldError[]): string {
  const msgs = [...new Set(errors.map(formatFieldError))];
  if (msgs.length === 0) return "";
  if (msgs.length === 1) return msgs[0] as string;
  return `[${msgs.join(", ")}]`;
}

/**
 * `field.Path.Child`: appends a field name to a path (`""` is the root).
 *
 * @example
 * childPath("spec", "selector") // "spec.selector"
 * childPath("", "matchLabels")  // "matchLabels"
 */
export function childPath(base: string, name: string): string {
  return base ? `${base}.${name}` : name;
}

/**
 * `field.Path.Index` / `field.Path.Key`: appends a subscript.
 *
 * @example
 * indexPath("spec.matchExpressions", 0) // "spec.matchExpressions[0]"
 * indexPath("metadata.labels", "app")   // "metadata.labels[app]"
 */
export function indexPath(base: string, index: number | string): string {
  return `${base}[${index}]`;
}

// ---------------------------------------------------------------------------
// String predicates (k8s.io/apimachinery/pkg/util/validation)
// ---------------------------------------------------------------------------

/** Maximum length of a DNS-1123 label (namespace names, qualified-name name parts). */
export const DNS1123_LABEL_MAX_LENGTH = 63;
/** Maximum length of a DNS-1123 subdomain (most object names, label key prefixes). */
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
/** Maximum length of a DNS-1035 label (e.g. Service names). */
export const DNS1035_LABEL_MAX_LENGTH = 63;
/** Maximum length of the name part of a qualified name (label / annotation keys). */
export const QUALIFIED_NAME_MAX_LENGTH = 63;
/** Maximum length of a label value. */
export const LABEL_VALUE_MAX_LENGTH = 63;
/** Maximum total size (sum of key and value bytes) of an object's annotations: 256 KiB. */
export const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES = 256 * 1024;

const DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_ERR =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QNAME_CHAR_FMT = "[A-Za-z0-9]";
const QNAME_EXT_CHAR_FMT = "[-A-Za-z0-9_.]";
const QUALIFIED_NAME_FMT = `(${QNAME_CHAR_FMT}${QNAME_EXT_CHAR_FMT}*)?${QNAME_CHAR_FMT}`;
const QUALIFIED_NAME_ERR = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT = `(${QUALIFIED_NAME_FMT})?`;
const LABEL_VALUE_ERR =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

const DNS1123_LABEL_RE = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1035_LABEL_RE = new RegExp(`^${DNS1035_LABEL_FMT}$`);
const QUALIFIED_NAME_RE = new RegExp(`^${QUALIFIED_NAME_FMT}$`);
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);

/** Length of `s` in UTF-8 bytes (Go's `len`), without relying on TextEncoder. */
export function utf8Length(s: string): number {
  let n = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0) as number;
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return n;
}

/**
 * apimachinery's `MaxLenError`.
 *
 * @example
 * maxLenError(63) // "must be no more than 63 characters"
 */
export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

/**
 * apimachinery's `RegexError`: a description, examples and the regex used.
 *
 * @example
 * regexError("must be lowercase", "[a-z]+", "abc")
 * // "must be lowercase (e.g. 'abc', regex used for validation is '[a-z]+')"
 */
export function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(" or ")}regex used for validation is '${fmt}')`;
}

/** apimachinery's `EmptyError`: `"must be non-empty"`. */
export function emptyError(): string {
  return "must be non-empty";
}

/**
 * `validation.IsDNS1123Label`: a lowercase RFC 1123 label (≤ 63 bytes,
 * `[a-z0-9]([-a-z0-9]*[a-z0-9])?`). Used for namespace names. Returns the
 * problems found; `[]` means valid. A valid subdomain that is not a valid
 * label gets the shorter `must not contain dots`.
 *
 * @example
 * isDNS1123Label("my-ns")  // []
 * isDNS1123Label("my.ns")  // ["must not contain dots"]
 * isDNS1123Label("-x")     // ["a lowercase RFC 1123 label must consist of ... (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
 */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (utf8Length(value) > DNS1123_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1123_LABEL_MAX_LENGTH));
  if (!DNS1123_LABEL_RE.test(value)) {
    if (DNS1123_SUBDOMAIN_RE.test(value)) errs.push("must not contain dots");
    else errs.push(regexError(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"));
  }
  return errs;
}

/**
 * `validation.IsDNS1123Subdomain`: a lowercase RFC 1123 subdomain (≤ 253
 * bytes, dot-separated DNS-1123 labels). Used for most object names and for
 * label-key prefixes. Returns the problems found; `[]` means valid.
 *
 * @example
 * isDNS1123Subdomain("example.com") // []
 * isDNS1123Subdomain("Example")
 * // ["a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
 */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (utf8Length(value) > DNS1123_SUBDOMAIN_MAX_LENGTH) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!DNS1123_SUBDOMAIN_RE.test(value)) errs.push(regexError(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"));
  return errs;
}

/**
 * `validation.IsDNS1035Label`: like a DNS-1123 label but must start with a
 * letter (≤ 63 bytes, `[a-z]([-a-z0-9]*[a-z0-9])?`). Kubernetes uses it for
 * Service names. Returns the problems found; `[]` means valid.
 *
 * @example
 * isDNS1035Label("web")  // []
 * isDNS1035Label("1web") // ["a DNS-1035 label must consist of ... (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]
 */
export function isDNS1035Label(value: string): string[] {
  const errs: string[] = [];
  if (utf8Length(value) > DNS1035_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1035_LABEL_MAX_LENGTH));
  if (!DNS1035_LABEL_RE.test(value)) errs.push(regexError(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, "my-name", "abc-123"));
  return errs;
}

/**
 * `validation.IsQualifiedName`: a label or annotation key. An optional
 * DNS-1123-subdomain prefix (≤ 253 bytes) and `/`, then a name part of
 * ≤ 63 bytes matching `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`. Prefix
 * problems are prefixed with `prefix part `, name problems with
 * `name part `; more than one `/` gets a single whole-key message. Returns
 * the problems found; `[]` means valid.
 *
 * @example
 * isQualifiedName("app.kubernetes.io/name") // []
 * isQualifiedName("/name")                   // ["prefix part must be non-empty"]
 * isQualifiedName("a/b/c")                   // ["a qualified name must consist of ... with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
 */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split("/");
  let name: string;
  if (parts.length === 1) {
    name = parts[0] as string;
  } else if (parts.length === 2) {
    const prefix = parts[0] as string;
    name = parts[1] as string;
    if (prefix.length === 0) errs.push(`prefix part ${emptyError()}`);
    else for (const msg of isDNS1123Subdomain(prefix)) errs.push(`prefix part ${msg}`);
  } else {
    errs.push(
      `a qualified name ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")}` +
        " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    );
    return errs;
  }
  if (name.length === 0) errs.push(`name part ${emptyError()}`);
  else if (utf8Length(name) > QUALIFIED_NAME_MAX_LENGTH) errs.push(`name part ${maxLenError(QUALIFIED_NAME_MAX_LENGTH)}`);
  if (!QUALIFIED_NAME_RE.test(name)) {
    errs.push(`name part ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")}`);
  }
  return errs;
}

/**
 * `validation.IsValidLabelValue`: empty, or ≤ 63 bytes of alphanumerics,
 * `-`, `_`, `.` starting and ending with an alphanumeric. Returns the
 * problems found; `[]` means valid.
 *
 * @example
 * isValidLabelValue("")        // []
 * isValidLabelValue("v1.2_rc") // []
 * isValidLabelValue("-x")      // ["a valid label must be an empty string or consist of ... (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
 */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (utf8Length(value) > LABEL_VALUE_MAX_LENGTH) errs.push(maxLenError(LABEL_VALUE_MAX_LENGTH));
  if (!LABEL_VALUE_RE.test(value)) errs.push(regexError(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"));
  return errs;
}

// ---------------------------------------------------------------------------
// Labels and annotations (metav1 validation / apimachinery objectmeta.go)
// ---------------------------------------------------------------------------

/**
 * `ValidateLabelName`: checks one label key is a qualified name. Errors are
 * reported on `fieldPath` with the key as the bad value.
 *
 * @example
 * validateLabelName("a/b/c", "metadata.labels")
 * // [{ field: "metadata.labels", reason: "FieldValueInvalid", message: 'Invalid value: "a/b/c": a qualified name must ...' }]
 */
export function validateLabelName(key: string, fieldPath: string): FieldError[] {
  return isQualifiedName(key).map((msg) => fieldInvalid(fieldPath, key, msg));
}

/**
 * `metav1validation.ValidateLabels`: every key must be a qualified name and
 * every value a valid label value. Like apimachinery, all errors are reported
 * on `fieldPath` itself (e.g. `metadata.labels`), with the offending key or
 * value as the bad value in the message. `undefined`/`null` is valid (no
 * labels). Keys are checked in the object's iteration order.
 *
 * @example
 * validateLabels({ app: "web", "-bad": "x", tier: "no way" }, "metadata.labels")
 * // [ { field: "metadata.labels", reason: "FieldValueInvalid", message: 'Invalid value: "-bad": name part must consist of ...' },
 * //   { field: "metadata.labels", reason: "FieldValueInvalid", message: 'Invalid value: "no way": a valid label must be ...' } ]
 */
export function validateLabels(labels: Record<string, string> | null | undefined, fieldPath: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!labels) return errs;
  for (const [k, v] of Object.entries(labels)) {
    errs.push(...validateLabelName(k, fieldPath));
    if (typeof v !== "string") {
      errs.push(fieldInvalid(fieldPath, v, "label values must be strings"));
      continue;
    }
    for (const msg of isValidLabelValue(v)) errs.push(fieldInvalid(fieldPath, v, msg));
  }
  return errs;
}

/**
 * `ValidateAnnotations`: every key must be a qualified name once lowercased
 * (annotation keys are case-insensitive for this check), and the sum of all
 * key and value lengths must not exceed 256 KiB
 * ({@link TOTAL_ANNOTATION_SIZE_LIMIT_BYTES}); the size error is a
 * `FieldValueTooLong` on `fieldPath`. Values are otherwise unrestricted.
 *
 * @example
 * validateAnnotations({ "example.com/Owner": "team-a" }, "metadata.annotations") // []
 * validateAnnotations({ big: "x".repeat(300_000) }, "metadata.annotations")
 * // [{ field: "metadata.annotations", reason: "FieldValueTooLong", message: "Too long: must have at most 262144 bytes" }]
 */
export function validateAnnotations(annotations: Record<string, string> | null | undefined, fieldPath: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!annotations) return errs;
  let total = 0;
  for (const [k, v] of Object.entries(annotations)) {
    for (const msg of isQualifiedName(k.toLowerCase())) errs.push(fieldInvalid(fieldPath, k, msg));
    total += utf8Length(k) + utf8Length(typeof v === "string" ? v : String(v));
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES) errs.push(fieldTooLong(fieldPath, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES));
  return errs;
}

// ---------------------------------------------------------------------------
// Object names (apimachinery pkg/api/validation: NameIsDNSSubdomain etc.)
// ---------------------------------------------------------------------------

/**
 * A name validator in apimachinery's `ValidateNameFunc` shape: returns the
 * problems with `name`; when `prefix` is true `name` is a `generateName`
 * prefix, so a trailing `-` is tolerated (random characters follow it).
 */
export type NameValidator = (name: string, prefix: boolean) => string[];

function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith("-") ? `${name.slice(0, -1)}a` : name;
}

/**
 * `NameIsDNSSubdomain`: the default rule for object names (DNS-1123
 * subdomain). With `prefix` set, a trailing `-` is allowed.
 *
 * @example
 * nameIsDNSSubdomain("web-", true)  // []
 * nameIsDNSSubdomain("web-", false) // ["a lowercase RFC 1123 subdomain must ..."]
 */
export const nameIsDNSSubdomain: NameValidator = (name, prefix) => isDNS1123Subdomain(prefix ? maskTrailingDash(name) : name);

/**
 * `NameIsDNSLabel`: DNS-1123 label names (namespaces). With `prefix` set, a
 * trailing `-` is allowed.
 *
 * @example
 * nameIsDNSLabel("team-a", false) // []
 */
export const nameIsDNSLabel: NameValidator = (name, prefix) => isDNS1123Label(prefix ? maskTrailingDash(name) : name);

/**
 * `NameIsDNS1035Label`: DNS-1035 label names (Services). With `prefix` set, a
 * trailing `-` is allowed.
 *
 * @example
 * nameIsDNS1035Label("1abc", false) // ["a DNS-1035 label must consist of ..."]
 */
export const nameIsDNS1035Label: NameValidator = (name, prefix) => isDNS1035Label(prefix ? maskTrailingDash(name) : name);

/** Options for {@link validateObjectName}. */
export interface ObjectNameOptions {
  /**
   * Whether the kind is namespaced. `true`: `namespace` is required and must
   * be a DNS-1123 label. `false`: a non-empty `namespace` is forbidden
   * (`Forbidden: not allowed on this type`). Omitted: namespace not checked.
   */
  namespaced?: boolean;
  /** The object's `metadata.namespace`, checked according to `namespaced`. */
  namespace?: string | null;
  /** The object's `metadata.generateName`, checked with the name rule in prefix mode when non-empty. */
  generateName?: string | null;
  /** Path of the metadata object; default `"metadata"`. */
  fieldPath?: string;
  /** Name rule; default {@link nameIsDNSSubdomain}. */
  nameValidator?: NameValidator;
}

/**
 * apimachinery's `path.IsValidPathSegmentName`: why `name` cannot be one segment of a URL path
 * (it is `.` or `..`, or holds `/` or `%`); empty when it can. The name rule of the RBAC kinds.
 *
 * @example pathSegmentNameErrors("system:discovery") // []
 * @example pathSegmentNameErrors("a/b")              // ["may not contain '/'"]
 */
export function pathSegmentNameErrors(name: string): string[] {
  if (name === "." || name === "..") return [`may not be '${name}'`];
  const errs: string[] = [];
  for (const ch of ["/", "%"]) if (name.includes(ch)) errs.push(`may not contain '${ch}'`);
  return errs;
}

/**
 * The name / generateName / namespace part of apimachinery's
 * `ValidateObjectMeta`:
 *
 * - `generateName`, if non-empty, must satisfy the name rule in prefix mode
 *   (`metadata.generateName`, FieldValueInvalid);
 * - `name` is required (`Required value: name or generateName is required` —
 *   like kube-apiserver, this runs after a name has been generated from
 *   `generateName`, so generate first) and must satisfy the name rule
 *   (default DNS-1123 subdomain) (`metadata.name`, FieldValueInvalid);
 * - the namespace is checked as described for {@link ObjectNameOptions.namespaced}.
 *
 * @example
 * validateObjectName("cluster1")                                    // []
 * validateObjectName("", { generateName: "web-" })                 // [Required metadata.name]
 * validateObjectName("cm", { namespaced: true })                   // [{ field: "metadata.namespace", reason: "FieldValueRequired", message: "Required value" }]
 * validateObjectName("cluster1", { namespaced: false, namespace: "ns" })
 * // [{ field: "metadata.namespace", reason: "FieldValueForbidden", message: "Forbidden: not allowed on this type" }]
 */
export function validateObjectName(name: string | null | undefined, opts: ObjectNameOptions = {}): FieldError[] {
  const base = opts.fieldPath ?? "metadata";
  const nameFn = opts.nameValidator ?? nameIsDNSSubdomain;
  const errs: FieldError[] = [];
  if (opts.generateName) errs.push(...validateGenerateName(opts.generateName, childPath(base, "generateName"), nameFn));
  const namePath = childPath(base, "name");
  if (!name) errs.push(fieldRequired(namePath, "name or generateName is required"));
  else for (const msg of nameFn(name, false)) errs.push(fieldInvalid(namePath, name, msg));
  const nsPath = childPath(base, "namespace");
  if (opts.namespaced === true) {
    errs.push(...validateNamespaceName(opts.namespace, nsPath));
  } else if (opts.namespaced === false && opts.namespace) {
    errs.push(fieldForbidden(nsPath, "not allowed on this type"));
  }
  return errs;
}

/**
 * Checks a namespace reference (`metadata.namespace` or a field naming a
 * namespace): required, and a DNS-1123 label (`ValidateNamespaceName`).
 *
 * @example
 * validateNamespaceName("team-a")                    // []
 * validateNamespaceName("Team.A", "spec.namespace")  // [{ field: "spec.namespace", reason: "FieldValueInvalid", ... }]
 * validateNamespaceName("")                          // [{ field: "metadata.namespace", reason: "FieldValueRequired", message: "Required value" }]
 */
export function validateNamespaceName(namespace: string | null | undefined, fieldPath = "metadata.namespace"): FieldError[] {
  if (!namespace) return [fieldRequired(fieldPath)];
  return nameIsDNSLabel(namespace, false).map((msg) => fieldInvalid(fieldPath, namespace, msg));
}

/**
 * Checks `metadata.generateName`: empty is fine (not set); otherwise it must
 * satisfy the name rule in prefix mode (a trailing `-` is allowed).
 *
 * @example
 * validateGenerateName("web-")  // []
 * validateGenerateName("-web")  // [{ field: "metadata.generateName", reason: "FieldValueInvalid", ... }]
 */
export function validateGenerateName(
  generateName: string | null | undefined,
  fieldPath = "metadata.generateName",
  nameValidator: NameValidator = nameIsDNSSubdomain,
): FieldError[] {
  if (!generateName) return [];
  return nameValidator(generateName, true).map((msg) => fieldInvalid(fieldPath, generateName, msg));
}

/** The subset of `ObjectMeta` checked by {@link validateObjectMeta}. */
export interface ObjectMetaLike {
  name?: string | null;
  generateName?: string | null;
  namespace?: string | null;
  labels?: Record<string, string> | null;
  annotations?: Record<string, string> | null;
}

/**
 * {@link validateObjectName} plus {@link validateLabels} on
 * `<fieldPath>.labels` and {@link validateAnnotations} on
 * `<fieldPath>.annotations` — the create-time `ValidateObjectMeta` checks.
 *
 * @example
 * validateObjectMeta({ name: "c1", labels: { env: "prod" } }, { namespaced: false }) // []
 */
export function validateObjectMeta(meta: ObjectMetaLike | null | undefined, opts: Omit<ObjectNameOptions, "namespace" | "generateName"> = {}): FieldError[] {
  const base = opts.fieldPath ?? "metadata";
  const m = meta ?? {};
  return [
    ...validateObjectName(m.name, { ...opts, namespace: m.namespace, generateName: m.generateName }),
    ...validateLabels(m.labels, childPath(base, "labels")),
    ...validateAnnotations(m.annotations, childPath(base, "annotations")),
  ];
}

// ---------------------------------------------------------------------------
// Conditions (metav1.Condition; apimachinery's ValidateConditions)
// ---------------------------------------------------------------------------

/** Longest `type` of a metav1.Condition, in characters (its OpenAPI `maxLength`: a 253-byte prefix, `/` and a 63-byte name). */
export const CONDITION_TYPE_MAX_LENGTH = 316;
/** Longest `reason` of a metav1.Condition, in bytes (apimachinery's `maxReasonLen`). */
export const CONDITION_REASON_MAX_LENGTH = 1024;
/** Longest `message` of a metav1.Condition, in bytes (apimachinery's `maxMessageLen`). */
export const CONDITION_MESSAGE_MAX_LENGTH = 32 * 1024;

const CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?";
const CONDITION_REASON_ERR =
  "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'";
const CONDITION_REASON_RE = new RegExp(`^${CONDITION_REASON_FMT}$`);

/**
 * apimachinery's `isValidConditionReason`: the format of a condition's `reason` (CamelCase,
 * letters, digits and `_,:`), not its length. Returns the problems found; `[]` means valid.
 *
 * @example
 * isValidConditionReason("AppliedManifestComplete") // []
 * isValidConditionReason("not ok")                  // ["a condition reason must start with ... regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"]
 */
export function isValidConditionReason(value: string): string[] {
  if (CONDITION_REASON_RE.test(value)) return [];
  return [regexError(CONDITION_REASON_ERR, CONDITION_REASON_FMT, "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")];
}

/**
 * Whether `value` is an RFC 3339 date-time (`2026-01-01T00:00:00Z`, with an optional fraction and
 * a `Z` or `±hh:mm` offset), the OpenAPI `date-time` format a metav1.Time is checked against.
 */
export function isRfc3339DateTime(value: string): boolean {
  return /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value));
}

/** The fields of a metav1.Condition that {@link validateConditions} checks (already of the right JSON types). */
export interface ConditionLike {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/**
 * apimachinery's `ValidateConditions` (`pkg/apis/meta/v1/validation`): a list of metav1.Condition
 * is a map keyed by `type` (a second condition of one type is `<path>[i].type: Duplicate value`),
 * and each condition has a qualified-name `type`, a `status` of True/False/Unknown, an
 * `observedGeneration` >= 0, a `lastTransitionTime` (RFC 3339 here, as the CRD's `date-time`
 * format), a `reason` of 1 to 1024 bytes matching `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`, and a
 * `message` of at most 32 KiB. Errors carry the field path under `fieldPath`, e.g.
 * `status.conditions[1].type`.
 *
 * @example
 * validateConditions([{ type: "Applied", ... }, { type: "Applied", ... }], "status.conditions")
 * // [{ field: "status.conditions[1].type", reason: "FieldValueDuplicate", message: 'Duplicate value: "Applied"' }]
 */
export function validateConditions(conditions: readonly ConditionLike[], fieldPath: string): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  conditions.forEach((c, i) => {
    const at = indexPath(fieldPath, i);
    if (seen.has(c.type)) errs.push(fieldDuplicate(childPath(at, "type"), c.type));
    seen.add(c.type);
    errs.push(...validateCondition(c, at));
  });
  return errs;
}

/** apimachinery's `ValidateCondition`: one condition's fields (see {@link validateConditions}), errors under `fieldPath`. */
export function validateCondition(c: ConditionLike, fieldPath: string): FieldError[] {
  const errs: FieldError[] = [];
  const type = childPath(fieldPath, "type");
  if (c.type.length > CONDITION_TYPE_MAX_LENGTH) errs.push(fieldTooLong(type, CONDITION_TYPE_MAX_LENGTH));
  else errs.push(...validateLabelName(c.type, type));
  const statuses = ["False", "True", "Unknown"];
  if (!statuses.includes(c.status)) errs.push(fieldNotSupported(childPath(fieldPath, "status"), c.status, statuses));
  if (c.observedGeneration !== undefined && c.observedGeneration < 0) {
    errs.push(fieldInvalid(childPath(fieldPath, "observedGeneration"), c.observedGeneration, "must be greater than or equal to zero"));
  }
  const ltt = childPath(fieldPath, "lastTransitionTime");
  if (c.lastTransitionTime === "") errs.push(fieldRequired(ltt, "must be set"));
  else if (!isRfc3339DateTime(c.lastTransitionTime))
    errs.push(fieldInvalid(ltt, c.lastTransitionTime, "must be an RFC 3339 date-time (e.g. '2026-01-01T00:00:00Z')"));
  const reason = childPath(fieldPath, "reason");
  if (c.reason.length === 0) {
    errs.push(fieldRequired(reason, "must be set"));
  } else {
    for (const m of isValidConditionReason(c.reason)) errs.push(fieldInvalid(reason, c.reason, m));
    if (utf8Length(c.reason) > CONDITION_REASON_MAX_LENGTH) errs.push(fieldTooLong(reason, CONDITION_REASON_MAX_LENGTH));
  }
  if (utf8Length(c.message) > CONDITION_MESSAGE_MAX_LENGTH) errs.push(fieldTooLong(childPath(fieldPath, "message"), CONDITION_MESSAGE_MAX_LENGTH));
  return errs;
}

// ---------------------------------------------------------------------------
// Resource lists (map[ResourceName]resource.Quantity)
// ---------------------------------------------------------------------------

/**
 * The bound a quantity must stay below when {@link validateResourceList} is asked for bounded
 * values: 2^63, past apimachinery's `maxAllowed` (2^63 - 1, the largest value a Quantity keeps;
 * it caps larger ones silently, so `1e400` would read as 9.2e18).
 */
const QUANTITY_BOUND = 2 ** 63;

/**
 * Checks a resource list (`capacity`, `allocatable`: resource name to quantity) as the hub reads
 * it: every key a qualified name (apimachinery's resource-name rule: `cpu`, `nvidia.com/gpu`),
 * every value a Kubernetes quantity parsed by the one quantity parser
 * (src/k8s/quantity.ts, apimachinery's `ParseQuantity` grammar; a JSON number is its
 * decimal text). With `bounded`, a value must also be >= 0 (as the apiserver's
 * `ValidateNonnegativeQuantity` holds a node's capacity) and below 2^63 (no silently capped
 * `1e400`). Errors name the entry: `<fieldPath>[cpu]`.
 *
 * @example
 * validateResourceList({ cpu: "-5" }, "capacity", { bounded: true })
 * // [{ field: "capacity[cpu]", reason: "FieldValueInvalid", message: 'Invalid value: "-5": must be greater than or equal to 0' }]
 */
export function validateResourceList(list: Readonly<Record<string, string | number>>, fieldPath: string, opts: { bounded?: boolean } = {}): FieldError[] {
  const errs: FieldError[] = [];
  for (const [name, raw] of Object.entries(list)) {
    const at = indexPath(fieldPath, name);
    for (const m of isQualifiedName(name)) errs.push(fieldInvalid(at, name, m));
    const text = typeof raw === "number" ? String(raw) : raw;
    let value: number;
    try {
      value = parseQuantity(text);
    } catch (e) {
      if (!(e instanceof QuantityError)) throw e;
      errs.push(fieldInvalid(at, raw, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
      continue;
    }
    if (!opts.bounded) continue;
    if (value < 0) errs.push(fieldInvalid(at, raw, "must be greater than or equal to 0"));
    else if (!(value < QUANTITY_BOUND)) errs.push(fieldInvalid(at, raw, "must be less than 2^63 (9223372036854775807)"));
  }
  return errs;
}
