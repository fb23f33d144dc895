/**
 * Structured, one-line-per-event logging for the agent.
 *
 * Every line starts with an ISO-8601 timestamp and goes to stderr (stdout stays free for
 * command output). `text` lines look like
 * `2026-01-02T03:04:05.678Z INFO cluster accepted by hub cluster=c1`; `json` lines are
 * `{"time":"…","level":"info","msg":"cluster accepted by hub","cluster":"c1"}`.
 */

/** Output format of the agent's log lines: `text` (human) or `json` (one JSON object per line). */
export type LogFormat = "text" | "json";

/** Severity of a log line. */
export type LogLevel = "info" | "warn" | "error";

/** Extra key/value pairs attached to a log line (values are rendered with `String()` in text mode). */
export type LogFields = Record<string, string | number | boolean | undefined>;

/**
 * The logger the agent writes to. Each call writes exactly one line.
 *
 * @example
 * const log = createLogger({ format: "json" });
 * log.info("hub reachable again", { cluster: "c1" });
 */
export interface Logger {
  /** Logs a normal event. */
  info(msg: string, fields?: LogFields): void;
  /** Logs a recoverable problem (the agent keeps running). */
  warn(msg: string, fields?: LogFields): void;
  /** Logs a problem that usually ends the agent. */
  error(msg: string, fields?: LogFields): void;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** `text` (default) or `json`. */
  format?: LogFormat;
  /** Where lines go; default writes to `process.stderr`. Receives the line with its trailing newline. */
  write?: (line: string) => void;
  /** Clock, for tests; default `() => new Date()`. */
  now?: () => Date;
}

function renderValue(v: string | number | boolean): string {
  const s = String(v);
  return /[\s"=]/.test(s) || s === "" ? JSON.stringify(s) : s;
}

/**
 * Creates a {@link Logger}.
 *
 * @param options format, sink and clock; all optional.
 * @returns a logger writing one line per call; never throws (a failing sink is the caller's problem).
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? "text";
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const now = options.now ?? (() => new Date());
  const emit = (level: LogLevel, msg: string, fields: LogFields = {}): void => {
    const time = now().toISOString();
    const defined = Object.entries(fields).filter((e): e is [string, string | number | boolean] => e[1] !== undefined);
    if (format === "json") {
      write(JSON.stringify({ time, level, msg, ...Object.fromEntries(defined) }) + "\n");
      return;
    }
    const tail = defined.map(([k, v]) => ` ${k}=${renderValue(v)}`).join("");
    write(`${time} ${level.toUpperCase()} ${msg.replace(/\n/g, " ")}${tail}\n`);
  };
  return {
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
  };
}

/**
 * Tracks one ongoing condition (e.g. "hub unreachable") and logs only when it changes, so a
 * failure that repeats every second produces one line, and its end produces one more.
 *
 * @example
 * const hub = new ConditionLog(log, "hub reachable again");
 * hub.set("unreachable", "hub unreachable: ECONNREFUSED; retrying with backoff"); // logs
 * hub.set("unreachable", "hub unreachable: ECONNREFUSED; retrying with backoff"); // silent
 * hub.clear(); // logs "hub reachable again"
 */
export class ConditionLog {
  private current: string | null = null;

  /**
   * @param log the logger to write to.
   * @param recoveredMessage the line written by {@link clear} when a condition was active.
   */
  constructor(
    private readonly log: Logger,
    private readonly recoveredMessage: string,
  ) {}

  /** The key of the active condition, or `null` when all is well. */
  get active(): string | null {
    return this.current;
  }

  /**
   * Marks condition `key` as active; logs `message` (as a warning) only if `key` differs from
   * the active condition.
   */
  set(key: string, message: string, fields?: LogFields): void {
    if (this.current === key) return;
    this.current = key;
    this.log.warn(message, fields);
  }

  /** Ends the active condition, logging the recovery message once; silent when none is active. */
  clear(fields?: LogFields): void {
    if (this.current === null) return;
    this.current = null;
    this.log.info(this.recoveredMessage, fields);
  }
}
