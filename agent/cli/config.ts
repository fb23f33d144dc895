/**
 * Where the CLI finds the hub and its admin token. Each setting comes from, in order: a flag
 * (`--hub-url`, `--token`, `--ca-file`), the environment (`FLOTILLA_HUB_URL`,
 * `FLOTILLA_ADMIN_TOKEN`, `FLOTILLA_CA_FILE`), then the config file (`--config`, else
 * `$FLOTILLA_CONFIG`, else `$XDG_CONFIG_HOME/flotilla/config.yaml`, i.e.
 * `~/.config/flotilla/config.yaml`), a YAML mapping:
 *
 * ```yaml
 * hubUrl: https://127.0.0.1:8787
 * token: 0123abcd...
 * caFile: /path/to/ca.crt   # relative paths are relative to the config file
 * ```
 *
 * The hub URL defaults to `http://127.0.0.1:8787` (what `npm start` serves). For an HTTPS hub
 * without a configured CA, the local CA of `FLOTILLA_HTTPS=1 npm start`
 * (`<FLOTILLA_STATE_DIR or .wrangler/state>/tls/ca.crt`) is used when that file exists.
 */
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { CliError, UsageError } from "./errors.ts";

/** The hub URL used when none is configured. */
export const DEFAULT_HUB_URL = "http://127.0.0.1:8787";

/** The global flags that locate the hub (all optional). */
export interface GlobalFlags {
  hubUrl?: string;
  token?: string;
  caFile?: string;
  config?: string;
}

/** The resolved settings, each with where it came from (e.g. `--token`, `FLOTILLA_ADMIN_TOKEN`, `config file /x/config.yaml`). */
export interface ResolvedConfig {
  /** Hub base URL without a trailing slash (http or https). */
  hubUrl: string;
  hubUrlSource: string;
  /** The admin bearer token, when one was found. */
  token?: string;
  tokenSource?: string;
  /** Absolute path of a PEM CA bundle to trust for an HTTPS hub, when one is known. */
  caFile?: string;
  caFileSource?: string;
}

/** The fields of the config file. */
interface ConfigFile {
  hubUrl?: string;
  token?: string;
  caFile?: string;
}

/** Default config file path: `$XDG_CONFIG_HOME/flotilla/config.yaml`, else under `~/.config`. */
export function defaultConfigPath(env: NodeJS.ProcessEnv, home: string): string {
  return path.join(env.XDG_CONFIG_HOME || path.join(home, ".config"), "flotilla", "config.yaml");
}

/**
 * The state folder of a local hub (`FLOTILLA_STATE_DIR`, else `.wrangler/state` under the
 * current directory), where `npm start` keeps the admin token and the local CA.
 */
export function localStateDir(env: NodeJS.ProcessEnv): string {
  return path.resolve(env.FLOTILLA_STATE_DIR || path.join(".wrangler", "state"));
}

function readConfigFile(file: string, explicit: boolean): ConfigFile {
  if (!existsSync(file)) {
    if (explicit) throw new UsageError(`config file ${file} does not exist`, "check --config / FLOTILLA_CONFIG, or leave them unset");
    return {};
  }
  const fix = `fix ${file}: it is a YAML mapping with hubUrl, token and optionally caFile`;
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, "utf8"));
  } catch (err) {
    throw new CliError(`cannot read config file ${file}: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`, fix);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== "object" || Array.isArray(doc)) throw new CliError(`config file ${file} is not a YAML mapping`, fix);
  const out: ConfigFile = {};
  for (const key of ["hubUrl", "token", "caFile"] as const) {
    const v = (doc as Record<string, unknown>)[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== "string") throw new CliError(`config file ${file}: ${key} must be a string`, fix);
    out[key] = key === "caFile" ? path.resolve(path.dirname(file), v) : v;
  }
  return out;
}

function normaliseHubUrl(url: string, source: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`hub URL "${url}" (from ${source}) is not a URL`, `give it as http://HOST:PORT or https://HOST:PORT, e.g. ${DEFAULT_HUB_URL}`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new UsageError(`hub URL "${url}" (from ${source}) must be http or https`, `e.g. ${DEFAULT_HUB_URL}`);
  }
  return url.replace(/\/+$/, "");
}

/**
 * Resolves the hub URL, admin token and CA file from flags, environment and config file.
 *
 * @param flags the global flags as parsed.
 * @param env the environment (default `process.env`).
 * @param home the home folder (default `os.homedir()`).
 * @throws UsageError for a hub URL that is not http(s) or an explicitly named config file
 *   that does not exist; CliError for a config file that is not valid.
 */
export function resolveConfig(flags: GlobalFlags, env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): ResolvedConfig {
  const explicitFile = flags.config ?? (env.FLOTILLA_CONFIG || undefined);
  const file = path.resolve(explicitFile ?? defaultConfigPath(env, home));
  const cfg = readConfigFile(file, explicitFile !== undefined);
  const fromFile = `config file ${file}`;

  const pick = (flag: string | undefined, flagName: string, envName: string, fileValue: string | undefined): [string, string] | undefined => {
    if (flag) return [flag, flagName];
    const e = env[envName];
    if (e) return [e, envName];
    if (fileValue) return [fileValue, fromFile];
    return undefined;
  };

  const [hubRaw, hubUrlSource] = pick(flags.hubUrl, "--hub-url", "FLOTILLA_HUB_URL", cfg.hubUrl) ?? [DEFAULT_HUB_URL, "the default"];
  const hubUrl = normaliseHubUrl(hubRaw, hubUrlSource);
  const out: ResolvedConfig = { hubUrl, hubUrlSource };
  const token = pick(flags.token, "--token", "FLOTILLA_ADMIN_TOKEN", cfg.token);
  if (token) [out.token, out.tokenSource] = [token[0].trim(), token[1]];
  const ca = pick(flags.caFile, "--ca-file", "FLOTILLA_CA_FILE", cfg.caFile);
  if (ca) {
    [out.caFile, out.caFileSource] = [path.resolve(ca[0]), ca[1]];
  } else if (hubUrl.startsWith("https:")) {
    const local = path.join(localStateDir(env), "tls", "ca.crt");
    if (existsSync(local)) [out.caFile, out.caFileSource] = [local, "the local hub's state folder"];
  }
  return out;
}

/**
 * Reads the CA bundle named by the config.
 *
 * @returns the PEM text, or undefined when no CA file is configured.
 * @throws CliError when the file cannot be read.
 */
export function readCaFile(config: ResolvedConfig): string | undefined {
  if (!config.caFile) return undefined;
  try {
    return readFileSync(config.caFile, "utf8");
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
    throw new CliError(
      `cannot read the CA file ${config.caFile} (from ${config.caFileSource}): ${why}`,
      "check --ca-file / FLOTILLA_CA_FILE; `FLOTILLA_HTTPS=1 npm start` writes its CA to <state folder>/tls/ca.crt",
    );
  }
}

/**
 * The admin token, or a usage error saying where to put one.
 *
 * @throws UsageError when no token is configured.
 */
export function requireToken(config: ResolvedConfig): string {
  if (config.token) return config.token;
  throw new UsageError(
    "no admin token: pass --token, set FLOTILLA_ADMIN_TOKEN, or put `token:` in the config file",
    `a local hub (\`npm start\`) keeps the admin token in ${path.join(path.relative(process.cwd(), localStateDir(process.env)) || ".", "admin-token")}`,
  );
}
