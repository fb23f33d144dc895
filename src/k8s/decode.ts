/**
 * Decoding untrusted JSON and YAML request bodies without recursion on the attacker's input: the
 * nesting depth is measured by iterative scans before any recursive step (a YAML composer, zod, a
 * merge patch, `structuredClone`) sees the document, and duplicate keys are found on the way, as
 * kube-apiserver's strict decoder (sigs.k8s.io/json `DisallowDuplicateFields`) reports them:
 * `duplicate field "metadata.name"`, with the same field paths as unknown fields.
 *
 * Limits:
 * - {@link MAX_NESTING_DEPTH} levels of objects and arrays. kube-apiserver's JSON decoder stops at
 *   10,000 (Go's `encoding/json` scanner, `maxNestingDepth`, "exceeded max depth"), but the
 *   hub's write path recurses per level and workerd's stack gives out between 1,100 (the YAML
 *   composer) and 2,400 (`structuredClone`) levels, so the hub takes protobuf's default recursion
 *   limit, 100: ten times the depth of the deepest real object (a CRD's `openAPIV3Schema` inside
 *   a ManifestWorkReplicaSet stays under 40 levels) and a tenth of where the stack ends.
 * - YAML aliases are expanded into a value of at most `maxJsonBytes` (the caller's body limit),
 *   so a small document with many aliases cannot grow into a large object (goyaml refuses
 *   "excessive aliasing" likewise).
 */
import { createScanner, type SyntaxKind } from "jsonc-parser";
import { isMap, isPair, isScalar, isSeq, parseDocument, Parser, type Document } from "yaml";
import { ApiError, badRequest, tooLarge } from "./errors.ts";
import { fieldPath } from "./meta.ts";

/** Deepest nesting of objects and arrays accepted in a request body, in levels (the top-level value is level 1). */
export const MAX_NESTING_DEPTH = 100;

/** A decoded body and the field paths of the keys it had more than once (the last occurrence wins, as in Go). */
export interface Decoded {
  value: unknown;
  duplicates: string[];
}

function tooDeep(format: string): ApiError {
  return badRequest(`error decoding ${format}: exceeded max depth: objects and arrays may nest at most ${MAX_NESTING_DEPTH} levels deep`);
}

// jsonc-parser's `SyntaxKind` is a const enum, which isolated modules cannot read: its values.
const OPEN_BRACE = 1 as SyntaxKind;
const CLOSE_BRACE = 2 as SyntaxKind;
const OPEN_BRACKET = 3 as SyntaxKind;
const CLOSE_BRACKET = 4 as SyntaxKind;
const COMMA = 5 as SyntaxKind;
const STRING = 10 as SyntaxKind;
const EOF = 17 as SyntaxKind;

/** An open object (with the keys seen so far and the current one) or array (with the current index). */
interface JsonFrame {
  path: (string | number)[];
  keys?: Set<string>;
  key: string;
  index: number;
}

/**
 * Scans JSON text once, iteratively (jsonc-parser's tokenizer), for its nesting depth and its
 * duplicate keys. Malformed text is scanned as far as it goes: the parse that follows reports it.
 */
function scanJson(text: string): { deep: boolean; duplicates: string[] } {
  const scanner = createScanner(text, true);
  const stack: JsonFrame[] = [];
  const duplicates: string[] = [];
  let expectKey = false;
  for (let kind = scanner.scan(); kind !== EOF; kind = scanner.scan()) {
    const top = stack[stack.length - 1];
    switch (kind) {
      case OPEN_BRACE:
      case OPEN_BRACKET: {
        if (stack.length >= MAX_NESTING_DEPTH) return { deep: true, duplicates };
        const path = top ? [...top.path, top.keys ? top.key : top.index] : [];
        stack.push({ path, keys: kind === OPEN_BRACE ? new Set() : undefined, key: "", index: 0 });
        expectKey = kind === OPEN_BRACE;
        break;
      }
      case CLOSE_BRACE:
      case CLOSE_BRACKET:
        stack.pop();
        expectKey = false;
        break;
      case COMMA:
        if (top?.keys) expectKey = true;
        else if (top) top.index++;
        break;
      case STRING:
        if (top?.keys && expectKey) {
          const key = scanner.getTokenValue();
          if (top.keys.has(key)) duplicates.push(fieldPath([...top.path, key]));
          top.keys.add(key);
          top.key = key;
          expectKey = false;
        }
        break;
      default:
        break;
    }
  }
  return { deep: false, duplicates };
}

