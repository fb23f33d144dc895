/**
 * What a command's action gets: output sinks, the resolved configuration, a lazily created hub
 * client, the clock and progress indicators. Built from the command's flags (global flags
 * included) by the command line.
 */
import type { Command } from "commander";
import { HubClient } from "./client.ts";
import { resolveConfig, type GlobalFlags, type ResolvedConfig } from "./config.ts";
import { createProgress, type Progress, type ProgressStream } from "./progress.ts";

/** The process's output: results go to `stdout`, errors, warnings and progress to `stderr`. */
export interface Io {
  stdout: ProgressStream;
  stderr: ProgressStream;
  env: NodeJS.ProcessEnv;
}

/** The context of one command's action. */
export interface CommandContext {
  /** Writes command output (stdout). */
  out(text: string): void;
  /** Writes a warning or note (stderr). */
  warn(text: string): void;
  /** The hub URL, token and CA, resolved from flags, environment and config file. */
  readonly config: ResolvedConfig;
  /**
   * The hub client (created on first use).
   * @throws UsageError when no admin token is configured; CliError when the CA file is unreadable.
   */
  client(): HubClient;
  /** Epoch milliseconds. */
  now(): number;
  /** Starts a progress indicator on stderr. */
  progress(): Progress;
  /** Pause between polls of `--wait`, in milliseconds. */
  readonly pollIntervalMs: number;
}

/**
 * Builds the context of `cmd`'s action from its flags and those of its parents.
 *
 * @throws UsageError / CliError from {@link resolveConfig}.
 */
export function contextFor(cmd: Command, io: Io): CommandContext {
  const flags = cmd.optsWithGlobals<GlobalFlags>();
  const config = resolveConfig(flags, io.env);
  let client: HubClient | undefined;
  return {
    out: (text) => void io.stdout.write(text),
    warn: (text) => void io.stderr.write(text),
    config,
    client: () => (client ??= new HubClient(config)),
    now: () => Date.now(),
    progress: () => createProgress(io.stderr),
    pollIntervalMs: 1000,
  };
}
