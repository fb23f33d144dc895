/**
 * `flotilla kubeconfig`: prints a kubeconfig (YAML) that lets kubectl and other Kubernetes
 * clients talk to the hub with the admin token. For an HTTPS hub with a known CA (flag,
 * environment, config file, or the local hub's `<state>/tls/ca.crt`), the CA is embedded as
 * `certificate-authority-data`; TLS verification is never turned off.
 */
import { Command } from "commander";
import { stringify as toYaml } from "yaml";
import { readCaFile, requireToken, type ResolvedConfig } from "../config.ts";
import type { CommandContext } from "../context.ts";

/** The options of `kubeconfig`. */
interface KubeconfigOptions {
  contextName: string;
}

/**
 * Builds the kubeconfig document.
 *
 * @param config hub URL (server) and, for https, the CA file to embed.
 * @param token the admin bearer token.
 * @param contextName name of the context; the cluster is named the same, the user `<name>-admin`.
 * @throws CliError when the CA file cannot be read.
 */
export function buildKubeconfig(config: ResolvedConfig, token: string, contextName: string): Record<string, unknown> {
  const cluster: Record<string, string> = { server: config.hubUrl };
  const ca = config.hubUrl.startsWith("https:") ? readCaFile(config) : undefined;
  if (ca) cluster["certificate-authority-data"] = Buffer.from(ca).toString("base64");
  const user = `${contextName}-admin`;
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: contextName, cluster }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: contextName, context: { cluster: contextName, user } }],
    "current-context": contextName,
  };
}

function run(ctx: CommandContext, opts: KubeconfigOptions): void {
  const doc = buildKubeconfig(ctx.config, requireToken(ctx.config), opts.contextName);
  ctx.out(toYaml(doc));
  if (ctx.config.hubUrl.startsWith("http:")) {
    ctx.warn(
      `warning: ${ctx.config.hubUrl} is plain HTTP, and kubectl sends bearer tokens only over HTTPS;\n` +
        "  start the hub with `FLOTILLA_HTTPS=1 npm start` and use its https:// URL (its CA is embedded for you)\n",
    );
  } else if (!ctx.config.caFile) {
    ctx.warn("note: no CA file is known, so the system's trusted CAs must verify the hub; pass --ca-file for a private CA\n");
  }
}

/**
 * Adds `kubeconfig` to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerKubeconfig(program: Command, context: (cmd: Command) => CommandContext): void {
  program
    .command("kubeconfig")
    .description("Print a kubeconfig for the hub, with the admin token (and the hub's CA, for an HTTPS hub)")
    .option("--context-name <name>", "name of the context and cluster entries", "flotilla")
    .addHelpText("after", "\nExample:\n  flotilla kubeconfig > hub.kubeconfig && kubectl --kubeconfig hub.kubeconfig get managedclusters")
    .action((opts: KubeconfigOptions, cmd: Command) => run(context(cmd), opts));
}
