/**
 * Structural schemas of CustomResourceDefinitions, after apiextensions-apiserver
 * (`pkg/apiserver/schema`, `pkg/apiserver/validation`, `pkg/apiserver/schema/defaulting`,
 * `pkg/apiserver/schema/pruning`, `pkg/apiserver/schema/cel`):
 *
 * - {@link schemaErrors}: whether a CRD version's `openAPIV3Schema` is structural and otherwise
 *   valid (the field errors `ValidateCustomResourceDefinition` reports under
 *   `spec.versions[i].schema.openAPIV3Schema`), its `x-kubernetes-validations` rules compiled;
 * - {@link unknownFields}: the fields pruning drops (unknown to the schema, unless under
 *   `x-kubernetes-preserve-unknown-fields`), which `fieldValidation` refuses, warns of or drops;
 * - {@link applyDefaults}: `default` values set where a field is absent (or null and not nullable);
 * - {@link valueErrors}: a custom resource checked against the schema as kube-openapi's
 *   validator words it (`spec.replicas in body must be of type integer: "string"`), then the
 *   CEL rules (`self`, `oldSelf` for transition rules, `message`, `messageExpression`, `reason`,
 *   `fieldPath`).
 *
 * A schema is plain JSON (`JSONSchemaProps`); paths are Kubernetes field paths
 * (`spec.items[0].name`, `properties[spec]` for schema nodes).
 */
import {
  compileRuleExpression,
  compileRuleMessageExpression,
  evaluateCel,
  fromCel,
  toCel,
  RUNTIME_COST_BUDGET,
  type CelOutcome,
  type CompiledCel,
} from "../cel/index.ts";
import { fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired, type FieldError } from "./validation.ts";
import { isJsonObject } from "./meta.ts";

/** One `x-kubernetes-validations` rule (apiextensions `ValidationRule`). */
export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

/** apiextensions `JSONSchemaProps`, as a CRD carries it (the fields structural schemas use). */
export interface SchemaProps {
  type?: string;
  format?: string;
  description?: string;
  title?: string;
  default?: unknown;
  nullable?: boolean;
  enum?: unknown[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  required?: string[];
  properties?: Record<string, SchemaProps>;
  additionalProperties?: SchemaProps | boolean;
  items?: SchemaProps;
  allOf?: SchemaProps[];
  anyOf?: SchemaProps[];
  oneOf?: SchemaProps[];
  not?: SchemaProps;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: string;
  "x-kubernetes-validations"?: ValidationRule[];
}

/** The keys of a `JSONSchemaProps` (anything else in a CRD's schema is an unknown field). */
export const SCHEMA_PROPS_KEYS = new Set([
  "id",
  "$schema",
  "$ref",
  "description",
  "type",
  "format",
  "title",
  "default",
  "maximum",
  "exclusiveMaximum",
  "minimum",
  "exclusiveMinimum",
  "maxLength",
  "minLength",
  "pattern",
  "maxItems",
  "minItems",
  "uniqueItems",
  "multipleOf",
  "enum",
  "maxProperties",
  "minProperties",
  "required",
  "items",
  "allOf",
  "oneOf",
  "anyOf",
  "not",
  "properties",
  "additionalProperties",
  "patternProperties",
  "dependencies",
  "additionalItems",
  "definitions",
  "externalDocs",
  "example",
  "nullable",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-int-or-string",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-list-type",
  "x-kubernetes-map-type",
  "x-kubernetes-validations",
]);

/** Nested quantifiers (`(a+)+`, `(a|b*)*`) make a backtracking engine exponential (src/cel/index.ts refuses them in CEL too). */
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*(?:[*+]|\{\d+,\d*\})(?:[^()\\]|\\.)*\)(?:[*+]|\{\d+,\d*\})/;

/** Compiled `pattern`s, by source. */
const patterns = new Map<string, RegExp>();

function patternOf(source: string): RegExp {
  return cached(patterns, source, (p) => new RegExp(p));
}

const RULE_KEYS = new Set(["rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"]);
const TYPES = new Set(["object", "array", "string", "integer", "number", "boolean"]);
const RULE_REASONS = ["FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"];

/** An unknown key of a schema document, for `fieldValidation` (path of the object holding it, and the key). */
export interface UnknownKey {
  path: (string | number)[];
  key: string;
}

/**
 * The keys of `doc` (a CRD version's `openAPIV3Schema`, at `path` in the CRD) that a
 * `JSONSchemaProps` does not have: strict decoding of a CRD reports them as unknown fields.
 */
export function unknownSchemaKeys(doc: unknown, path: (string | number)[]): UnknownKey[] {
  const out: UnknownKey[] = [];
  const visit = (node: unknown, at: (string | number)[]) => {
    if (!isJsonObject(node)) return;
    for (const [k, v] of Object.entries(node)) {
      if (!SCHEMA_PROPS_KEYS.has(k)) {
        out.push({ path: at, key: k });
        continue;
      }
      if (k === "properties" || k === "definitions" || k === "patternProperties") {
        if (isJsonObject(v)) for (const [name, sub] of Object.entries(v)) visit(sub, [...at, k, name]);
      } else if (k === "items" || k === "not" || k === "additionalItems" || k === "additionalProperties") {
        if (Array.isArray(v)) v.forEach((sub, i) => visit(sub, [...at, k, i]));
        else visit(v, [...at, k]);
      } else if (k === "allOf" || k === "anyOf" || k === "oneOf") {
        if (Array.isArray(v)) v.forEach((sub, i) => visit(sub, [...at, k, i]));
      } else if (k === "x-kubernetes-validations" && Array.isArray(v)) {
        v.forEach((r, i) => {
          if (isJsonObject(r)) for (const rk of Object.keys(r)) if (!RULE_KEYS.has(rk)) out.push({ path: [...at, k, i], key: rk });
        });
      }
    }
  };
  visit(doc, path);
  return out;
}

