/**
 * `flotilla kubeconfig`: prints a kubeconfig (YAML) that lets kubectl and other Kubernetes
 * clients talk to the hub, as one of:
 * - the admin (the default): the admin token;
 * - an OIDC user (`--oidc-issuer-url`, `--oidc-client-id`): kubectl's `oidc-login` credential
 *   plugin (kubelogin, `client.authentication.k8s.io/v1` exec), which signs the user in with the
 *   issuer and hands kubectl their ID token; the hub must trust that issuer
 *   (`FLOTILLA_OIDC_ISSUER_URL`, README "Teams and access");
 * - a ServiceAccount (`--serviceaccount NS/NAME`): a token the hub issues for it now (TokenRequest,
 *   with the admin token; `--duration`, default 1h), as `kubectl create token` does;
 * - any bearer token (`--user-token`; the global `--token` is the admin's), e.g. one
 *   `kubectl create token` printed.
 * With `--cluster NAME...`, a context per member cluster instead, named after it, whose `server`
 * is the hub's proxy prefix for that cluster (`<hub>/clusters/NAME/proxy`, docs/proxy.md), and
 * whose user is the token, or with `--exec` the `flotilla credentials` exec plugin.
 * For an HTTPS hub with a known CA (flag, environment, config file, or the local hub's
 * `<state>/tls/ca.crt`), the CA is embedded as `certificate-authority-data`; TLS verification is
 * never turned off.
 */
import path from "node:path";
import { Command } from "commander";
import { stringify as toYaml } from "yaml";
import { readCaFile, requireToken, type ResolvedConfig } from "../config.ts";
import type { CommandContext } from "../context.ts";
import { UsageError } from "../errors.ts";
import { parseDuration } from "../time.ts";

/** The options of `kubeconfig`. */
interface KubeconfigOptions {
  contextName: string;
  oidcIssuerUrl?: string;
  oidcClientId?: string;
  oidcClientSecret?: string;
  oidcExtraScope?: string[];
  serviceaccount?: string;
  duration?: string;
  userToken?: string;
  cluster?: string[];
  exec?: string | boolean;
}

/** A kubeconfig user entry's `user`: a bearer token, or an exec credential plugin. */
type KubeconfigUser = { token: string } | { exec: Record<string, unknown> };

/**
 * The user entry of an OIDC user signing in through kubelogin (`kubectl oidc-login get-token`),
 * as its documentation writes it; `interactiveMode: IfAvailable` lets it open a browser or
 * prompt when kubectl runs in a terminal (kubectl requires the field for the v1 exec API).
 */
export function oidcLoginUser(issuerUrl: string, clientId: string, clientSecret?: string, extraScopes: readonly string[] = []): KubeconfigUser {
  const args = ["oidc-login", "get-token", `--oidc-issuer-url=${issuerUrl}`, `--oidc-client-id=${clientId}`];
  if (clientSecret) args.push(`--oidc-client-secret=${clientSecret}`);
  for (const s of extraScopes) args.push(`--oidc-extra-scope=${s}`);
  return { exec: { apiVersion: "client.authentication.k8s.io/v1", command: "kubectl", args, interactiveMode: "IfAvailable", provideClusterInfo: false } };
}

/**
 * Builds the kubeconfig document.
 *
 * @param config hub URL (server) and, for https, the CA file to embed.
 * @param credential a bearer token, or a user entry (an exec credential plugin).
 * @param contextName name of the context; the cluster is named the same.
 * @param userName name of the user entry (default `<contextName>-admin`).
 * @throws CliError when the CA file cannot be read.
 */
export function buildKubeconfig(
  config: ResolvedConfig,
  credential: string | KubeconfigUser,
  contextName: string,
  userName = `${contextName}-admin`,
): Record<string, unknown> {
  const cluster: Record<string, string> = { server: config.hubUrl };
  const ca = config.hubUrl.startsWith("https:") ? readCaFile(config) : undefined;
  if (ca) cluster["certificate-authority-data"] = Buffer.from(ca).toString("base64");
  const user = typeof credential === "string" ? { token: credential } : credential;
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: contextName, cluster }],
    users: [{ name: userName, user }],
    contexts: [{ name: contextName, context: { cluster: contextName, user: userName } }],
    "current-context": contextName,
  };
}

