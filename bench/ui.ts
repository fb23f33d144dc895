/**
 * `npm run bench:ui`: how fast the dashboard's first view loads on a large fleet. It starts a hub
 * (`wrangler dev`, scripts/hub-process.ts), creates BENCH_UI_CLUSTERS ManagedClusters (default
 * 2,000) directly through the API (accepted, labelled, with an edge location annotation), then
 * opens the dashboard in Debian's Chromium (playwright-core) and measures, in the page, the time
 * from the navigation's start (`performance.timeOrigin`) to the fleet view rendered: its first page
 * of clusters in the table and the fleet's total in the counts. BENCH_UI_RUNS navigations (default
 * 5: the first with an empty cache, the others as a reload). It prints each figure, the median, and
 * the requests the page made (its API requests, and its assets), to show the fleet is never listed
 * whole: one page of 100 clusters, a watch, `/metrics` for the counts; then the reads it makes
 * once the view is painted (each on-screen row's Lease).
 *
 *   BENCH_UI_CLUSTERS   clusters to create (default 2000)
 *   BENCH_UI_RUNS       navigations measured (default 5)
 */
import { chromium, type Page } from "playwright-core";
import { admin, startHub } from "../scripts/hub-process.ts";

const CLUSTERS = Number(process.env.BENCH_UI_CLUSTERS ?? 2000);
const RUNS = Number(process.env.BENCH_UI_RUNS ?? 5);
const CHROMIUM = process.env.FLOTILLA_CHROMIUM ?? "/usr/bin/chromium";
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const COLOS = ["AMS", "FRA", "IAD", "SJC", "NRT", "SIN", "GRU", "SYD"];
const CONCURRENCY = 8;
const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

const hub = await startHub();
try {
  const t0 = performance.now();
  let next = 0;
  const create = async () => {
    for (let i = next++; i < CLUSTERS; i = next++) {
      const name = `cluster-${String(i).padStart(4, "0")}`;
      const body = {
        apiVersion: "cluster.open-cluster-management.io/v1",
        kind: "ManagedCluster",
        metadata: { name, labels: { env: i % 3 === 0 ? "prod" : "dev", region: `r${i % 8}` }, annotations: { "flotilla.dev/colo": COLOS[i % COLOS.length]! } },
        spec: { hubAcceptsClient: true },
      };
      const r = await admin(hub, "POST", MC, body);
      if (r.status !== 201) throw new Error(`creating ${name}: ${r.status} ${JSON.stringify(r.body)}`);
      if ((i + 1) % 500 === 0) log(`${i + 1} clusters created`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, create));
  log(`${CLUSTERS} clusters created in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const assets: string[] = [];
  /** The page whose requests are recorded (the signed-in page keeps reading its rows' leases beside a fresh context's). */
  let measured: Page = page;
  const record = (pg: Page) =>
    pg.on("request", (r) => {
      if (pg === measured) assets.push(`${r.method()} ${new URL(r.url()).pathname}${new URL(r.url()).search}`);
    });
  record(page);
  // Sign in once; the token stays in the tab's sessionStorage across the measured navigations.
  await page.goto(`${hub.url}/ui`);
  await page.locator("#token").fill(hub.adminToken);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("tr[data-cluster]").first().waitFor({ timeout: 60_000 });
  const figures: number[] = [];
  let requests: string[] = [];
  let after: string[] = [];
  for (let run = 0; run < RUNS; run++) {
    assets.length = 0;
    const ctx = run === 0 ? await browser.newContext({ viewport: { width: 1280, height: 900 } }) : undefined;
    const p = ctx ? await ctx.newPage() : page;
    measured = p;
    if (ctx) {
      // A fresh context: an empty cache, as a first visit; signed in through sessionStorage before the measured navigation.
      record(p);
      await p.goto(`${hub.url}/version`);
      await p.evaluate(`sessionStorage.setItem("flotilla.token", ${JSON.stringify(JSON.stringify({ token: hub.adminToken, user: "flotilla:admin" }))})`);
      assets.length = 0;
    }
    // A full navigation each time (a new URL: a change of the fragment alone would not load the page).
    await p.goto(`${hub.url}/ui?run=${run}`);
    // In the page: the first page of rows and the fleet's total shown (the page's DOM, typed here by what it reads).
    await p.waitForFunction(
      ([rows, total]) => {
        const doc = (
          globalThis as unknown as {
            document: { querySelectorAll(s: string): { length: number }; querySelector(s: string): { textContent: string | null } | null };
          }
        ).document;
        return doc.querySelectorAll("tr[data-cluster]").length >= rows! && doc.querySelector(".card .big")?.textContent === String(total);
      },
      [Math.min(100, CLUSTERS), CLUSTERS],
      { timeout: 60_000, polling: "raf" },
    );
    const ms = (await p.evaluate("performance.now()")) as number;
    const total = await p.locator(".card .big").textContent();
    figures.push(ms);
    log(
      `run ${run + 1}${run === 0 ? " (empty cache)" : " (reload)"}: fleet view rendered ${ms.toFixed(0)} ms after navigation; ${await p.locator("tr[data-cluster]").count()} rows shown, fleet total ${total}`,
    );
    if (run === 0) {
      requests = [...assets];
      // What the page reads once its first view is painted: the leases of the rows on screen.
      await p.waitForTimeout(2000);
      after = assets.slice(requests.length);
    }
    if (ctx) await ctx.close();
  }
  await browser.close();
  const sorted = [...figures].sort((a, b) => a - b);
  console.log(
    `bench:ui: ${CLUSTERS} clusters; first view (navigation to the fleet view rendered): ${figures.map((f) => f.toFixed(0)).join(", ")} ms; median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, empty cache ${figures[0]!.toFixed(0)} ms`,
  );
  console.log(`requests the page made on its first view (${requests.length}):`);
  for (const r of requests) console.log(`  ${r}`);
  console.log(`requests in the 2 s after it was painted (${after.length}):`);
  for (const r of after) console.log(`  ${r}`);
} finally {
  await hub.stop();
}
