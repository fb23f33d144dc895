/**
 * `flotilla credentials`: a client-go exec credential plugin (KEP-541,
 * `client.authentication.k8s.io/v1`) that hands the token the CLI holds (`--token`,
 * `FLOTILLA_ADMIN_TOKEN`, the config file) to kubectl, client-go or a ClusterProfile consumer
 * (cluster-inventory-api `pkg/access`, whose provider file names this command for the
 * `flotilla` access provider; docs/proxy.md).
 *
 * As client-go's exec authenticator (`k8s.io/client-go/plugin/pkg/client/auth/exec/exec.go`)
 * expects: it reads the `ExecCredential` client-go passes in `KUBERNETES_EXEC_INFO` (apiVersion
 * `client.authentication.k8s.io/v1` or `v1beta1`; absent when the kubeconfig sets
 * `provideClusterInfo: false` under v1beta1), answers with the same apiVersion, and prints
 * `status.token` and, when the token is a JWT with an `exp` claim, `status.expirationTimestamp`
 * (RFC 3339), after which client-go runs the plugin again.
 */
import { Command } from "commander";
import { requireToken } from "../config.ts";
import type { CommandContext } from "../context.ts";
import { UsageError } from "../errors.ts";

/** The exec credential API versions client-go speaks (the v1alpha1 one is gone since 1.24). */
export const EXEC_API_VERSIONS = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"] as const;

/**
 * The apiVersion to answer with: the one of the `ExecCredential` in `execInfo`
 * (`KUBERNETES_EXEC_INFO`), or v1 when there is none.
 *
 * @throws UsageError when `execInfo` is not JSON, not an ExecCredential, or of a version not served.
 */
export function execApiVersion(execInfo: string | undefined): string {
  if (execInfo === undefined || execInfo.trim() === "") return EXEC_API_VERSIONS[0];
  let info: { apiVersion?: unknown; kind?: unknown };
  try {
    info = JSON.parse(execInfo) as typeof info;
  } catch {
    throw new UsageError("KUBERNETES_EXEC_INFO is not JSON", "it is set by client-go's exec authenticator; unset it to run by hand");
  }
  if (info === null || typeof info !== "object" || info.kind !== "ExecCredential") throw new UsageError("KUBERNETES_EXEC_INFO is not an ExecCredential");
  if (!EXEC_API_VERSIONS.includes(info.apiVersion as (typeof EXEC_API_VERSIONS)[number])) {
    throw new UsageError(
      `KUBERNETES_EXEC_INFO asks for apiVersion ${JSON.stringify(info.apiVersion)}`,
      `use one of ${EXEC_API_VERSIONS.join(", ")} in the kubeconfig's exec`,
    );
  }
  return info.apiVersion as string;
}

/**
 * When `token` expires: the `exp` claim (seconds since the epoch) of a JWT, as RFC 3339, or
 * undefined for an opaque token (the admin token, a bootstrap token) or a JWT without `exp`.
 */
export function tokenExpiry(token: string): string | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as { exp?: unknown };
    if (typeof claims.exp !== "number" || !Number.isFinite(claims.exp)) return undefined;
    return new Date(claims.exp * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
  } catch {
    return undefined;
  }
}

/**
 * The `ExecCredential` the plugin prints for `token`, in `apiVersion`.
 */
export function execCredential(apiVersion: string, token: string): Record<string, unknown> {
  const expirationTimestamp = tokenExpiry(token);
  return { apiVersion, kind: "ExecCredential", status: { token, ...(expirationTimestamp ? { expirationTimestamp } : {}) } };
}

/**
 * Adds `credentials` to `program`.
 *
 * @param context builds the action's context from the command.
 * @param env the environment (`KUBERNETES_EXEC_INFO`).
 */
export function registerCredentials(program: Command, context: (cmd: Command) => CommandContext, env: NodeJS.ProcessEnv): void {
  program
    .command("credentials")
    .description("Exec credential plugin (client.authentication.k8s.io/v1) for kubectl and ClusterProfile consumers: prints the token the CLI holds")
    .addHelpText(
      "after",
      "\nIn a kubeconfig user:\n  exec:\n    apiVersion: client.authentication.k8s.io/v1\n    command: flotilla\n    args: [credentials]\n" +
        "    interactiveMode: Never\n  (flotilla kubeconfig --cluster NAME --exec writes it for you)",
    )
    .action((_opts: unknown, cmd: Command) => {
      const ctx = context(cmd);
      const apiVersion = execApiVersion(env.KUBERNETES_EXEC_INFO);
      ctx.out(`${JSON.stringify(execCredential(apiVersion, requireToken(ctx.config)))}\n`);
    });
}