/**
 * The user entry running `flotilla credentials` (the exec plugin, `client.authentication.k8s.io/v1`)
 * with `command` (by default this CLI's own launcher, as it was run, or `flotilla` on the PATH).
 * `interactiveMode: Never`: the plugin never prompts; the token it hands out is the CLI's
 * (`FLOTILLA_ADMIN_TOKEN` or the config file, which kubectl passes on).
 */
export function credentialsExecUser(command: string = defaultCommand()): KubeconfigUser {
  return { exec: { apiVersion: "client.authentication.k8s.io/v1", command, args: ["credentials"], interactiveMode: "Never", provideClusterInfo: true } };
}

/** This CLI's launcher (absolute), when it is one, else `flotilla`. */
function defaultCommand(): string {
  const self = process.argv[1];
  return self && /flotilla(\.js)?$/.test(self) ? path.resolve(self) : "flotilla";
}

/**
 * The proxy URL of member cluster `name`: the hub's URL + `/clusters/<name>/proxy` (docs/proxy.md).
 */
export function clusterProxyServer(hubUrl: string, name: string): string {
  return `${hubUrl.replace(/\/+$/, "")}/clusters/${encodeURIComponent(name)}/proxy`;
}

/**
 * A kubeconfig with one context per member cluster in `clusters`, each named after its cluster,
 * whose server is {@link clusterProxyServer}, all sharing the user entry `userName`; the first is
 * the current context.
 *
 * @throws CliError when the CA file cannot be read.
 */
export function buildClusterKubeconfig(
  config: ResolvedConfig,
  credential: string | KubeconfigUser,
  clusters: readonly string[],
  userName: string,
): Record<string, unknown> {
  const ca = config.hubUrl.startsWith("https:") ? readCaFile(config) : undefined;
  const entry = (name: string) => {
    const cluster: Record<string, string> = { server: clusterProxyServer(config.hubUrl, name) };
    if (ca) cluster["certificate-authority-data"] = Buffer.from(ca).toString("base64");
    return { name, cluster };
  };
  const user = typeof credential === "string" ? { token: credential } : credential;
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: clusters.map(entry),
    users: [{ name: userName, user }],
    contexts: clusters.map((name) => ({ name, context: { cluster: name, user: userName } })),
    "current-context": clusters[0],
  };
}

/** A DNS-1123 subdomain (a ManagedCluster's name). */
const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The user entry the options ask for, and its name (see the module comment).
 * @throws UsageError for options that do not go together or a malformed value; what the hub
 *   answers a TokenRequest with (a missing ServiceAccount: 404)
 */
