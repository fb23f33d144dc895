// Vendors the OpenAPI schemas of the built-in Kubernetes kinds the hub stores as templates
// (src/kinds/builtin.ts) from the npm package `kubernetes-models` (a devDependency), which is
// generated from Kubernetes' published OpenAPI document (`api/openapi-spec`): each definition's
// properties, their types, which are required (not optional in the generated interfaces), the
// enums and the descriptions (the interfaces' doc comments, which are the OpenAPI
// descriptions). The result, src/kinds/builtin/k8s-schemas.json, is committed; the Worker reads
// it, never the package. Run `npm run vendor:k8s-schemas` after upgrading `kubernetes-models`;
// `--check` only compares (test/unit/k8s-schemas.test.ts runs it).
//
// Written as OpenAPI v3 schema nodes keyed by the package's definition names
// (`IoK8sApiAppsV1DeploymentSpec`): `{description, type: "object", properties, required}`, a
// property `{description, type, format?, enum?, items?, additionalProperties?, $ref?}`. The
// package's interfaces type every JSON number as `number`; whether it is an `integer` and its
// format (`int32`, `int64`) are read from the package's compiled validators. What the interfaces do not carry (Go's `patchStrategy`/`patchMergeKey` and
// `listType`/`listMapKey` tags) is added from the table LIST_TYPES below, copied from
// k8s.io/api's types.go.
import ts from "typescript";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, "package.json"));
const pkgDir = path.dirname(require.resolve("kubernetes-models/package.json"));
const version = require("kubernetes-models/package.json").version;

/** The kinds served: `<dir under kubernetes-models>/<Kind>` (core/v1 is `v1`). */
const KINDS = [
  "v1/ConfigMap",
  "v1/Service",
  "v1/PersistentVolumeClaim",
  "v1/LimitRange",
  "v1/ResourceQuota",
  "apps/v1/Deployment",
  "apps/v1/StatefulSet",
  "apps/v1/DaemonSet",
  "batch/v1/Job",
  "batch/v1/CronJob",
  "networking.k8s.io/v1/Ingress",
  "networking.k8s.io/v1/NetworkPolicy",
  "policy/v1/PodDisruptionBudget",
  "autoscaling/v2/HorizontalPodAutoscaler",
];

/**
 * Lists that are not atomic, from k8s.io/api's Go tags: `<Definition>.<field>` to the strategic
 * merge patch's key (`patchMergeKey`, `patchStrategy:"merge"`, with `retainKeys` where the tag
 * has it) and server-side apply's `listType: map` keys (`listMapKey`); and the one struct field
 * whose patch strategy is `retainKeys` alone (a Deployment's `strategy`).
 */
