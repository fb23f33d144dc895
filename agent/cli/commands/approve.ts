/**
 * `flotilla approve RUN [--stage NAME] [-n NS]`: approves the pending approval request of a staged
 * update run (KubeFleet's ClusterStagedUpdateRun, or with `-n` a StagedUpdateRun), as KubeFleet's
 * docs do with kubectl: the request's `Approved` condition set True at its generation on its
 * status subresource (a merge patch). The run's controller then accepts it and moves on. The audit
 * log records the write with the caller's user; the condition's message names them too.
 */
import type { Command } from "commander";
import type { CommandContext } from "../context.ts";
import { CliError } from "../errors.ts";
import { Paths, type KubeObject } from "../resources.ts";
import { MERGE_PATCH } from "../client.ts";
import { approvalPatch, approvalSpec, pendingApprovals, TARGET_UPDATE_RUN_LABEL } from "../../../src/kinds/fleet-updaterun-shapes.ts";

/** The caller's user name, as the hub authenticates it (a SelfSubjectReview); "" when it cannot say. */
async function whoAmI(ctx: CommandContext): Promise<string> {
  try {
    const r = await ctx.client().create<{ status?: { userInfo?: { username?: string } } }>("/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
    });
    return r.status?.userInfo?.username ?? "";
  } catch {
    return "";
  }
}

async function approve(ctx: CommandContext, run: string, opts: { stage?: string; namespace?: string }): Promise<void> {
  const client = ctx.client();
  const scope = opts.namespace ? `StagedUpdateRun ${opts.namespace}/${run}` : `ClusterStagedUpdateRun ${run}`;
  await client.get<KubeObject>(Paths.updateRuns(opts.namespace, run), {
    hints: {
      notFound: opts.namespace ? `kubectl get stagedupdateruns -n ${opts.namespace} lists the runs` : "kubectl get clusterstagedupdateruns lists the runs",
    },
  });
  const list = await client.get<{ items: KubeObject[] }>(Paths.approvalRequests(opts.namespace), {
    query: { labelSelector: `${TARGET_UPDATE_RUN_LABEL}=${run}` },
  });
  const pending = pendingApprovals(list.items, run);
  const candidates = opts.stage ? pending.filter((a) => approvalSpec(a).targetStage === opts.stage) : pending;
  if (candidates.length === 0) {
    const stages = pending.map((a) => approvalSpec(a).targetStage).join(", ");
    throw new CliError(
      `${scope} has no pending approval request${opts.stage ? ` for stage ${opts.stage}` : ""}`,
      pending.length > 0
        ? `its pending approval requests are for stage(s): ${stages}`
        : "a run makes an approval request when it reaches a stage's Approval task; `kubectl get clusterstagedupdateruns -o yaml` shows where it is",
    );
  }
  if (candidates.length > 1) {
    throw new CliError(
      `${scope} has ${candidates.length} pending approval requests`,
      `name the stage with --stage (${candidates.map((a) => approvalSpec(a).targetStage).join(", ")})`,
    );
  }
  const request = candidates[0]!;
  const user = await whoAmI(ctx);
  await client.request("PATCH", `${Paths.approvalRequests(opts.namespace, request.metadata.name)}/status`, {
    body: approvalPatch(request, { user, via: "flotilla approve", reason: "ApprovedWithFlotilla" }, ctx.now()),
    contentType: MERGE_PATCH,
  });
  const stage = approvalSpec(request).targetStage;
  ctx.out(`approvalrequest ${request.metadata.name} approved (run ${run}, stage ${stage})\n`);
}

/**
 * Adds `approve` to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerApprove(program: Command, context: (cmd: Command) => CommandContext): void {
  program
    .command("approve")
    .description("Approve the pending approval request of a staged update run (KubeFleet's ClusterStagedUpdateRun; with -n a StagedUpdateRun)")
    .argument("<run>", "the run's name")
    .option("--stage <name>", "the stage whose approval request to approve (when several are pending)")
    .option("-n, --namespace <ns>", "the namespace of a StagedUpdateRun")
    .addHelpText("after", "\nExamples:\n  flotilla approve example-run\n  flotilla approve example-run --stage canary\n  flotilla approve web-run -n team")
    .action((run: string, opts: { stage?: string; namespace?: string }, cmd: Command) => approve(context(cmd), run, opts));
}