async function userOf(ctx: CommandContext, opts: KubeconfigOptions): Promise<{ user: string | KubeconfigUser; name: string }> {
  const ways = [opts.oidcIssuerUrl !== undefined || opts.oidcClientId !== undefined, opts.serviceaccount !== undefined, opts.userToken !== undefined].filter(
    Boolean,
  ).length;
  if (ways > 1) throw new UsageError("use one of --oidc-issuer-url/--oidc-client-id, --serviceaccount and --user-token");
  if (opts.duration !== undefined && opts.serviceaccount === undefined) throw new UsageError("--duration goes with --serviceaccount");
  if (opts.oidcIssuerUrl !== undefined || opts.oidcClientId !== undefined) {
    if (!opts.oidcIssuerUrl || !opts.oidcClientId) throw new UsageError("an OIDC user needs both --oidc-issuer-url and --oidc-client-id");
    return { user: oidcLoginUser(opts.oidcIssuerUrl, opts.oidcClientId, opts.oidcClientSecret, opts.oidcExtraScope), name: `${opts.contextName}-oidc` };
  }
  if (opts.userToken !== undefined) {
    if (!opts.userToken) throw new UsageError("--user-token is empty");
    return { user: opts.userToken, name: `${opts.contextName}-token` };
  }
  if (opts.serviceaccount !== undefined) {
    const m = /^([^/]+)\/([^/]+)$/.exec(opts.serviceaccount);
    if (!m) throw new UsageError(`--serviceaccount ${JSON.stringify(opts.serviceaccount)}: use NAMESPACE/NAME`);
    let expirationSeconds = 3600;
    if (opts.duration !== undefined) {
      try {
        expirationSeconds = parseDuration(opts.duration);
      } catch (e) {
        throw new UsageError(`--duration: ${(e as Error).message}`);
      }
    }
    const [ns, name] = [m[1]!, m[2]!];
    const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/serviceaccounts/${encodeURIComponent(name)}/token`;
    const answer = await ctx
      .client()
      .create<{ status?: { token?: string } }>(path, { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds } });
    const token = answer.status?.token;
    if (!token) throw new UsageError(`the hub issued no token for ServiceAccount ${ns}/${name}`);
    return { user: token, name: `${opts.contextName}-${ns}-${name}` };
  }
  return { user: requireToken(ctx.config), name: `${opts.contextName}-admin` };
}

async function run(ctx: CommandContext, opts: KubeconfigOptions): Promise<void> {
  let doc: Record<string, unknown>;
  if (opts.cluster !== undefined) {
    const clusters = [...new Set(opts.cluster.flatMap((c) => c.split(",")).map((c) => c.trim()))];
    for (const c of clusters) if (c.length > 253 || !CLUSTER_NAME.test(c)) throw new UsageError(`--cluster ${JSON.stringify(c)} is not a cluster name`);
    if (opts.exec !== undefined) {
      if (opts.serviceaccount !== undefined || opts.userToken !== undefined || opts.oidcIssuerUrl !== undefined || opts.oidcClientId !== undefined) {
        throw new UsageError("--exec hands out the CLI's own token: leave out --serviceaccount, --user-token and --oidc-*");
      }
      doc = buildClusterKubeconfig(ctx.config, credentialsExecUser(typeof opts.exec === "string" ? opts.exec : undefined), clusters, "flotilla-credentials");
    } else {
      const { user, name } = await userOf(ctx, opts);
      doc = buildClusterKubeconfig(ctx.config, user, clusters, name);
    }
  } else {
    if (opts.exec !== undefined) throw new UsageError("--exec goes with --cluster");
    const { user, name } = await userOf(ctx, opts);
    doc = buildKubeconfig(ctx.config, user, opts.contextName, name);
  }
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
    .description("Print a kubeconfig for the hub: the admin's, an OIDC user's, a ServiceAccount's or a token's (with the hub's CA, for an HTTPS hub)")
    .option("--context-name <name>", "name of the context and cluster entries", "flotilla")
    .option("--oidc-issuer-url <url>", "an OIDC user signing in with kubectl's oidc-login plugin (kubelogin): the issuer the hub trusts")
    .option("--oidc-client-id <id>", "the OIDC client ID (the hub's FLOTILLA_OIDC_AUDIENCE)")
    .option("--oidc-client-secret <secret>", "the OIDC client secret, for issuers that need one")
    .option("--oidc-extra-scope <scope...>", "more scopes to ask the issuer for (e.g. groups, email)")
    .option("--serviceaccount <namespace/name>", "a token the hub issues now for this ServiceAccount (as kubectl create token)")
    .option("--duration <duration>", "the ServiceAccount token's lifetime (e.g. 10m, 24h; default 1h)")
    .option("--user-token <token>", "this bearer token (e.g. from kubectl create token)")
    .option("--cluster <name...>", "a context per member cluster (named after it), reaching its API through the hub's proxy")
    .option("--exec [command]", "with --cluster: authenticate with the `flotilla credentials` exec plugin (command: this CLI) instead of a token")
    .addHelpText(
      "after",
      "\nExamples:\n  flotilla kubeconfig > hub.kubeconfig && kubectl --kubeconfig hub.kubeconfig get managedclusters\n" +
        "  flotilla kubeconfig --oidc-issuer-url https://dex.example.com --oidc-client-id flotilla > alice.kubeconfig\n" +
        "  flotilla kubeconfig --serviceaccount ci/deployer --duration 24h > ci.kubeconfig\n" +
        "  flotilla kubeconfig --cluster cluster1 cluster2 --exec > members.kubeconfig && kubectl --kubeconfig members.kubeconfig --context cluster2 get pods",
    )
    .action((opts: KubeconfigOptions, cmd: Command) => run(context(cmd), opts));
}
