/**
 * `flotilla audit`: the hub's audit log (`flotilla.dev/v1alpha1` AuditEvents, readable by
 * cluster-admins): who wrote what, what was denied (403) and which authentications failed (401),
 * oldest first, as a table (TIME, USER, VERB, RESOURCE, OBJECT, CODE) or `-o json|yaml`.
 *
 * ```
 * flotilla audit [--user U] [--verb V] [--resource R] [-n NS] [--since 1h] [--watch] [-o json|yaml]
 * ```
 *
 * The filters become the AuditEvents field selectors `user.username`, `verb`,
 * `objectRef.resource`, `objectRef.namespace` and `requestReceivedTimestamp>=` (now minus
 * `--since`); the list is read in pages of {@link PAGE}. `--watch` then follows the log (a watch
 * from the list's resourceVersion, renewed every {@link WATCH_ROUND_SECONDS} seconds) until
 * interrupted, printing one line per new event (one JSON object a line with `-o json`).
 */
import { Command, Option } from "commander";
import type { CommandContext } from "../context.ts";
import { UsageError } from "../errors.ts";
import { OUTPUT_FORMATS, renderObject, renderTable, type OutputFormat } from "../output.ts";
import { Paths, type KubeObject } from "../resources.ts";
import { parseDuration } from "../time.ts";

/** Events read per request of the list. */
const PAGE = 500;
/** How long one watch request of `--watch` lasts, in seconds (below the transport's 30 s timeout). */
const WATCH_ROUND_SECONDS = 20;

/** The options of `audit`. */
interface AuditOptions {
  user?: string;
  verb?: string;
  resource?: string;
  namespace?: string;
  since?: string;
  watch?: boolean;
  output?: OutputFormat;
}

/** An AuditEvent as the hub serves it (the fields printed here). */
interface AuditEvent extends KubeObject {
  requestReceivedTimestamp?: string;
  verb?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; apiGroup?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
}

interface AuditList {
  metadata: { resourceVersion?: string; continue?: string };
  items: AuditEvent[];
}

const HEADERS = ["TIME", "USER", "VERB", "RESOURCE", "OBJECT", "CODE"];

/** One table row: every cell one word, `-` when empty. */
function row(e: AuditEvent): string[] {
  const ref = e.objectRef ?? {};
  const resource = ref.resource ? `${ref.resource}${ref.subresource ? `/${ref.subresource}` : ""}${ref.apiGroup ? `.${ref.apiGroup}` : ""}` : "";
  const object = ref.name ? (ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name) : ref.namespace ? `${ref.namespace}/` : "";
  const time = (e.requestReceivedTimestamp ?? "").replace(/\.\d+Z$/, "Z");
  return [time, e.user?.username ?? "", e.verb ?? "", resource, object, String(e.responseStatus?.code ?? "")].map((c) => c || "-");
}

/**
 * The field selector of the options, at `nowMs` (epoch milliseconds).
 * @throws UsageError for a `--since` that is not a duration, or a value holding a comma
 */
export function auditFieldSelector(opts: AuditOptions, nowMs: number): string | undefined {
  const parts: string[] = [];
  for (const [field, value] of [
    ["user.username", opts.user],
    ["verb", opts.verb],
    ["objectRef.resource", opts.resource],
    ["objectRef.namespace", opts.namespace],
  ] as const) {
    if (value === undefined) continue;
    if (value.includes(",")) throw new UsageError(`${field}: one value only, without commas`, "run the command once per value");
    parts.push(`${field}=${value}`);
  }
  if (opts.since !== undefined) {
    let seconds: number;
    try {
      seconds = parseDuration(opts.since);
    } catch (e) {
      throw new UsageError(`--since: ${(e as Error).message}`);
    }
    parts.push(`requestReceivedTimestamp>=${new Date(nowMs - seconds * 1000).toISOString()}`);
  }
  return parts.length > 0 ? parts.join(",") : undefined;
}

async function audit(ctx: CommandContext, opts: AuditOptions): Promise<void> {
  const fieldSelector = auditFieldSelector(opts, ctx.now());
  const client = ctx.client();
  const hints = { notServed: "this hub does not serve AuditEvents (flotilla.dev/v1alpha1) yet; update the hub to a version that does" };
  const items: AuditEvent[] = [];
  let resourceVersion = "0";
  let next: string | undefined;
  do {
    const page = await client.get<AuditList>(Paths.auditEvents(), { query: { fieldSelector, limit: String(PAGE), continue: next }, hints });
    items.push(...page.items);
    next = page.metadata.continue;
    // The first page's version: a watch from it misses nothing recorded since.
    if (resourceVersion === "0") resourceVersion = page.metadata.resourceVersion ?? "0";
  } while (next);
  if (opts.output === "json" && opts.watch) for (const e of items) ctx.out(`${JSON.stringify(e)}\n`);
  else if (opts.output)
    ctx.out(renderObject({ apiVersion: "flotilla.dev/v1alpha1", kind: "AuditEventList", metadata: { resourceVersion }, items }, opts.output));
  else if (items.length > 0 || opts.watch) ctx.out(renderTable(HEADERS, items.map(row)));
  else ctx.warn("No audit events found.\n");
  if (!opts.watch) return;
  let rv = Math.max(Number(resourceVersion), ...items.map((e) => Number(e.metadata.resourceVersion ?? 0)));
  for (;;) {
    const events = await client.watchEvents<AuditEvent>(Paths.auditEvents(), {
      query: { fieldSelector, resourceVersion: String(rv), timeoutSeconds: String(WATCH_ROUND_SECONDS) },
      hints,
    });
    for (const ev of events) {
      if (ev.type === "ERROR") throw new UsageError(`the watch ended: ${(ev.object as { message?: string }).message ?? "error"}`, "run the command again");
      if (ev.type !== "ADDED") continue;
      rv = Math.max(rv, Number(ev.object.metadata.resourceVersion ?? 0));
      if (opts.output === "json") ctx.out(`${JSON.stringify(ev.object)}\n`);
      else if (opts.output === "yaml") ctx.out(`---\n${renderObject(ev.object, "yaml")}`);
      else ctx.out(`${row(ev.object).join("   ")}\n`);
    }
  }
}

/**
 * Adds `audit` to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerAudit(program: Command, context: (cmd: Command) => CommandContext): void {
  program
    .command("audit")
    .description("Show the hub's audit log: writes, denied requests (403) and failed authentications (401)")
    .option("--user <name>", "only this user's requests (user.username)")
    .option("--verb <verb>", "only this verb (create, update, patch, delete, deletecollection, list, get, ...)")
    .option("--resource <plural>", "only this resource, e.g. placements, secrets")
    .option("-n, --namespace <ns>", "only requests on objects of this namespace")
    .option("--since <duration>", "only events received within this duration, e.g. 90s, 1h, 2d")
    .option("-w, --watch", "after the list, print new events as they are recorded, until interrupted")
    .addOption(new Option("-o, --output <format>", "print the events as json or yaml instead of a table").choices(OUTPUT_FORMATS))
    .addHelpText("after", "\nReads are not recorded. Needs a cluster-admin's credential (the admin token).")
    .action((opts: AuditOptions, cmd: Command) => audit(context(cmd), opts));
}
