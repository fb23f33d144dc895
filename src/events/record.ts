/**
 * The hub's Event recorder, after client-go's `tools/record` EventRecorder with its
 * EventCorrelator's aggregation of repeats: features call {@link recordEvent} on a transition
 * (never on a write that changes nothing, so an idle heartbeat records nothing), and the Event is
 * written through the store (src/store/store.ts) as every object is, so lists and watches of
 * core v1 and events.k8s.io/v1 `events` see it.
 *
 * Repeats fold: an Event of the same regarding object (kind, namespace, name, uid), reason,
 * type, reporting controller and message as one still stored becomes that Event again, its
 * `count` and `series.count` one more, `lastTimestamp` and `series.lastObservedTime` now (what
 * `kubectl describe` shows as "(x2 over 5m)"), instead of a new object. The one it folds into is
 * found among the regarding object's own Events only (their names start with the object's name,
 * as client-go names them `<name>.<hex unix nanoseconds>`): one range read of the primary key,
 * never a scan of all Events.
 *
 * Events live in the regarding object's namespace, or `default` for a cluster-scoped one (a
 * ManagedCluster's), as client-go's recorder places them. They expire
 * `FLOTILLA_EVENT_TTL_SECONDS` after their last write (src/events/expiry.ts).
 */
import { ApiError } from "../k8s/errors.ts";
import { microTime, rfc3339, type KubeObject } from "../k8s/meta.ts";
import { apiVersionOf, type KindDefinition } from "../k8s/kind.ts";
import { EventKind, type ObjectReference } from "../kinds/event.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { admitNamespaces } from "../namespaces/lifecycle.ts";
import { clock } from "../clock.ts";
import { armEventExpiry } from "./expiry.ts";
import { CommitGroups, commitGroupsOf } from "../store/group-commit.ts";
import type { Env } from "../env.ts";

/** An Event's type (core/v1 `EventTypeNormal`, `EventTypeWarning`). */
export type EventType = "Normal" | "Warning";

/**
 * What happened, as a feature reports it to {@link recordEvent}:
 * - `regarding`: the object it happened to (at least `kind`, `apiVersion`, `name`; `namespace`
 *   for a namespaced object; `uid` when known, which `kubectl describe` selects on);
 * - `reason`: UpperCamelCase, OCM's or Kubernetes' name where one exists (`ManagedClusterJoined`);
 * - `type`: `Normal`, or `Warning` for what needs attention;
 * - `message`: for people, at most 1 KiB of UTF-8 (longer is cut), never a secret or a payload;
 * - `reportingController`: the controller that saw it, named as OCM's
 *   (`managed-cluster-controller`); also the Event's `source.component`;
 * - `action`: what was done (events.k8s.io's `action`), default the reason.
 */
export interface EventSpec {
  regarding: ObjectReference & { kind: string; name: string };
  reason: string;
  type: EventType;
  message: string;
  reportingController: string;
  action?: string;
}

/** The `reportingInstance` of the hub's Events (events.k8s.io requires one). */
export const HUB_INSTANCE = "flotilla-hub";

/** The longest message kept, in bytes of UTF-8 (events.k8s.io's note limit is 1 KiB). */
const MESSAGE_LIMIT = 1024;

/** How many of a regarding object's newest Events are looked at to fold a repeat into. */
const FOLD_WINDOW = 64;

/** How many times a fold is tried again when another writer updated the Event first. */
const FOLD_ATTEMPTS = 5;

/** An RFC 3339 time with seconds (core/v1 `metav1.Time`), from epoch milliseconds. */
function seconds(ms: number): string {
  // src/k8s/meta.ts keeps the last second's text: a flush's Events share it.
  return rfc3339(ms);
}

/** The reference to `obj` of kind `def` an Event is about. */
export function refOf(def: KindDefinition, obj: KubeObject): EventSpec["regarding"] {
  return {
    kind: def.kind,
    apiVersion: apiVersionOf(def),
    name: obj.metadata.name,
    ...(def.namespaced ? { namespace: obj.metadata.namespace ?? "" } : {}),
    ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
  };
}

/** The namespace the Events of `ref` live in: its own, or `default` for a cluster-scoped object. */
export function eventNamespace(ref: ObjectReference): string {
  return ref.namespace || "default";
}

