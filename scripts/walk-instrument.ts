/**
 * The instrumentation of `npm run walk:placement` (scripts/walk.ts): a coverage-like wrapper of
 * the hub's Worker bundle that records, at run time, which of the hub's source files had a
 * function called. Files are told apart by the module markers esbuild writes into wrangler's
 * bundle (`// src/placement/plan.ts`); only the hub's own (`src/`, `durable-objects/`) count.
 */
import ts from "typescript";

/** A module of a bundle: where its code starts (offset of its `// <path>` marker) and its path. */
export interface BundleModule {
  start: number;
  file: string;
}

/** The modules of a bundle, in order: esbuild's `// <path>` markers. */
export function modulesOf(source: string): BundleModule[] {
  const out: BundleModule[] = [];
  for (const m of source.matchAll(/^\/\/ ((?:\.\.\/)*[\w@.\-/]+\.(?:ts|tsx|js|mjs|json))$/gm)) out.push({ start: m.index, file: m[1]! });
  return out;
}

/** The path of the module holding `offset` (the last marker at or before it), or null before the first. */
export function fileAt(modules: readonly BundleModule[], offset: number): string | null {
  let lo = 0;
  let hi = modules.length - 1;
  let found: string | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (modules[mid]!.start <= offset) {
      found = modules[mid]!.file;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** The name of the recording function an instrumented bundle declares. */
export const WALK_HIT = "__flotillaWalkHit";

/** Whether a bundle path is one of the hub's own files (what the walk counts). */
export function isHubFile(file: string): boolean {
  return /^(src|durable-objects)\//.test(file);
}

/**
 * Instruments the Worker's bundle `source` (esbuild's, with its `// src/...` module markers): at
 * the start of every function of the hub's files ({@link isHubFile}), a call that adds the
 * function's file (its index in `files`) to `globalThis.__walk` and counts the call in
 * `globalThis.__walkHits` while that Set exists:
 * `WALK_HIT(i);` first in a block body, `(WALK_HIT(i), <expression>)` around an arrow's
 * expression body; the recording function is declared first. Nothing else changes.
 * Returns the instrumented source, the files by index and how many functions were instrumented.
 */
export function instrumentBundle(source: string): { source: string; files: string[]; functions: number } {
  const modules = modulesOf(source);
  const sf = ts.createSourceFile("bundle.js", source, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const files: string[] = [];
  const index = new Map<string, number>();
  const inserts: { pos: number; text: string }[] = [];
  let functions = 0;
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const body = node.body as ts.Node;
      const start = body.getStart(sf);
      const file = fileAt(modules, start);
      if (file && isHubFile(file)) {
        let i = index.get(file);
        if (i === undefined) {
          i = files.push(file) - 1;
          index.set(file, i);
        }
        functions++;
        if (ts.isBlock(body)) inserts.push({ pos: start + 1, text: `${WALK_HIT}(${i});` });
        else inserts.push({ pos: start, text: `(${WALK_HIT}(${i}), ` }, { pos: body.getEnd(), text: ")" });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  // Stable: at one position, an enclosing function's text stays before its nested one's.
  inserts.sort((a, b) => a.pos - b.pos);
  // `__walkHits` counts the calls while a record is open: the walk's quiet test (scripts/walk.ts) reads it.
  const parts = [`function ${WALK_HIT}(i) { const w = globalThis.__walk; if (w !== undefined) { w.add(i); globalThis.__walkHits++; } }\n`];
  let at = 0;
  for (const { pos, text } of inserts) {
    parts.push(source.slice(at, pos), text);
    at = pos;
  }
  parts.push(source.slice(at));
  return { source: parts.join(""), files, functions };
}