// ---------------------------------------------------------------------------
// The CRD's own validation of a schema (structural, well-formed, rules compiled)
// ---------------------------------------------------------------------------

/**
 * The field errors of a CRD version's `openAPIV3Schema` at `path` (e.g.
 * `spec.versions[0].schema.openAPIV3Schema`), as apiextensions' `ValidateCustomResourceDefinition`
 * reports them: the JSON shape of each node, the structural rules (`type` in every specified
 * node, `object` at the root, only `name`/`generateName` under the root's `metadata`,
 * `additionalProperties` and `properties` mutually exclusive, no `$ref`, no `uniqueItems: true`,
 * `x-kubernetes-preserve-unknown-fields` only true, value validations only in `allOf`/`anyOf`/
 * `oneOf`/`not` without types, defaults and descriptions), `x-kubernetes-int-or-string` and
 * `-embedded-resource` rules, list types, defaults valid against their schema, and each
 * `x-kubernetes-validations` rule compiled.
 */
export function schemaErrors(schema: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!isJsonObject(schema)) return [fieldInvalid(path, schema, "must be an object")];
  const s = schema as unknown as SchemaProps;
  if (s.nullable === true) errs.push(fieldForbidden(`${path}.nullable`, "nullable cannot be true at the root"));
  const meta = s.properties?.metadata;
  if (isJsonObject(meta)) {
    const m = meta as SchemaProps;
    const extra = Object.keys(m).filter((k) => k !== "type" && k !== "properties");
    const props = Object.keys(m.properties ?? {}).filter((k) => k !== "name" && k !== "generateName");
    if (extra.length > 0 || props.length > 0 || (m.type !== undefined && m.type !== "object"))
      errs.push(
        fieldForbidden(`${path}.properties[metadata]`, "must not specify anything other than name and generateName, but metadata is implicitly specified"),
      );
  }
  node(s, path, errs, { root: true, inJunctor: false });
  return errs;
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

function node(s: SchemaProps, path: string, errs: FieldError[], at: { root: boolean; inJunctor: boolean; item?: boolean }): void {
  const raw = s as unknown as Record<string, unknown>;
  const numberKeys = ["minimum", "maximum", "multipleOf"] as const;
  for (const k of numberKeys) if (raw[k] !== undefined && typeof raw[k] !== "number") errs.push(fieldInvalid(`${path}.${k}`, raw[k], "must be a number"));
  const intKeys = ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"] as const;
  for (const k of intKeys)
    if (raw[k] !== undefined && (typeof raw[k] !== "number" || !Number.isInteger(raw[k]) || (raw[k] as number) < 0))
      errs.push(fieldInvalid(`${path}.${k}`, raw[k], "must be a non-negative integer"));
  for (const k of [
    "nullable",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "uniqueItems",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
  ])
    if (raw[k] !== undefined && typeof raw[k] !== "boolean") errs.push(fieldInvalid(`${path}.${k}`, raw[k], "must be a boolean"));
  for (const k of ["type", "format", "description", "title", "pattern", "x-kubernetes-list-type", "x-kubernetes-map-type"])
    if (raw[k] !== undefined && typeof raw[k] !== "string") errs.push(fieldInvalid(`${path}.${k}`, raw[k], "must be a string"));
  if (raw.required !== undefined && !isStringArray(raw.required)) errs.push(fieldInvalid(`${path}.required`, raw.required, "must be a list of strings"));
  if (raw.enum !== undefined && !Array.isArray(raw.enum)) errs.push(fieldInvalid(`${path}.enum`, raw.enum, "must be a list"));
  if (raw.$ref !== undefined) errs.push(fieldForbidden(`${path}.$ref`, "$ref is not supported"));
  for (const k of ["patternProperties", "dependencies", "additionalItems", "definitions", "id", "$schema"])
    if (raw[k] !== undefined) errs.push(fieldForbidden(`${path}.${k}`, `${k} is not supported`));
  if (s.uniqueItems === true)
    errs.push(fieldForbidden(`${path}.uniqueItems`, "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"));
  if (s["x-kubernetes-preserve-unknown-fields"] === false)
    errs.push(fieldInvalid(`${path}.x-kubernetes-preserve-unknown-fields`, false, "must be true or undefined"));
  if (typeof s.type === "string" && s.type !== "" && !TYPES.has(s.type))
    errs.push(fieldNotSupported(`${path}.type`, s.type, ["array", "boolean", "integer", "number", "object", "string"]));
  if (typeof s.pattern === "string") {
    try {
      RegExp(s.pattern);
      if (NESTED_QUANTIFIER.test(s.pattern))
        errs.push(
          fieldInvalid(`${path}.pattern`, s.pattern, "nests quantifiers, which Flotilla refuses (exponential backtracking; kube-apiserver's RE2 is linear)"),
        );
    } catch (e) {
      errs.push(fieldInvalid(`${path}.pattern`, s.pattern, `must be a valid regular expression, but isn't: ${e instanceof Error ? e.message : String(e)}`));
    }
  }
  if (at.inJunctor) junctorErrors(s, path, errs);
  else structuralErrors(s, path, errs, at.root ? "root" : at.item ? "item" : "field");
  if (s.properties !== undefined && s.additionalProperties !== undefined && !at.inJunctor)
    errs.push(fieldForbidden(`${path}.additionalProperties`, "additionalProperties and properties are mutual exclusive"));
  if (s.additionalProperties === false) errs.push(fieldForbidden(`${path}.additionalProperties`, "additionalProperties cannot be set to false"));
  if (s.properties !== undefined) {
    if (!isJsonObject(s.properties)) errs.push(fieldInvalid(`${path}.properties`, s.properties, "must be an object"));
    else
      for (const [k, sub] of Object.entries(s.properties)) {
        const p = `${path}.properties[${k}]`;
        if (!isJsonObject(sub)) errs.push(fieldInvalid(p, sub, "must be an object"));
        else node(sub as SchemaProps, p, errs, { root: false, inJunctor: at.inJunctor });
      }
  }
  if (isJsonObject(s.additionalProperties))
    node(s.additionalProperties as SchemaProps, `${path}.additionalProperties`, errs, { root: false, inJunctor: at.inJunctor });
  if (s.items !== undefined) {
    if (!isJsonObject(s.items)) errs.push(fieldForbidden(`${path}.items`, "items must be a schema object and not an array"));
    else node(s.items as SchemaProps, `${path}.items`, errs, { root: false, inJunctor: at.inJunctor, item: true });
  }
  for (const j of ["allOf", "anyOf", "oneOf"] as const) {
    const list = raw[j];
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      errs.push(fieldInvalid(`${path}.${j}`, list, "must be a list"));
      continue;
    }
    // The int-or-string forms apiextensions allows: `anyOf: [{type: integer}, {type: string}]`, alone or first in `allOf`.
    if (j === "anyOf" && isIntOrStringAnyOf(list)) continue;
    list.forEach((sub, i) => {
      const p = `${path}.${j}[${i}]`;
      if (!isJsonObject(sub)) errs.push(fieldInvalid(p, sub, "must be an object"));
      else {
        const nested =
          j === "allOf" && i === 0 && isIntOrStringAnyOf((sub as SchemaProps).anyOf) ? { ...(sub as SchemaProps), anyOf: undefined } : (sub as SchemaProps);
        node(nested, p, errs, { root: false, inJunctor: true });
        if (!at.inJunctor) completeness(sub as SchemaProps, s, path, p, errs);
      }
    });
  }
  if (raw.not !== undefined) {
    if (!isJsonObject(raw.not)) errs.push(fieldInvalid(`${path}.not`, raw.not, "must be an object"));
    else node(raw.not as SchemaProps, `${path}.not`, errs, { root: false, inJunctor: true });
  }
  listTypeErrors(s, path, errs);
  if (s.default !== undefined && !at.inJunctor) {
    if (s.default === null && !s.nullable) errs.push(fieldInvalid(`${path}.default`, null, "must not be null for non-nullable schema"));
    else if (s.default !== null) for (const e of valueErrors(s, structuredClone(s.default), undefined, `${path}.default`)) errs.push(e);
  }
  const rules = raw["x-kubernetes-validations"];
  if (rules !== undefined) {
    if (!Array.isArray(rules)) errs.push(fieldInvalid(`${path}.x-kubernetes-validations`, rules, "must be a list"));
    else rules.forEach((r, i) => ruleErrors(r, `${path}.x-kubernetes-validations[${i}]`, errs));
  }
}

