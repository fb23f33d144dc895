/**
 * Who may read the audit log once RBAC is wired: AuditEvents are `list` and `watch` of resource
 * `auditevents` in API group `flotilla.dev` (src/audit/routes.ts), which the bootstrap policy
 * (src/auth/rbac.ts) gives `cluster-admin` (and `system:masters`) and not the aggregated `admin`,
 * `edit` or `view`, whether bound in a namespace or cluster-wide.
 */
import { describe, expect, it } from "vitest";
import { BOOTSTRAP_CLUSTER_ROLE_BINDINGS, BOOTSTRAP_CLUSTER_ROLES } from "../../src/auth/rbac-bootstrap.ts";
import { RBAC_GROUP, SYSTEM_MASTERS, type ClusterRoleBinding, type RoleBinding } from "../../src/auth/rbac-types.ts";
import { RbacAuthorizer } from "../../src/auth/rbac.ts";

const meta = (name: string, namespace?: string) => ({ name, ...(namespace ? { namespace } : {}) });
const roleRef = (name: string) => ({ apiGroup: RBAC_GROUP, kind: "ClusterRole", name });
const user = (name: string) => ({ kind: "User", apiGroup: RBAC_GROUP, name });
const crb = (name: string, role: string, who: string): ClusterRoleBinding => ({
  apiVersion: `${RBAC_GROUP}/v1`,
  kind: "ClusterRoleBinding",
  metadata: meta(name),
  roleRef: roleRef(role),
  subjects: [user(who)],
});
const rb = (ns: string, role: string, who: string): RoleBinding => ({
  apiVersion: `${RBAC_GROUP}/v1`,
  kind: "RoleBinding",
  metadata: meta(`${who}-${role}`, ns),
  roleRef: roleRef(role),
  subjects: [user(who)],
});

describe("RBAC on AuditEvents (resource auditevents, group flotilla.dev)", () => {
  const rbac = new RbacAuthorizer({
    clusterRoles: BOOTSTRAP_CLUSTER_ROLES,
    clusterRoleBindings: [
      ...BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
      crb("root", "cluster-admin", "root"),
      crb("auditor-view", "view", "viewer"),
      crb("everyone-edit", "edit", "editor"),
    ],
    roleBindings: [rb("team-a", "admin", "alice")],
  });
  const ask = (name: string, verb: string, namespace = "", groups: string[] = []) =>
    rbac.authorize(
      { name, groups: [...groups, "system:authenticated"] },
      { verb, apiGroup: "flotilla.dev", resource: "auditevents", ...(namespace ? { namespace } : {}) },
    ).allowed;

  it("cluster-admin and system:masters list and watch them", () => {
    for (const verb of ["list", "watch"]) {
      expect(ask("root", verb)).toBe(true);
      expect(ask("flotilla:admin", verb, "", [SYSTEM_MASTERS])).toBe(true);
    }
  });

  it("view, edit and a namespace's admin do not, nor an authenticated user", () => {
    for (const verb of ["list", "watch"]) {
      expect(ask("viewer", verb)).toBe(false);
      expect(ask("editor", verb)).toBe(false);
      expect(ask("alice", verb, "team-a")).toBe(false);
      expect(ask("alice", verb)).toBe(false);
      expect(ask("nobody", verb)).toBe(false);
    }
  });
});
