/**
 * Loading the member cluster's connection settings the way client-go does (kubeconfig files,
 * `$KUBECONFIG`, the in-cluster service account), into a {@link KubeConfig} (kube.ts) that the
 * agent's small REST transport uses.
 *
 * Why not `@kubernetes/client-node`: loading it costs about 85 MiB of RSS (its generated models,
 * undici, OIDC and cloud auth libraries), more than the whole agent may use (issue 16). What the
 * agent needs from it is a kubeconfig and an authenticated HTTPS request, so that is what lives
 * here. Supported, as client-go: `server` (with a path prefix), `certificate-authority(-data)`,
 * `insecure-skip-tls-verify`, `tls-server-name`, `client-certificate(-data)` and
 * `client-key(-data)`, `token`, `tokenFile` (re-read, as client-go's cached token source, every
 * 60 s), `username`/`password` (basic), and `exec` credential plugins
 * (`client.authentication.k8s.io/v1` and `v1beta1`; the credential is cached until its
 * `expirationTimestamp` and fetched again after a 401). Relative paths are relative to the
 * kubeconfig's directory. The removed `auth-provider` plugins and `proxy-url` are refused with
 * an error naming them rather than ignored.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { KubeConfig, type ExecConfig, type KubeAuth, type KubeConnection } from "./kube.ts";

/** Where a pod's service-account files live (client-go `rest.InClusterConfig`). */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

type Doc = Record<string, unknown>;

function isDoc(v: unknown): v is Doc {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(d: Doc, k: string): string | undefined {
  const v = d[k];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Named entries of a kubeconfig list (`clusters`, `users`, `contexts`): name → the inner map. */
function named(doc: Doc, list: string, inner: string): Map<string, Doc> {
  const out = new Map<string, Doc>();
  const items = doc[list];
  if (!Array.isArray(items)) return out;
  for (const it of items) {
    if (!isDoc(it) || typeof it.name !== "string") continue;
    out.set(it.name, isDoc(it[inner]) ? it[inner] : {});
  }
  return out;
}

interface ParsedFile {
  dir: string;
  clusters: Map<string, Doc>;
  users: Map<string, Doc>;
  contexts: Map<string, Doc>;
  currentContext?: string;
}

function parseFile(text: string, dir: string, source: string): ParsedFile {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new Error(`${source} is not valid YAML: ${(e as Error).message}`, { cause: e });
  }
  if (doc === null || doc === undefined) doc = {};
  if (!isDoc(doc)) throw new Error(`${source} is not a kubeconfig (expected a mapping)`);
  const currentContext = str(doc, "current-context");
  return {
    dir,
    clusters: named(doc, "clusters", "cluster"),
    users: named(doc, "users", "user"),
    contexts: named(doc, "contexts", "context"),
    ...(currentContext ? { currentContext } : {}),
  };
}

function readFileData(file: string | undefined, data: string | undefined, dir: string, what: string): Buffer | undefined {
  if (data) return Buffer.from(data, "base64");
  if (!file) return undefined;
  const p = path.resolve(dir, file);
  try {
    return fs.readFileSync(p);
  } catch (e) {
    throw new Error(`cannot read ${what} ${p}: ${(e as Error).message}`, { cause: e });
  }
}

/** A token file re-read at most every 60 s, as client-go's `cachingTokenSource` does. */
function tokenFileSource(file: string): () => string {
  let token = "";
  let readAt = -Infinity;
  return () => {
    const now = Date.now();
    if (now - readAt >= 60_000 || !token) {
      try {
        token = fs.readFileSync(file, "utf8").trim();
        readAt = now;
      } catch (e) {
        if (!token) throw new Error(`cannot read token file ${file}: ${(e as Error).message}`, { cause: e });
      }
    }
    return token;
  };
}

/** Runs an exec credential plugin and returns its `ExecCredential.status`. */
async function runExecPlugin(exec: ExecConfig): Promise<Doc> {
  // Loaded only for exec plugins.
  const { execFile } = await import("node:child_process");
  const env = { ...process.env };
  for (const e of exec.env) env[e.name] = e.value;
  env.KUBERNETES_EXEC_INFO = JSON.stringify({ apiVersion: exec.apiVersion, kind: "ExecCredential", spec: { interactive: false } });
  return new Promise((resolve, reject) => {
    execFile(exec.command, exec.args, { env, timeout: 60_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`exec credential plugin ${exec.command} failed: ${err.message}${stderr ? `: ${stderr.trim().slice(0, 300)}` : ""}`));
        return;
      }
      let out: unknown;
      try {
        out = JSON.parse(stdout);
      } catch {
        reject(new Error(`exec credential plugin ${exec.command} printed no ExecCredential JSON`));
        return;
      }
      if (!isDoc(out) || out.kind !== "ExecCredential" || !isDoc(out.status)) {
        reject(new Error(`exec credential plugin ${exec.command} printed no ExecCredential with a status`));
        return;
      }
      resolve(out.status);
    });
  });
}

