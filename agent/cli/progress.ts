/**
 * Progress of a wait (`accept --wait`) on stderr. On a terminal, one line with a spinner that is
 * rewritten in place; elsewhere (pipes, CI logs), one plain line per change of the text, so
 * logs stay readable.
 */

/** Where progress goes: a writable stream such as `process.stderr`. */
export interface ProgressStream {
  /** Whether the stream is a terminal (the spinner is drawn only then). */
  isTTY?: boolean;
  write(text: string): unknown;
}

/** A running progress indicator. */
export interface Progress {
  /** Shows `text` as the current state (written only when it changed, off a terminal). */
  update(text: string): void;
  /** Ends, clearing the spinner line (the caller then prints the outcome). */
  stop(): void;
}

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  /** Redraw period of the spinner in milliseconds (default 100). */
  intervalMs?: number;
  /** Whether to draw the spinner (default: `stream.isTTY`). */
  tty?: boolean;
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const CLEAR_LINE = "\r\x1b[K";

/**
 * Starts a progress indicator on `stream`.
 *
 * @returns the indicator; call `stop` to end it (it then writes nothing more).
 */
export function createProgress(stream: ProgressStream, opts: ProgressOptions = {}): Progress {
  const tty = opts.tty ?? stream.isTTY === true;
  let text = "";
  let frame = 0;
  let ended = false;
  let timer: ReturnType<typeof setInterval> | undefined;
  const draw = (): void => void stream.write(`${CLEAR_LINE}${FRAMES[frame++ % FRAMES.length]} ${text}`);
  const end = (): void => {
    if (ended) return;
    ended = true;
    if (timer) clearInterval(timer);
    if (tty && text) stream.write(CLEAR_LINE);
  };
  return {
    update(next) {
      if (ended || next === text) return;
      text = next;
      if (!tty) {
        stream.write(`${next}\n`);
        return;
      }
      draw();
      if (!timer) {
        timer = setInterval(draw, opts.intervalMs ?? 100);
        timer.unref?.();
      }
    },
    stop: end,
  };
}
