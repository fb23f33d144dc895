/**
 * Install manifests of the agent for a real member cluster, rendered by
 * `flotilla-agent install` (and reusable by the admin CLI): a pure function from
 * {@link InstallOptions} to Kubernetes objects, and from those to multi-document YAML for
 * `kubectl apply -f -`.
 *
 * What is rendered, in apply order:
 * 1. `Namespace` (default `flotilla-agent`);
 * 2. `ServiceAccount` `flotilla-agent`;
 * 3. `Secret` `flotilla-bootstrap` (stringData `hub-url`, `cluster-name`, `bootstrap-token`);
 * 4. `ClusterRole` + `ClusterRoleBinding` `flotilla-agent-<namespace>`: exactly what the agent
 *    reads cluster-wide, and `impersonate` on ServiceAccounts for works with an executor (see
 *    {@link clusterRules});
 * 5. `Role` + `RoleBinding` `flotilla-agent` in the namespace: its credentials Secret and its
 *    AppliedManifestWork records (see {@link namespaceRules});
 * 6. `ClusterRole` + `ClusterRoleBinding` `flotilla-agent-work-<namespace>`: what applying the
 *    manifests of ManifestWorks needs (see {@link workRules}): every verb on every resource;
 * 7. `Deployment` `flotilla-agent`: one replica, `Recreate`, non-root, read-only root
 *    filesystem, every capability dropped, seccomp `RuntimeDefault`, an `emptyDir` at `/tmp`
 *    (the only writable path), memory and CPU from {@link AGENT_RESOURCES}, configuration from
 *    the bootstrap Secret.
 *
 * The agent's own RBAC (4 and 5) is the least its registration, identity, status, key rotation
 * and work records need. The work ClusterRole (6) is separate and deliberately broad: a
 * ManifestWork may carry any kind, as with OCM, whose work agent effectively runs with
 * cluster-admin rights on the managed cluster. An admin who wants to limit what works may do
 * replaces that one ClusterRole with narrower rules; the agent's own roles stay as they are.
 */
import { stringify } from "yaml";
import { BOOTSTRAP_SECRET_NAME, CREDENTIALS_SECRET_NAME, DEFAULT_AGENT_NAMESPACE } from "./credentials.ts";
import type { ClusterClaim } from "../../src/agent-api/protocol.ts";
import { isDNS1123Label } from "../../src/k8s/validation.ts";
import { CLUSTER_PROPERTY_GROUP, CLUSTER_PROPERTY_PLURAL } from "./identity.ts";
import { isValidClaim } from "./status.ts";

/** Name of the ServiceAccount, Role, RoleBinding and Deployment. */
export const AGENT_NAME = "flotilla-agent";
/** Name of the Secret carrying the agent's configuration (hub URL, cluster name, bootstrap token). */
export { BOOTSTRAP_SECRET_NAME };
/**
 * Image repository of the agent; the tag is the package version (see {@link defaultAgentImage}).
 * No registry: it is the name docs/install.md builds the image under from agent/Containerfile
 * (`docker build -f agent/Containerfile -t flotilla-agent:<version> .`), for clusters whose nodes
 * have it loaded (kind, minikube, k3d); pushed to a registry, the image is named with `--image`.
 */
export const AGENT_IMAGE_REPOSITORY = "flotilla-agent";
/** Numeric user and group the agent runs as (the image's `USER`). */
export const AGENT_UID = 65532;
/** Where the writable `emptyDir` is mounted; `TMPDIR` points here. */
export const TMP_MOUNT_PATH = "/tmp";

const BOOTSTRAP_TOKEN_RE = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;

/** Options of {@link renderInstallManifests}. */
export interface InstallOptions {
  /** Hub base URL (http or https), e.g. `https://flotilla.example.com`. */
  hubUrl: string;
  /** ManagedCluster name to register as (DNS-1123 label, at most 63 characters). */
  clusterName: string;
  /** Bootstrap token `<id>.<secret>` (`[a-z0-9]{6}.[a-z0-9]{16}`). */
  bootstrapToken: string;
  /** Namespace of the agent (DNS-1123 label); default `flotilla-agent`. */
  namespace?: string;
  /** Container image; default {@link defaultAgentImage} of the package version. */
  image: string;
  /** Extra cluster claims, passed to the agent as `--claim name=value` arguments. */
  claims?: readonly ClusterClaim[];
}

/** Bad {@link InstallOptions}; the message names the option and is fit for the command line. */
export class InstallOptionsError extends Error {
  override name = "InstallOptionsError";
}

