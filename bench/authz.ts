/**
 * Benchmark of the RBAC evaluator (src/auth/rbac.ts), in process.
 *
 * Run: `npm run bench:authz`. For each size N in `BENCH_SIZES` (default `1000`): N Roles over
 * N/10 namespaces, N RoleBindings (each a Role or a built-in ClusterRole to a user and a team
 * group), N/10 ClusterRoles and N/10 ClusterRoleBindings, plus the bootstrap roles and bindings.
 * Prints, as tables:
 * 1. the index build time (milliseconds, median of `BENCH_BUILDS` builds, default 9);
 * 2. per authorization check (microseconds, p50 / p99 / max over `BENCH_CHECKS` checks, default
 *    200,000, after a warm-up): random requests, half of them by a user some RoleBinding names
 *    in that namespace; a ServiceAccount; the worst case, a denial for a user whose group all N
 *    RoleBindings name, in one namespace holding all N Roles (every binding's every rule
 *    scanned); and `rulesFor` (what a SelfSubjectRulesReview costs).
 *
 * Data comes from a fixed-seed LCG, so runs are comparable; timing is `process.hrtime.bigint()`
 * around each call.
 */
import { BOOTSTRAP_CLUSTER_ROLE_BINDINGS, BOOTSTRAP_CLUSTER_ROLES } from "../src/auth/rbac-bootstrap.ts";
import {
  RBAC_GROUP,
  serviceAccountGroups,
  serviceAccountUsername,
  type ClusterRole,
  type ClusterRoleBinding,
  type RequestAttributes,
  type ResourceAttributes,
  type Role,
  type RoleBinding,
  type UserInfo,
} from "../src/auth/rbac-types.ts";
import { RbacAuthorizer, type RbacSnapshot } from "../src/auth/rbac.ts";
import { printTable } from "./table.ts";

const SIZES = (process.env.BENCH_SIZES ?? "1000").split(",").map((s) => Number(s.trim()));
const BUILDS = Number(process.env.BENCH_BUILDS ?? 9);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 200_000);

const RESOURCES: [string, string][] = [
  ["cluster.open-cluster-management.io", "placements"],
  ["cluster.open-cluster-management.io", "managedclustersetbindings"],
  ["work.open-cluster-management.io", "manifestworks"],
  ["work.open-cluster-management.io", "manifestworkreplicasets"],
  ["flotilla.dev", "webhookreceivers"],
  ["", "secrets"],
  ["", "serviceaccounts"],
  ["", "configmaps"],
];
const VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"];

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function pick<T>(rnd: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rnd() * xs.length)]!;
}

interface Fleet {
  snapshot: RbacSnapshot;
  namespaces: string[];
  users: UserInfo[];
}

