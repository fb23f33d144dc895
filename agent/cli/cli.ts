/**
 * The `flotilla` admin command line (commander), shaped like clusteradm:
 *
 * ```
 * flotilla [--hub-url URL] [--token T] [--ca-file PEM] [--config FILE] <command>
 *   token create [--ttl 1h] [--auto-approve] [--description D] [--cluster-name C] [--image I] [-o json|yaml]
 *   token list [-o json|yaml] | token delete ID...
 *   accept CLUSTER... [--clusters c1,c2] [--wait [--timeout 5m]]
 *   deny CLUSTER... [--clusters c1,c2] [--wait [--timeout 5m]]
 *   get clusters [NAME...] [-l SEL] [-o json|yaml]
 *   get placements|decisions [NAME...] [-n NS | -A] [--placement P] [-o json|yaml]
 *   get works [NAME...] [-n CLUSTER | -A] [-o json|yaml]
 *   get addons [NAME...] [-n CLUSTER | -A] [-o json|yaml]
 *   get policies [NAME...] [-n NS | --cluster CLUSTER | -A] [-o json|yaml]
 *   placement status NAME [-n NS] [-o json|yaml]
 *   placement render NAME --cluster C [-n NS] [-o json|yaml]
 *   approve RUN [--stage NAME] [-n NS]
 *   replicaset history|undo NAME [-n NS] [--to-revision N]
 *   replicaset render NAME -n NS --cluster C [-o json|yaml]
 *   addon render NAME --cluster C [-o json|yaml]
 *   drain CLUSTER [--timeout 5m] | uncordon CLUSTER
 *   taint add CLUSTER KEY[=VALUE]:EFFECT... | taint remove CLUSTER KEY[:EFFECT]...
 *   clusterset create NAME [--selector-type T] [--selector k=v] | set SET --clusters c1,c2 | bind SET -n NS
 *   kubeconfig [--context-name flotilla] | kubeconfig --cluster NAME... [--exec [COMMAND]]
 *   credentials                       (exec credential plugin, client.authentication.k8s.io/v1)
 *   audit [--user U] [--verb V] [--resource R] [-n NS] [--since 1h] [--watch] [-o json|yaml]
 * ```
 *
 * Results go to stdout; errors (`Error: ...` and a `Hint: ...` line), warnings and progress to
 * stderr. Exit codes: 0 success, 1 failure, 2 usage error.
 */
import { Command, CommanderError } from "commander";
import pkg from "../../package.json" with { type: "json" };
import { registerAccept } from "./commands/accept.ts";
import { registerAddon } from "./commands/addon.ts";
import { registerApprove } from "./commands/approve.ts";
import { registerDrain } from "./commands/drain.ts";
import { registerAudit } from "./commands/audit.ts";
import { registerCredentials } from "./commands/credentials.ts";
import { registerClusterSet } from "./commands/clusterset.ts";
import { registerGet } from "./commands/get.ts";
import { registerKubeconfig } from "./commands/kubeconfig.ts";
import { registerPlacement, registerReplicaSetRender } from "./commands/placement.ts";
import { registerReplicaSet } from "./commands/replicaset.ts";
import { registerTaint } from "./commands/taint.ts";
import { registerToken } from "./commands/token.ts";
import { DEFAULT_HUB_URL } from "./config.ts";
import { contextFor, type Io } from "./context.ts";
import { CliError, EXIT_FAILURE, EXIT_USAGE, renderError } from "./errors.ts";

const ENVIRONMENT_HELP = `
Environment:
  FLOTILLA_HUB_URL      hub URL (default ${DEFAULT_HUB_URL})
  FLOTILLA_ADMIN_TOKEN  admin token (a local hub keeps it in .wrangler/state/admin-token)
  FLOTILLA_CA_FILE      CA bundle (PEM) of an HTTPS hub
  FLOTILLA_CONFIG       config file (default ~/.config/flotilla/config.yaml: hubUrl, token, caFile)
Flags win over the environment, which wins over the config file.

Getting started:
  flotilla token create --ttl 1h      # prints the command that joins an agent
  flotilla accept cluster1 --wait     # once its agent has registered
  flotilla get clusters`;

/**
 * Builds the program.
 *
 * @param io output streams and environment.
 */
export function buildProgram(io: Io): Command {
  const program = new Command("flotilla");
  program
    .description("Administer a Flotilla hub: join and accept clusters, taint them, group them in clustersets, and inspect placements.")
    .version(pkg.version, "--version", "print the version")
    .exitOverride()
    .configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) })
    .showHelpAfterError("(add --help for usage)")
    .option("--hub-url <url>", "hub URL (env FLOTILLA_HUB_URL)")
    .option("--token <token>", "admin token (env FLOTILLA_ADMIN_TOKEN)")
    .option("--ca-file <path>", "CA bundle (PEM) to trust for an HTTPS hub (env FLOTILLA_CA_FILE)")
    .option("--config <file>", "config file (env FLOTILLA_CONFIG)")
    .addHelpText("after", ENVIRONMENT_HELP);
  const context = (cmd: Command) => contextFor(cmd, io);
  registerToken(program, context);
  registerAccept(program, context);
  registerGet(program, context);
  registerTaint(program, context);
  registerClusterSet(program, context);
  registerKubeconfig(program, context);
  registerCredentials(program, context, io.env);
  registerPlacement(program, context);
  registerApprove(program, context);
  registerReplicaSetRender(registerReplicaSet(program, context), context);
  registerAddon(program, context);
  registerDrain(program, context);
  registerAudit(program, context);
  return program;
}

/**
 * Runs the `flotilla` command line.
 *
 * @param argv full argv as in `process.argv` (node, script, args...).
 * @param io output streams and environment (default: the process's).
 * @returns the exit code: 0 success (or help/version), 1 failure, 2 usage error. Never calls
 *   `process.exit`.
 */
export async function runAdminCli(argv: readonly string[], io: Io = { stdout: process.stdout, stderr: process.stderr, env: process.env }): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : EXIT_USAGE;
    io.stderr.write(renderError(err));
    return err instanceof CliError ? err.exitCode : EXIT_FAILURE;
  }
}
