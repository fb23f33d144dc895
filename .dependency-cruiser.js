// The layer rules of the hub, and "no import cycles", checked by dependency-cruiser
// (https://github.com/sverweij/dependency-cruiser) in `npm run lint` (`npm run lint:layers`).
// docs/architecture.md says the same in prose.
//
// A module may import from its own layer and the layers below it, never from one above:
//
//   apimachinery < store < kinds < controllers < objects < routes < entry
//
// Every module of the Worker (src/, durable-objects/) belongs to exactly one layer (a new folder
// must be placed below, or the lint fails with `not-in-a-layer`). The rules count every import,
// `import type` included: a type import ties the modules as a value import does (a change to the
// type breaks the importer), so a lower layer may not name a higher one's types either. The one
// exception is src/env.ts, the Worker's bindings, whose `DurableObjectNamespace<ClusterObject>`
// names each Durable Object's class so that `env.CLUSTERS.getByName(...)` is a typed RPC stub (as
// wrangler's generated Env does): it may `import type` the classes of durable-objects/*.ts and
// nothing else of a higher layer, and it imports no values at all (`env-declares-types-only`).
//
// Three bundles draw on src/: the Worker (src/ less src/ui/app, and durable-objects/), the agent
// with the CLI and the simulator (agent/, bundled by scripts/build-agent.mjs) and the dashboard
// (src/ui/app, bundled by scripts/build-ui.mjs). The agent and the dashboard import from the
// Worker's modules only those their declarations list: agent/shared-modules.json and
// src/ui/app/shared-modules.json, each with `modules` (read by the bundle: their build fails when
// the bundle reads another) and `types` (imported with `import type` only, so in neither the bundle
// nor the agent image's build context). The Worker imports neither bundle.
//
// Violations that another change removes are listed in .dependency-cruiser-known-violations.json
// (`--ignore-known`); test/unit/layers.test.ts checks that it holds only those, and runs these
// rules on fixtures with a deliberate cycle and layer violation.
import { readFileSync } from "node:fs";
import path from "node:path";

/** Escapes a repository path for a regular expression anchored at both ends. */
const exact = (file) => `^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`;

/**
 * A bundle's declaration of the Worker modules it imports (paths from the repository root; read
 * from the directory dependency-cruiser runs in, so that the fixtures of test/unit/layers.test.ts
 * bring their own).
 */
function declared(file) {
  const decl = JSON.parse(readFileSync(path.resolve(file), "utf8"));
  return { modules: decl.modules.map(exact), types: (decl.types ?? []).map(exact) };
}

/**
 * The layers, lowest first. `path` and `pathNot` are regular expressions over paths from the
 * repository root; a module is in the layer when it matches `path` and no `pathNot`.
 */
const PURE_AUTH =
  "^src/auth/(rbac|rbac-types|rbac-rules|rbac-aggregation|rbac-bootstrap|rbac-schemas|authn|oidc|impersonation|requestinfo|serviceaccount-token)\\.ts$";
const LAYERS = [
  {
    // Kubernetes' machinery and the pure libraries: object metadata, errors, validation, labels,
    // patches, the KindDefinition strategy and computeWrite, CEL, the clock, feature gates, the
    // Worker's bindings (env.ts); the pure halves of auth (kube-apiserver's RBAC, authentication,
    // OIDC, impersonation and ServiceAccount token evaluators); the agent protocol's schemas. No
    // storage, no Durable Object, no HTTP routing.
    name: "apimachinery",
    path: [
      "^src/k8s/",
      "^src/cel/",
      "^src/(clock|features|edge|env)\\.ts$",
      PURE_AUTH,
      "^src/agent-api/(protocol|protocol-answers|channel-protocol|channel-constants)\\.ts$",
    ],
  },
  {
    // The one door to storage: the Store and its backends, the write path, the outbox, the
    // after-commit hooks' registry, and the D1 schema.
    name: "store",
    // src/timers.ts is the timers' leaf API (a row names its handler in the controller manifest),
    // which the outbox's sweep and the controllers use to set a timer.
    path: ["^src/store/", "^src/db/", "^src/timers\\.ts$"],
  },
  {
    // The kinds: one KindDefinition (schema, defaults, validation, admission of a write) per
    // kind, with the pure helpers a kind's rules need (conversion, taints, executor checks).
    name: "kinds",
    path: ["^src/kinds/"],
  },
  {
    // Controllers, one feature folder each (placement and its pure scheduling core, works and
    // replica sets, add-ons, policies, garbage collection, namespaces, events, the cluster
    // inventory), and the services beside them: auth against the stored objects (RBAC, service
    // accounts, credentials, OCM's admission), the hub's handling of agents' reports (run by the
    // Worker for HTTP and by the cluster's object for the channel), the audit log's records and
    // storage, the metrics' counting.
    name: "controllers",
    path: [
      "^src/(placement|scheduling|work|addons|policy|gc|namespaces|events|clusterprofile|fleet|overrides)/",
      // Admission above the store (src/admission/store.ts `admittedStoreOf`: NamespaceLifecycle
      // around each kind's store), which routes, controllers and objects write through.
      "^src/admission/",
      "^src/auth/",
      "^src/agent-api/(work-report|policy-report|delivered)\\.ts$",
      "^src/audit/(event|log)\\.ts$",
      "^src/metrics/(recorder|families|exposition|fleet)\\.ts$",
      // The controller manifest (what wakes each controller, where it runs, its timers): it names
      // the controllers, and the objects dispatch from it.
      "^src/controllers\\.ts$",
    ],
    pathNot: [PURE_AUTH, "^src/auth/request\\.ts$"],
  },
  {
    // The Durable Objects: a cluster's object (its writes, lease, channel, reports), the
    // scheduler, the replica sets, the metrics, their timers. They run controllers; they never
    // import a route module (a Hono app belongs to the Worker).
    name: "objects",
    path: ["^durable-objects/"],
  },
  {
    // The Worker's HTTP surface: the Kubernetes API (src/api), the agent API and channel upgrade,
    // the dashboard's page, health, /metrics, the audit API, the webhook receiver, the request
    // authentication middleware. Routes may use the objects (their stubs and wire constants).
    name: "routes",
    path: [
      "^src/api/",
      "^src/agent-api/(routes|channel)\\.ts$",
      "^src/ui/routes\\.ts$",
      "^src/health/",
      "^src/metrics/routes\\.ts$",
      "^src/audit/(middleware|routes|openapi)\\.ts$",
      "^src/webhook/",
      "^src/auth/request\\.ts$",
    ],
  },
  {
    // The Worker's entry point: the Hono app, the exported objects, the after-commit wiring.
    name: "entry",
    path: ["^src/index\\.ts$"],
  },
];