/**
 * apiextensions' `validateStructuralCompleteness`: every property (and items) a value validation
 * (`anyOf[0]`, at `jpath`) names must be specified in the structural part beside it (at `path`):
 * `properties[x]: Required value: because it is defined in <jpath>.properties[x]`.
 */
function completeness(junctor: SchemaProps, structural: SchemaProps | undefined, path: string, jpath: string, errs: FieldError[]): void {
  if (!structural) {
    errs.push(fieldRequired(path, `because it is defined in ${jpath}`));
    return;
  }
  if (isJsonObject(junctor.items)) completeness(junctor.items as SchemaProps, structural.items, `${path}.items`, `${jpath}.items`, errs);
  if (isJsonObject(junctor.properties))
    for (const [k, sub] of Object.entries(junctor.properties)) {
      if (!isJsonObject(sub)) continue;
      const known = isJsonObject(structural.properties) ? structural.properties[k] : undefined;
      const additional = isJsonObject(structural.additionalProperties) ? (structural.additionalProperties as SchemaProps) : undefined;
      if (known || additional) completeness(sub as SchemaProps, known ?? additional, `${path}.properties[${k}]`, `${jpath}.properties[${k}]`, errs);
      else errs.push(fieldRequired(`${path}.properties[${k}]`, `because it is defined in ${jpath}.properties[${k}]`));
    }
  for (const j of ["allOf", "anyOf", "oneOf"] as const)
    (junctor[j] ?? []).forEach((sub, i) => {
      if (isJsonObject(sub)) completeness(sub, structural, path, `${jpath}.${j}[${i}]`, errs);
    });
  if (isJsonObject(junctor.not)) completeness(junctor.not, structural, path, `${jpath}.not`, errs);
}

/** Whether `list` is apiextensions' int-or-string `anyOf`: `[{type: integer}, {type: string}]`. */
function isIntOrStringAnyOf(list: unknown): boolean {
  return (
    Array.isArray(list) &&
    list.length === 2 &&
    JSON.stringify(list[0]) === JSON.stringify({ type: "integer" }) &&
    JSON.stringify(list[1]) === JSON.stringify({ type: "string" })
  );
}