/**
 * The message of `spec` as stored: at most {@link MESSAGE_LIMIT} bytes of UTF-8, what
 * kube-apiserver's Event validation measures (`len(event.Message)`), cut on a character boundary.
 */
function messageOf(spec: EventSpec): string {
  // A UTF-16 code unit is at most 3 bytes of UTF-8: a message this short fits, unencoded.
  if (spec.message.length * 3 <= MESSAGE_LIMIT) return spec.message;
  const encoder = new TextEncoder();
  if (encoder.encode(spec.message).length <= MESSAGE_LIMIT) return spec.message;
  let out = "";
  let bytes = 0;
  for (const ch of spec.message) {
    const n = encoder.encode(ch).length;
    if (bytes + n > MESSAGE_LIMIT - 3) break;
    out += ch;
    bytes += n;
  }
  return `${out}...`;
}

/** Whether stored Event `e` is a repeat of `spec` (same object, reason, type, controller, message). */
function sameEvent(e: KubeObject, spec: EventSpec, message: string): boolean {
  const ref = (e.involvedObject ?? {}) as ObjectReference;
  const r = spec.regarding;
  return (
    ref.kind === r.kind &&
    (ref.name ?? "") === r.name &&
    (ref.namespace ?? "") === (r.namespace ?? "") &&
    (ref.uid ?? "") === (r.uid ?? "") &&
    e.reason === spec.reason &&
    e.type === spec.type &&
    e.message === message &&
    ((e.source as { component?: string } | undefined)?.component ?? e.reportingComponent) === spec.reportingController
  );
}

/** The newest stored Events whose names start with `<name>.` in `namespace` (a range of the primary key). */
function eventsNamed(env: Env, namespace: string, name: string): Promise<KubeObject[]> {
  return admittedStoreOf(env, EventKind).listNameRange(namespace, `${name}.`, `${name}/`, FOLD_WINDOW);
}

/** The sub-millisecond part of the next Event name this isolate makes (so that names made in one millisecond keep their order). */
let sequence = Math.floor(Math.random() * 1_000_000);

/**
 * client-go's Event name: `<object name>.<unix nanoseconds in hex>`, the sub-millisecond part a
 * counter of the isolate (names of one object sort in the order the Events were made).
 */
function eventName(objectName: string, now: number): string {
  sequence = (sequence + 1) % 1_000_000;
  const nanos = BigInt(now) * 1_000_000n + BigInt(sequence);
  return `${objectName}.${nanos.toString(16)}`;
}

/** The stored (core v1) Event of a first occurrence of `spec` at `now` (epoch milliseconds). */
function newEvent(spec: EventSpec, namespace: string, message: string, now: number): KubeObject {
  const r = spec.regarding;
  const involvedObject: ObjectReference = { kind: r.kind, name: r.name };
  if (r.namespace) involvedObject.namespace = r.namespace;
  if (r.uid) involvedObject.uid = r.uid;
  if (r.apiVersion) involvedObject.apiVersion = r.apiVersion;
  if (r.resourceVersion) involvedObject.resourceVersion = r.resourceVersion;
  if (r.fieldPath) involvedObject.fieldPath = r.fieldPath;
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: eventName(r.name, now), namespace, uid: "", resourceVersion: "", creationTimestamp: "" },
    involvedObject,
    reason: spec.reason,
    message,
    source: { component: spec.reportingController },
    firstTimestamp: seconds(now),
    lastTimestamp: seconds(now),
    count: 1,
    type: spec.type,
    eventTime: microTime(now),
    action: spec.action ?? spec.reason,
    reportingComponent: spec.reportingController,
    reportingInstance: HUB_INSTANCE,
  };
}

/**
 * Records `spec` (see {@link EventSpec}) at `now` (epoch milliseconds, default the hub's clock):
 * folds it into the stored Event it repeats (count + 1, lastTimestamp and series now), else
 * creates a new one. Returns the stored core v1 Event, or null when the Event's namespace does
 * not admit it (gone or terminating: the object it is about is going too), which is not an error.
 * One D1 range read and one write (a new Event also arms the expiry timer, at most once per TTL
 * per isolate: src/events/expiry.ts); a fold that loses a race with another writer of the same
 * Event reads again (a few times).
 * @throws errors of D1 (the caller's after-commit hook is then run again by the outbox sweep)
 */
