/**
 * The test kit's dashboard pages (the hub's `/ui`, driven by Debian's Chromium through
 * playwright-core): signing in with a bearer token and taking screenshots. Node only.
 */
import { statSync } from "node:fs";
import path from "node:path";
import type { Page } from "playwright-core";
import { expect } from "vitest";

/**
 * Signs `p` in to the dashboard of the hub at `hubUrl` with `token` and waits, at most
 * `timeoutMs` milliseconds, until the page names `user` as the one signed in.
 * @throws a failed expectation when the page does not show `user` in time
 */
export async function signIn(p: Page, hubUrl: string, token: string, user: string, timeoutMs: number): Promise<void> {
  await p.goto(`${hubUrl}/ui`);
  await p.locator("#token").fill(token);
  await p.getByRole("button", { name: "Sign in" }).click();
  await expect.poll(() => p.locator(".user").textContent(), { timeout: timeoutMs }).toBe(user);
}

/**
 * Saves a full-page screenshot of `p` as `<dir>/<name>.png` and expects it to be larger than
 * 5,000 bytes (a blank page is smaller).
 */
export async function screenshot(dir: string, name: string, p: Page): Promise<void> {
  const file = path.join(dir, `${name}.png`);
  await p.screenshot({ path: file, fullPage: true });
  expect(statSync(file).size).toBeGreaterThan(5_000);
}
