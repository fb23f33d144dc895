/**
 * Table tests of impersonation (src/auth/impersonation.ts), the cases of k8s.io/apiserver's
 * `pkg/endpoints/filters/impersonation_test.go` (TestImpersonationFilter) translated as facts,
 * with its stand-in authorizer: who is allowed which `impersonate` check is decided by the
 * requestor's name and groups, as there. The one difference: a group, extra or uid without a user
 * is 400 here (kube-apiserver answers 500).
 */
import { describe, expect, it } from "vitest";
import {
  impersonate,
  impersonationRequests,
  isImpersonationHeader,
  splitServiceAccountUsername,
  type ImpersonationAuthorizer,
} from "../../src/auth/impersonation.ts";
import { ApiError } from "../../src/k8s/errors.ts";
import type { UserInfo } from "../../src/auth/rbac-types.ts";

/** Upstream's impersonateAuthorizer. */
const authorize: ImpersonationAuthorizer = async (user, a) => {
  const g = user.groups ?? [];
  const imp = a.verb === "impersonate";
  if (user.name === "system:admin") return { allowed: true, reason: "" };
  if (user.name === "tester") throw new Error("works on my machine");
  if (user.name === "deny-me") return { allowed: false, reason: "denied" };
  if (g[0] === "wheel" && imp && a.resource === "users") return { allowed: true, reason: "" };
  if (g[0] === "sa-impersonater" && imp && a.resource === "serviceaccounts") return { allowed: true, reason: "" };
  if (g[0] === "regular-impersonater" && imp && a.resource === "users") return { allowed: true, reason: "" };
  if (g[1] === "group-impersonater" && imp && a.resource === "groups") return { allowed: true, reason: "" };
  if (g[1] === "extra-setter-scopes" && imp && a.resource === "userextras" && a.subresource === "scopes") return { allowed: true, reason: "" };
  if (g[1] === "escaped-scopes" || g[1] === "almost-escaped-scopes") return { allowed: true, reason: "" };
  if (g[1] === "extra-setter-particular-scopes" && imp && a.resource === "userextras" && a.subresource === "scopes" && a.name === "scope-a")
    return { allowed: true, reason: "" };
  if (g[1] === "extra-setter-project" && imp && a.resource === "userextras" && a.subresource === "project") return { allowed: true, reason: "" };
  if (g[1] === "uid-impersonater" && imp && a.resource === "uids") return { allowed: true, reason: "" };
  return { allowed: false, reason: "deny by default" };
};

interface Case {
  name: string;
  user: UserInfo;
  as?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  uid?: string;
  /** The effective user, or the status code of the refusal. */
  want: UserInfo | 400 | 403 | "throws";
}

function headersOf(c: Case): Headers {
  const h = new Headers();
  if (c.as) h.set("Impersonate-User", c.as);
  for (const g of c.groups ?? []) h.append("Impersonate-Group", g);
  for (const [k, vs] of Object.entries(c.extra ?? {})) for (const v of vs) h.append(`Impersonate-Extra-${k}`, v);
  if (c.uid) h.set("Impersonate-Uid", c.uid);
  return h;
}