const LIST_TYPES = {
  "IoK8sApiAppsV1DeploymentSpec.strategy": { retainKeys: true },
  "IoK8sApiCoreV1PodSpec.volumes": { merge: "name", retainKeys: true, keys: ["name"] },
  "IoK8sApiCoreV1PodSpec.initContainers": { merge: "name", keys: ["name"] },
  "IoK8sApiCoreV1PodSpec.containers": { merge: "name", keys: ["name"] },
  "IoK8sApiCoreV1PodSpec.ephemeralContainers": { merge: "name", keys: ["name"] },
  "IoK8sApiCoreV1PodSpec.imagePullSecrets": { merge: "name", keys: ["name"] },
  "IoK8sApiCoreV1PodSpec.hostAliases": { merge: "ip", keys: ["ip"] },
  "IoK8sApiCoreV1PodSpec.topologySpreadConstraints": { merge: "topologyKey", keys: ["topologyKey", "whenUnsatisfiable"] },
  "IoK8sApiCoreV1PodSpec.resourceClaims": { merge: "name", retainKeys: true, keys: ["name"] },
  "IoK8sApiCoreV1PodSpec.schedulingGates": { merge: "name", keys: ["name"] },
  "IoK8sApiCoreV1Container.ports": { merge: "containerPort", keys: ["containerPort", "protocol"] },
  "IoK8sApiCoreV1Container.env": { merge: "name", keys: ["name"] },
  "IoK8sApiCoreV1Container.volumeMounts": { merge: "mountPath", keys: ["mountPath"] },
  "IoK8sApiCoreV1Container.volumeDevices": { merge: "devicePath", keys: ["devicePath"] },
  "IoK8sApiCoreV1EphemeralContainer.ports": { merge: "containerPort", keys: ["containerPort", "protocol"] },
  "IoK8sApiCoreV1EphemeralContainer.env": { merge: "name", keys: ["name"] },
  "IoK8sApiCoreV1EphemeralContainer.volumeMounts": { merge: "mountPath", keys: ["mountPath"] },
  "IoK8sApiCoreV1EphemeralContainer.volumeDevices": { merge: "devicePath", keys: ["devicePath"] },
  "IoK8sApiCoreV1ServiceSpec.ports": { merge: "port", keys: ["port", "protocol"] },
  "IoK8sApiCoreV1ServiceStatus.conditions": { merge: "type", keys: ["type"] },
  "IoK8sApiCoreV1PersistentVolumeClaimStatus.conditions": { merge: "type", keys: ["type"] },
  "IoK8sApiAppsV1DeploymentStatus.conditions": { merge: "type", keys: ["type"] },
  "IoK8sApiAppsV1StatefulSetStatus.conditions": { merge: "type", keys: ["type"] },
  "IoK8sApiAppsV1DaemonSetStatus.conditions": { merge: "type", keys: ["type"] },
  "IoK8sApiBatchV1JobStatus.conditions": { merge: "type" },
  "IoK8sApiPolicyV1PodDisruptionBudgetStatus.conditions": { merge: "type", keys: ["type"] },
  "IoK8sApiAutoscalingV2HorizontalPodAutoscalerStatus.conditions": { merge: "type", keys: ["type"] },
};

/**
 * Defaults the OpenAPI schema states for list map keys (`+default` on k8s.io/api's Go fields), which
 * server-side apply fills into an applied item that omits the key (structured-merge-diff does).
 */
const KEY_DEFAULTS = {
  "IoK8sApiCoreV1ContainerPort.protocol": "TCP",
  "IoK8sApiCoreV1ServicePort.protocol": "TCP",
};

const program = ts.createProgram(
  KINDS.map((k) => path.join(pkgDir, `${k}.d.ts`)),
  { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, noEmit: true, skipLibCheck: true },
);
const checker = program.getTypeChecker();

/** definition name -> schema */
const definitions = {};

const docOf = (node) => {
  const sym = node.name ? checker.getSymbolAtLocation(node.name) : undefined;
  const text = sym ? ts.displayPartsToString(sym.getDocumentationComment(checker)).trim() : "";
  return text || undefined;
};

/** The declaration a type reference names (an interface or a type alias), through imports. */
function declarationOf(typeName) {
  let sym = checker.getSymbolAtLocation(typeName);
  if (sym && sym.flags & ts.SymbolFlags.Alias) sym = checker.getAliasedSymbol(sym);
  const decl = sym?.declarations?.[0];
  if (!decl) throw new Error(`cannot resolve ${typeName.getText()}`);
  // `export type { IFoo as IIoK8s... }`: the export specifier aliases the local interface.
  return decl;
}

/** The definition name of an interface (`IIoK8sApiAppsV1DeploymentSpec` -> `IoK8sApiAppsV1DeploymentSpec`). */
function nameOf(refText) {
  return refText.replace(/^I(?=IoK8s)/, "");
}

/** Apimachinery types served as plain JSON types rather than definitions. */
const SCALARS = {
  IoK8sApimachineryPkgApisMetaV1Time: { type: "string", format: "date-time" },
  IoK8sApimachineryPkgApisMetaV1MicroTime: { type: "string", format: "date-time" },
  IoK8sApimachineryPkgUtilIntstrIntOrString: { "x-kubernetes-int-or-string": true, format: "int-or-string" },
  IoK8sApimachineryPkgApiResourceQuantity: { "x-kubernetes-quantity": true },
};

