/**
 * The policy loop of the agent (docs/agent-protocol.md "Policies"): loaded with a dynamic
 * `import()` by the work loop only once a delivery carries a replicated Policy, so an agent
 * without policies neither loads nor runs any of this (its idle memory budget).
 *
 * It evaluates the Policies (controller.ts) at once after a new delivery, and then each template
 * on its own `evaluationInterval`: on `watch` (OCM's default) when a Kubernetes watch of the
 * member cluster reports a change of what it reads (the agent's `LiveTracker`, one per loop;
 * a burst coalesced for 100 ms), falling back to the default interval (the agent's
 * `--status-sync-interval`) while such a watch is broken; on a duration that long after the last
 * evaluation; on `never` not again. It sends a Policy's compliance through the transport (the channel's `compliance`
 * message, or `PUT .../policies/{policy}/status`) only when it changed. A failed report is sent
 * again after a backoff; a 404 or 409 (the Policy is gone, or was replaced) drops it.
 */
import { Backoff, Sleeper, type Random } from "../backoff.ts";
import type { KubeConfig } from "../kube.ts";
import { ConditionLog, type Logger } from "../log.ts";
import type { AgentTransport } from "../transport/transport.ts";
import { sendInOrder } from "../report-sequence.ts";
import { DynamicClient } from "../work/dynamic.ts";
import { RestMapper } from "../work/discovery.ts";
import { LiveTracker } from "../work/tracker.ts";
import { PolicyController, type DeliveredPolicy } from "./controller.ts";

/** Options of {@link PolicyLoop}. */
export interface PolicyLoopOptions {
  clusterName: string;
  kubeConfig: KubeConfig;
  transport: Pick<AgentTransport, "reportCompliance">;
  logger: Logger;
  /**
   * Evaluation interval of a template whose interval is invalid, and of a `watch` (or unset) one
   * while a watch it needs is broken (or with `watch: false`), in milliseconds.
   */
  defaultIntervalMs: number;
  /** Watch the member cluster for `watch` templates; default true (false: they are evaluated every default interval). */
  watch?: boolean;
  /** Backoff of a failed report: first and largest ceiling in milliseconds, random source. */
  timing: { backoffBaseMs: number; backoffCapMs: number; random: Random };
  /** Timeout of one member-cluster request, in milliseconds; default 15 000. */
  requestTimeoutMs?: number;
  signal: AbortSignal;
}

/** See the module comment. */
export class PolicyLoop {
  private readonly controller: PolicyController;
  private readonly tracker: LiveTracker | undefined;
  private readonly sleeper: Sleeper;
  private readonly cond: ConditionLog;
  private changed = false;
  /** Settles when the loop ends (the signal aborted). */
  readonly done: Promise<void>;

  /** @param opts see {@link PolicyLoopOptions}; the loop starts at once. */
  constructor(private readonly opts: PolicyLoopOptions) {
    const client = new DynamicClient(opts.kubeConfig, opts.requestTimeoutMs ?? 15_000);
    if (opts.watch !== false) {
      const tracker = new LiveTracker(opts.kubeConfig, opts.logger, opts.signal);
      tracker.onChange((ref) => {
        if (this.controller.changed(ref)) this.sleeper.wake();
      });
      tracker.onResync((gvr, namespace) => {
        if (this.controller.resynced(gvr, namespace)) this.sleeper.wake();
      });
      this.tracker = tracker;
    }
    this.controller = new PolicyController({ client, mapper: new RestMapper(client) }, opts.defaultIntervalMs, Date.now, this.tracker);
    this.sleeper = new Sleeper(opts.signal);
    this.cond = new ConditionLog(opts.logger, "policy compliance reports succeed again");
    this.done = this.run();
  }

  /** The number of member-cluster watches open for `watch` templates (for tests and logs). */
  get watches(): number {
    return this.tracker?.watches ?? 0;
  }

  /** A new delivery: the cluster's whole list of replicated Policies, evaluated at once. */
  setPolicies(policies: readonly DeliveredPolicy[]): void {
    this.controller.setPolicies(policies);
    this.changed = true;
    this.sleeper.wake();
  }

  private async run(): Promise<void> {
    const { signal, timing } = this.opts;
    const backoff = new Backoff(timing.backoffBaseMs, timing.backoffCapMs, timing.random);
    const dropped = new Set<string>();
    while (!signal.aborted) {
      this.changed = false;
      let reports: Awaited<ReturnType<PolicyController["evaluate"]>>;
      try {
        reports = await this.controller.evaluate();
      } catch (e) {
        // Not expected (evaluation turns failures into messages): logged, tried again after a backoff.
        this.cond.set("evaluation", `policy evaluation failed: ${e instanceof Error ? e.message : String(e)}; retrying with backoff`, {
          cluster: this.opts.clusterName,
        });
        await this.sleeper.sleep(backoff.next());
        continue;
      }
      let failed = false;
      for (const r of reports) {
        if (signal.aborted) return;
        const key = `${r.policy}/${r.report.uid}`;
        if (dropped.has(key)) continue;
        const res = await sendInOrder((sequence) =>
          this.opts.transport.reportCompliance(r.policy, { ...r.report, ...(sequence !== undefined ? { sequence } : {}) }),
        ).catch((e: unknown) => ({
          ok: false as const,
          error: { kind: "unreachable" as const, message: e instanceof Error ? e.message : String(e), status: undefined },
        }));
        if (res.ok) {
          this.controller.reported(r.policy, r.report);
          this.cond.clear({ cluster: this.opts.clusterName });
        } else if (res.error.status === 404 || res.error.status === 409) {
          dropped.add(key);
          this.controller.reported(r.policy, r.report);
          this.opts.logger.info(
            `policy ${r.policy} is ${res.error.status === 404 ? "gone" : "replaced"} on the hub (${res.error.status}); no more compliance reports for uid ${r.report.uid}`,
            { cluster: this.opts.clusterName, policy: r.policy },
          );
        } else {
          failed = true;
          this.cond.set(
            res.error.kind,
            `policy compliance report failed (${res.error.status ? `HTTP ${res.error.status}: ` : ""}${res.error.message}); retrying with backoff`,
            { cluster: this.opts.clusterName },
          );
          break;
        }
      }
      if (this.changed) continue;
      if (failed) {
        // A watched change does not cut the backoff short (only a new delivery does).
        const until = Date.now() + backoff.next();
        while (!signal.aborted && !this.changed && Date.now() < until) await this.sleeper.sleep(until - Date.now());
        continue;
      }
      backoff.reset();
      const wait = this.controller.nextDueMs() - Date.now();
      if (wait > 0) await this.sleeper.sleep(Math.min(wait, 2 ** 31 - 1));
    }
  }
}