/** One RBAC `PolicyRule` (rbac.authorization.k8s.io/v1). */
export interface PolicyRule {
  /** API groups (`""` is the core group); absent for non-resource rules. */
  apiGroups?: string[];
  /** Resource plurals; absent for non-resource rules. */
  resources?: string[];
  /** Object names the rule is limited to; absent means every name. */
  resourceNames?: string[];
  /** Paths such as `/version`; only in ClusterRoles. */
  nonResourceURLs?: string[];
  /** Verbs (`get`, `list`, `create`, `update`, …). */
  verbs: string[];
}

/** A Kubernetes object as rendered: plain JSON data, `apiVersion`, `kind` and `metadata` always set. */
export interface ManifestObject {
  /** e.g. `apps/v1`. */
  apiVersion: string;
  /** e.g. `Deployment`. */
  kind: string;
  /** At least `name`; `namespace` on namespaced kinds. */
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  /** The rest of the object (spec, rules, subjects, stringData, …). */
  [field: string]: unknown;
}

/**
 * The agent container's resources, from `npm run bench:agent` (the bundle run with the image's
 * Node flags, README "Agent footprint"): RSS steady 57 MiB and peak 59 MiB with 10 works of
 * 100 manifests, 54 MiB idle; idle CPU about 0.2 % of a core (2m). The memory request covers
 * the steady figure; the limit leaves room for the V8 heap to reach the image's
 * `--max-old-space-size=48` (MiB) on top of Node's own ~45 MiB before the kernel would kill
 * the container. CPU: 50m requested for applying works, at most half a core.
 */
export const AGENT_RESOURCES = {
  requests: { cpu: "50m", memory: "64Mi" },
  limits: { cpu: "500m", memory: "128Mi" },
} as const;

/**
 * The default image of the agent: `flotilla-agent:<version>`, as docs/install.md builds it.
 *
 * @param version the package version (package.json `version`), e.g. `0.1.0`.
 * @returns the image reference.
 */
export function defaultAgentImage(version: string): string {
  return `${AGENT_IMAGE_REPOSITORY}:${version}`;
}

/**
 * The cluster-wide permissions the agent needs, and why:
 * - `get` the `kube-system` Namespace: the cluster ID falls back to its `metadata.uid`;
 * - `get` its own Namespace: before writing its credentials Secret the agent checks that the
 *   namespace exists (it creates it only when missing, which the manifests already did);
 * - `list` Nodes: capacity and allocatable in the heartbeat (`get` for a single Node is not used);
 * - `get` and `list` ClusterProperties (`about.k8s.io`): the cluster ID
 *   (`cluster.clusterset.k8s.io`) and the cluster claims;
 * - `list` ClusterClaims (`cluster.open-cluster-management.io`): the cluster claims, as OCM's
 *   registration agent reads them;
 * - `get` `/version` (Kubernetes version), `/livez` and `/healthz` (the health probe);
 * - `impersonate` ServiceAccounts: a ManifestWork with an `executor` is applied, read and deleted
 *   as its ServiceAccount (`Impersonate-User: system:serviceaccount:NS:NAME`), so the cluster's
 *   RBAC decides what it may do. Only `serviceaccounts` (kube-apiserver derives the account's
 *   groups itself): never `users` or `groups`, which would let the agent act as any user or
 *   as `system:masters`. Kept here rather than in {@link workRules}, so that narrowing that
 *   role does not break executor works.
 *
 * - `get` Leases: the Lease named after each add-on in its install namespace (its health, as
 *   OCM's registration agent reads it; agent/src/addon). The add-on's hub kubeconfig Secret
 *   (`<addon>-hub-kubeconfig` in that namespace) is written with the rights of {@link workRules},
 *   as the add-on's own objects are: an admin who narrows that role keeps `get`, `create`,
 *   `update` and `delete` on Secrets for add-ons that need the hub.
 *
 * Applying works needs write access to whatever the works carry: that is the separate
 * {@link workRules} ClusterRole, so these rules stay read-only.
 *
 * @param namespace the agent's namespace.
 * @returns the rules, in a fixed order.
 */
export function clusterRules(namespace: string): PolicyRule[] {
  return [
    { apiGroups: [""], resources: ["namespaces"], resourceNames: ["kube-system", namespace], verbs: ["get"] },
    { apiGroups: [""], resources: ["nodes"], verbs: ["list"] },
    { apiGroups: [CLUSTER_PROPERTY_GROUP], resources: [CLUSTER_PROPERTY_PLURAL], verbs: ["get", "list"] },
    { apiGroups: ["cluster.open-cluster-management.io"], resources: ["clusterclaims"], verbs: ["list"] },
    { nonResourceURLs: ["/version", "/livez", "/healthz"], verbs: ["get"] },
    { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["impersonate"] },
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get"] },
  ];
}