function typeNode(node, owner, field) {
  switch (node.kind) {
    case ts.SyntaxKind.StringKeyword:
      return { type: "string" };
    case ts.SyntaxKind.NumberKeyword:
      return numberOf(owner, field);
    case ts.SyntaxKind.BooleanKeyword:
      return { type: "boolean" };
    case ts.SyntaxKind.ParenthesizedType:
      return typeNode(node.type, owner, field);
    case ts.SyntaxKind.LiteralType:
      if (ts.isStringLiteral(node.literal)) return { type: "string", enum: [node.literal.text] };
      break;
    case ts.SyntaxKind.UnionType: {
      const parts = node.types.map((t) => typeNode(t, owner, field));
      if (parts.every((p) => p.type === "string" && p.enum)) return { type: "string", enum: parts.flatMap((p) => p.enum) };
      if (parts.length === 2 && parts.some((p) => p.type === "string") && parts.some((p) => p.type === "integer"))
        return { ...SCALARS.IoK8sApimachineryPkgUtilIntstrIntOrString };
      break;
    }
    case ts.SyntaxKind.TypeLiteral: {
      const index = node.members.find((m) => ts.isIndexSignatureDeclaration(m));
      if (index && node.members.length === 1) return { type: "object", additionalProperties: typeNode(index.type, owner, field) };
      if (!index) return objectOf(`${owner}.${field}`, node.members);
      break;
    }
    case ts.SyntaxKind.TypeReference: {
      const refName = node.typeName.getText();
      if (refName === "Array" && node.typeArguments?.length === 1) return { type: "array", items: typeNode(node.typeArguments[0], owner, field) };
      const name = nameOf(refName);
      if (SCALARS[name]) return { ...SCALARS[name] };
      const decl = declarationOf(node.typeName);
      const target = ts.isExportSpecifier(decl) ? resolveSpecifier(decl) : decl;
      if (ts.isTypeAliasDeclaration(target)) return typeNode(target.type, owner, field);
      if (ts.isInterfaceDeclaration(target)) {
        define(name, target);
        return { $ref: name };
      }
      throw new Error(`${owner}.${field}: unexpected declaration for ${refName}`);
    }
  }
  throw new Error(`${owner}.${field}: unsupported type ${node.getText()}`);
}

/**
 * A number field's type and format, read from the package's compiled validator of `owner`
 * (`_schemas/<owner>.js`, ajv's standalone code: the function that validates `data.<field>`
 * checks `type: "integer"` or `"number"` and `formats.int32`/`int64`/`double`).
 */
function numberOf(owner, field) {
  const code = validatorCode(owner.split(".")[0]);
  const call = code && new RegExp(`(validate\\d+)\\(data\\.${field},\\{instancePath:instancePath\\+"/${field}"`).exec(code);
  const body = call && code.split(`function ${call[1]}(`)[1]?.split("function validate")[0];
  const fmt = body && /formats(\d+)/.exec(body);
  const format = fmt ? new RegExp(`formats${fmt[1]}=formats\\.(\\w+)`).exec(code)?.[1] : undefined;
  const type = body && body.includes('params:{type:"number"}') ? "number" : "integer";
  return format ? { type, format } : { type };
}

const validators = new Map();
function validatorCode(definition) {
  if (!validators.has(definition)) {
    const file = definition.startsWith("IoK8sApimachinery")
      ? path.join(path.dirname(require.resolve("@kubernetes-models/apimachinery/package.json")), "_schemas", `${definition}.js`)
      : path.join(pkgDir, "_schemas", `${definition}.js`);
    validators.set(definition, existsSync(file) ? readFileSync(file, "utf8") : undefined);
  }
  return validators.get(definition);
}

function resolveSpecifier(spec) {
  const local = spec.propertyName ?? spec.name;
  const sf = spec.getSourceFile();
  for (const st of sf.statements) {
    if ((ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) && st.name.text === local.text) return st;
  }
  throw new Error(`cannot resolve ${local.text} in ${sf.fileName}`);
}

/** Kubernetes' own name of each definition (`io.k8s.api.apps.v1.DeploymentSpec`), for the OpenAPI documents. */
const names = {};

/** The upstream name of a definition from the package file that declares it (`apps/v1/DeploymentSpec.d.ts`). */
function upstreamName(decl) {
  const file = decl.getSourceFile().fileName;
  const am = path.dirname(require.resolve("@kubernetes-models/apimachinery/package.json"));
  if (file.startsWith(am))
    return `io.k8s.apimachinery.pkg.${path
      .relative(am, file)
      .replace(/\.d\.ts$/, "")
      .split(path.sep)
      .join(".")}`;
  const parts = path
    .relative(pkgDir, file)
    .replace(/\.d\.ts$/, "")
    .split(path.sep);
  const kind = parts.pop();
  const version = parts.pop();
  const group = parts.length === 0 ? "core" : parts[0].split(".")[0];
  return `io.k8s.api.${group}.${version}.${kind}`;
}