function makeFleet(n: number, seed = 7): Fleet {
  const rnd = lcg(seed);
  const nsCount = Math.max(1, Math.floor(n / 10));
  const namespaces = Array.from({ length: nsCount }, (_, i) => `team-${i}`);
  const roles: Role[] = [];
  for (let i = 0; i < n; i++) {
    const ns = namespaces[i % nsCount]!;
    const [group, resource] = pick(rnd, RESOURCES);
    roles.push({
      metadata: { namespace: ns, name: `role-${i}` },
      rules: [
        { verbs: ["get", "list", "watch"], apiGroups: [group], resources: [resource] },
        { verbs: [pick(rnd, VERBS)], apiGroups: [group], resources: [resource], resourceNames: [`obj-${i % 50}`] },
      ],
    });
  }
  const clusterRoles: ClusterRole[] = [...BOOTSTRAP_CLUSTER_ROLES];
  const clusterRoleBindings: ClusterRoleBinding[] = [...BOOTSTRAP_CLUSTER_ROLE_BINDINGS];
  for (let i = 0; i < Math.floor(n / 10); i++) {
    const [group, resource] = pick(rnd, RESOURCES);
    clusterRoles.push({ metadata: { name: `cluster-reader-${i}` }, rules: [{ verbs: ["get", "list"], apiGroups: [group], resources: [resource] }] });
    clusterRoleBindings.push({
      metadata: { name: `cluster-reader-${i}` },
      roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: `cluster-reader-${i}` },
      subjects: [{ kind: "User", apiGroup: RBAC_GROUP, name: `user-${Math.floor(rnd() * (n / 2))}` }],
    });
  }
  const roleBindings: RoleBinding[] = [];
  for (let i = 0; i < n; i++) {
    const ns = namespaces[i % nsCount]!;
    const roleRef =
      i % 3 === 0
        ? { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: pick(rnd, ["view", "edit", "admin"]) }
        : { apiGroup: RBAC_GROUP, kind: "Role", name: `role-${i}` };
    roleBindings.push({
      metadata: { namespace: ns, name: `binding-${i}` },
      roleRef,
      subjects: [
        { kind: "User", apiGroup: RBAC_GROUP, name: `user-${Math.floor(rnd() * (n / 2))}` },
        { kind: "Group", apiGroup: RBAC_GROUP, name: `group-${Math.floor(rnd() * (n / 5))}` },
        { kind: "ServiceAccount", apiGroup: "", name: `sa-${i % 5}` },
      ],
    });
  }
  const users: UserInfo[] = Array.from({ length: Math.floor(n / 2) }, (_, i) => ({
    name: `user-${i}`,
    groups: ["system:authenticated", `group-${Math.floor(rnd() * (n / 5))}`, `group-${Math.floor(rnd() * (n / 5))}`],
  }));
  return { snapshot: { roles, clusterRoles, roleBindings, clusterRoleBindings }, namespaces, users };
}

/** The worst case at size N: one namespace, N Roles, N RoleBindings each naming the group `everyone`. */
function makeWorstCase(n: number): RbacSnapshot {
  const roles: Role[] = [];
  const roleBindings: RoleBinding[] = [];
  for (let i = 0; i < n; i++) {
    const [group, resource] = RESOURCES[i % RESOURCES.length]!;
    roles.push({
      metadata: { namespace: "crowded", name: `role-${i}` },
      rules: [
        { verbs: ["get", "list", "watch"], apiGroups: [group], resources: [resource] },
        { verbs: ["update"], apiGroups: [group], resources: [resource], resourceNames: [`obj-${i}`] },
      ],
    });
    roleBindings.push({
      metadata: { namespace: "crowded", name: `binding-${i}` },
      roleRef: { apiGroup: RBAC_GROUP, kind: "Role", name: `role-${i}` },
      subjects: [{ kind: "Group", apiGroup: RBAC_GROUP, name: "everyone" }],
    });
  }
  return { roles, roleBindings, clusterRoles: BOOTSTRAP_CLUSTER_ROLES, clusterRoleBindings: BOOTSTRAP_CLUSTER_ROLE_BINDINGS };
}

function percentiles(samples: Float64Array): { p50: number; p99: number; max: number } {
  const s = Float64Array.from(samples).sort();
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1]! };
}

function timeChecks(count: number, next: (i: number) => () => unknown): { p50: number; p99: number; max: number } {
  for (let i = 0; i < Math.min(20_000, count); i++) next(i)(); // warm-up (JIT)
  const samples = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const call = next(i);
    const t0 = process.hrtime.bigint();
    call();
    samples[i] = Number(process.hrtime.bigint() - t0) / 1000;
  }
  return percentiles(samples);
}

const us = (x: number) => x.toFixed(2);
const buildRows: string[][] = [];
const checkRows: string[][] = [];

