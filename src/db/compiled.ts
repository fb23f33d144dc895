/**
 * Statements drizzle builds once and D1 runs many times. drizzle's query builder costs more CPU
 * than the D1 call it prepares (measured in `npm run bench:propagation` with `BENCH_CPU_PROFILE`:
 * about a fifth of the hub isolate's time went to building the same few statements again for
 * every write), so the hot paths (a read by key, a commit) build each statement's shape once per
 * isolate with `sql.placeholder(...)` for its values, keep drizzle's SQL text, and bind each
 * call's values straight onto a D1 prepared statement.
 *
 * @example
 * const byName = compiled(() => builder.select({ body: objects.body }).from(objects).where(eq(objects.name, sql.placeholder("name"))));
 * const rows = (await bind(env.DB, byName(), { name: "a" }).all()).results;
 */
import { is, Param, Placeholder } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { d1Limits } from "../store/d1/limits.ts";

/** A drizzle handle with no database behind it: it only renders the statements compiled here. */
export const builder = drizzle({} as D1Database);

/** A query drizzle can render: a query builder, or anything with `toSQL()`. */
export interface Renderable {
  toSQL(): { sql: string; params: unknown[] };
}

/** A statement's SQL text and, per `?`, the placeholder name it takes its value from or a constant. */
export interface CompiledStatement {
  readonly sql: string;
  readonly slots: readonly ({ name: string } | { value: unknown })[];
}

/**
 * Renders `build()`'s query once and returns its text and parameter slots. Parameters that are
 * `sql.placeholder(name)` (bare, or inside a column's `Param`) are filled per call by
 * {@link bind}; any other parameter is a constant of the shape.
 * @throws Error when a placeholder sits in a `Param` whose column encodes values (the encoding
 *   would be skipped: such columns take a constant or a raw `sql` value)
 */
export function compile(query: Renderable): CompiledStatement {
  const { sql, params } = query.toSQL();
  const slots = params.map((p) => {
    if (is(p, Placeholder)) return { name: p.name };
    if (is(p, Param) && is(p.value, Placeholder)) {
      const encoder = p.encoder as { mapToDriverValue?: (v: unknown) => unknown } | undefined;
      if (encoder?.mapToDriverValue && encoder.mapToDriverValue("x") !== "x")
        throw new Error(`compile: placeholder ${p.value.name} needs its column's encoding`);
      return { name: p.value.name };
    }
    return { value: p };
  });
  return { sql, slots };
}

/**
 * A statement shape built on first use and kept for the isolate's life: `build` runs once.
 * @returns a function giving the compiled statement
 */
export function compiled(build: () => Renderable): () => CompiledStatement {
  let done: CompiledStatement | undefined;
  return () => (done ??= compile(build()));
}

/**
 * A D1 prepared statement for `statement` with `values` bound by placeholder name.
 * @throws Error when a placeholder has no value in `values` (undefined; null binds SQL NULL), or
 *   when the statement has more bound parameters or longer text than D1 runs (100, 100,000 bytes:
 *   src/store/d1/limits.ts; the local D1 would run the longer text, production D1 would not)
 */
export function bind(d1: D1Database, statement: CompiledStatement, values: Readonly<Record<string, unknown>>): D1PreparedStatement {
  const limits = d1Limits();
  if (statement.slots.length > limits.boundParameters || statement.sql.length > limits.statementBytes)
    throw new Error(`bind: ${statement.slots.length} parameters and ${statement.sql.length} bytes of SQL pass D1's limits: ${statement.sql.slice(0, 200)}`);
  const args = statement.slots.map((s) => {
    if (!("name" in s)) return s.value;
    const v = values[s.name];
    if (v === undefined) throw new Error(`bind: no value for placeholder ${s.name} in ${statement.sql}`);
    return v;
  });
  return d1.prepare(statement.sql).bind(...args);
}
