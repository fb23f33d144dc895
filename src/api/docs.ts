/**
 * The API reference page (`GET /docs`): the hub's OpenAPI v3 documents (src/api/openapi.ts)
 * rendered as one self-contained HTML page: every kind with its apiVersion, scope, short names,
 * endpoints and field tree (types, required fields, enums, bounds and descriptions), and the
 * shared apimachinery types. The page is rendered on the server; its CSS and its small script
 * (filtering, expand/collapse) are inline strings, so nothing is loaded from a CDN or any other
 * origin, and the Content-Security-Policy says so (`default-src 'none'`).
 *
 * Served without authentication, like `/openapi/*`: it describes the API and holds no data.
 */
import { Hono } from "hono";
import { apiVersionOf, type KindDefinition } from "../k8s/kind.ts";
import { servedKinds } from "../kinds/index.ts";
import { apiAccess } from "../auth/request.ts";
import { ensureBuiltins } from "./builtins.ts";
import type { ApiEnv } from "./context.ts";
import { META_SCHEMAS, schemaName, type JsonSchema } from "./openapi/names.ts";
import { groupVersions, openAPIV3 } from "./openapi/v3.ts";

function esc(s: unknown): string {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** Inline code spans for `backticked` text in descriptions (after escaping). */
function prose(s: unknown): string {
  return esc(s).replace(/`([^`]+)`/g, "<code>$1</code>");
}

function isObj(v: unknown): v is JsonSchema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function anchor(name: string): string {
  return `t-${name.replace(/[^A-Za-z0-9_.-]/g, "-")}`;
}

/** The component a schema refers to (`$ref`, or Kubernetes' `allOf: [{$ref}]` with a description). */
function refName(s: JsonSchema): string | undefined {
  const r = typeof s.$ref === "string" ? s.$ref : Array.isArray(s.allOf) && s.allOf.length === 1 && isObj(s.allOf[0]) ? s.allOf[0].$ref : undefined;
  return typeof r === "string" ? r.replace("#/components/schemas/", "") : undefined;
}

function shortName(component: string): string {
  return component.slice(component.lastIndexOf(".") + 1);
}

/** A kubectl-explain-like type label: `string`, `integer`, `[]Object`, `map[string]string`, `ObjectMeta`. */
function typeLabel(s: JsonSchema): string {
  const ref = refName(s);
  if (ref) return `<a href="#${anchor(ref)}">${esc(shortName(ref))}</a>`;
  if (s["x-kubernetes-int-or-string"]) return "int-or-string";
  if (Array.isArray(s.anyOf)) return s.anyOf.map((a) => (isObj(a) ? typeLabel(a) : "?")).join(" | ");
  if (s.type === "array") return `[]${isObj(s.items) ? typeLabel(s.items) : "any"}`;
  if (s.type === "object" && isObj(s.additionalProperties)) {
    const value = typeLabel(s.additionalProperties);
    return `map[string]${value.includes(" | ") ? `(${value})` : value}`;
  }
  if (s.type === "object") return "Object";
  if (s.type === "integer" && typeof s.format === "string") return `integer (${esc(s.format)})`;
  if (typeof s.type === "string") return esc(s.type);
  return "any";
}

/** Constraints worth showing next to a field: enum, bounds, lengths, item counts, pattern, nullable. */
function constraints(s: JsonSchema): string[] {
  const out: string[] = [];
  const target = s.type === "array" && isObj(s.items) ? s.items : s;
  const add = (cond: unknown, text: string) => cond !== undefined && out.push(text);
  if (Array.isArray(target.enum)) out.push(`one of: ${target.enum.map((v) => `<code>${esc(JSON.stringify(v))}</code>`).join(", ")}`);
  add(target.minimum, `minimum ${esc(target.minimum)}`);
  add(target.maximum, `maximum ${esc(target.maximum)}`);
  add(target.minLength, `min length ${esc(target.minLength)}`);
  add(target.maxLength, `max length ${esc(target.maxLength)}`);
  add(target.pattern, `pattern <code>${esc(target.pattern)}</code>`);
  add(s.minItems, `min items ${esc(s.minItems)}`);
  add(s.maxItems, `max items ${esc(s.maxItems)}`);
  if (s.nullable) out.push("nullable");
  return out;
}

/** The object whose properties a field's children are (itself, its array items or map values); refs are not followed. */
function childObject(s: JsonSchema): JsonSchema | undefined {
  if (refName(s)) return undefined;
  if (isObj(s.properties)) return s;
  if (s.type === "array" && isObj(s.items) && isObj(s.items.properties) && !refName(s.items)) return s.items;
  if (isObj(s.additionalProperties) && isObj(s.additionalProperties.properties)) return s.additionalProperties;
  return undefined;
}

function fieldRows(obj: JsonSchema, path: string, depth: number): string {
  const props = isObj(obj.properties) ? obj.properties : {};
  const required = new Set(Array.isArray(obj.required) ? (obj.required as string[]) : []);
  let html = "";
  for (const [name, raw] of Object.entries(props)) {
    if (!isObj(raw)) continue;
    const full = path ? `${path}.${name}` : name;
    const child = childObject(raw);
    const cons = constraints(raw);
    const head =
      `<span class="fname">${esc(name)}</span> <span class="ftype">${typeLabel(raw)}</span>` + (required.has(name) ? ` <span class="req">required</span>` : "");
    const body =
      (raw.description ? `<div class="fdesc">${prose(raw.description)}</div>` : "") + (cons.length ? `<div class="fcons">${cons.join(" · ")}</div>` : "");
    if (child) {
      html += `<details class="field" data-path="${esc(full)}"${depth < 1 ? " open" : ""}><summary>${head}</summary>${body}<div class="children">${fieldRows(child, full, depth + 1)}</div></details>`;
    } else {
      html += `<div class="field leaf" data-path="${esc(full)}">${head}${body}</div>`;
    }
  }
  return html;
}

const METHOD_ORDER = ["get", "post", "put", "patch", "delete"];

function endpointRows(def: KindDefinition, paths: Record<string, JsonSchema>): string {
  let html = "";
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHOD_ORDER) {
      const op = item[method];
      if (!isObj(op)) continue;
      const gvk = op["x-kubernetes-group-version-kind"] as { kind?: string } | undefined;
      if (gvk?.kind !== def.kind) continue;
      const params = Array.isArray(op.parameters)
        ? (op.parameters as JsonSchema[]).filter((p) => p.in === "query").map((p) => `<code title="${esc(p.description)}">${esc(p.name)}</code>`)
        : [];
      const body = isObj(op.requestBody) && isObj(op.requestBody.content) ? Object.keys(op.requestBody.content).map((t) => `<code>${esc(t)}</code>`) : [];
      html +=
        `<tr><td><span class="m m-${method}">${method.toUpperCase()}</span></td><td><code>${esc(path)}</code></td>` +
        `<td>${prose(op.description)}${params.length ? `<div class="sub">query: ${params.join(" ")}</div>` : ""}${body.length ? `<div class="sub">body: ${body.join(" ")}</div>` : ""}</td></tr>`;
    }
  }
  return `<table class="endpoints"><thead><tr><th>verb</th><th>path</th><th>description</th></tr></thead><tbody>${html}</tbody></table>`;
}

function kindSection(def: KindDefinition, doc: JsonSchema): string {
  const schemas = (doc.components as { schemas: Record<string, JsonSchema> }).schemas;
  const name = schemaName(def.group, def.version, def.kind);
  const s = schemas[name]!;
  const apiVersion = apiVersionOf(def);
  const facts: [string, string][] = [
    ["apiVersion", `<code>${esc(apiVersion)}</code>`],
    ["kind", `<code>${esc(def.kind)}</code> (list: <code>${esc(def.listKind)}</code>)`],
    [
      "resource",
      `<code>${esc(def.plural)}</code>${def.shortNames.length ? ` · short names ${def.shortNames.map((n) => `<code>${esc(n)}</code>`).join(" ")}` : ""}`,
    ],
    ["scope", def.namespaced ? "Namespaced" : "Cluster"],
    ["subresources", def.hasStatus ? "<code>status</code>" : "none"],
    [
      "writes",
      def.computed
        ? "read-only, get and list (computed by the hub when read; no watch)"
        : def.systemOwned
          ? "read-only (written by the hub)"
          : "create, update, patch (merge, apply), delete",
    ],
  ];
  return (
    `<section class="kind" id="${anchor(name)}" data-search="${esc(`${def.kind} ${def.plural} ${def.shortNames.join(" ")} ${apiVersion}`.toLowerCase())}">` +
    `<h2>${esc(def.kind)} <small>${esc(apiVersion)}</small></h2>` +
    `<p>${prose(s.description)}</p>` +
    `<table class="facts">${facts.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join("")}</table>` +
    `<h3>Fields <button type="button" class="toggle" data-open="1">expand all</button></h3><div class="fields">${fieldRows(s, "", 0)}</div>` +
    `<h3>Endpoints</h3>${endpointRows(def, doc.paths as Record<string, JsonSchema>)}` +
    `</section>`
  );
}

function metaSection(name: string, s: JsonSchema): string {
  return (
    `<section class="kind meta" id="${anchor(name)}" data-search="${esc(shortName(name).toLowerCase())}">` +
    `<h2>${esc(shortName(name))} <small>${esc(name)}</small></h2><p>${prose(s.description)}</p>` +
    `<div class="fields">${fieldRows(s, "", 0)}</div></section>`
  );
}

const CSS = `
:root{--fg:#1d2330;--muted:#5b6475;--line:#e3e6ec;--bg:#fff;--side:#f6f7f9;--accent:#2456c9;--code:#f1f3f6}
*{box-sizing:border-box}body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{position:sticky;top:0;z-index:2;display:flex;gap:16px;align-items:center;padding:10px 20px;border-bottom:1px solid var(--line);background:var(--bg)}
header h1{font-size:17px;margin:0}header .links a{margin-right:12px}header input{margin-left:auto;width:260px;padding:6px 9px;border:1px solid var(--line);border-radius:6px;font:inherit}
.layout{display:grid;grid-template-columns:260px 1fr;min-height:calc(100vh - 50px)}
nav{background:var(--side);border-right:1px solid var(--line);padding:12px 14px;position:sticky;top:50px;height:calc(100vh - 50px);overflow:auto}
nav h4{margin:14px 0 4px;font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}nav a{display:block;padding:2px 0;color:var(--fg);text-decoration:none}nav a:hover{color:var(--accent)}nav small{color:var(--muted)}
main{padding:8px 28px 60px;max-width:1100px}a{color:var(--accent)}
section.kind{border-bottom:1px solid var(--line);padding:10px 0 22px}section.kind h2{margin:14px 0 4px;font-size:21px}section.kind h2 small{font-weight:400;color:var(--muted);font-size:13px;margin-left:6px}
h3{font-size:15px;margin:18px 0 6px}code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--code);padding:1px 4px;border-radius:4px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}table.facts{width:auto}table.facts th{color:var(--muted);font-weight:500;padding-right:18px}
.endpoints td:nth-child(2){overflow-wrap:anywhere;min-width:240px}main{min-width:0}.sub{color:var(--muted);font-size:12.5px;margin-top:2px}
.m{display:inline-block;min-width:58px;text-align:center;font:600 11px ui-monospace,monospace;padding:2px 6px;border-radius:4px;color:#fff}.m-get{background:#2f7d4f}.m-post{background:#2456c9}.m-put{background:#8a5a00}.m-patch{background:#6b45b8}.m-delete{background:#b33a3a}
.field{margin:2px 0;padding:3px 0 3px 10px;border-left:2px solid var(--line)}.field .children{margin-left:14px}summary{cursor:pointer}
.fname{font:600 13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}.ftype{color:var(--muted);font:12.5px ui-monospace,monospace}.req{color:#b33a3a;font-size:11px;font-weight:600;text-transform:uppercase}
.fdesc{color:var(--fg);margin:1px 0 0 0}.fcons{color:var(--muted);font-size:12.5px}.toggle{font:12px inherit;margin-left:8px;border:1px solid var(--line);background:var(--side);border-radius:5px;cursor:pointer}
.hidden{display:none}@media (max-width:800px){.layout{grid-template-columns:1fr}nav{position:static;height:auto}}
`;

const SCRIPT = `
(function(){
  var q=document.getElementById("q");
  q.addEventListener("input",function(){
    var v=q.value.trim().toLowerCase();
    document.querySelectorAll("section.kind").forEach(function(s){
      var hit=!v||s.getAttribute("data-search").indexOf(v)>=0||Array.prototype.some.call(s.querySelectorAll(".field"),function(f){return f.getAttribute("data-path").toLowerCase().indexOf(v)>=0});
      s.classList.toggle("hidden",!hit);
      var link=document.querySelector('nav a[href="#'+s.id+'"]');if(link)link.classList.toggle("hidden",!hit);
    });
  });
  document.querySelectorAll("button.toggle").forEach(function(b){
    b.addEventListener("click",function(){
      var open=b.getAttribute("data-open")==="1";
      b.closest("section").querySelectorAll("details").forEach(function(d){d.open=open});
      b.setAttribute("data-open",open?"0":"1");b.textContent=open?"collapse all":"expand all";
    });
  });
})();
`;

/**
 * Renders the whole reference page as an HTML string from the OpenAPI v3 documents of every
 * served group-version. Pure (no I/O); relative links only (`#anchors`, `/openapi/...`).
 */
export function renderDocsPage(): string {
  let nav = "";
  let body = "";
  const metaDone = new Set<string>();
  let metaBody = "";
  for (const { group, version } of groupVersions()) {
    const doc = openAPIV3(group, version)!;
    nav += `<h4>${esc(group || "core")} <small>${esc(version)}</small></h4>`;
    for (const def of servedKinds().filter((k) => k.group === group && k.version === version)) {
      nav += `<a href="#${anchor(schemaName(group, version, def.kind))}">${esc(def.kind)}</a>`;
      body += kindSection(def, doc);
    }
    const schemas = (doc.components as { schemas: Record<string, JsonSchema> }).schemas;
    for (const name of Object.values(META_SCHEMAS)) {
      if (metaDone.has(name) || !schemas[name]) continue;
      metaDone.add(name);
      metaBody += metaSection(name, schemas[name]);
    }
  }
  nav += `<h4>Common types</h4>${[...metaDone].map((n) => `<a href="#${anchor(n)}">${esc(shortName(n))}</a>`).join("")}`;
  const intro =
    `<p>The Flotilla hub serves Open Cluster Management's API with Kubernetes API conventions: ` +
    `<code>/apis/{group}/{version}[/namespaces/{namespace}]/{resource}[/{name}[/status]]</code> (the core group's Secrets at <code>/api/v1</code>), authenticated with ` +
    `<code>Authorization: Bearer &lt;token&gt;</code>; errors are <a href="#${anchor(META_SCHEMAS.Status)}">Status</a> objects. ` +
    `This page is generated from the same schemas that validate requests; the machine-readable documents are ` +
    `<a href="/openapi/v3">/openapi/v3</a> (OpenAPI 3.0, one per group-version, used by <code>kubectl explain</code>) and ` +
    `<a href="/openapi/v2">/openapi/v2</a> (Swagger 2.0).</p>`;
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<title>Flotilla API reference</title><style>${CSS}</style></head><body>` +
    `<header><h1>Flotilla API reference</h1><span class="links"><a href="/openapi/v3">OpenAPI v3</a><a href="/openapi/v2">OpenAPI v2</a></span>` +
    `<input id="q" type="search" placeholder="Filter kinds and fields…" aria-label="Filter kinds and fields"></header>` +
    `<div class="layout"><nav>${nav}</nav><main>${intro}${body}<h2 id="common">Common types</h2>${metaBody}</main></div>` +
    `<script>${SCRIPT}</script></body></html>`
  );
}

let page: string | null = null;

/**
 * The `/docs` route: the reference page (`text/html`), rendered once per isolate, with a
 * Content-Security-Policy that allows only the page's own inline style and script and same-origin
 * links (no external asset can load). Authenticated; every authenticated user may read it (the
 * bootstrap system:discovery role lists `/docs`).
 *
 * @example app.route("/", docsRoutes());
 */
export function docsRoutes(): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();
  // Authenticated, and readable by every authenticated user (the bootstrap system:discovery role).
  app.use("/docs", apiAccess(ensureBuiltins));
  app.get("/docs", () => {
    page ??= renderDocsPage();
    return new Response(page, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy":
          "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        "x-content-type-options": "nosniff",
        "cache-control": "no-cache",
      },
    });
  });
  return app;
}