/**
 * Decodes a JSON body: at most {@link MAX_NESTING_DEPTH} levels deep, then `JSON.parse` (which
 * V8 runs iteratively). Duplicate keys are returned, not refused: the caller applies its field
 * validation directive.
 *
 * @throws ApiError 400 BadRequest when the body is empty, too deep or not JSON.
 */
export function decodeJson(text: string): Decoded {
  if (text.trim() === "") throw badRequest("the request body is empty");
  const scan = scanJson(text);
  if (scan.deep) throw tooDeep("JSON body");
  try {
    return { value: JSON.parse(text), duplicates: scan.duplicates };
  } catch (e) {
    throw badRequest(`error decoding JSON body: ${(e as Error).message}`);
  }
}

/**
 * `text` decoded as JSON for {@link decodeYaml}, or undefined when it is not JSON (the YAML path
 * then decodes it and words its errors). Too deep is refused as the YAML path refuses it.
 * @throws ApiError 400 (too deep), 413 (over `maxJsonBytes`)
 */
function asJson(text: string, maxJsonBytes: number): Decoded | undefined {
  const scan = scanJson(text);
  if (scan.deep) throw tooDeep("YAML body");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  // No aliases in JSON: its value is no larger than its text.
  if (text.length > maxJsonBytes && measure(value, MAX_NESTING_DEPTH).bytes > maxJsonBytes) throw tooLarge(maxJsonBytes);
  return { value, duplicates: scan.duplicates };
}

/** Nesting depth of a YAML concrete syntax tree (yaml's iterative `Parser`), without composing it. */
function yamlTreeDepth(text: string): number {
  let max = 0;
  const stack: { token: unknown; depth: number }[] = [];
  for (const token of new Parser().parse(text)) stack.push({ token, depth: 0 });
  while (stack.length > 0) {
    const { token, depth } = stack.pop()!;
    const t = token as { type?: string; value?: unknown; items?: { key?: unknown; value?: unknown }[] };
    if (!t || typeof t !== "object") continue;
    if (t.type === "document") {
      stack.push({ token: t.value, depth });
      continue;
    }
    if (t.type !== "block-map" && t.type !== "block-seq" && t.type !== "flow-collection") continue;
    const d = depth + 1;
    if (d > max) max = d;
    if (max > MAX_NESTING_DEPTH) return max;
    for (const item of t.items ?? []) {
      stack.push({ token: item.key, depth: d });
      stack.push({ token: item.value, depth: d });
    }
  }
  return max;
}

/** Duplicate keys of a composed YAML document's maps, with their field paths (aliases are not followed). */
function yamlDuplicates(doc: Document): string[] {
  const duplicates: string[] = [];
  const stack: { node: unknown; path: (string | number)[] }[] = [{ node: doc.contents, path: [] }];
  while (stack.length > 0) {
    const { node, path } = stack.pop()!;
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        if (seen.has(key)) duplicates.push(fieldPath([...path, key]));
        seen.add(key);
        stack.push({ node: pair.value, path: [...path, key] });
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => stack.push({ node: item, path: [...path, i] }));
    }
  }
  return duplicates.reverse();
}

/**
 * Depth and JSON size (in bytes, roughly) of a value that may share sub-objects (YAML aliases):
 * one iterative post-order walk, each object measured once. A cycle counts as too deep.
 */
