/**
 * `flotilla token create|list|delete`: BootstrapTokens (`flotilla.dev/v1alpha1`). `create`
 * prints the token with the commands that install and join an agent (clusteradm's `init` prints
 * its `join` command the same way); `delete` revokes tokens.
 */
import { Command, InvalidArgumentError, Option } from "commander";
import pkg from "../../../package.json" with { type: "json" };
import { defaultAgentImage } from "../../src/install.ts";
import type { CommandContext } from "../context.ts";
import { OUTPUT_FORMATS, renderObject, renderTable, type OutputFormat } from "../output.ts";
import { Paths, type KubeList, type KubeObject } from "../resources.ts";
import { ageOf, formatSeconds, parseDuration } from "../time.ts";

/** The options of `token create`. */
interface TokenCreateOptions {
  ttl?: number;
  autoApprove?: boolean;
  description?: string;
  /** The token itself (`<id>.<secret>`) instead of a generated one (`spec.token`, write-only). */
  token?: string;
  clusterName?: string;
  image?: string;
  output?: OutputFormat;
}

function ttlArg(value: string): number {
  try {
    return parseDuration(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function isLoopback(hubUrl: string): boolean {
  const host = new URL(hubUrl).hostname;
  return host === "localhost" || host === "[::1]" || host.startsWith("127.");
}

/**
 * The human output of a created token: the token, its expiry and the join commands.
 *
 * @param obj the created BootstrapToken (its spec and `status.expirationTimestamp`).
 * @param token the secret `<id>.<secret>`.
 * @param hubUrl the hub URL the agent should use.
 * @param clusterName the cluster name to put in the commands (a placeholder when undefined).
 * @param caFile the CA file the CLI trusts the hub with (a local HTTPS hub's), if any: the agent
 *   run directly must trust it too, through Node's `NODE_EXTRA_CA_CERTS`.
 * @param image the agent's container image in the install command; default
 *   `flotilla-agent:<version>`, the name docs/install.md builds it under.
 */
export function joinInstructions(
  obj: KubeObject,
  token: string,
  hubUrl: string,
  clusterName: string | undefined,
  caFile?: string,
  image: string = defaultAgentImage(pkg.version),
): string {
  const spec = (obj.spec ?? {}) as { ttlSeconds?: number; autoApprove?: boolean };
  const expires = (obj.status as { expirationTimestamp?: string } | undefined)?.expirationTimestamp;
  const name = clusterName ?? "<CLUSTER_NAME>";
  const flags = `--hub-url ${hubUrl} --cluster-name ${name} --bootstrap-token ${token}`;
  const lines = [
    `Bootstrap token created: ${token}`,
    `  expires: ${expires ? `${expires} (in ${formatSeconds(spec.ttlSeconds ?? 0)})` : "never"}; auto-approve: ${spec.autoApprove ? "yes" : "no"}`,
    `  The token is shown only now. Revoke it with: flotilla token delete ${obj.metadata.name}`,
    "",
    "Install the agent into a member cluster (kubectl pointing at that cluster; the image is built from",
    "agent/Containerfile and pushed or loaded as docs/install.md says; name another with --image):",
    `  flotilla-agent install ${flags} --image ${image} | kubectl apply -f -`,
    "",
    "Or run the agent directly against the cluster of your kubeconfig (add --simulate to try it without a cluster):",
    `  ${caFile && hubUrl.startsWith("https:") ? `NODE_EXTRA_CA_CERTS=${caFile} ` : ""}npx flotilla-agent ${flags}`,
    "",
    spec.autoApprove
      ? "The cluster is accepted as it registers (auto-approve); watch it join with `flotilla get clusters`."
      : `Then accept the cluster: flotilla accept ${name} --wait`,
  ];
  if (isLoopback(hubUrl)) {
    lines.push("", `Note: ${hubUrl} is a loopback address; an agent inside a cluster needs a hub address it can reach (set it with --hub-url).`);
  }
  return lines.join("\n") + "\n";
}

async function create(ctx: CommandContext, opts: TokenCreateOptions): Promise<void> {
  const spec: Record<string, unknown> = { autoApprove: opts.autoApprove === true };
  if (opts.ttl !== undefined) spec.ttlSeconds = opts.ttl;
  if (opts.description !== undefined) spec.description = opts.description;
  if (opts.token !== undefined) spec.token = opts.token;
  const obj = await ctx
    .client()
    .create<KubeObject>(Paths.bootstrapTokens(), { apiVersion: "flotilla.dev/v1alpha1", kind: "BootstrapToken", metadata: {}, spec });
  if (opts.output) {
    ctx.out(renderObject(obj, opts.output));
    return;
  }
  const token = (obj.status as { token?: string } | undefined)?.token ?? "";
  ctx.out(joinInstructions(obj, token, ctx.config.hubUrl, opts.clusterName, ctx.config.caFile, opts.image));
}

async function list(ctx: CommandContext, opts: { output?: OutputFormat }): Promise<void> {
  const res = await ctx.client().get<KubeList>(Paths.bootstrapTokens());
  if (opts.output) {
    ctx.out(renderObject(res, opts.output));
    return;
  }
  if (res.items.length === 0) {
    ctx.warn("No bootstrap tokens found. Create one with `flotilla token create`.\n");
    return;
  }
  const rows = res.items.map((t) => {
    const spec = (t.spec ?? {}) as { autoApprove?: boolean; description?: string };
    const expires = (t.status as { expirationTimestamp?: string } | undefined)?.expirationTimestamp;
    return [t.metadata.name, spec.autoApprove ? "true" : "false", expires ?? "never", ageOf(t.metadata.creationTimestamp, ctx.now()), spec.description || "-"];
  });
  ctx.out(renderTable(["ID", "AUTO-APPROVE", "EXPIRES", "AGE", "DESCRIPTION"], rows));
}

async function remove(ctx: CommandContext, ids: string[]): Promise<void> {
  for (const id of ids) {
    await ctx.client().request("DELETE", `${Paths.bootstrapTokens()}/${encodeURIComponent(id)}`, {
      hints: { notFound: "no such token; list them with `flotilla token list` (the ID is the part before the dot)" },
    });
    ctx.out(`bootstrap token ${id} deleted; agents can no longer register with it\n`);
  }
}

/**
 * Adds `token` (with `token create`, `token list`, `token delete`) to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerToken(program: Command, context: (cmd: Command) => CommandContext): void {
  const token = program.command("token").description("Manage bootstrap tokens, with which agents register their clusters");
  token
    .command("create")
    .description("Create a bootstrap token and print the commands that install and join an agent")
    .option("--ttl <duration>", "lifetime: seconds or 30m, 1h, 2d; 0 never expires (hub default 24h)", ttlArg)
    .option("--auto-approve", "accept clusters that register with this token without `flotilla accept`")
    .option("--description <text>", "what the token is for")
    .argument(
      "[token]",
      "the token itself (<id>.<secret>) instead of a generated one, as `kubeadm token create <token>`: re-creates the token agents were installed with on a hub whose state was lost",
    )
    .option("--cluster-name <name>", "cluster name to put in the printed commands (default: a placeholder)")
    .option("--image <image>", "agent container image to put in the printed install command (default flotilla-agent:<version>; docs/install.md builds it)")
    .addOption(new Option("-o, --output <format>", "print the BootstrapToken (with status.token) as json or yaml").choices(OUTPUT_FORMATS))
    .addHelpText(
      "after",
      "\nExamples:\n  flotilla token create --ttl 1h\n  flotilla token create --auto-approve --cluster-name edge-1 -o json\n  flotilla token create --image registry.example.com/flotilla-agent:0.1.0",
    )
    .action((token: string | undefined, opts: TokenCreateOptions, cmd: Command) => create(context(cmd), { ...opts, ...(token ? { token } : {}) }));
  token
    .command("list")
    .description("List bootstrap tokens (their IDs, never their secrets)")
    .addOption(new Option("-o, --output <format>", "print the list as json or yaml").choices(OUTPUT_FORMATS))
    .action((opts: { output?: OutputFormat }, cmd: Command) => list(context(cmd), opts));
  token
    .command("delete")
    .description("Revoke bootstrap tokens: agents can no longer register with them (registered clusters are not affected)")
    .argument("<id...>", "token IDs (the part before the dot) or whole tokens")
    .action((ids: string[], _opts: unknown, cmd: Command) =>
      remove(
        context(cmd),
        ids.map((t) => t.split(".")[0]!),
      ),
    );
}
