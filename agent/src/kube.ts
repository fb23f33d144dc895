/**
 * Thin helpers around `@kubernetes/client-node` for talking to the member cluster's
 * kube-apiserver: loading a kubeconfig, raw GETs (for `/livez` and `/healthz`) and error codes.
 */
import fs from "node:fs";
import {
  ApiException,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  KubeConfig,
  RequestContext,
} from "@kubernetes/client-node";

/** Where the service-account token lives inside a pod; its presence means "in-cluster". */
const IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/**
 * Loads the member cluster's client configuration the way the contract says: an explicit
 * kubeconfig file when given, else the in-cluster service account (when running in a pod:
 * `KUBERNETES_SERVICE_HOST` set and the token file present), else `$KUBECONFIG` /
 * `~/.kube/config` (client-node's `loadFromDefault`).
 *
 * @param kubeconfigPath path of a kubeconfig file, or `undefined`.
 * @returns a loaded {@link KubeConfig}.
 * @throws Error when the file cannot be read or no current cluster is configured.
 */
export function loadKubeConfig(kubeconfigPath?: string): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else if (process.env.KUBERNETES_SERVICE_HOST && fs.existsSync(IN_CLUSTER_TOKEN)) kc.loadFromCluster();
  else kc.loadFromDefault();
  if (!kc.getCurrentCluster()) {
    throw new Error(
      kubeconfigPath
        ? `kubeconfig ${kubeconfigPath} has no current cluster`
        : "no Kubernetes configuration found (not in a pod, and no usable $KUBECONFIG or ~/.kube/config)",
    );
  }
  return kc;
}

/**
 * The HTTP status code of a client-node error.
 *
 * @param err anything thrown by a client-node call.
 * @returns the status code for an `ApiException`, otherwise `undefined` (network error etc.).
 */
export function statusCodeOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number") return err.code;
  return undefined;
}

/** Whether a client-node error is a 404 Not Found. */
export function isNotFound(err: unknown): boolean {
  return statusCodeOf(err) === 404;
}

/** Whether a client-node error is a 409 Conflict / AlreadyExists. */
export function isConflict(err: unknown): boolean {
  return statusCodeOf(err) === 409;
}

/**
 * A short human description of a client-node error, for log lines: the Status message when
 * the server sent one, else the error message (with its cause, for network errors).
 */
export function describeKubeError(err: unknown): string {
  if (err instanceof ApiException) {
    const body: unknown = err.body;
    let message: string | undefined;
    if (typeof body === "string") {
      try {
        const parsed: unknown = JSON.parse(body);
        if (typeof parsed === "object" && parsed !== null && "message" in parsed && typeof parsed.message === "string") {
          message = parsed.message;
        }
      } catch {
        message = body.slice(0, 200) || undefined;
      }
    } else if (typeof body === "object" && body !== null && "message" in body && typeof body.message === "string") {
      message = body.message;
    }
    return `HTTP ${err.code}${message ? `: ${message}` : ""}`;
  }
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}

/** Answer of {@link rawGet}: the HTTP status and the body as text. */
export interface RawResponse {
  /** HTTP status code. */
  status: number;
  /** Response body (possibly empty). */
  body: string;
}

/**
 * GETs an arbitrary path on the kube-apiserver with the kubeconfig's credentials and TLS
 * settings (the same transport client-node's generated APIs use).
 *
 * @param kc the member cluster's configuration.
 * @param path absolute path such as `/livez`.
 * @param timeoutMs abort after this many milliseconds (default 10 000).
 * @returns status and body; any status is returned, not thrown.
 * @throws Error on network errors, timeouts, or when the kubeconfig has no current cluster.
 */
export async function rawGet(kc: KubeConfig, path: string, timeoutMs = 10_000): Promise<RawResponse> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig has no current cluster");
  const ctx = new RequestContext(cluster.server.replace(/\/+$/, "") + path, HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  ctx.setSignal(AbortSignal.timeout(timeoutMs));
  const res = await new IsomorphicFetchHttpLibrary().send(ctx).toPromise();
  const body = await res.body.text();
  return { status: res.httpStatusCode, body };
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || hostname === "::1" || /^127\./.test(hostname);
}

/**
 * Loads a kubeconfig from YAML text (e.g. the simulated cluster's). client-node refuses plain
 * `http:` servers unless `skipTLSVerify` is set (there is no TLS to verify on them); for
 * `http:` servers on a loopback address only, this sets it, so a local simulator works.
 *
 * @param yaml kubeconfig YAML.
 * @returns the loaded configuration.
 * @throws Error when the YAML is not a kubeconfig.
 */
export function kubeConfigFromYaml(yaml: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(yaml);
  const clusters = kc.clusters.map((c) => {
    let url: URL | undefined;
    try {
      url = new URL(c.server);
    } catch {
      url = undefined;
    }
    return url && url.protocol === "http:" && isLoopback(url.hostname) ? { ...c, skipTLSVerify: true } : c;
  });
  const fixed = new KubeConfig();
  fixed.loadFromOptions({ clusters, users: kc.users, contexts: kc.contexts, currentContext: kc.getCurrentContext() });
  return fixed;
}