/**
 * The permissions the agent needs in its own namespace:
 * - its credentials Secret `flotilla-hub-credentials`: first registration creates it, key
 *   rotation reads and replaces it, leaving the hub deletes it. RBAC cannot limit `create` by
 *   name (the name is not known to the authorizer before the object exists), so `create` is a
 *   rule of its own without `resourceNames`; `get`, `update` and `delete` are limited to that
 *   one Secret. The agent never patches, lists or watches Secrets here. It reads (`get`) the
 *   bootstrap Secret `flotilla-bootstrap` only when the hub refuses its credentials, to register
 *   again with the token there (the kubelet injects it as environment variables at start, and an
 *   admin may have put a new one there since);
 * - ConfigMaps: one AppliedManifestWork record per work (`flotilla-work-<work>`, listed by
 *   label at start, created, replaced and deleted with the work).
 *
 * @returns the rules, in a fixed order.
 */
export function namespaceRules(): PolicyRule[] {
  return [
    { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
    { apiGroups: [""], resources: ["secrets"], resourceNames: [CREDENTIALS_SECRET_NAME], verbs: ["get", "update", "delete"] },
    { apiGroups: [""], resources: ["secrets"], resourceNames: [BOOTSTRAP_SECRET_NAME], verbs: ["get"] },
    { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "create", "update", "delete"] },
  ];
}

/**
 * The permissions applying ManifestWorks needs: every verb on every resource of every group
 * (a work may carry any kind: Namespaces, CRDs, RBAC, workloads, custom resources; the agent
 * reads, creates, applies and deletes them), and `get` on the discovery paths the agent maps
 * kinds to resources with. This is cluster-admin-level access, as OCM's work agent has on a
 * managed cluster; it is a ClusterRole of its own so that an admin can narrow it.
 *
 * @returns the rules, in a fixed order.
 */