/**
 * The credential of an exec plugin, cached until `expirationTimestamp` (client-go
 * `plugin/pkg/client/auth/exec`).
 */
export function execCredentialSource(exec: ExecConfig, run: (e: ExecConfig) => Promise<Doc> = runExecPlugin): KubeAuth["exec"] {
  let cached: { token?: string; cert?: Buffer; key?: Buffer; expiresAt: number } | undefined;
  return {
    async get(forceRefresh: boolean) {
      if (cached && !forceRefresh && Date.now() < cached.expiresAt) return cached;
      const status = await run(exec);
      const exp = typeof status.expirationTimestamp === "string" ? Date.parse(status.expirationTimestamp) : NaN;
      const token = typeof status.token === "string" && status.token ? status.token : undefined;
      const cert = typeof status.clientCertificateData === "string" ? Buffer.from(status.clientCertificateData) : undefined;
      const key = typeof status.clientKeyData === "string" ? Buffer.from(status.clientKeyData) : undefined;
      if (!token && !(cert && key)) throw new Error(`exec credential plugin ${exec.command} returned neither a token nor a client certificate and key`);
      cached = { ...(token ? { token } : {}), ...(cert && key ? { cert, key } : {}), expiresAt: Number.isFinite(exp) ? exp : Infinity };
      return cached;
    },
  };
}

function execConfig(user: Doc, dir: string): ExecConfig | undefined {
  const exec = user.exec;
  if (!isDoc(exec)) return undefined;
  const command = str(exec, "command");
  if (!command) throw new Error("kubeconfig user exec has no command");
  const apiVersion = str(exec, "apiVersion") ?? "client.authentication.k8s.io/v1";
  if (apiVersion !== "client.authentication.k8s.io/v1" && apiVersion !== "client.authentication.k8s.io/v1beta1") {
    throw new Error(`kubeconfig user exec apiVersion ${apiVersion} is not supported (client.authentication.k8s.io/v1 or v1beta1)`);
  }
  const args = Array.isArray(exec.args) ? exec.args.map(String) : [];
  const env = Array.isArray(exec.env) ? exec.env.filter(isDoc).map((e) => ({ name: String(e.name), value: String(e.value ?? "") })) : [];
  // client-go: a command with a path separator is relative to the kubeconfig's directory.
  const resolved = command.includes("/") || command.includes(path.sep) ? path.resolve(dir, command) : command;
  return { apiVersion, command: resolved, args, env };
}

/**
 * Builds a {@link KubeConfig} from one context of parsed kubeconfig data.
 *
 * @throws Error naming what is missing or unsupported.
 */