const JUNCTOR_FORBIDDEN: [string, string][] = [
  ["type", "must be empty to be structural"],
  ["additionalProperties", "must be undefined to be structural"],
  ["default", "must be undefined to be structural"],
  ["title", "must be empty to be structural"],
  ["description", "must be empty to be structural"],
  ["nullable", "must be false to be structural"],
  ["x-kubernetes-preserve-unknown-fields", "must be false to be structural"],
  ["x-kubernetes-embedded-resource", "must be false to be structural"],
  ["x-kubernetes-int-or-string", "must be false to be structural"],
  ["x-kubernetes-list-map-keys", "must be empty to be structural"],
  ["x-kubernetes-list-type", "must be undefined to be structural"],
  ["x-kubernetes-validations", "must be empty to be structural"],
];

/** apiextensions' `validateNestedValueValidation`: what a node under `allOf`/`anyOf`/`oneOf`/`not` may not have. */
function junctorErrors(s: SchemaProps, path: string, errs: FieldError[]): void {
  const raw = s as unknown as Record<string, unknown>;
  for (const [k, message] of JUNCTOR_FORBIDDEN) {
    const v = raw[k];
    if (v === undefined || v === false || v === "" || (Array.isArray(v) && v.length === 0)) continue;
    errs.push(fieldForbidden(`${path}.${k}`, message));
  }
  if (isJsonObject(s.properties) && "metadata" in s.properties)
    errs.push(fieldForbidden(`${path}.properties[metadata]`, "must not be specified in a nested context"));
}

/** apiextensions' `validateStructuralInvariants` for one node of the structural part, at `level`. */
function structuralErrors(s: SchemaProps, path: string, errs: FieldError[], level: "root" | "item" | "field"): void {
  const intOrString = s["x-kubernetes-int-or-string"] === true;
  const preserve = s["x-kubernetes-preserve-unknown-fields"] === true;
  const embedded = s["x-kubernetes-embedded-resource"] === true;
  if (s.type === "array" && s.items === undefined) errs.push(fieldRequired(`${path}.items`, "must be specified"));
  if (level === "root" && s.additionalProperties !== undefined) errs.push(fieldForbidden(`${path}.additionalProperties`, "must not be used at the root"));
  if (intOrString && preserve)
    errs.push(fieldInvalid(`${path}.x-kubernetes-preserve-unknown-fields`, true, "must be false if x-kubernetes-int-or-string is true"));
  if (intOrString && embedded) errs.push(fieldInvalid(`${path}.x-kubernetes-embedded-resource`, true, "must be false if x-kubernetes-int-or-string is true"));
  if (embedded && s.type !== "object") {
    if (!s.type) errs.push(fieldRequired(`${path}.type`, "must be object if x-kubernetes-embedded-resource is true"));
    else errs.push(fieldInvalid(`${path}.type`, s.type, "must be object if x-kubernetes-embedded-resource is true"));
  } else if (!s.type && !intOrString && !preserve) {
    const detail =
      level === "root"
        ? "must not be empty at the root"
        : level === "item"
          ? "must not be empty for specified array items"
          : "must not be empty for specified object fields";
    errs.push(fieldRequired(`${path}.type`, detail));
  }
  if (embedded && s.additionalProperties !== undefined)
    errs.push(fieldForbidden(`${path}.additionalProperties`, "must not be used if x-kubernetes-embedded-resource is set"));
  if (level === "root" && s.type && s.type !== "object") errs.push(fieldInvalid(`${path}.type`, s.type, "must be object at the root"));
  if ((level === "root" || embedded) && isJsonObject(s.properties)) {
    const { kind, apiVersion, metadata } = s.properties;
    if (kind && kind.type !== "string") errs.push(fieldInvalid(`${path}.properties[kind].type`, kind.type ?? "", "must be string"));
    if (apiVersion && apiVersion.type !== "string") errs.push(fieldInvalid(`${path}.properties[apiVersion].type`, apiVersion.type ?? "", "must be string"));
    if (metadata && metadata.type !== "object") errs.push(fieldInvalid(`${path}.properties[metadata].type`, metadata.type ?? "", "must be object"));
  }
  if (embedded && !preserve && !(isJsonObject(s.properties) && Object.keys(s.properties).length > 0))
    errs.push(fieldRequired(`${path}.properties`, "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"));
}

function listTypeErrors(s: SchemaProps, path: string, errs: FieldError[]): void {
  const lt = s["x-kubernetes-list-type"];
  if (lt === undefined) return;
  if (!["atomic", "set", "map"].includes(lt)) errs.push(fieldNotSupported(`${path}.x-kubernetes-list-type`, lt, ["atomic", "set", "map"]));
  if (s.type !== "array") errs.push(fieldInvalid(`${path}.x-kubernetes-list-type`, lt, "must only be used if type == array"));
  const keys = s["x-kubernetes-list-map-keys"];
  if (lt === "map") {
    if (!keys || keys.length === 0) errs.push(fieldRequired(`${path}.x-kubernetes-list-map-keys`, "must not be empty if x-kubernetes-list-type is map"));
    const item = s.items;
    if (item && item.type !== "object")
      errs.push(fieldInvalid(`${path}.items.type`, item.type ?? "", "must be object if parent array's x-kubernetes-list-type is map"));
    for (const k of keys ?? [])
      if (item && !item.properties?.[k]) errs.push(fieldRequired(`${path}.items.properties[${k}]`, "entries for x-kubernetes-list-map-keys must be specified"));
  } else if (keys !== undefined) errs.push(fieldInvalid(`${path}.x-kubernetes-list-map-keys`, keys, "must not be set if x-kubernetes-list-type is not map"));
}

/** Compiled rules, by source (a CRD's rules are compiled when it is written and again when its kinds are built). */
const compiledRules = new Map<string, CompiledCel>();
const compiledMessages = new Map<string, CompiledCel>();

