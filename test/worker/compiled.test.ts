/**
 * Statements drizzle renders once and D1 runs with each call's values (src/db/compiled.ts): the
 * same rows as drizzle's own query, placeholders filled by name wherever they repeat, constants
 * kept, and a missing value refused rather than bound as NULL.
 */
import { env } from "cloudflare:workers";
import { and, eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { bind, builder, compile, compiled } from "../../src/db/compiled.ts";
import { labels } from "../../src/db/schema.ts";
import { database } from "../../src/store/d1/objects.ts";

const p = sql.placeholder;

describe("compiled statements", () => {
  it("answer as drizzle's query does, with placeholders filled by name", async () => {
    const db = database(env.DB);
    await db.insert(labels).values([
      { resource: "test/things", namespace: "a", name: "one", key: "env", value: "prod" },
      { resource: "test/things", namespace: "a", name: "two", key: "env", value: "dev" },
      { resource: "test/things", namespace: "b", name: "one", key: "env", value: "prod" },
    ]);
    const shape = compiled(() =>
      builder
        .select({ namespace: labels.namespace, name: labels.name })
        .from(labels)
        .where(and(eq(labels.resource, "test/things"), eq(labels.value, p("value")), sql`${labels.namespace} >= ${p("from")}`))
        .orderBy(labels.namespace, labels.name),
    );
    expect(shape()).toBe(shape()); // rendered once
    const rows = (await bind(env.DB, shape(), { value: "prod", from: "a" }).all()).results;
    const viaDrizzle = await db
      .select({ namespace: labels.namespace, name: labels.name })
      .from(labels)
      .where(and(eq(labels.resource, "test/things"), eq(labels.value, "prod"), sql`${labels.namespace} >= ${"a"}`))
      .orderBy(labels.namespace, labels.name);
    expect(rows).toEqual(viaDrizzle);
    expect(rows).toEqual([
      { namespace: "a", name: "one" },
      { namespace: "b", name: "one" },
    ]);
    // The constant "test/things" stays in the shape; the placeholders change per call.
    expect((await bind(env.DB, shape(), { value: "dev", from: "a" }).all()).results).toEqual([{ namespace: "a", name: "two" }]);
  });

  it("refuses a call that lacks a placeholder's value", () => {
    const shape = compile(
      builder
        .select({ name: labels.name })
        .from(labels)
        .where(eq(labels.key, p("key"))),
    );
    expect(() => bind(env.DB, shape, {})).toThrow(/no value for placeholder key/);
  });
});