function fromParsed(files: ParsedFile[], contextOverride?: string): KubeConfig {
  // client-go merge rules for $KUBECONFIG lists: the first file to set a name or value wins.
  const pick = <T>(f: (p: ParsedFile) => T | undefined): { value: T; file: ParsedFile } | undefined => {
    for (const p of files) {
      const v = f(p);
      if (v !== undefined) return { value: v, file: p };
    }
    return undefined;
  };
  const contextName = contextOverride ?? pick((p) => p.currentContext)?.value;
  if (!contextName) throw new Error("kubeconfig has no current-context");
  const context = pick((p) => p.contexts.get(contextName));
  if (!context) throw new Error(`kubeconfig has no context ${contextName}`);
  const clusterName = str(context.value, "cluster");
  const cluster = clusterName ? pick((p) => p.clusters.get(clusterName)) : undefined;
  if (!cluster) throw new Error(`kubeconfig context ${contextName} names no known cluster`);
  const server = str(cluster.value, "server");
  if (!server) throw new Error(`kubeconfig cluster ${clusterName} has no server`);
  if (str(cluster.value, "proxy-url")) throw new Error(`kubeconfig cluster ${clusterName}: proxy-url is not supported by flotilla-agent`);
  const userName = str(context.value, "user");
  const user = userName ? pick((p) => p.users.get(userName)) : undefined;
  const u = user?.value ?? {};
  const udir = user?.file.dir ?? cluster.file.dir;
  if (isDoc(u["auth-provider"])) {
    throw new Error(
      `kubeconfig user ${userName}: auth-provider ${String(u["auth-provider"].name)} is not supported (removed from kubectl); use an exec credential plugin`,
    );
  }
  const conn: KubeConnection = {
    server,
    insecureSkipTlsVerify: cluster.value["insecure-skip-tls-verify"] === true,
  };
  const ca = readFileData(
    str(cluster.value, "certificate-authority"),
    str(cluster.value, "certificate-authority-data"),
    cluster.file.dir,
    "certificate-authority",
  );
  if (ca) conn.ca = ca;
  const serverName = str(cluster.value, "tls-server-name");
  if (serverName) conn.tlsServerName = serverName;
  const cert = readFileData(str(u, "client-certificate"), str(u, "client-certificate-data"), udir, "client-certificate");
  const key = readFileData(str(u, "client-key"), str(u, "client-key-data"), udir, "client-key");
  if (cert && key) {
    conn.cert = cert;
    conn.key = key;
  }
  const auth: KubeAuth = {};
  const token = str(u, "token");
  const tokenFile = str(u, "tokenFile");
  if (token) auth.token = () => token;
  else if (tokenFile) auth.token = tokenFileSource(path.resolve(udir, tokenFile));
  const username = str(u, "username");
  const password = str(u, "password");
  if (username !== undefined && password !== undefined) auth.basic = { username, password };
  const exec = execConfig(u, udir);
  if (exec) auth.exec = execCredentialSource(exec);
  return new KubeConfig(conn, auth);
}

/**
 * Parses kubeconfig YAML text (one file).
 *
 * @param yaml the file's text.
 * @param dir the directory relative paths in it resolve against (default: the working directory).
 * @param context the context to use (default: `current-context`).
 * @throws Error when the text is not a usable kubeconfig (the message says why).
 */
export function kubeConfigFromYaml(yaml: string, dir = process.cwd(), context?: string): KubeConfig {
  return fromParsed([parseFile(yaml, dir, "kubeconfig")], context);
}

/**
 * The in-cluster configuration (client-go `rest.InClusterConfig`): `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`,
 * the service account's CA and its projected token (re-read every 60 s, since the kubelet
 * rotates it).
 *
 * @throws Error when not running in a pod.
 */
export function inClusterConfig(dir = SERVICE_ACCOUNT_DIR): KubeConfig {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) throw new Error("not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  const h = host.includes(":") ? `[${host}]` : host;
  const conn: KubeConnection = { server: `https://${h}:${port}`, insecureSkipTlsVerify: false };
  try {
    conn.ca = fs.readFileSync(path.join(dir, "ca.crt"));
  } catch {
    // client-go logs and goes on with the system roots.
  }
  return new KubeConfig(conn, { token: tokenFileSource(path.join(dir, "token")) });
}

/**
 * Loads the member cluster's configuration the way the contract says: an explicit kubeconfig
 * file when given, else the in-cluster service account (when running in a pod:
 * `KUBERNETES_SERVICE_HOST` set and the token file present), else `$KUBECONFIG` (a
 * `path.delimiter`-separated list, merged as client-go does) or `~/.kube/config`.
 *
 * @param kubeconfigPath path of a kubeconfig file, or `undefined`.
 * @throws Error when the file cannot be read or has no usable current context.
 */
export function loadKubeConfig(kubeconfigPath?: string): KubeConfig {
  if (!kubeconfigPath && process.env.KUBERNETES_SERVICE_HOST && fs.existsSync(path.join(SERVICE_ACCOUNT_DIR, "token"))) {
    return inClusterConfig();
  }
  const paths = kubeconfigPath
    ? [kubeconfigPath]
    : process.env.KUBECONFIG
      ? process.env.KUBECONFIG.split(path.delimiter).filter(Boolean)
      : [path.join(os.homedir(), ".kube", "config")];
  const files: ParsedFile[] = [];
  for (const p of paths) {
    let text: string;
    try {
      text = fs.readFileSync(p, "utf8");
    } catch (e) {
      // client-go skips missing files of a $KUBECONFIG list; an explicit file must exist.
      if (kubeconfigPath) throw new Error(`cannot read kubeconfig ${p}: ${(e as Error).message}`, { cause: e });
      continue;
    }
    files.push(parseFile(text, path.dirname(path.resolve(p)), p));
  }
  if (files.length === 0) throw new Error("no Kubernetes configuration found (not in a pod, and no usable $KUBECONFIG or ~/.kube/config)");
  return fromParsed(files);
}