/** Most entries each cache of compiled rules, messages or patterns keeps (it starts over past it: refused CRDs' rules are never used again). */
const CACHE_LIMIT = 2_000;

function cached<T>(cache: Map<string, T>, source: string, make: (s: string) => T): T {
  let c = cache.get(source);
  if (c === undefined) {
    c = make(source);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(source, c);
  }
  return c;
}

function compiledRule(source: string): CompiledCel {
  return cached(compiledRules, source, compileRuleExpression);
}

function compiledMessage(source: string): CompiledCel {
  return cached(compiledMessages, source, compileRuleMessageExpression);
}

function ruleErrors(r: unknown, path: string, errs: FieldError[]): void {
  if (!isJsonObject(r)) {
    errs.push(fieldInvalid(path, r, "must be an object"));
    return;
  }
  const rule = r as unknown as ValidationRule;
  if (typeof rule.rule !== "string" || rule.rule.trim() === "") {
    errs.push(fieldRequired(`${path}.rule`, ""));
    return;
  }
  if (rule.message !== undefined && (typeof rule.message !== "string" || rule.message.trim() === ""))
    errs.push(fieldRequired(`${path}.message`, "message must be non-empty if specified"));
  else if (typeof rule.message === "string" && /[\r\n]/.test(rule.message))
    errs.push(fieldInvalid(`${path}.message`, rule.message, "message must not contain line breaks"));
  if (rule.reason !== undefined && !RULE_REASONS.includes(rule.reason)) errs.push(fieldNotSupported(`${path}.reason`, rule.reason, RULE_REASONS));
  try {
    compiledRule(rule.rule);
  } catch (e) {
    errs.push(fieldInvalid(`${path}.rule`, rule.rule, e instanceof Error ? e.message : String(e)));
  }
  if (rule.messageExpression !== undefined) {
    if (typeof rule.messageExpression !== "string" || rule.messageExpression.trim() === "")
      errs.push(fieldRequired(`${path}.messageExpression`, "messageExpression must be non-empty if specified"));
    else
      try {
        compiledMessage(rule.messageExpression);
      } catch (e) {
        errs.push(fieldInvalid(`${path}.messageExpression`, rule.messageExpression, `messageExpression ${e instanceof Error ? e.message : String(e)}`));
      }
  }
  if (rule.optionalOldSelf === true && !usesOldSelf(rule.rule))
    errs.push(fieldForbidden(`${path}.optionalOldSelf`, "may only be set when the rule refers to oldSelf"));
}

/** Whether a rule is a transition rule (refers to `oldSelf`). */
function usesOldSelf(rule: string): boolean {
  return /\boldSelf\b/.test(rule);
}

// ---------------------------------------------------------------------------
// Pruning (unknown fields)
// ---------------------------------------------------------------------------

/**
 * The fields of a custom resource (or a patch of one) that its schema does not know, as
 * apiextensions' pruning (`pruning.PruneWithOptions`) finds them: keys of an object node that
 * has neither the property nor `additionalProperties`, unless the node (or an ancestor without
 * its own schema under it) preserves unknown fields. The root's `apiVersion`, `kind` and
 * `metadata`, and the same in an `x-kubernetes-embedded-resource`, are always known.
 */
export function unknownFields(schema: SchemaProps, value: unknown): UnknownKey[] {
  const out: UnknownKey[] = [];
  prune(schema, value, [], true, out);
  return out;
}

function prune(s: SchemaProps, v: unknown, path: (string | number)[], resourceRoot: boolean, out: UnknownKey[]): void {
  if (s["x-kubernetes-int-or-string"]) return;
  if (Array.isArray(v)) {
    if (s.items) v.forEach((item, i) => prune(s.items!, item, [...path, i], false, out));
    return;
  }
  if (!isJsonObject(v)) return;
  const preserve = s["x-kubernetes-preserve-unknown-fields"] === true;
  const additional = isJsonObject(s.additionalProperties) ? (s.additionalProperties as SchemaProps) : undefined;
  for (const [k, sub] of Object.entries(v)) {
    if (resourceRoot && (k === "apiVersion" || k === "kind" || k === "metadata")) continue;
    const prop = s.properties?.[k];
    if (prop) prune(prop, sub, [...path, k], prop["x-kubernetes-embedded-resource"] === true, out);
    else if (additional) prune(additional, sub, [...path, k], additional["x-kubernetes-embedded-resource"] === true, out);
    else if (!preserve && s.additionalProperties !== true) out.push({ path, key: k });
  }
}

// ---------------------------------------------------------------------------
// Defaulting
// ---------------------------------------------------------------------------

/**
 * Sets, in place, the `default` of each property that `value` lacks (or holds null without
 * `nullable`), in objects, maps and list items, as apiextensions' `structuraldefaulting.Default`;
 * a default is copied and then defaulted itself.
 */
export function applyDefaults(schema: SchemaProps, value: unknown): void {
  if (Array.isArray(value)) {
    if (schema.items) for (const item of value) applyDefaults(schema.items, item);
    return;
  }
  if (!isJsonObject(value)) return;
  for (const [k, prop] of Object.entries(schema.properties ?? {})) {
    if (prop.default !== undefined && (!(k in value) || (value[k] === null && !prop.nullable))) value[k] = structuredClone(prop.default);
    if (k in value) applyDefaults(prop, value[k]);
  }
  if (isJsonObject(schema.additionalProperties)) for (const v of Object.values(value)) applyDefaults(schema.additionalProperties as SchemaProps, v);
}