for (const n of SIZES) {
  const fleet = makeFleet(n);
  const times: number[] = [];
  let rbac!: RbacAuthorizer;
  for (let i = 0; i < BUILDS; i++) {
    const t0 = performance.now();
    rbac = new RbacAuthorizer(fleet.snapshot);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const s = fleet.snapshot;
  buildRows.push([
    `${n.toLocaleString("en-US")}`,
    `${s.roles!.length} / ${s.roleBindings!.length} / ${s.clusterRoles!.length} / ${s.clusterRoleBindings!.length}`,
    times[Math.floor(times.length / 2)]!.toFixed(2),
  ]);

  const rnd = lcg(99);
  const requests: { user: UserInfo; attrs: ResourceAttributes }[] = Array.from({ length: 4096 }, () => {
    const [group, resource] = pick(rnd, RESOURCES);
    const verb = pick(rnd, VERBS);
    const named = verb !== "list" && verb !== "watch" && verb !== "create";
    const name = named ? { name: `obj-${Math.floor(rnd() * 60)}` } : {};
    if (rnd() < 0.5) {
      // A user some RoleBinding names, in that binding's namespace.
      const b = pick(rnd, s.roleBindings!);
      const who = fleet.users.find((u) => u.name === b.subjects![0]!.name) ?? { name: b.subjects![0]!.name, groups: ["system:authenticated"] };
      return { user: who, attrs: { verb, apiGroup: group, resource, namespace: b.metadata.namespace, ...name } };
    }
    return { user: pick(rnd, fleet.users), attrs: { verb, apiGroup: group, resource, namespace: pick(rnd, fleet.namespaces), ...name } };
  });
  const allowed = requests.filter((r) => rbac.authorize(r.user, r.attrs).allowed).length / requests.length;
  const random = timeChecks(CHECKS, (i) => {
    const r = requests[i & 4095]!;
    return () => rbac.authorize(r.user, r.attrs);
  });
  checkRows.push([
    `${n.toLocaleString("en-US")}`,
    `random users and requests (${Math.round(allowed * 100)} % allowed)`,
    us(random.p50),
    us(random.p99),
    us(random.max),
  ]);

  const sa: UserInfo = { name: serviceAccountUsername("team-1", "sa-1"), groups: ["system:authenticated", ...serviceAccountGroups("team-1")] };
  const saAttrs: RequestAttributes = {
    verb: "patch",
    apiGroup: "work.open-cluster-management.io",
    resource: "manifestworkreplicasets",
    namespace: "team-1",
    name: "rollout",
  };
  const saDecision = rbac.authorize(sa, saAttrs).allowed;
  const saTimes = timeChecks(CHECKS, () => () => rbac.authorize(sa, saAttrs));
  checkRows.push([
    `${n.toLocaleString("en-US")}`,
    `a ServiceAccount patching a ManifestWorkReplicaSet (${saDecision ? "allowed" : "denied"})`,
    us(saTimes.p50),
    us(saTimes.p99),
    us(saTimes.max),
  ]);

  const worst = new RbacAuthorizer(makeWorstCase(n));
  const wideUser: UserInfo = { name: "nobody-in-particular", groups: ["system:authenticated", "everyone"] };
  const wideAttrs: RequestAttributes = { verb: "delete", apiGroup: RBAC_GROUP, resource: "roles", namespace: "crowded", name: "r" };
  if (worst.authorize(wideUser, wideAttrs).allowed) throw new Error("the worst-case check must be a denial");
  const wide = timeChecks(CHECKS, () => () => worst.authorize(wideUser, wideAttrs));
  checkRows.push([
    `${n.toLocaleString("en-US")}`,
    `worst case: denied, the user's group named by all ${n} RoleBindings of the namespace`,
    us(wide.p50),
    us(wide.p99),
    us(wide.max),
  ]);

  const rules = timeChecks(Math.floor(CHECKS / 4), (i) => {
    const r = requests[i & 4095]!;
    return () => rbac.rulesFor(r.user, r.attrs.namespace ?? "");
  });
  checkRows.push([`${n.toLocaleString("en-US")}`, "rulesFor (SelfSubjectRulesReview), random users", us(rules.p50), us(rules.p99), us(rules.max)]);
}

printTable("RBAC index build (new RbacAuthorizer), median", ["size N", "roles / bindings / cluster roles / cluster bindings", "ms"], buildRows);
printTable(`Authorization check, ${CHECKS.toLocaleString("en-US")} checks each (µs)`, ["size N", "check", "p50", "p99", "max"], checkRows);