function measure(value: unknown, maxDepth: number): { depth: number; bytes: number } {
  const done = new Map<object, { depth: number; bytes: number }>();
  const open = new Set<object>();
  const leaf = (v: unknown) => (typeof v === "string" ? v.length + 2 : String(v).length);
  const size = (v: unknown) => (v !== null && typeof v === "object" ? done.get(v)! : { depth: 0, bytes: leaf(v) });
  const stack: { obj: object; children: unknown[]; keysBytes: number; expanded: boolean }[] = [];
  const enter = (v: unknown): boolean => {
    if (v === null || typeof v !== "object" || done.has(v)) return true;
    if (open.has(v) || stack.length >= maxDepth) return false;
    open.add(v);
    const entries = Array.isArray(v) ? v.map((x) => ["", x] as const) : Object.entries(v);
    stack.push({ obj: v, children: entries.map((e) => e[1]), keysBytes: entries.reduce((n, [k]) => n + (k ? k.length + 3 : 0) + 1, 2), expanded: false });
    return true;
  };
  if (!enter(value)) return { depth: Infinity, bytes: Infinity };
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (!top.expanded) {
      top.expanded = true;
      for (const child of top.children) if (!enter(child)) return { depth: Infinity, bytes: Infinity };
      continue;
    }
    stack.pop();
    open.delete(top.obj);
    let depth = 0;
    let bytes = top.keysBytes;
    for (const child of top.children) {
      const m = size(child);
      depth = Math.max(depth, m.depth);
      bytes += m.bytes;
    }
    done.set(top.obj, { depth: depth + 1, bytes });
  }
  return size(value);
}

/**
 * Decodes a YAML (or JSON) body such as a server-side apply patch: its syntax tree at most
 * {@link MAX_NESTING_DEPTH} levels deep before it is composed, one document, and a value (aliases
 * expanded) at most {@link MAX_NESTING_DEPTH} deep and `maxJsonBytes` (bytes of JSON) large. Duplicate keys are
 * returned, not refused (the last one wins): the caller applies its field validation directive.
 *
 *
 * A body that looks like JSON (its first non-space character `{`, as apimachinery's
 * `util/yaml.ToJSON` tells JSON from YAML) and parses as JSON is decoded as JSON: the same value
 * (JSON is YAML), found by the JSON scan and `JSON.parse` instead of the YAML composer, a tenth of
 * its CPU. kubectl's server-side apply sends its objects so (`application/apply-patch+yaml` with a
 * JSON body). One that does not parse as JSON (a YAML flow mapping such as `{a: b}`) is decoded as YAML.
 *
 * @throws ApiError 400 BadRequest (empty, too deep, cyclic or not YAML), 413 (aliases expand past `maxJsonBytes`).
 */
export function decodeYaml(text: string, maxJsonBytes: number): Decoded {
  if (text.trim() === "") throw badRequest("the request body is empty");
  if (text.trimStart().startsWith("{")) {
    const json = asJson(text, maxJsonBytes);
    if (json) return json;
  }
  if (yamlTreeDepth(text) > MAX_NESTING_DEPTH) throw tooDeep("YAML body");
  const doc = parseDocument(text, { uniqueKeys: false });
  if (doc.errors.length > 0) throw badRequest(`error decoding YAML: ${doc.errors[0]!.message}`);
  let value: unknown;
  try {
    value = doc.toJS();
  } catch (e) {
    throw badRequest(`error decoding YAML: ${(e as Error).message}`);
  }
  const m = measure(value, MAX_NESTING_DEPTH);
  if (m.depth > MAX_NESTING_DEPTH) throw tooDeep("YAML body (aliases expanded)");
  if (m.bytes > maxJsonBytes) throw tooLarge(maxJsonBytes);
  return { value, duplicates: yamlDuplicates(doc) };
}