/** The Worker's modules (less the dashboard's, under DASHBOARD: the bundles have their own rules). */
const WORKER = "^(src|durable-objects)/";
/** The dashboard's modules. */
const DASHBOARD = "^src/ui/app/";
const inLayer = (layer) => ({ path: layer.path, ...(layer.pathNot ? { pathNot: layer.pathNot } : {}) });

/**
 * One rule per layer and higher layer, `<layer>-imports-<higher>`; src/env.ts's `import type` of
 * the Durable Object classes is exempt (its value imports are refused by `env-declares-types-only`).
 */
const layerRules = LAYERS.flatMap((lower, i) =>
  LAYERS.slice(i + 1).map((higher) => ({
    name: `${lower.name}-imports-${higher.name}`,
    severity: "error",
    comment: `${lower.name} is below ${higher.name}: it may not import it, not even for a type.`,
    from: lower.name === "apimachinery" && higher.name === "objects" ? { ...inLayer(lower), pathNot: ["^src/env\\.ts$"] } : inLayer(lower),
    to: inLayer(higher),
  })),
);

const agent = declared("agent/shared-modules.json");
const dashboard = declared("src/ui/app/shared-modules.json");

/**
 * The rules for a bundle that draws on the Worker's modules: it imports only what it declares,
 * what it declares imports only what it declares (so the declaration is closed), and a module
 * declared for its types is imported only with `import type`.
 */
function bundleRules(name, own, decl, file) {
  const typesOnly = decl.types.filter((t) => !decl.modules.includes(t));
  return [
    {
      name: `${name}-imports-undeclared`,
      severity: "error",
      comment: `${name} imports only the Worker modules ${file} declares (\`modules\` or \`types\`), and so do they.`,
      from: { path: [own, ...decl.modules, ...decl.types] },
      to: { path: ["^(src|durable-objects|agent)/"], pathNot: [own, ...decl.modules, ...decl.types] },
    },
    {
      name: `${name}-imports-types-only-module`,
      severity: "error",
      comment: `A module ${file} declares under \`types\` is not in the bundle: import it with \`import type\`, or declare it under \`modules\`.`,
      from: { path: [own, ...decl.modules] },
      to: { path: typesOnly.length > 0 ? typesOnly : ["^$"], dependencyTypesNot: ["type-only"] },
    },
  ];
}

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "No import cycles, `import type` included. The cycles through src/env.ts's `import type` of the Durable Object classes are the one exception (see the top of this file).",
      from: {},
      to: { circular: true, viaOnly: { pathNot: ["^src/env\\.ts$"] } },
    },
    {
      name: "env-declares-types-only",
      severity: "error",
      comment: "src/env.ts declares the Worker's bindings: it imports types only (so no cycle can run through it at run time).",
      from: { path: "^src/env\\.ts$" },
      to: { dependencyTypesNot: ["type-only"] },
    },
    {
      name: "not-in-a-layer",
      severity: "error",
      comment: "Every module of the Worker belongs to a layer: place a new folder or file in .dependency-cruiser.js.",
      from: { path: WORKER, pathNot: [DASHBOARD, ...LAYERS.flatMap((l) => l.path)] },
      to: {},
    },
    ...layerRules,
    {
      name: "d1-only-in-the-store",
      severity: "error",
      comment: "Every read and write goes through the Store: outside src/store, no module imports D1's schema, drizzle or the D1 backend (src/store/d1).",
      from: { path: WORKER, pathNot: ["^src/store/", "^src/db/"] },
      to: { path: ["^src/db/", "^node_modules/drizzle-orm/", "^src/store/d1/"] },
    },
    {
      name: "worker-imports-a-bundle",
      severity: "error",
      comment: "The Worker imports neither the agent (agent/) nor the dashboard (src/ui/app): they import from it.",
      from: { path: WORKER, pathNot: DASHBOARD },
      to: { path: ["^agent/", DASHBOARD] },
    },
    ...bundleRules("agent", "^agent/", agent, "agent/shared-modules.json"),
    ...bundleRules("dashboard", DASHBOARD, dashboard, "src/ui/app/shared-modules.json"),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["^test/unit/fixtures/"] },
    // `import type` counts (marked `type-only`), as the rules above say.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js", ".mjs", ".json"] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
