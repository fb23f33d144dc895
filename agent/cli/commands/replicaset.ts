/**
 * `flotilla replicaset history|undo NAME [-n NS]`: a ManifestWorkReplicaSet's revision history and
 * its undo, as `kubectl rollout history` and `kubectl rollout undo [--to-revision N]` do for a
 * DaemonSet or StatefulSet, after OCM's enhancement "Support Rollback for ManifestWorkReplicaSet":
 * the hub keeps a ControllerRevision per distinct template (labelled with the replica set, data
 * `{spec: {manifestWorkTemplate}}`); an undo writes that revision's template back into the replica
 * set's spec (a PUT with its resourceVersion, tried again on a conflict) and the hub rolls it out
 * by the replica set's rollout strategy, numbering it the newest revision again.
 */
import { Command, InvalidArgumentError } from "commander";
import type { CommandContext } from "../context.ts";
import { CliError, HubApiError } from "../errors.ts";
import type { KubeObject } from "../resources.ts";
import { canonicalJson } from "../../../src/k8s/canonical-json.ts";

/** The label naming a revision's (and a work's) replica set: `<namespace>.<name>` (OCM's). */
const MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset";
/** How many times an undo that met a concurrent change (409 Conflict) is tried again. */
const CONFLICT_RETRIES = 5;

const mwrsPath = (ns: string, name: string) =>
  `/apis/work.open-cluster-management.io/v1alpha1/namespaces/${encodeURIComponent(ns)}/manifestworkreplicasets/${encodeURIComponent(name)}`;
const revisionsPath = (ns: string) => `/apis/apps/v1/namespaces/${encodeURIComponent(ns)}/controllerrevisions`;

interface Revision extends KubeObject {
  revision?: number;
  data?: { spec?: { manifestWorkTemplate?: unknown } };
}

/** The replica set's revisions, oldest first. */
async function history(ctx: CommandContext, ns: string, name: string): Promise<Revision[]> {
  const list = await ctx.client().get<{ items: Revision[] }>(revisionsPath(ns), { query: { labelSelector: `${MWRS_LABEL}=${ns}.${name}` } });
  return list.items.sort((a, b) => (a.revision ?? 0) - (b.revision ?? 0));
}

async function getReplicaSet(ctx: CommandContext, ns: string, name: string): Promise<KubeObject> {
  return ctx.client().get<KubeObject>(mwrsPath(ns, name), { hints: { notFound: `kubectl get manifestworkreplicasets -n ${ns} lists the replica sets` } });
}

async function showHistory(ctx: CommandContext, name: string, opts: { namespace: string }): Promise<void> {
  const mwrs = await getReplicaSet(ctx, opts.namespace, name);
  const status = (mwrs.status ?? {}) as { currentRevision?: string; updateRevision?: string };
  const revs = await history(ctx, opts.namespace, name);
  ctx.out(`manifestworkreplicaset.work.open-cluster-management.io/${name}\n`);
  const rows = [["REVISION", "NAME", "NOTE"]];
  for (const r of revs) {
    const hash = r.metadata.labels?.["work.open-cluster-management.io/controller-hash"] ?? "";
    const notes = [hash === status.currentRevision ? "current" : "", hash === status.updateRevision ? "update" : ""].filter(Boolean).join(", ");
    rows.push([String(r.revision ?? 0), r.metadata.name, notes]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const row of rows)
    ctx.out(
      `${row
        .map((c, i) => c.padEnd(widths[i]!))
        .join("  ")
        .trimEnd()}\n`,
    );
}

async function undo(ctx: CommandContext, name: string, opts: { namespace: string; toRevision: number }): Promise<void> {
  const ns = opts.namespace;
  for (let attempt = 0; ; attempt++) {
    const mwrs = await getReplicaSet(ctx, ns, name);
    const revs = await history(ctx, ns, name);
    if (revs.length === 0) throw new CliError(`no rollout history found for manifestworkreplicaset ${ns}/${name}`);
    const spec = (mwrs.spec ?? {}) as { manifestWorkTemplate?: unknown };
    const updateHash = (mwrs.status as { updateRevision?: string } | undefined)?.updateRevision;
    const current = revs.find((r) => r.metadata.labels?.["work.open-cluster-management.io/controller-hash"] === updateHash) ?? revs[revs.length - 1]!;
    let target: Revision | undefined;
    if (opts.toRevision === 0) {
      target = revs.filter((r) => (r.revision ?? 0) < (current.revision ?? 0)).pop();
      if (!target)
        throw new CliError(`no last revision to roll back to`, "`flotilla replicaset history` lists the revisions the hub keeps (spec.revisionHistoryLimit)");
    } else {
      target = revs.find((r) => r.revision === opts.toRevision);
      if (!target)
        throw new CliError(
          `unable to find specified revision ${opts.toRevision} in history`,
          `the revisions kept are: ${revs.map((r) => r.revision ?? 0).join(", ")} (\`flotilla replicaset history ${name} -n ${ns}\`)`,
        );
    }
    const template = target.data?.spec?.manifestWorkTemplate ?? {};
    if (canonicalJson(template) === canonicalJson(spec.manifestWorkTemplate ?? {})) {
      ctx.out(
        `manifestworkreplicaset.work.open-cluster-management.io/${name} skipped rollback (current template already matches revision ${target.revision ?? 0})\n`,
      );
      return;
    }
    try {
      await ctx.client().replace<KubeObject>(mwrsPath(ns, name), { ...mwrs, spec: { ...spec, manifestWorkTemplate: template } });
    } catch (err) {
      if (err instanceof HubApiError && err.reason === "Conflict" && attempt < CONFLICT_RETRIES) continue;
      throw err;
    }
    ctx.out(`manifestworkreplicaset.work.open-cluster-management.io/${name} rolled back (to revision ${target.revision ?? 0})\n`);
    return;
  }
}

function parseRevision(value: string): number {
  if (!/^(0|[1-9][0-9]*)$/.test(value)) throw new InvalidArgumentError("must be a revision number (0: the previous one)");
  return Number(value);
}

/**
 * Adds `replicaset history` and `replicaset undo` to `program`.
 *
 * @returns the `replicaset` command, for its other verbs (`render`, agent/cli/commands/placement.ts).
 *
 * @param context builds the action's context from the command.
 */
export function registerReplicaSet(program: Command, context: (cmd: Command) => CommandContext): Command {
  const rs = program
    .command("replicaset")
    .alias("mwrs")
    .description("A ManifestWorkReplicaSet's revision history and undo (as kubectl rollout history / undo), and what it renders for a cluster");
  rs.command("history")
    .description("List the revisions the hub keeps of a replica set's template (its ControllerRevisions)")
    .argument("<name>", "the replica set's name")
    .option("-n, --namespace <ns>", "the replica set's namespace", "default")
    .action((name: string, opts: { namespace: string }, cmd: Command) => showHistory(context(cmd), name, opts));
  rs.command("undo")
    .description("Roll a replica set back to an older revision of its template (the previous one unless --to-revision)")
    .argument("<name>", "the replica set's name")
    .option("-n, --namespace <ns>", "the replica set's namespace", "default")
    .option("--to-revision <n>", "the revision to roll back to (0: the previous one)", parseRevision, 0)
    .addHelpText("after", "\nExamples:\n  flotilla replicaset undo web -n apps\n  flotilla replicaset undo web -n apps --to-revision 3")
    .action((name: string, opts: { namespace: string; toRevision: number }, cmd: Command) => undo(context(cmd), name, opts));
  return rs;
}
