/**
 * The "what to do next" lines of the CLI's errors: for HTTP failures by status code, and for
 * connection failures by Node error code. Pure functions of the error and the configuration.
 */
import type { ResolvedConfig } from "./config.ts";

/** Hints a command gives for specific failures, overriding the defaults of {@link hintForStatus}. */
export interface RequestHints {
  /** For a 404 about a named object, e.g. "no such cluster; list them with `flotilla get clusters`". */
  notFound?: string;
  /** For a 404 about the resource type itself (the hub does not serve it). */
  notServed?: string;
  /** For 409 AlreadyExists. */
  alreadyExists?: string;
}

/**
 * The hint of a create refused because its namespace does not exist (the hub's NamespaceLifecycle
 * admission answers 404 `namespaces "NS" not found`): create the namespace first.
 */
export function missingNamespaceHint(namespace: string): string {
  return `namespace ${namespace} does not exist; create it first with \`kubectl create namespace ${namespace}\``;
}

const TOKEN_HINT = "check --token / FLOTILLA_ADMIN_TOKEN (a local hub keeps it in .wrangler/state/admin-token)";

/**
 * The default hint for an HTTP failure.
 *
 * @param code the HTTP status.
 * @param reason the Kubernetes reason of the Status (may be "").
 * @param notServed whether a 404 is about the resource type rather than an object.
 * @param config where the token and URL came from, for the 401 hint.
 * @param hints the command's own hints, which win.
 */
export function hintForStatus(code: number, reason: string, notServed: boolean, config: ResolvedConfig, hints: RequestHints = {}): string {
  if (code === 404 && notServed) {
    return hints.notServed ?? `the hub at ${config.hubUrl} does not serve this resource; is --hub-url a Flotilla hub of a version that has it?`;
  }
  if (code === 404) return hints.notFound ?? "check the name (and namespace); `flotilla get` lists what exists";
  if (code === 401) return `the hub refused the admin token from ${config.tokenSource ?? "nowhere"}; ${TOKEN_HINT}`;
  if (code === 403) return "this token may not do that; use the hub's admin token (agent credentials only work for /agent/v1)";
  if (reason === "AlreadyExists") return hints.alreadyExists ?? "it exists already; pick another name, or use the existing one";
  if (code === 409) return "the object changed meanwhile; run the command again";
  if (code === 400 || code === 422) return "fix the value named above and run the command again";
  if (code >= 500) return "the hub failed; its log (the terminal running `npm start`) says why";
  return "see the message above; `flotilla <command> --help` shows the command's usage";
}

const TLS_TRUST = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "CERT_SIGNATURE_FAILURE",
]);

/**
 * The hint for a request that got no HTTP answer.
 *
 * @param code the Node error code (`ECONNREFUSED`, `ENOTFOUND`, a TLS verification code, ...).
 * @param config the hub URL and CA and where they came from.
 */
export function hintForConnectionError(code: string | undefined, config: ResolvedConfig): string {
  const where = `the hub URL is ${config.hubUrl} (from ${config.hubUrlSource}); change it with --hub-url / FLOTILLA_HUB_URL`;
  if (code === "ECONNREFUSED") return `is the hub running? start it with \`npm start\`; ${where}`;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `check the host name: ${where}`;
  if (code === "ETIMEDOUT") return `the hub did not answer in time; check that it is running and reachable; ${where}`;
  if (code && TLS_TRUST.has(code)) {
    const have = config.caFile ? `the CA ${config.caFile} (from ${config.caFileSource}) did not verify it; ` : "";
    return `${have}trust the hub's CA with --ca-file / FLOTILLA_CA_FILE (\`FLOTILLA_HTTPS=1 npm start\` writes it to <state folder>/tls/ca.crt)`;
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID")
    return "the hub's certificate is for another host name; use the name it was issued for (127.0.0.1 or localhost for `npm start`)";
  if (code === "CERT_HAS_EXPIRED") return "the hub's certificate has expired; renew it (for `npm start`, delete <state folder>/tls and restart)";
  if (code === "EPROTO" || code === "ERR_SSL_WRONG_VERSION_NUMBER") return `the hub does not speak HTTPS there; try http:// (${where})`;
  // Plain HTTP to a TLS port: the TLS bytes fail HTTP parsing (HPE_*), or the server hangs up.
  if ((code === "ECONNRESET" || code?.startsWith("HPE_")) && config.hubUrl.startsWith("http:")) {
    return `if the hub serves HTTPS (FLOTILLA_HTTPS=1), use https:// in the hub URL; ${where}`;
  }
  return `check that the hub is running and reachable; ${where}`;
}
