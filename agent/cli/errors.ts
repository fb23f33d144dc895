/**
 * The errors of the `flotilla` CLI. Each carries a one-line `hint` saying what to do next; the
 * command line prints `Error: <message>` and `Hint: <hint>` on stderr and exits with
 * `exitCode` (1 for failures, 2 for usage errors).
 */

/** Exit code of a failed command (the hub refused, timed out, could not be reached, ...). */
export const EXIT_FAILURE = 1;
/** Exit code of a usage error (bad flags or arguments, missing admin token). */
export const EXIT_USAGE = 2;

/** A failure the CLI reports as `Error: <message>` with an optional hint line. */
export class CliError extends Error {
  /**
   * @param message what went wrong (one line).
   * @param hint what to do next (one line), or undefined.
   * @param exitCode the process exit code (default {@link EXIT_FAILURE}).
   */
  constructor(
    message: string,
    readonly hint?: string,
    readonly exitCode: number = EXIT_FAILURE,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** A usage error (exit code 2), printed as `error: <message>` like commander's own. */
export class UsageError extends CliError {
  /** @param message what is wrong with the command line; @param hint what to do instead. */
  constructor(message: string, hint?: string) {
    super(message, hint, EXIT_USAGE);
    this.name = "UsageError";
  }
}

/**
 * A failure that was already reported (e.g. one cluster of several could not be accepted):
 * the CLI prints nothing more and exits with `exitCode`.
 */
export class ReportedFailure extends CliError {
  /** @param exitCode the process exit code (default 1). */
  constructor(exitCode: number = EXIT_FAILURE) {
    super("", undefined, exitCode);
    this.name = "ReportedFailure";
  }
}

/** One cause of a Kubernetes `Status` failure: the offending field and why. */
export interface StatusCause {
  field?: string;
  message?: string;
  reason?: string;
}

/** The Kubernetes `Status` object the hub answers on failure (only the fields the CLI reads). */
export interface KubeStatus {
  kind: "Status";
  code?: number;
  reason?: string;
  message?: string;
  details?: { name?: string; kind?: string; group?: string; causes?: StatusCause[] };
}

/** Whether `body` is a Kubernetes `Status` object. */
export function isStatus(body: unknown): body is KubeStatus {
  return typeof body === "object" && body !== null && (body as { kind?: unknown }).kind === "Status";
}

/**
 * The hub answered a request with an HTTP error and a `Status` object.
 * `code` is the HTTP status, `reason` the Kubernetes reason (NotFound, Conflict, ...).
 */
export class HubApiError extends CliError {
  /**
   * @param code HTTP status code (4xx/5xx).
   * @param status the Status object the hub answered (or a synthesised one).
   * @param hint what to do next.
   */
  constructor(
    readonly code: number,
    readonly status: KubeStatus,
    hint?: string,
  ) {
    super(messageOf(status, code), hint);
    this.name = "HubApiError";
  }

  /** The Kubernetes reason (e.g. `NotFound`), or `""` when the hub gave none. */
  get reason(): string {
    return this.status.reason ?? "";
  }

  /**
   * Whether the hub does not serve the resource type at all (a 404 not about a named object,
   * as for a kind this hub version lacks), as opposed to a missing object.
   */
  get resourceNotServed(): boolean {
    return this.code === 404 && !this.status.details?.name;
  }
}

function messageOf(status: KubeStatus, code: number): string {
  let msg = status.message || status.reason || `HTTP ${code}`;
  for (const c of status.details?.causes ?? []) {
    const line = c.field ? `${c.field}: ${c.message ?? c.reason ?? ""}` : (c.message ?? "");
    if (line && !msg.includes(c.message ?? line)) msg += `\n  ${line}`;
  }
  return msg;
}

/** The hub could not be reached (connection refused, DNS, TLS, timeout) or did not speak the API. */
export class HubUnreachableError extends CliError {
  /** @param message what failed; @param hint what to do next; @param code the Node error code (e.g. `ECONNREFUSED`), if any. */
  constructor(
    message: string,
    hint: string,
    readonly code?: string,
  ) {
    super(message, hint);
    this.name = "HubUnreachableError";
  }
}

/**
 * Renders an error for stderr: `Error: <message>` (or `error: <message>` for usage errors) and
 * a `Hint: <hint>` line when there is one. Unexpected errors (bugs) keep their stack.
 *
 * @returns the text to write, ending with a newline; `""` for a {@link ReportedFailure}.
 */
export function renderError(err: unknown): string {
  if (err instanceof ReportedFailure) return "";
  if (err instanceof CliError) {
    const head = err instanceof UsageError ? `error: ${err.message}` : `Error: ${err.message}`;
    return `${head}\n${err.hint ? `Hint: ${err.hint}\n` : ""}`;
  }
  const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
  return `Error: ${text}\nHint: this looks like a bug in flotilla; please report it with the command you ran\n`;
}