export async function recordEvent(env: Env, spec: EventSpec, now = clock.now()): Promise<KubeObject | null> {
  const namespace = eventNamespace(spec.regarding);
  const message = messageOf(spec);
  const events = admittedStoreOf(env, EventKind);
  try {
    for (let attempt = 1; ; attempt++) {
      const repeat = (await eventsNamed(env, namespace, spec.regarding.name)).find((e) => sameEvent(e, spec, message));
      if (!repeat) {
        const body = newEvent(spec, namespace, message, now);
        try {
          const created = (await events.write(namespace, body.metadata.name, { verb: "create", body })).object;
          await armEventExpiry(env);
          return created;
        } catch (e) {
          // Another isolate made an Event of the same name in the same nanosecond slot: a new name.
          if (e instanceof ApiError && e.reason === "AlreadyExists" && attempt < FOLD_ATTEMPTS) continue;
          throw e;
        }
      }
      const count = (typeof repeat.count === "number" ? repeat.count : 1) + 1;
      const folded: KubeObject = { ...repeat, count, lastTimestamp: seconds(now), series: { count, lastObservedTime: microTime(now) } };
      try {
        return (await events.write(namespace, repeat.metadata.name, { verb: "update", body: folded }, { known: repeat })).object;
      } catch (e) {
        if (!(e instanceof ApiError && (e.reason === "Conflict" || e.reason === "NotFound") && attempt < FOLD_ATTEMPTS)) throw e;
      }
    }
  } catch (e) {
    // NamespaceLifecycle: the namespace is gone or terminating (403 Forbidden / 404 NotFound).
    if (e instanceof ApiError && (e.code === 403 || e.code === 404)) return null;
    throw e;
  }
}

/** Most callers' Events one flush of {@link recordEvents} takes (their fold lookups are one D1 call). */
export const TOGETHER_MAX_CALLS = 100;

/** One caller's Events waiting to be recorded with others': its environment, what, and when (epoch milliseconds). */
interface Pending {
  env: Env;
  specs: readonly EventSpec[];
  now: number;
}

/** The name of the isolate's groups of Events recorded together (one per D1 database: src/store/group-commit.ts `commitGroupsOf`). */
const TOGETHER = "events";

/** This isolate's groups of Events recorded together for the database of `env`. */
function togetherOf(env: Env): CommitGroups<Pending, true> {
  return commitGroupsOf(env, TOGETHER, () => new CommitGroups<Pending, true>(flushTogether, TOGETHER_MAX_CALLS));
}

/**
 * Records `specs` (see {@link recordEvent}) at `now` (epoch milliseconds), together with the
 * Events other callers of this isolate record meanwhile (an agent's reports arriving together,
 * across clusters: each report's commit owes its `ManifestWorkApplied`), as group commit does
 * (src/store/group-commit.ts): a call that finds no flush in flight goes at once; calls that
 * arrive while one is in flight go in the next, up to {@link TOGETHER_MAX_CALLS} callers. One flush
 * reads the Events of every regarding object it concerns in one D1 call (one range read of the
 * primary key per object, batched: `Store.listNameRanges`), folds each spec among them and the
 * ones planned before it (the same object, reason, type, controller and message: count + 1,
 * lastTimestamp and series at the latest of their times), checks NamespaceLifecycle for the
 * namespaces that get a new Event (those not read within a second, in one D1 call), and writes them all through `Store.writeMany` (50 to a D1
 * batch, each with its own precondition: a fold committed on a stale read is refused, never
 * written over a newer count, and recorded again on its own on a fresh read). An object whose
 * namespace does not admit new Events (gone or terminating) gets no new one.
 *
 * Resolves once this caller's Events are committed, so an after-commit hook that calls it keeps
 * its outbox row until then: an isolate that dies before the flush leaves the row, and the sweep
 * records the Events again (src/events/controller.ts). A flush that fails as a whole is made again
 * for each caller alone, and a caller whose own flush fails gets its error.
 * @throws errors of D1 (the caller's after-commit hook is then run again by the outbox sweep)
 */
