/**
 * The hub's own secrets in D1 (table `hub_secrets`: name, sealed value, created_at), e.g. the
 * generated ServiceAccount signing key (src/auth/serviceaccounts.ts seals and opens the values;
 * this module only speaks SQL).
 */

/** The stored (sealed) value of secret `name`, or undefined. @throws errors of D1 */
export async function readHubSecret(d1: D1Database, name: string): Promise<string | undefined> {
  return (await d1.prepare("SELECT value FROM hub_secrets WHERE name = ?").bind(name).first<{ value: string }>())?.value;
}

/** Stores `value` as secret `name` unless one is stored already (then nothing changes); `nowMs` is epoch milliseconds. @throws errors of D1 */
export async function insertHubSecret(d1: D1Database, name: string, value: string, nowMs: number): Promise<void> {
  await d1.prepare("INSERT INTO hub_secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING").bind(name, value, nowMs).run();
}

/** Replaces secret `name`'s value with `value` if it still is `expected` (a compare-and-set). @throws errors of D1 */
export async function replaceHubSecret(d1: D1Database, name: string, value: string, expected: string): Promise<void> {
  await d1.prepare("UPDATE hub_secrets SET value = ? WHERE name = ? AND value = ?").bind(value, name, expected).run();
}