// ---------------------------------------------------------------------------
// Validation of a value
// ---------------------------------------------------------------------------

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function matchesType(type: string, v: unknown): boolean {
  switch (type) {
    case "object":
      return isJsonObject(v);
    case "array":
      return Array.isArray(v);
    case "string":
      return typeof v === "string";
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "number":
      return typeof v === "number";
    case "boolean":
      return typeof v === "boolean";
    default:
      return true;
  }
}

const FORMATS: Record<string, (s: string) => boolean> = {
  "date-time": (s) => /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s)),
  datetime: (s) => FORMATS["date-time"]!(s),
  date: (s) => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s)),
  uuid: (s) => /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(s),
  byte: (s) => /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s),
  ipv4: (s) => /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/.test(s),
  email: (s) => /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(s),
  hostname: (s) => /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/i.test(s),
};

function render(v: unknown): string {
  return JSON.stringify(v) ?? String(v);
}

/** `spec.x` as kube-openapi names it in its messages (`spec.x in body ...`); the root is `body`. */
function inBody(path: string): string {
  return path === "" ? "body" : `${path} in body`;
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/**
 * The field errors of custom resource `value` (at field path `path`, "" for the whole object)
 * against `schema`, then of its `x-kubernetes-validations` rules with `old` as `oldSelf` (a
 * transition rule is checked only where the old object has the value, unless `optionalOldSelf`).
 * The root's `apiVersion`, `kind` and `metadata` are not checked here (ObjectMeta's own rules).
 */
export function valueErrors(schema: SchemaProps, value: unknown, old: unknown, path = ""): FieldError[] {
  const errs: FieldError[] = [];
  check(schema, value, path, errs, path === "");
  if (errs.length === 0) rules(schema, value, old, old !== undefined, path, errs, path === "", { remaining: RUNTIME_COST_BUDGET, exhausted: false });
  return errs;
}

function check(s: SchemaProps, v: unknown, path: string, errs: FieldError[], resourceRoot: boolean): void {
  if (v === null && s.nullable) return;
  // kube-openapi's InvalidType error carries the type found as its value (`Invalid value: "string"`);
  // the enum is still checked after it, as kube-openapi reports both.
  let typed = true;
  if (s["x-kubernetes-int-or-string"]) {
    if (!(typeof v === "string" || (typeof v === "number" && Number.isInteger(v)))) {
      errs.push(fieldInvalid(path, typeOf(v), `${inBody(path)} must be of type integer,string: ${render(typeOf(v))}`));
      typed = false;
    }
  } else if (s.type && !matchesType(s.type, v)) {
    errs.push(fieldInvalid(path, typeOf(v), `${inBody(path)} must be of type ${s.type}: ${render(typeOf(v))}`));
    typed = false;
  } else if (v === null) return;
  if (s.enum && v !== null && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v)))
    errs.push(
      fieldNotSupported(
        path,
        v,
        s.enum.map((e) => (typeof e === "string" ? e : render(e))),
      ),
    );
  if (!typed) {
    junctors(s, v, path, errs);
    return;
  }
  if (typeof v === "string") {
    if (s.maxLength !== undefined && [...v].length > s.maxLength)
      errs.push({ field: path, reason: "FieldValueTooLong", message: `Too long: may not be more than ${s.maxLength} ${s.maxLength === 1 ? "byte" : "bytes"}` });
    if (s.minLength !== undefined && [...v].length < s.minLength)
      errs.push(fieldInvalid(path, v, `${inBody(path)} should be at least ${s.minLength} chars long`));
    if (s.pattern !== undefined) {
      // A stored CRD's patterns compiled when it was written; one that does not compile checks nothing.
      let ok: boolean;
      try {
        ok = patternOf(s.pattern).test(v);
      } catch {
        ok = true;
      }
      if (!ok) errs.push(fieldInvalid(path, v, `${inBody(path)} should match '${s.pattern}'`));
    }
    const f = s.format ? FORMATS[s.format] : undefined;
    if (f && !f(v)) errs.push(fieldInvalid(path, v, `${inBody(path)} must be of type ${s.format}: ${render(v)}`));
  }
  if (typeof v === "number") {
    if (s.minimum !== undefined && (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum))
      errs.push(fieldInvalid(path, v, `${inBody(path)} should be greater than ${s.exclusiveMinimum ? "" : "or equal to "}${s.minimum}`));
    if (s.maximum !== undefined && (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum))
      errs.push(fieldInvalid(path, v, `${inBody(path)} should be less than ${s.exclusiveMaximum ? "" : "or equal to "}${s.maximum}`));
    if (s.multipleOf !== undefined && s.multipleOf > 0 && Math.abs(v / s.multipleOf - Math.round(v / s.multipleOf)) > 1e-9)
      errs.push(fieldInvalid(path, v, `${inBody(path)} should be a multiple of ${s.multipleOf}`));
    if (s.format === "int32" && (v < -2147483648 || v > 2147483647))
      errs.push(fieldInvalid(path, v, `${inBody(path)} must be of type int32: ${render(String(v))}`));
  }
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems)
      errs.push({ field: path, reason: "FieldValueTooMany", message: `Too many: ${v.length}: must have at most ${s.maxItems} items` });
    if (s.minItems !== undefined && v.length < s.minItems) errs.push(fieldInvalid(path, v, `${inBody(path)} should have at least ${s.minItems} items`));
    if (s.items) v.forEach((item, i) => check(s.items!, item, `${path}[${i}]`, errs, false));
    listUniqueness(s, v, path, errs);
  }
  if (isJsonObject(v)) {
    const n = Object.keys(v).length;
    if (s.maxProperties !== undefined && n > s.maxProperties)
      errs.push({ field: path, reason: "FieldValueTooMany", message: `Too many: ${n}: must have at most ${s.maxProperties} items` });
    if (s.minProperties !== undefined && n < s.minProperties)
      errs.push(fieldInvalid(path, v, `${inBody(path)} should have at least ${s.minProperties} properties`));
    for (const r of s.required ?? []) if (!(r in v)) errs.push(fieldRequired(join(path, r), ""));
    for (const [k, sub] of Object.entries(v)) {
      if (resourceRoot && (k === "apiVersion" || k === "kind" || k === "metadata")) continue;
      const prop = s.properties?.[k];
      if (prop) check(prop, sub, join(path, k), errs, prop["x-kubernetes-embedded-resource"] === true);
      else if (isJsonObject(s.additionalProperties)) check(s.additionalProperties as SchemaProps, sub, join(path, k), errs, false);
    }
    if (s["x-kubernetes-embedded-resource"]) {
      if (typeof v.apiVersion !== "string" || v.apiVersion === "") errs.push(fieldRequired(join(path, "apiVersion"), "must not be empty"));
      if (typeof v.kind !== "string" || v.kind === "") errs.push(fieldRequired(join(path, "kind"), "must not be empty"));
    }
  }
  junctors(s, v, path, errs);
}