const cases: Case[] = [
  { name: "not-impersonating", user: { name: "tester" }, want: { name: "tester" } },
  { name: "impersonating-error", user: { name: "tester" }, as: "anyone", want: "throws" },
  { name: "impersonating-group-without-user", user: { name: "tester" }, groups: ["some-group"], want: 400 },
  { name: "impersonating-extra-without-user", user: { name: "tester" }, extra: { scopes: ["scope-a"] }, want: 400 },
  { name: "impersonating-uid-without-user", user: { name: "tester" }, uid: "some-uid", want: 400 },
  { name: "disallowed-group", user: { name: "dev", groups: ["wheel"] }, as: "system:admin", groups: ["some-group"], want: 403 },
  {
    name: "allowed-group",
    user: { name: "dev", groups: ["wheel", "group-impersonater"] },
    as: "system:admin",
    groups: ["some-group"],
    want: { name: "system:admin", groups: ["some-group", "system:authenticated"], extra: {} },
  },
  {
    name: "disallowed-userextra-1",
    user: { name: "dev", groups: ["wheel"] },
    as: "system:admin",
    groups: ["some-group"],
    extra: { scopes: ["scope-a"] },
    want: 403,
  },
  {
    name: "disallowed-userextra-2",
    user: { name: "dev", groups: ["wheel", "extra-setter-project"] },
    as: "system:admin",
    groups: ["some-group"],
    extra: { scopes: ["scope-a"] },
    want: 403,
  },
  {
    name: "disallowed-userextra-3",
    user: { name: "dev", groups: ["wheel", "extra-setter-particular-scopes"] },
    as: "system:admin",
    groups: ["some-group"],
    extra: { scopes: ["scope-a", "scope-b"] },
    want: 403,
  },
  {
    name: "allowed-userextras",
    user: { name: "dev", groups: ["wheel", "extra-setter-scopes"] },
    as: "system:admin",
    extra: { scopes: ["scope-a", "scope-b"] },
    want: { name: "system:admin", groups: ["system:authenticated"], extra: { scopes: ["scope-a", "scope-b"] } },
  },
  {
    name: "percent-escaped-userextras",
    user: { name: "dev", groups: ["wheel", "escaped-scopes"] },
    as: "system:admin",
    extra: { "example.com%2fescaped%e1%9b%84scopes": ["scope-a", "scope-b"] },
    want: { name: "system:admin", groups: ["system:authenticated"], extra: { "example.com/escapedᛄscopes": ["scope-a", "scope-b"] } },
  },
  {
    name: "almost-percent-escaped-userextras",
    user: { name: "dev", groups: ["wheel", "almost-escaped-scopes"] },
    as: "system:admin",
    extra: { "almost%zzpercent%xxencoded": ["scope-a", "scope-b"] },
    want: { name: "system:admin", groups: ["system:authenticated"], extra: { "almost%zzpercent%xxencoded": ["scope-a", "scope-b"] } },
  },
  {
    name: "allowed-users-impersonation",
    user: { name: "dev", groups: ["regular-impersonater"] },
    as: "tester",
    want: { name: "tester", groups: ["system:authenticated"], extra: {} },
  },
  { name: "disallowed-impersonating", user: { name: "dev", groups: ["sa-impersonater"] }, as: "tester", want: 403 },
  {
    name: "allowed-sa-impersonating",
    user: { name: "dev", groups: ["sa-impersonater"], extra: {} },
    as: "system:serviceaccount:foo:default",
    want: { name: "system:serviceaccount:foo:default", groups: ["system:serviceaccounts", "system:serviceaccounts:foo", "system:authenticated"], extra: {} },
  },
  {
    name: "anonymous-username-prevents-adding-authenticated-group",
    user: { name: "system:admin" },
    as: "system:anonymous",
    want: { name: "system:anonymous", groups: ["system:unauthenticated"], extra: {} },
  },
  {
    name: "unauthenticated-group-prevents-adding-authenticated-group",
    user: { name: "system:admin" },
    as: "unknown",
    groups: ["system:unauthenticated"],
    want: { name: "unknown", groups: ["system:unauthenticated"], extra: {} },
  },
  {
    name: "unauthenticated-group-prevents-double-adding-authenticated-group",
    user: { name: "system:admin" },
    as: "unknown",
    groups: ["system:authenticated"],
    want: { name: "unknown", groups: ["system:authenticated"], extra: {} },
  },
  {
    name: "specified-authenticated-group-prevents-double-adding-authenticated-group",
    user: { name: "dev", groups: ["wheel", "group-impersonater"] },
    as: "system:admin",
    groups: ["some-group", "system:authenticated"],
    want: { name: "system:admin", groups: ["some-group", "system:authenticated"], extra: {} },
  },
  {
    name: "anonymous-user-prevents-double-adding-unauthenticated-group",
    user: { name: "system:admin" },
    as: "system:anonymous",
    groups: ["system:unauthenticated"],
    want: { name: "system:anonymous", groups: ["system:unauthenticated"], extra: {} },
  },
  {
    name: "allowed-user-impersonation-with-uid",
    user: { name: "dev", groups: ["regular-impersonater", "uid-impersonater"] },
    as: "tester",
    uid: "some-uid",
    want: { name: "tester", groups: ["system:authenticated"], extra: {}, uid: "some-uid" },
  },
  { name: "disallowed-user-impersonation-with-uid", user: { name: "dev", groups: ["regular-impersonater"] }, as: "tester", uid: "some-uid", want: 403 },
];

