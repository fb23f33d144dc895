#!/usr/bin/env node
/**
 * Derives test/ocm/crd-fields.ts, the field list of every OCM kind the hub serves, from the
 * CRDs of a git repository of open-cluster-management-io/api, and, when a second path is given,
 * test/ocm/crd-fields-policy.ts from those of open-cluster-management-io/governance-policy-propagator
 * (the policy kinds, whose CRDs live there):
 *
 *   node scripts/ocm-crd-fields.mjs <api repository> [<governance-policy-propagator repository>]
 *
 * (each a git directory or checkout; `-` for the api repository leaves its file as it is).
 *
 * For each kind (at the version the hub serves) it walks the CRD's `openAPIV3Schema` and records
 * one entry per field below the object's root (apiVersion, kind and metadata left out): the path
 * (`spec.manifestConfigs[].feedbackRules[].type`: `[]` for list items, `{}` for map values), the
 * OpenAPI type (`int-or-string` for `x-kubernetes-int-or-string`), and, when the CRD says so,
 * whether it is required in its parent, its enum, default, format and pattern. Only these facts
 * are kept (no descriptions), with the commit they were read at.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";

/** The kinds the hub serves: kind, served version, and the CRD's path in the api repository. */
const KINDS = [
  ["ManagedCluster", "v1", "cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml"],
  ["ManagedClusterSet", "v1beta2", "cluster/v1beta2/0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml"],
  ["ManagedClusterSetBinding", "v1beta2", "cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml"],
  ["Placement", "v1beta1", "cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml"],
  ["PlacementDecision", "v1beta1", "cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml"],
  ["AddOnPlacementScore", "v1alpha1", "cluster/v1alpha1/0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml"],
  ["ManifestWork", "v1", "work/v1/0000_00_work.open-cluster-management.io_manifestworks.crd.yaml"],
  ["ManifestWorkReplicaSet", "v1alpha1", "work/v1alpha1/0000_00_work.open-cluster-management.io_manifestworkreplicasets.crd.yaml"],
  // The add-on API at its storage version (v1beta1 is converted from it: docs/ocm-compatibility.md).
  ["ClusterManagementAddOn", "v1alpha1", "addon/v1alpha1/0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml"],
  ["ManagedClusterAddOn", "v1alpha1", "addon/v1alpha1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml"],
  ["AddOnDeploymentConfig", "v1alpha1", "addon/v1alpha1/0000_02_addon.open-cluster-management.io_addondeploymentconfigs.crd.yaml"],
  ["AddOnTemplate", "v1alpha1", "addon/v1alpha1/0000_03_addon.open-cluster-management.io_addontemplates.crd.yaml"],
];

/** The policy kinds, from governance-policy-propagator's `deploy/crds`. */
const POLICY_KINDS = [
  ["Policy", "v1", "deploy/crds/policy.open-cluster-management.io_policies.yaml"],
  ["PlacementBinding", "v1", "deploy/crds/policy.open-cluster-management.io_placementbindings.yaml"],
  ["PolicySet", "v1beta1", "deploy/crds/policy.open-cluster-management.io_policysets.yaml"],
];

if (!process.argv[2]) {
  console.error(
    "usage: node scripts/ocm-crd-fields.mjs <open-cluster-management-io/api git directory or checkout> [<governance-policy-propagator git directory or checkout>]",
  );
  process.exit(2);
}

function walk(node, at, required, out) {
  const type = node.type ?? (node["x-kubernetes-int-or-string"] ? "int-or-string" : "object");
  if (at) {
    const field = { path: at, type };
    if (required) field.required = true;
    if (node.enum) field.enum = node.enum;
    if (node.default !== undefined) field.default = node.default;
    if (node.format) field.format = node.format;
    if (node.pattern) field.pattern = node.pattern;
    if (node["x-kubernetes-preserve-unknown-fields"]) field.preserveUnknownFields = true;
    out.push(field);
  }
  const req = new Set(node.required ?? []);
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    if (!at && (name === "apiVersion" || name === "kind" || name === "metadata")) continue;
    walk(child, at ? `${at}.${name}` : name, req.has(name), out);
  }
  if (node.items) walk(node.items, `${at}[]`, false, out);
  if (node.additionalProperties && typeof node.additionalProperties === "object") walk(node.additionalProperties, `${at}{}`, false, out);
}

/** Writes `out` (under test/ocm/) with the field lists of `list`, read from the repository at `repo`. */
function derive(repo, repository, list, out) {
  const git = (...args) => execFileSync("git", ["-C", repo, ...args], { encoding: "utf8", maxBuffer: 64 << 20 });
  const commit = git("rev-parse", "HEAD").trim();
  const date = git("log", "-1", "--format=%cI").trim();
  const read = (file) => (existsSync(path.join(repo, file)) ? readFileSync(path.join(repo, file), "utf8") : git("show", `HEAD:${file}`));
  const kinds = {};
  for (const [kind, version, file] of list) {
    const crd = parse(read(file));
    const v = crd.spec.versions.find((x) => x.name === version);
    if (!v) throw new Error(`${file} has no version ${version}`);
    const fields = [];
    walk(v.schema.openAPIV3Schema, "", false, fields);
    kinds[kind] = { group: crd.spec.group, version, file, fields };
  }

  const doc = { source: { repository, commit, committed: date }, kinds };
  // One field a line, so that a new OCM release's changes read as a short diff.
  const kindLines = Object.entries(kinds).map(([kind, k]) => {
    const fields = k.fields.map((f) => `    ${JSON.stringify(f)}`).join(",\n");
    return `  ${JSON.stringify(kind)}: {"group": ${JSON.stringify(k.group)}, "version": ${JSON.stringify(k.version)}, "file": ${JSON.stringify(k.file)}, "fields": [\n${fields}\n  ]}`;
  });
  const header = [
    "// OCM's field lists, derived by scripts/ocm-crd-fields.mjs from the CRDs of",
    `// ${doc.source.repository} at commit ${commit}`,
    `// (${date}): facts only (paths, types, enums, defaults, formats, patterns).`,
    "// Regenerate rather than edit.",
    "",
  ].join("\n");
  writeFileSync(out, `${header}export default {"source": ${JSON.stringify(doc.source)},\n "kinds": {\n${kindLines.join(",\n")}\n}};\n`);
  console.log(`wrote ${out}: ${Object.values(kinds).reduce((n, k) => n + k.fields.length, 0)} fields of ${list.length} kinds at ${commit}`);
}

const dir = path.join(import.meta.dirname, "..", "test", "ocm");
// "-" for the api repository leaves test/ocm/crd-fields.ts as it is.
if (process.argv[2] !== "-") derive(process.argv[2], "open-cluster-management-io/api", KINDS, path.join(dir, "crd-fields.ts"));
if (process.argv[3]) derive(process.argv[3], "open-cluster-management-io/governance-policy-propagator", POLICY_KINDS, path.join(dir, "crd-fields-policy.ts"));