/** The errors of `v` against `s` alone (an `allOf`/`anyOf`/`oneOf`/`not` alternative), at `path`. */
function errorsOf(s: SchemaProps, v: unknown, path: string): FieldError[] {
  const e: FieldError[] = [];
  check(s, v, path, e, false);
  return e;
}

/**
 * A composite error of kube-openapi (`"spec.x" must validate at least one schema (anyOf)`), which
 * apiextensions reports without a field and with an empty value (`<nil>: Invalid value: ""`).
 */
function composite(path: string, detail: string): FieldError {
  return { field: "", reason: "FieldValueInvalid", message: `Invalid value: "": ${JSON.stringify(path)} ${detail}` };
}

/** The alternative with the fewest errors (the first of equals), whose errors kube-openapi reports with a failed `anyOf`/`oneOf`. */
function fewest(results: FieldError[][]): FieldError[] {
  return results.reduce((best, r) => (r.length < best.length ? r : best), results[0] ?? []);
}

/** `allOf`, `anyOf`, `oneOf` and `not` of `s` on `v`, with kube-openapi's composite messages and the failing alternatives' errors. */
function junctors(s: SchemaProps, v: unknown, path: string, errs: FieldError[]): void {
  if (s.allOf && s.allOf.length > 0) {
    const results = s.allOf.map((sub) => errorsOf(sub, v, path));
    const failed = results.filter((r) => r.length > 0);
    if (failed.length > 0) {
      errs.push(composite(path, `must validate all the schemas (allOf)${failed.length === results.length ? ". None validated" : ""}`));
      for (const r of failed) errs.push(...r);
    }
  }
  if (s.anyOf && s.anyOf.length > 0) {
    const results = s.anyOf.map((sub) => errorsOf(sub, v, path));
    if (!results.some((r) => r.length === 0)) errs.push(composite(path, "must validate at least one schema (anyOf)"), ...fewest(results));
  }
  if (s.oneOf && s.oneOf.length > 0) {
    const results = s.oneOf.map((sub) => errorsOf(sub, v, path));
    const valid = results.filter((r) => r.length === 0).length;
    if (valid === 0) errs.push(composite(path, "must validate one and only one schema (oneOf). Found none valid"), ...fewest(results));
    else if (valid > 1) errs.push(composite(path, `must validate one and only one schema (oneOf). Found ${valid} valid alternatives`));
  }
  if (s.not && errorsOf(s.not, v, path).length === 0) errs.push(composite(path, "must not validate the schema (not)"));
}

function listUniqueness(s: SchemaProps, v: unknown[], path: string, errs: FieldError[]): void {
  const lt = s["x-kubernetes-list-type"];
  if (lt === "set") {
    const seen = new Set<string>();
    v.forEach((item, i) => {
      const key = JSON.stringify(item);
      if (seen.has(key)) errs.push({ field: `${path}[${i}]`, reason: "FieldValueDuplicate", message: `Duplicate value: ${render(item)}` });
      seen.add(key);
    });
  } else if (lt === "map") {
    const keys = s["x-kubernetes-list-map-keys"] ?? [];
    const seen = new Set<string>();
    v.forEach((item, i) => {
      if (!isJsonObject(item)) return;
      const key = JSON.stringify(keys.map((k) => item[k] ?? null));
      if (seen.has(key)) {
        const shown = Object.fromEntries(keys.map((k) => [k, item[k]]));
        errs.push({ field: `${path}[${i}]`, reason: "FieldValueDuplicate", message: `Duplicate value: ${render(shown)}` });
      }
      seen.add(key);
    });
  }
}

/** The CEL type name of a schema node, as apiextensions shows it as the value of a failed rule (`Invalid value: "object"`). */
function celTypeName(s: SchemaProps): string {
  if (s["x-kubernetes-int-or-string"]) return "integer";
  return s.type ?? "object";
}

/** {@link evaluateCel}, with anything it throws (its cost estimate included) as an evaluation error. */
function safeEvaluate(compiled: CompiledCel, vars: Record<string, unknown>, budget: number): CelOutcome {
  try {
    return evaluateCel(compiled, vars, budget);
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e), remaining: budget };
  }
}

/** What is left of one object's CEL budget (kube-apiserver's `RuntimeCELCostBudget`, shared by all its rules and messages). */
interface Budget {
  remaining: number;
  exhausted: boolean;
}