describe("impersonate (upstream's TestImpersonationFilter)", () => {
  it.each(cases)("$name", async (c) => {
    const run = impersonate(c.user, headersOf(c), authorize);
    if (c.want === "throws") return expect(run).rejects.toThrow("works on my machine");
    if (typeof c.want === "number") {
      const e = await run.then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(ApiError);
      expect((e as ApiError).code).toBe(c.want);
      return;
    }
    const got = await run;
    expect(got).toEqual(c.want);
    if (!c.as) expect(got).toBe(c.user);
  });
});

describe("impersonation details", () => {
  it("words the 403 as kube-apiserver's, with the authorizer's reason, on the first item denied", async () => {
    const h = new Headers({ "Impersonate-User": "bob", "Impersonate-Group": "g" });
    await expect(impersonate({ name: "deny-me" }, h, authorize)).rejects.toMatchObject({
      code: 403,
      reason: "Forbidden",
      message: 'users "bob" is forbidden: User "deny-me" cannot impersonate resource "users" in API group "" at the cluster scope: denied',
      details: { kind: "users", name: "bob" },
    });
    const sa = new Headers({ "Impersonate-User": "system:serviceaccount:ns:sa" });
    await expect(impersonate({ name: "x" }, sa, authorize)).rejects.toMatchObject({
      message:
        'serviceaccounts "sa" is forbidden: User "x" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns": deny by default',
    });
  });

  it("asks in the order user, groups, extras, uid, with upstream's attributes", () => {
    const h = new Headers({
      "Impersonate-User": "system:serviceaccount:ns:sa",
      "Impersonate-Group": "a, b",
      "IMPERSONATE-EXTRA-Foo": "1",
      "Impersonate-Uid": "u",
    });
    expect(impersonationRequests(h).map((i) => i.attributes)).toEqual([
      { verb: "impersonate", apiGroup: "", apiVersion: "v1", resource: "serviceaccounts", namespace: "ns", name: "sa" },
      { verb: "impersonate", apiGroup: "", apiVersion: "v1", resource: "groups", name: "a" },
      { verb: "impersonate", apiGroup: "", apiVersion: "v1", resource: "groups", name: "b" },
      { verb: "impersonate", apiGroup: "authentication.k8s.io", apiVersion: "v1", resource: "userextras", subresource: "foo", name: "1" },
      { verb: "impersonate", apiGroup: "authentication.k8s.io", apiVersion: "v1", resource: "uids", name: "u" },
    ]);
  });

  it("SplitUsername: only a valid namespace and name make a ServiceAccount", () => {
    expect(splitServiceAccountUsername("system:serviceaccount:ns:sa")).toEqual({ namespace: "ns", name: "sa" });
    for (const u of ["system:serviceaccount:ns", "system:serviceaccount:ns:sa:x", "system:serviceaccount:NS:sa", "system:serviceaccount::sa", "alice"])
      expect(splitServiceAccountUsername(u)).toBeNull();
  });

  it("recognises the headers case-insensitively", () => {
    for (const n of ["Impersonate-User", "impersonate-group", "IMPERSONATE-UID", "Impersonate-Extra-scopes"]) expect(isImpersonationHeader(n)).toBe(true);
    for (const n of ["Impersonate", "Authorization", "Impersonate-Users"]) expect(isImpersonationHeader(n)).toBe(false);
  });
});
