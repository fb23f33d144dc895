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
import { microTime, type KubeObject } from "../k8s/meta.ts";
import { apiVersionOf, type KindDefinition } from "../k8s/kind.ts";
import { EventKind, type ObjectReference } from "../kinds/event.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { admitNamespace } from "../namespaces/lifecycle.ts";
import { clock } from "../clock.ts";
import { armEventExpiry } from "./expiry.ts";
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
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
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

/**
 * Records `specs` (see {@link recordEvent}) at `now` (epoch milliseconds), as one change's
 * transitions usually come (a join: joined, available, a taint removed): the Events of one
 * regarding object are read once, folded among themselves and the stored ones, and written
 * together in one D1 batch (src/store/d1/write.ts `writeStoredMany`); a write that lost a race with
 * another writer is recorded again on its own. An object whose namespace does not admit new
 * Events (gone or terminating) records none.
 * @throws errors of D1 (the caller's after-commit hook is then run again by the outbox sweep)
 */
export async function recordEvents(env: Env, specs: readonly EventSpec[], now = clock.now()): Promise<void> {
  const groups = new Map<string, EventSpec[]>();
  for (const spec of specs) {
    const key = `${eventNamespace(spec.regarding)}/${spec.regarding.name}`;
    groups.set(key, [...(groups.get(key) ?? []), spec]);
  }
  for (const group of groups.values()) {
    if (group.length === 1) {
      await recordEvent(env, group[0]!, now);
      continue;
    }
    await recordGroup(env, group, now);
  }
}

/** {@link recordEvents} for the specs of one regarding object. */
async function recordGroup(env: Env, specs: readonly EventSpec[], now: number): Promise<void> {
  const namespace = eventNamespace(specs[0]!.regarding);
  const stored = await eventsNamed(env, namespace, specs[0]!.regarding.name);
  /** Per Event to write: the stored one it folds into (null: a new one), what is written, which specs made it. */
  const writes: { known: KubeObject | null; body: KubeObject; specs: EventSpec[] }[] = [];
  for (const spec of specs) {
    const message = messageOf(spec);
    const planned = writes.find((w) => sameEvent(w.body, spec, message));
    const base = planned?.body ?? stored.find((e) => sameEvent(e, spec, message));
    if (!base) {
      writes.push({ known: null, body: newEvent(spec, namespace, message, now), specs: [spec] });
      continue;
    }
    const count = (typeof base.count === "number" ? base.count : 1) + 1;
    const folded: KubeObject = { ...base, count, lastTimestamp: seconds(now), series: { count, lastObservedTime: microTime(now) } };
    if (planned) {
      planned.body = folded;
      planned.specs.push(spec);
    } else writes.push({ known: base, body: folded, specs: [spec] });
  }
  if (writes.some((w) => w.known === null)) {
    try {
      await admitNamespace(env, EventKind, namespace, undefined, { verb: "create", body: {} }, () => Promise.resolve(false));
    } catch (e) {
      if (e instanceof ApiError && (e.code === 403 || e.code === 404)) return;
      throw e;
    }
  }
  const out = await admittedStoreOf(env, EventKind).writeMany(
    writes.map((w) =>
      w.known
        ? { namespace, name: w.known.metadata.name, req: { verb: "update" as const, body: w.body }, known: w.known }
        : { namespace, name: w.body.metadata.name, req: { verb: "create" as const, body: w.body }, known: null },
    ),
  );
  if (writes.some((w, i) => w.known === null && out[i] !== "lost")) await armEventExpiry(env);
  // Lost a race (another writer folded into the same Event first): each of its specs on its own.
  for (const [i, w] of writes.entries()) if (out[i] === "lost") for (const spec of w.specs) await recordEvent(env, spec, now);
}
