/**
 * One alarm owner for a Durable Object: a `timers` table of (purpose, due time) rows in the
 * object's SQLite and one {@link Timers.nextAlarm} that arms the object's single alarm at the
 * earliest of them, as cloudflare/agents' scheduler arbitrates one alarm among many schedules.
 * A feature of the object never calls `setAlarm` itself: it sets, moves or cancels its timer, and
 * the object's `alarm()` asks which timers are due ({@link Timers.due}) and runs their purposes.
 * A due time the object derives from what it stores (rather than keeps in this table) joins as
 * `also` of {@link Timers.nextAlarm}.
 *
 * The rows are named after the controller manifest's timers (src/timers.ts, src/controllers.ts);
 * {@link Timers.runDue} looks each due row's name up in the manifest's handlers, as cloudflare/
 * agents' alarm looks up a schedule's callback, so no object imports a feature to dispatch it.
 *
 * The object is the table's only writer, so the rows are kept in memory once read; a write goes
 * to SQLite only when a row changes. Used by every object that has timers: SchedulerObject,
 * ClusterObject and ReplicaSetObject.
 */
import { parseTimer, TIMER_RETRY_MS, type TimerContext, type TimerHandler } from "../src/timers.ts";

/** Creates the timers table (idempotent): `due` in epoch milliseconds, one row a purpose. */
export const TIMERS_SCHEMA = "CREATE TABLE IF NOT EXISTS timers (purpose TEXT PRIMARY KEY, due INTEGER NOT NULL);";

/** What {@link Timers} needs of a Durable Object's storage: its SQLite and its alarm. */
export type TimerStorage = Pick<DurableObjectStorage, "sql" | "getAlarm" | "setAlarm" | "deleteAlarm">;

/** The timers of one Durable Object (see the module's comment). */
export class Timers {
  /** The rows, purpose to due time (epoch milliseconds), once read. */
  private rows: Map<string, number> | null = null;
  /** The alarm as this object last set or read it (epoch milliseconds, null: none), undefined: unknown. */
  private armed: number | null | undefined = undefined;
  /** The due time the alarm was set for (the alarm itself is 1 ms from then for a due time in the past). */
  private armedFor: number | null = null;

  /**
   * @param storage the object's storage
   * @param now the clock (epoch milliseconds; src/clock.ts in the hub)
   * @param meter called with the rows each storage write wrote (an alarm set counts 1), for the
   *   objects that report their storage cost
   */
  constructor(
    private readonly storage: TimerStorage,
    private readonly now: () => number,
    private readonly meter: (rowsWritten: number) => void = () => undefined,
  ) {}

  /**
   * Whether the table exists in the object's SQLite (false in an object created before it was
   * added, until {@link create} runs).
   */
  exists(): boolean {
    return this.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'timers'").toArray().length > 0;
  }

  /** Creates the table (idempotent; again after a `deleteAll`) and forgets what was cached. */
  create(): void {
    this.storage.sql.exec(TIMERS_SCHEMA);
    this.rows = null;
    this.armed = undefined;
  }

  private load(): Map<string, number> {
    if (!this.rows) {
      this.rows = new Map(
        this.storage.sql
          .exec<{ purpose: string; due: number }>("SELECT purpose, due FROM timers")
          .toArray()
          .map((r) => [r.purpose, r.due]),
      );
    }
    return this.rows;
  }

  private write(query: string, ...bindings: unknown[]): void {
    this.meter(this.storage.sql.exec(query, ...bindings).rowsWritten);
  }

  /** The due time of `purpose` (epoch milliseconds), or null when it has no timer. */
  get(purpose: string): number | null {
    return this.load().get(purpose) ?? null;
  }

  /** Sets `purpose` to fire at `due` (epoch milliseconds), earlier or later than before. */
  set(purpose: string, due: number): void {
    const rows = this.load();
    if (rows.get(purpose) === due) return;
    this.write("INSERT INTO timers (purpose, due) VALUES (?, ?) ON CONFLICT (purpose) DO UPDATE SET due = excluded.due", purpose, due);
    rows.set(purpose, due);
  }

