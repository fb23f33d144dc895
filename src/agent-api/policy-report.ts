/**
 * A replicated Policy's compliance as its cluster's agent reports it (`PUT
 * /agent/v1/clusters/{name}/policies/{policy}/status`, src/agent-api/routes.ts, or the channel's
 * `compliance` message, durable-objects/cluster/connection.ts): one write path for both.
 *
 * The status written is OCM's governance-policy-framework-addon's (its status sync,
 * controllers/statussync): `status.details[]`, one per template of the Policy's
 * `policy-templates` in their order, each `{templateMeta: {name}, compliant, history}`, where
 * `history` lists the template's compliance events newest first (`eventName`
 * `<policy>.<hex nanoseconds>` as OCM's controller names its compliance Event, `lastTimestamp`
 * RFC 3339 in seconds, `message`), at most {@link POLICY_HISTORY_LIMIT}; and `status.compliant`:
 * NonCompliant when a template is, else Pending when one is, else Compliant when every template
 * is. The agent sends a template's state whenever a message changed; a message equal to the
 * newest one of its history (a report sent again, an agent restarted) adds no event.
 */
import { ApiError, conflict, notFound, tooManyRequests } from "../k8s/errors.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { PolicyKind, isReplicatedPolicy } from "../kinds/policy.ts";
import { admittedStoreOf } from "../admission/store.ts";
import type { WaitUntil } from "../store/outbox.ts";
import type { Env } from "../env.ts";
import type { PolicyComplianceReportRequest } from "./protocol.ts";

/** Most compliance events kept per template (OCM's status sync keeps 10). */
export const POLICY_HISTORY_LIMIT = 10;

/** One compliance event of a template's history (OCM's `ComplianceHistory`). */
export interface ComplianceHistory {
  eventName?: string;
  lastTimestamp?: string;
  message?: string;
}

/** One template's details (OCM's `DetailsPerTemplate`). */
export interface DetailsPerTemplate {
  templateMeta?: Record<string, unknown>;
  compliant?: "Compliant" | "NonCompliant" | "Pending";
  history?: ComplianceHistory[];
}

/** The template names of a Policy's `policy-templates`, in order (`template-<i>` for an unnamed one, as OCM). */
export function templateNames(policy: KubeObject): string[] {
  const templates =
    (policy.spec as { "policy-templates"?: { objectDefinition?: { metadata?: { name?: unknown } } }[] } | undefined)?.["policy-templates"] ?? [];
  return templates.map((t, i) => {
    const name = t.objectDefinition?.metadata?.name;
    return typeof name === "string" && name ? name : `template-${i}`;
  });
}

/** RFC 3339 in whole seconds (Kubernetes serializes `metav1.Time` so), from an RFC 3339 time. */
function seconds(timestamp: string): string {
  return new Date(Math.floor(Date.parse(timestamp) / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/**
 * The status of replicated Policy `policy` after `report` (pure): see the module comment. Fields
 * of the status other than `compliant` and `details` are kept.
 */
export function complianceStatus(policy: KubeObject, report: PolicyComplianceReportRequest): Record<string, unknown> {
  const status = { ...((policy.status as Record<string, unknown> | undefined) ?? {}) };
  const held = new Map(((status.details as DetailsPerTemplate[] | undefined) ?? []).map((d) => [String(d.templateMeta?.name ?? ""), d]));
  const reported = new Map(report.templates.map((t) => [t.name, t]));
  const details: DetailsPerTemplate[] = templateNames(policy).map((name) => {
    const before = held.get(name);
    const r = reported.get(name);
    if (!r) return before ?? { templateMeta: { name }, history: [] };
    const history = [...(before?.history ?? [])];
    if (history[0]?.message !== r.message) {
      const nanos = BigInt(Date.parse(r.timestamp)) * 1_000_000n;
      history.unshift({ eventName: `${policy.metadata.name}.${nanos.toString(16)}`, lastTimestamp: seconds(r.timestamp), message: r.message });
    }
    return { templateMeta: { name }, compliant: r.compliant, history: history.slice(0, POLICY_HISTORY_LIMIT) };
  });
  const states = details.map((d) => d.compliant);
  const compliant = states.includes("NonCompliant")
    ? "NonCompliant"
    : states.includes("Pending")
      ? "Pending"
      : states.length > 0 && states.every((s) => s === "Compliant")
        ? "Compliant"
        : undefined;
  const out: Record<string, unknown> = { ...status, details };
  if (compliant) out.compliant = compliant;
  else delete out.compliant;
  return out;
}

/**
 * Writes `report` on the replicated Policy `policyName` of `cluster`'s namespace (its status
 * subresource, through the kind's store, so that the hub's aggregation into the root policy runs
 * on it), pinned by the Policy's uid. Read, computed and written with the read's resourceVersion
 * as precondition; a write that loses to another writer is made again on a fresh read (5 times).
 * @returns the Policy as stored (unchanged when the report changed nothing)
 * @throws ApiError 404 (no such replicated Policy), 409 (its uid differs: replaced), 400/422
 *   (an invalid status), 429 (lost 5 times in a row)
 */
export async function reportPolicyCompliance(
  env: Env,
  cluster: string,
  policyName: string,
  report: PolicyComplianceReportRequest,
  waitUntil?: WaitUntil,
): Promise<KubeObject> {
  const ref = { group: PolicyKind.group, plural: PolicyKind.plural, kind: PolicyKind.kind, name: policyName };
  const store = admittedStoreOf(env, PolicyKind);
  for (let attempt = 0; ; attempt++) {
    const current = await store.get(cluster, policyName);
    if (!current || !isReplicatedPolicy(current)) throw notFound(ref);
    if (current.metadata.uid !== report.uid)
      throw conflict(ref, `the policy's uid is ${current.metadata.uid}, not ${report.uid}: it was deleted and created again`);
    const status = complianceStatus(current, report);
    if (JSON.stringify(status) === JSON.stringify(current.status ?? {})) return current;
    try {
      const out = await store.write(
        cluster,
        policyName,
        { verb: "update", subresource: "status", body: { ...current, status } },
        { known: current, ...(waitUntil ? { waitUntil, mode: "returns" as const } : {}) },
      );
      return out.object ?? current;
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 409 && e.reason === "Conflict") || attempt >= 4) {
        if (e instanceof ApiError && e.code === 409 && attempt >= 4)
          throw tooManyRequests("the policy kept changing while its status was being written; report again", 1);
        throw e;
      }
    }
  }
}
