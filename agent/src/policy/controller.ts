/**
 * The agent's policy controller (OCM's config-policy-controller together with the
 * governance-policy-framework-addon's template and status sync, in one): the replicated Policies
 * of the cluster's namespace on the hub (`<rootns>.<rootname>`, delivered with the works) are
 * evaluated against the member cluster, each ConfigurationPolicy of their `policy-templates` on
 * its own `evaluationInterval`, and a Policy's compliance is reported to the hub only when a
 * template's compliance message changed (a compliance event, as OCM's controller emits one when
 * the message of its status changes). An idle cluster whose policies stay compliant sends nothing.
 *
 * - The Policy's `remediationAction`, when set, overrides each template's (OCM's propagator
 *   does); a template's default is `inform`.
 * - `spec.disabled: true`: nothing of the Policy is evaluated or reported.
 * - `evaluationInterval.compliant` / `.noncompliant`: a Go duration (`10s`, `1h30m`), `never`
 *   (not evaluated again until the Policy changes; the message says so, as OCM's does), or
 *   `watch`/unset: the agent's default interval (its `--status-sync-interval`).
 * - A template of a kind other than ConfigurationPolicy is reported NonCompliant: this agent
 *   evaluates ConfigurationPolicies only.
 */
import { parseGoDuration } from "../../../src/k8s/duration.ts";
import type { PolicyComplianceReport, PolicyTemplateCompliance } from "../../../src/agent/protocol-answers.ts";
import { isObj, type Obj } from "../work/types.ts";
import { evaluateObjectTemplate, selectNamespaces, type EvaluationContext, type NamespaceSelector, type ObjectTemplate, type Remediation } from "./evaluate.ts";

/** OCM's `PolicyTemplate` kind this agent evaluates. */
export const CONFIGURATION_POLICY_KIND = "ConfigurationPolicy";

/** A replicated Policy as delivered (metadata name, uid, generation; the spec as stored). */
export interface DeliveredPolicy {
  metadata: { name: string; uid: string; generation?: number };
  spec?: Obj;
}

/** The state of one template of one Policy. */
interface TemplateState {
  /** JSON of the template and the effective remediation: a change re-evaluates at once. */
  key: string;
  compliant: "Compliant" | "NonCompliant";
  message: string;
  /** When the message last changed (epoch ms). */
  since: number;
  /** When it is evaluated next (epoch ms; Infinity: never). */
  dueMs: number;
}

/** Per Policy: its uid and each template's state by template name. */
interface PolicyState {
  uid: string;
  templates: Map<string, TemplateState>;
  /** Template names in spec order. */
  order: string[];
  /** A template's message changed since the last report the hub took. */
  dirty: boolean;
}

/** A report to send: the Policy's name and its compliance. */
export interface PolicyReport {
  policy: string;
  report: PolicyComplianceReport;
}

/** The evaluation interval in ms for `value` (undefined, `watch`: `defaultMs`; `never`: Infinity; else a Go duration, an invalid one `defaultMs`). */
export function intervalMs(value: unknown, defaultMs: number): number {
  if (typeof value !== "string" || value === "" || value.toLowerCase() === "watch") return defaultMs;
  if (value.toLowerCase() === "never") return Infinity;
  try {
    return parseGoDuration(value);
  } catch {
    return defaultMs;
  }
}

/** The remediation of a template: the Policy's when set, else the template's, else inform. */
function remediationOf(policySpec: Obj, templateSpec: Obj): Remediation {
  const p = typeof policySpec.remediationAction === "string" ? policySpec.remediationAction.toLowerCase() : "";
  if (p === "inform" || p === "enforce") return p;
  return typeof templateSpec.remediationAction === "string" && templateSpec.remediationAction.toLowerCase() === "enforce" ? "enforce" : "inform";
}

/** See the module comment. */
export class PolicyController {
  private readonly policies = new Map<string, PolicyState>();
  private delivered: DeliveredPolicy[] = [];