  /** Sets `purpose` to fire no later than `due` (epoch milliseconds): a later time changes nothing. */
  setEarlier(purpose: string, due: number): void {
    const current = this.get(purpose);
    if (current === null || due < current) this.set(purpose, due);
  }

  /** Removes the timer of `purpose`, if any. */
  cancel(purpose: string): void {
    const rows = this.load();
    if (!rows.has(purpose)) return;
    this.write("DELETE FROM timers WHERE purpose = ?", purpose);
    rows.delete(purpose);
  }

  /** The purposes whose timers are due at `now` (epoch milliseconds), earliest first. */
  due(now: number): string[] {
    return [...this.load()]
      .filter(([, due]) => due <= now)
      .sort((a, b) => a[1] - b[1])
      .map(([purpose]) => purpose);
  }

  /**
   * Runs the rows due at `now` (epoch milliseconds), earliest first, each by its timer's handler
   * in `handlers` (the manifest's `timersOf(object)`), except the rows named in `skip` (those the
   * object runs itself): a row is removed before its handler runs and set again at the time the
   * handler returns; a handler that throws is logged and its row set {@link TIMER_RETRY_MS} later.
   * A row whose timer has no handler is logged and removed.
   */
  async runDue(
    now: number,
    handlers: Readonly<Record<string, TimerHandler>>,
    ctx: Omit<TimerContext, "now" | "key">,
    skip: readonly string[] = [],
  ): Promise<void> {
    for (const purpose of this.due(now)) {
      if (skip.includes(purpose)) continue;
      const { timer, key } = parseTimer(purpose);
      const handler = handlers[timer];
      this.cancel(purpose);
      if (!handler) {
        console.error(`timers: no handler for the timer ${purpose}; removed`);
        continue;
      }
      try {
        const again = await handler({ ...ctx, now, key });
        if (typeof again === "number") this.setEarlier(purpose, again);
      } catch (e) {
        console.error(`timers: ${purpose} failed; trying again in a minute`, e);
        this.setEarlier(purpose, now + TIMER_RETRY_MS);
      }
    }
  }

  /** The earliest due time of all timers (epoch milliseconds), or null when there is none. */
  earliest(): number | null {
    let min: number | null = null;
    for (const due of this.load().values()) if (min === null || due < min) min = due;
    return min;
  }

  /**
   * To call when the alarm fired (at the start of `alarm()`): the platform removed it, so the
   * next {@link nextAlarm} sets it again.
   */
  fired(): void {
    this.armed = undefined;
  }

  /** Removes the alarm and forgets the rows, before the object's storage is erased (`deleteAll`; then {@link create}). */
  async reset(): Promise<void> {
    await this.storage.deleteAlarm();
    this.rows = null;
    this.armed = null;
    this.armedFor = null;
  }

  /**
   * Arms the object's one alarm at the earliest timer, or at `also` (epoch milliseconds, a due
   * time the object derives outside this table) when earlier; removes the alarm when there is
   * neither. A due time in the past arms the alarm 1 ms from now. Reads the alarm only when this
   * object has not set it since it started or since the alarm fired.
   *
   * `mode` "earlier" only ever brings the alarm forward (never later, never removed), for an
   * object whose purposes check at each alarm whether they are really due: a due time that
   * moves later at every request (a lease's expiry at each renewal) then costs no alarm write,
   * and the alarm that fires early finds it not yet due and arms again ("exact", after it fired).
   */
  async nextAlarm(also: number | null = null, mode: "exact" | "earlier" = "exact"): Promise<void> {
    const earliest = this.earliest();
    const target = earliest === null ? also : also === null ? earliest : Math.min(earliest, also);
    if (this.armed === undefined) {
      this.armed = await this.storage.getAlarm();
      this.armedFor = this.armed;
    }
    if (target === null) {
      if (mode === "earlier") return;
      if (this.armed !== null) await this.storage.deleteAlarm();
      this.armed = this.armedFor = null;
      return;
    }
    const at = Math.max(target, this.now() + 1);
    if (mode === "earlier" ? this.armed !== null && this.armed <= at : this.armed !== null && this.armedFor === target) return;
    await this.storage.setAlarm(at);
    this.meter(1);
    this.armed = at;
    this.armedFor = target;
  }
}