export async function recordEvents(env: Env, specs: readonly EventSpec[], now = clock.now()): Promise<void> {
  if (specs.length === 0) return;
  await togetherOf(env).run({ env, specs, now });
}

/** The flushes of {@link recordEvents} made so far in this isolate for the database of `env`, and the callers they carried (for tests and benchmarks). */
export function recordedTogether(env: Env): { calls: number; items: number } {
  return togetherOf(env).counts;
}

/** One flush of {@link recordEvents}: the specs of `items`, recorded together. */
async function flushTogether(items: Pending[]): Promise<true[]> {
  await recordAll(
    items[0]!.env,
    items.flatMap((i) => i.specs.map((spec) => ({ spec, now: i.now }))),
  );
  return items.map(() => true);
}

/** A spec to record and its time (epoch milliseconds). */
interface Timed {
  spec: EventSpec;
  now: number;
}

/** An Event to write: the stored one it folds into (null: a new one), its namespace, what is written, its time (epoch ms), which specs made it. */
interface PlannedWrite {
  namespace: string;
  known: KubeObject | null;
  body: KubeObject;
  at: number;
  made: Timed[];
}

/** `base` folded once more at `now` (epoch milliseconds): count + 1, lastTimestamp and series now. */
function foldedOnce(base: KubeObject, now: number): KubeObject {
  const count = (typeof base.count === "number" ? base.count : 1) + 1;
  return { ...base, count, lastTimestamp: seconds(now), series: { count, lastObservedTime: microTime(now) } };
}

/** {@link recordEvents}' flush: `entries` read, folded and written together (see there). */
async function recordAll(env: Env, entries: readonly Timed[]): Promise<void> {
  const objects = new Map<string, { namespace: string; name: string; entries: Timed[] }>();
  for (const e of entries) {
    const namespace = eventNamespace(e.spec.regarding);
    const key = `${namespace}/${e.spec.regarding.name}`;
    const o = objects.get(key);
    if (o) o.entries.push(e);
    else objects.set(key, { namespace, name: e.spec.regarding.name, entries: [e] });
  }
  const store = admittedStoreOf(env, EventKind);
  const list = [...objects.values()];
  const stored = await store.listNameRanges(list.map((o) => ({ namespace: o.namespace, from: `${o.name}.`, to: `${o.name}/`, limit: FOLD_WINDOW })));
  const writes: PlannedWrite[] = [];
  list.forEach((o, i) => {
    const mine: PlannedWrite[] = [];
    for (const e of o.entries) {
      const message = messageOf(e.spec);
      const planned = mine.find((w) => sameEvent(w.body, e.spec, message));
      if (planned) {
        planned.at = Math.max(planned.at, e.now);
        planned.body = foldedOnce(planned.body, planned.at);
        planned.made.push(e);
        continue;
      }
      const repeat = stored[i]!.find((ev) => sameEvent(ev, e.spec, message));
      if (repeat) mine.push({ namespace: o.namespace, known: repeat, body: foldedOnce(repeat, e.now), at: e.now, made: [e] });
      else mine.push({ namespace: o.namespace, known: null, body: newEvent(e.spec, o.namespace, message, e.now), at: e.now, made: [e] });
    }
    writes.push(...mine);
  });
  // NamespaceLifecycle for the namespaces that get a new Event, read together (updates of stored Events pass).
  const refused = await admitNamespaces(
    env,
    EventKind,
    writes.filter((w) => w.known === null).map((w) => w.namespace),
  );
  const admitted = writes.filter((w) => w.known !== null || !refused.has(w.namespace));
  const out = await store.writeMany(
    admitted.map((w) =>
      w.known
        ? { namespace: w.namespace, name: w.known.metadata.name, req: { verb: "update" as const, body: w.body }, known: w.known }
        : { namespace: w.namespace, name: w.body.metadata.name, req: { verb: "create" as const, body: w.body }, known: null },
    ),
  );
  if (admitted.some((w, i) => w.known === null && out[i] !== "lost")) await armEventExpiry(env);
  // Lost a race (another writer folded into the same Event first, or took its name): each of its specs on its own.
  for (const [i, w] of admitted.entries()) if (out[i] === "lost") for (const e of w.made) await recordEvent(env, e.spec, e.now);
}