  /**
   * @param ctx the member cluster's client and REST mapper
   * @param defaultIntervalMs the evaluation interval of a template that sets none, in ms
   * @param now the clock, epoch ms
   */
  constructor(
    private readonly ctx: EvaluationContext,
    private readonly defaultIntervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes the cluster's whole list of replicated Policies (a new delivery). */
  setPolicies(policies: readonly DeliveredPolicy[]): void {
    this.delivered = [...policies];
    const names = new Set(policies.map((p) => p.metadata.name));
    for (const name of [...this.policies.keys()]) if (!names.has(name)) this.policies.delete(name);
  }

  /** How many Policies are held (disabled ones included). */
  get size(): number {
    return this.delivered.length;
  }

  /** Epoch ms of the next evaluation due (Infinity when none is). */
  nextDueMs(): number {
    let next = Infinity;
    for (const p of this.delivered) {
      if (isObj(p.spec) && p.spec.disabled === true) continue;
      const state = this.policies.get(p.metadata.name);
      if (!state || state.uid !== p.metadata.uid) return this.now();
      for (const t of state.templates.values()) next = Math.min(next, t.dueMs);
      if (templatesOf(p).length !== state.templates.size) return this.now();
    }
    return next;
  }

  /**
   * Evaluates every template that is due (or changed), enforcing where asked, and returns the
   * reports of the Policies whose compliance changed since the hub last took one (see
   * {@link reported}). Failures to reach the member cluster are part of the messages; never throws.
   */
  async evaluate(): Promise<PolicyReport[]> {
    const now = this.now();
    for (const policy of this.delivered) {
      const spec = isObj(policy.spec) ? policy.spec : {};
      if (spec.disabled === true) {
        this.policies.delete(policy.metadata.name);
        continue;
      }
      let state = this.policies.get(policy.metadata.name);
      if (!state || state.uid !== policy.metadata.uid) {
        state = { uid: policy.metadata.uid, templates: new Map(), order: [], dirty: true };
        this.policies.set(policy.metadata.name, state);
      }
      const templates = templatesOf(policy);
      state.order = templates.map((t) => t.name);
      for (const name of [...state.templates.keys()]) {
        if (!state.order.includes(name)) {
          state.templates.delete(name);
          state.dirty = true;
        }
      }
      for (const t of templates) {
        const remediation = remediationOf(spec, t.spec);
        const key = JSON.stringify([t.definition, remediation]);
        const held = state.templates.get(t.name);
        if (held && held.key === key && held.dueMs > now) continue;
        const result = await this.evaluateTemplate(t.definition, t.spec, remediation);
        const interval = isObj(t.spec.evaluationInterval) ? t.spec.evaluationInterval : {};
        const compliant = result.compliant ? "Compliant" : "NonCompliant";
        const every = intervalMs(result.compliant ? interval.compliant : interval.noncompliant, this.defaultIntervalMs);
        let message = result.message;
        if (every === Infinity) {
          message += `. This policy will not be evaluated again due to spec.evaluationInterval.${result.compliant ? "compliant" : "noncompliant"} being set to "never".`;
        }
        const dueMs = every === Infinity ? Infinity : this.now() + every;
        if (held && held.compliant === compliant && held.message === message) {
          held.key = key;
          held.dueMs = dueMs;
          continue;
        }
        state.templates.set(t.name, { key, compliant, message, since: this.now(), dueMs });
        state.dirty = true;
      }
    }
    const reports: PolicyReport[] = [];
    for (const [name, state] of this.policies) {
      if (!state.dirty) continue;
      const templates: PolicyTemplateCompliance[] = [];
      for (const t of state.order) {
        const s = state.templates.get(t);
        if (s) templates.push({ name: t, compliant: s.compliant, message: s.message, timestamp: new Date(s.since).toISOString() });
      }
      reports.push({ policy: name, report: { uid: state.uid, templates } });
    }
    return reports;
  }

  /** The hub took `report` of `policy` (or refused it for good): not sent again until a change. */
  reported(policy: string, report: PolicyComplianceReport): void {
    const state = this.policies.get(policy);
    if (!state || state.uid !== report.uid) return;
    const same = report.templates.every((t) => {
      const s = state.templates.get(t.name);
      return s && s.message === t.message && new Date(s.since).toISOString() === t.timestamp;
    });
    if (same && report.templates.length === state.templates.size) state.dirty = false;
  }

  /**
   * One ConfigurationPolicy: its object templates in the namespaces its selector selects. The
   * template's compliance event message is OCM's default one (`Compliant; notification - ...` or
   * `NonCompliant; violation - ...`, one part per object template).
   */
  private async evaluateTemplate(definition: Obj, spec: Obj, remediation: Remediation): Promise<{ compliant: boolean; message: string }> {
    if (definition.kind !== CONFIGURATION_POLICY_KIND) {
      return {
        compliant: false,
        message: `NonCompliant; violation - the policy template kind ${String(definition.kind)} is not evaluated by the flotilla agent (only ${CONFIGURATION_POLICY_KIND})`,
      };
    }
    let selected: string[];
    try {
      selected = await selectNamespaces(this.ctx.client, isObj(spec.namespaceSelector) ? (spec.namespaceSelector as NamespaceSelector) : undefined);
    } catch (e) {
      return {
        compliant: false,
        message: `NonCompliant; violation - Error filtering namespaces with provided namespaceSelector: ${e instanceof Error ? e.message : String(e)}`,
      };
    }
    const objectTemplates = Array.isArray(spec["object-templates"]) ? (spec["object-templates"] as unknown[]).filter(isObj) : [];
    const parts: { compliant: boolean; message: string }[] = [];
    for (const ot of objectTemplates) parts.push(await evaluateObjectTemplate(this.ctx, ot as ObjectTemplate, remediation, selected));
    const compliant = parts.every((p) => p.compliant);
    const body = parts.map((p) => `; ${p.compliant ? "notification" : "violation"} - ${p.message}`).join("");
    return { compliant, message: `${compliant ? "Compliant" : "NonCompliant"}${body}` };
  }
}

/** A Policy's templates: name (the embedded object's `metadata.name`, else `template-<i>` as OCM), definition, spec. */
function templatesOf(policy: DeliveredPolicy): { name: string; definition: Obj; spec: Obj }[] {
  const spec = isObj(policy.spec) ? policy.spec : {};
  const list = Array.isArray(spec["policy-templates"]) ? (spec["policy-templates"] as unknown[]) : [];
  return list.map((t, i) => {
    const definition = isObj(t) && isObj(t.objectDefinition) ? t.objectDefinition : {};
    const meta = isObj(definition.metadata) ? definition.metadata : {};
    return { name: typeof meta.name === "string" && meta.name ? meta.name : `template-${i}`, definition, spec: isObj(definition.spec) ? definition.spec : {} };
  });
}
