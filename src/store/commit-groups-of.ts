/**
 * The isolate's {@link CommitGroups} of features above the store, one per D1 database: a feature
 * that groups its own writes per database, as the store's commits are grouped
 * (src/store/group-commit.ts; the Events recorder, src/events/record.ts), gets its groups here
 * without holding the binding itself. A test's other binding gets groups of its own.
 */
import type { Env } from "../env.ts";
import { CommitGroups } from "./group-commit.ts";

/** The groups made by {@link commitGroupsOf}, by D1 binding and name. */
const perDatabase = new WeakMap<D1Database, Map<string, CommitGroups<unknown, unknown>>>();

/** The isolate's {@link CommitGroups} named `name` for the D1 database of `env`, made by `make` on first use. */
export function commitGroupsOf<I, O>(env: Pick<Env, "DB">, name: string, make: () => CommitGroups<I, O>): CommitGroups<I, O> {
  let byName = perDatabase.get(env.DB);
  if (!byName) perDatabase.set(env.DB, (byName = new Map()));
  let groups = byName.get(name) as CommitGroups<I, O> | undefined;
  if (!groups) {
    groups = make();
    byName.set(name, groups as CommitGroups<unknown, unknown>);
  }
  return groups;
}