export function workRules(): PolicyRule[] {
  return [
    { apiGroups: ["*"], resources: ["*"], verbs: ["*"] },
    { nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*"], verbs: ["get"] },
  ];
}

/**
 * Name of the work ClusterRole and its ClusterRoleBinding (cluster-scoped, so it carries the
 * namespace).
 *
 * @param namespace the agent's namespace.
 * @returns e.g. `flotilla-agent-work-flotilla-agent`.
 */
export function workClusterRoleName(namespace: string): string {
  return `${AGENT_NAME}-work-${namespace}`;
}

/**
 * Name of the ClusterRole and ClusterRoleBinding: cluster-scoped, so it carries the namespace
 * (two installs in different namespaces do not collide). A DNS-1123 subdomain (no `:`), which
 * every API server and validator accepts.
 *
 * @param namespace the agent's namespace.
 * @returns e.g. `flotilla-agent-flotilla-agent`.
 */
export function clusterRoleName(namespace: string): string {
  return `${AGENT_NAME}-${namespace}`;
}

function checkOptions(opts: InstallOptions): void {
  let url: URL;
  try {
    url = new URL(opts.hubUrl);
  } catch {
    throw new InstallOptionsError(`--hub-url "${opts.hubUrl}" is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new InstallOptionsError(`--hub-url "${opts.hubUrl}" must be http or https`);
  if (isDNS1123Label(opts.clusterName).length > 0) {
    throw new InstallOptionsError(`--cluster-name "${opts.clusterName}" must be a DNS-1123 label (lower case letters, digits and '-', at most 63)`);
  }
  const ns = opts.namespace ?? DEFAULT_AGENT_NAMESPACE;
  if (isDNS1123Label(ns).length > 0) {
    throw new InstallOptionsError(`--namespace "${ns}" must be a DNS-1123 label (lower case letters, digits and '-', at most 63)`);
  }
  if (!BOOTSTRAP_TOKEN_RE.test(opts.bootstrapToken)) {
    throw new InstallOptionsError("--bootstrap-token must look like <id>.<secret> ([a-z0-9]{6}.[a-z0-9]{16})");
  }
  if (opts.image.trim() === "" || /\s/.test(opts.image)) throw new InstallOptionsError(`--image "${opts.image}" is not an image reference`);
  for (const c of opts.claims ?? []) {
    if (!isValidClaim(c)) throw new InstallOptionsError(`--claim "${c.name}=${c.value}": the name must be a DNS subdomain and the value 1-1024 characters`);
  }
}

/**
 * Renders the agent's install manifests (see the module comment for the list).
 *
 * The Deployment's container gets `FLOTILLA_HUB_URL`, `FLOTILLA_CLUSTER_NAME` and
 * `FLOTILLA_BOOTSTRAP_TOKEN` from the bootstrap Secret (`secretKeyRef`; the token is
 * `optional`, so the key may be removed once the cluster has joined), `FLOTILLA_NAMESPACE` from
 * the downward API (`metadata.namespace`), `TMPDIR=/tmp`, and the arguments
 * `--log-format json` plus one `--claim name=value` per claim.
 *
 * @param opts hub URL, cluster name, bootstrap token, namespace, image and claims.
 * @returns the objects in apply order (Namespace first, Deployment last).
 * @throws InstallOptionsError when an option is invalid (bad URL, name, namespace, token
 *   format, image or claim).
 */
export function renderInstallManifests(opts: InstallOptions): ManifestObject[] {
  checkOptions(opts);
  const namespace = opts.namespace ?? DEFAULT_AGENT_NAMESPACE;
  const labels = { "app.kubernetes.io/name": AGENT_NAME, "app.kubernetes.io/part-of": "flotilla" };
  const meta = (name: string, namespaced = true): ManifestObject["metadata"] =>
    namespaced ? { name, namespace, labels: { ...labels } } : { name, labels: { ...labels } };
  const subjects = [{ kind: "ServiceAccount", name: AGENT_NAME, namespace }];
  const fromSecret = (env: string, key: string, optional = false): Record<string, unknown> => ({
    name: env,
    valueFrom: { secretKeyRef: { name: BOOTSTRAP_SECRET_NAME, key, ...(optional ? { optional: true } : {}) } },
  });
  const args = ["--log-format", "json", ...(opts.claims ?? []).flatMap((c) => ["--claim", `${c.name}=${c.value}`])];

  return [
    { apiVersion: "v1", kind: "Namespace", metadata: meta(namespace, false) },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta(AGENT_NAME), automountServiceAccountToken: true },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: meta(BOOTSTRAP_SECRET_NAME),
      type: "Opaque",
      stringData: { "hub-url": opts.hubUrl, "cluster-name": opts.clusterName, "bootstrap-token": opts.bootstrapToken },
    },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: meta(clusterRoleName(namespace), false), rules: clusterRules(namespace) },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: meta(clusterRoleName(namespace), false),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRoleName(namespace) },
      subjects,
    },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: meta(AGENT_NAME), rules: namespaceRules() },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: meta(AGENT_NAME),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: AGENT_NAME },
      subjects,
    },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: meta(workClusterRoleName(namespace), false), rules: workRules() },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: meta(workClusterRoleName(namespace), false),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: workClusterRoleName(namespace) },
      subjects,
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: meta(AGENT_NAME),
      spec: {
        // One agent per cluster: two would race on the credentials Secret and the lease.
        replicas: 1,
        strategy: { type: "Recreate" },
        selector: { matchLabels: { "app.kubernetes.io/name": AGENT_NAME } },
        template: {
          metadata: { labels: { ...labels } },
          spec: {
            serviceAccountName: AGENT_NAME,
            automountServiceAccountToken: true,
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 30,
            securityContext: {
              runAsNonRoot: true,
              runAsUser: AGENT_UID,
              runAsGroup: AGENT_UID,
              seccompProfile: { type: "RuntimeDefault" },
            },
            containers: [
              {
                name: "agent",
                image: opts.image,
                args,
                env: [
                  fromSecret("FLOTILLA_HUB_URL", "hub-url"),
                  fromSecret("FLOTILLA_CLUSTER_NAME", "cluster-name"),
                  fromSecret("FLOTILLA_BOOTSTRAP_TOKEN", "bootstrap-token", true),
                  { name: "FLOTILLA_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
                  { name: "TMPDIR", value: TMP_MOUNT_PATH },
                ],
                resources: AGENT_RESOURCES,
                securityContext: {
                  runAsNonRoot: true,
                  runAsUser: AGENT_UID,
                  runAsGroup: AGENT_UID,
                  allowPrivilegeEscalation: false,
                  privileged: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ["ALL"] },
                  seccompProfile: { type: "RuntimeDefault" },
                },
                volumeMounts: [{ name: "tmp", mountPath: TMP_MOUNT_PATH }],
              },
            ],
            volumes: [{ name: "tmp", emptyDir: { sizeLimit: "64Mi" } }],
          },
        },
      },
    },
  ];
}

/**
 * Serialises objects as multi-document YAML (`---` between documents), for `kubectl apply -f -`.
 *
 * @param objects the objects, e.g. from {@link renderInstallManifests}.
 * @returns YAML text ending with a newline.
 */
export function toMultiDocumentYaml(objects: readonly ManifestObject[]): string {
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join("---\n");
}