/**
 * A JSON value as CEL sees it under schema `s`, as apiextensions' `UnstructuredToVal`: `number`
 * fields are doubles even when integral, `integer` fields ints, int-or-string either; what the
 * schema does not type (preserved fields) as {@link toCel} makes it.
 */
function celValue(s: SchemaProps | undefined, v: unknown): unknown {
  if (!s || v === null || v === undefined) return toCel(v);
  if (typeof v === "number") return s.type === "number" ? v : toCel(v);
  if (Array.isArray(v)) return v.map((x) => celValue(s.items, x));
  if (isJsonObject(v)) {
    const additional = isJsonObject(s.additionalProperties) ? (s.additionalProperties as SchemaProps) : undefined;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = celValue(s.properties?.[k] ?? additional, x);
    return out;
  }
  return v;
}

function ruleMessage(s: SchemaProps, rule: ValidationRule, self: unknown, oldSelf: unknown, hasOld: boolean, budget: Budget): string {
  if (rule.messageExpression) {
    try {
      const vars: Record<string, unknown> = { self: celValue(s, self), oldSelf: hasOld ? celValue(s, oldSelf) : null };
      const out = safeEvaluate(compiledMessage(rule.messageExpression), vars, budget.remaining);
      budget.remaining = Math.max(0, out.remaining);
      if (out.ok && typeof out.value === "string" && out.value.trim() !== "" && !/[\r\n]/.test(out.value)) return out.value;
    } catch {
      // A messageExpression that fails falls back to the message, as apiextensions' does.
    }
  }
  if (rule.message) return rule.message;
  return `failed rule: ${rule.rule.trim()}`;
}

function ruleError(rule: ValidationRule, s: SchemaProps, path: string, detail: string): FieldError {
  const field = rule.fieldPath
    ? `${path}${rule.fieldPath.startsWith(".") || rule.fieldPath.startsWith("[") ? "" : "."}${rule.fieldPath}`.replace(/^\./, "")
    : path;
  switch (rule.reason) {
    case "FieldValueForbidden":
      return fieldForbidden(field, detail);
    case "FieldValueRequired":
      return fieldRequired(field, detail);
    case "FieldValueDuplicate":
      return { field, reason: "FieldValueDuplicate", message: `Duplicate value: ${render(celTypeName(s))}: ${detail}` };
    default:
      return fieldInvalid(field, celTypeName(s), detail);
  }
}

/**
 * Runs the `x-kubernetes-validations` rules of `s` on `v` (and of its properties and items),
 * within one object's CEL budget: once it runs out, one error says so and no further rule runs
 * (as apiextensions' `validation failed due to running out of cost budget`).
 */
function rules(s: SchemaProps, v: unknown, old: unknown, hasOld: boolean, path: string, errs: FieldError[], resourceRoot: boolean, budget: Budget): void {
  if (v === undefined || v === null || budget.exhausted) return;
  for (const rule of s["x-kubernetes-validations"] ?? []) {
    const transition = usesOldSelf(rule.rule);
    if (transition && !hasOld && !rule.optionalOldSelf) continue;
    let compiled: CompiledCel;
    try {
      compiled = compiledRule(rule.rule);
    } catch (e) {
      errs.push(fieldInvalid(path, celTypeName(s), `compilation failed: ${e instanceof Error ? e.message : String(e)}`));
      continue;
    }
    const vars: Record<string, unknown> = { self: celValue(s, v), oldSelf: hasOld ? celValue(s, old) : null };
    const out = safeEvaluate(compiled, vars, budget.remaining);
    budget.remaining = Math.max(0, out.remaining);
    if (!out.ok && out.remaining < 0) {
      budget.exhausted = true;
      errs.push(fieldInvalid(path, celTypeName(s), "validation failed due to running out of cost budget, no further validation rules will be run"));
      return;
    }
    if (!out.ok) {
      errs.push(fieldInvalid(path, celTypeName(s), `${out.error} evaluating rule: ${rule.rule.trim()}`));
      continue;
    }
    const value = fromCel(out.value);
    if (value !== true)
      errs.push(ruleError(rule, s, path, typeof value === "boolean" ? ruleMessage(s, rule, v, old, hasOld, budget) : "rule evaluated to non-boolean"));
  }
  if (Array.isArray(v) && s.items) {
    const oldList = Array.isArray(old) ? old : undefined;
    const lt = s["x-kubernetes-list-type"];
    const keys = s["x-kubernetes-list-map-keys"] ?? [];
    v.forEach((item, i) => {
      let o: unknown;
      let has = false;
      if (oldList && lt === "map" && isJsonObject(item)) {
        const match = oldList.find((x) => isJsonObject(x) && keys.every((k) => JSON.stringify(x[k]) === JSON.stringify(item[k])));
        if (match !== undefined) [o, has] = [match, true];
      } else if (oldList && lt === "set") {
        const match = oldList.find((x) => JSON.stringify(x) === JSON.stringify(item));
        if (match !== undefined) [o, has] = [match, true];
      }
      rules(s.items!, item, o, has, `${path}[${i}]`, errs, false, budget);
    });
  }
  if (isJsonObject(v)) {
    const oldObj = isJsonObject(old) ? old : undefined;
    for (const [k, sub] of Object.entries(v)) {
      if (resourceRoot && (k === "apiVersion" || k === "kind" || k === "metadata")) continue;
      const prop = s.properties?.[k] ?? (isJsonObject(s.additionalProperties) ? (s.additionalProperties as SchemaProps) : undefined);
      if (!prop) continue;
      const has = oldObj !== undefined && k in oldObj;
      rules(prop, sub, has ? oldObj[k] : undefined, has, join(path, k), errs, false, budget);
    }
  }
}