function define(name, decl) {
  if (definitions[name]) return;
  names[name] = upstreamName(decl);
  definitions[name] = { type: "object", properties: {} };
  const def = objectOf(name, decl.members);
  const description = docOf(decl);
  definitions[name] = description ? { description, ...def } : def;
}

/** An object schema from an interface's or an inline type literal's members. */
function objectOf(name, members) {
  const def = { type: "object", properties: {} };
  const required = [];
  for (const m of members) {
    if (!ts.isPropertySignature(m) || !m.type) continue;
    const field = ts.isStringLiteral(m.name) ? m.name.text : m.name.getText();
    const prop = typeNode(m.type, name, field);
    const doc = docOf(m);
    const lt = LIST_TYPES[`${name}.${field}`];
    if (lt && !lt.merge) prop["x-kubernetes-patch-strategy"] = "retainKeys";
    else if (lt) {
      prop["x-kubernetes-patch-merge-key"] = lt.merge;
      prop["x-kubernetes-patch-strategy"] = lt.retainKeys ? "merge,retainKeys" : "merge";
      if (lt.keys) {
        prop["x-kubernetes-list-type"] = "map";
        prop["x-kubernetes-list-map-keys"] = lt.keys;
      }
    } else if (prop.type === "array") prop["x-kubernetes-list-type"] = "atomic";
    if (KEY_DEFAULTS[`${name}.${field}`] !== undefined) prop.default = KEY_DEFAULTS[`${name}.${field}`];
    def.properties[field] = doc ? { description: doc, ...prop } : prop;
    if (!m.questionToken) required.push(field);
  }
  if (required.length) def.required = required;
  return def;
}

const kinds = {};
for (const k of KINDS) {
  const sf = program.getSourceFile(path.join(pkgDir, `${k}.d.ts`));
  const kind = k.split("/").at(-1);
  const iface = sf.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === `I${kind}`);
  if (!iface) throw new Error(`no interface I${kind} in ${k}`);
  const spec = sf.statements.find(
    (s) => ts.isExportDeclaration(s) && s.exportClause && s.exportClause.elements.some((e) => (e.propertyName ?? e.name).text === `I${kind}`),
  );
  const exported = spec.exportClause.elements.find((e) => (e.propertyName ?? e.name).text === `I${kind}`).name.text;
  const name = nameOf(exported);
  define(name, iface);
  kinds[k.startsWith("v1/") ? `core/${k}` : k] = name;
}

for (const [key, lt] of Object.entries(LIST_TYPES)) {
  const [def, field] = key.split(".");
  if (!definitions[def]?.properties[field]) throw new Error(`LIST_TYPES names ${key}, which the schemas do not have`);
  void lt;
}

const sorted = Object.fromEntries(
  Object.keys(definitions)
    .sort()
    .map((k) => [k, definitions[k]]),
);
const out = path.join(root, "src", "kinds", "builtin", "k8s-schemas.json");
const sortedNames = Object.fromEntries(Object.keys(sorted).map((k) => [k, names[k]]));
const text = JSON.stringify({ source: `kubernetes-models@${version}`, kinds, names: sortedNames, definitions: sorted }) + "\n";
if (process.argv.includes("--check")) {
  // The test suite's check that the committed file is what the installed package gives.
  const current = existsSync(out) ? readFileSync(out, "utf8") : "";
  if (current !== text) {
    console.error(`${path.relative(root, out)} is not what kubernetes-models@${version} gives: run npm run vendor:k8s-schemas`);
    process.exit(1);
  }
  console.log(`${path.relative(root, out)} is up to date with kubernetes-models@${version}`);
  process.exit(0);
}
writeFileSync(out, text);
console.log(
  `wrote ${path.relative(root, out)}: ${Object.keys(kinds).length} kinds, ${Object.keys(sorted).length} definitions from kubernetes-models@${version}`,
);
