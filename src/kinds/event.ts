/**
 * Kubernetes Events, served as kube-apiserver serves them: core `v1` `events` (the stored form)
 * and `events.k8s.io/v1` `events`, the same objects through both, each converted on the way in and
 * out (Kubernetes' `pkg/apis/events/v1/conversion.go`, `pkg/registry/core/event/strategy.go`):
 *
 * | core v1                    | events.k8s.io/v1                                  |
 * |----------------------------|---------------------------------------------------|
 * | involvedObject             | regarding                                         |
 * | message                    | note                                              |
 * | source                     | deprecatedSource                                  |
 * | firstTimestamp             | deprecatedFirstTimestamp                          |
 * | lastTimestamp              | deprecatedLastTimestamp                           |
 * | count                      | deprecatedCount                                   |
 * | reportingComponent         | reportingController                               |
 * | eventTime, series, action, reason, related, type, reportingInstance: the same   |
 *
 * Namespaced, short name `ev`. Field selectors (kube-apiserver's `event.ToSelectableFields`):
 * `metadata.name`, `metadata.namespace`, `involvedObject.{kind,namespace,name,uid,apiVersion,
 * resourceVersion,fieldPath}`, `reason`, `reportingComponent`, `source`, `type`; through
 * events.k8s.io the same fields of `regarding.*`, `reportingController`, `deprecatedSource`
 * instead. `kubectl get events` prints LAST SEEN, TYPE, REASON, OBJECT, MESSAGE (and with
 * `-o wide` SUBOBJECT, SOURCE, FIRST SEEN, COUNT, NAME), kube-apiserver's printer columns.
 *
 * Validation as kube-apiserver's (`pkg/apis/core/validation/events.go`): every Event passes
 * `legacyValidateEvent` (without `eventTime`, `involvedObject.namespace` is the Event's namespace,
 * or empty for an Event in `default`; with `eventTime`, `reportingController`, `reportingInstance`,
 * `action` and `reason` are required, at most 128 characters, the message at most 1,024); through
 * events.k8s.io/v1 a create also needs `eventTime`, a `type` of `Normal` or `Warning`, the
 * `deprecated*` fields unset and a valid `series`, and an update may change only the series (and
 * metadata). Timestamps decode as metav1.Time (`firstTimestamp`, `lastTimestamp`) and MicroTime
 * (`eventTime`, `series.lastObservedTime`, six fractional digits) do, stored in their canonical
 * UTC form; a malformed one is 400 BadRequest (src/k8s/timestamps.ts). Events expire
 * `FLOTILLA_EVENT_TTL_SECONDS` after their last write
 * (src/events/expiry.ts). The hub records its own with src/events/record.ts.
 */
import { z } from "zod";
import { badRequest, type StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, PrinterColumn } from "../k8s/kind.ts";
import { ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";
import { humanDuration } from "../k8s/duration.ts";
import { canonicalJson } from "../k8s/canonical-json.ts";
import { clock } from "../clock.ts";
import { parseKubeTime } from "../k8s/timestamps.ts";
import { fieldInvalid, fieldRequired, isQualifiedName, utf8Length } from "../k8s/validation.ts";

/** core/v1 ObjectReference (an Event's `involvedObject`, `related`; events.k8s.io's `regarding`). */
export const ObjectReferenceSchema = z.strictObject({
  kind: z.string().optional(),
  namespace: z.string().optional(),
  name: z.string().optional(),
  uid: z.string().optional(),
  apiVersion: z.string().optional(),
  resourceVersion: z.string().optional(),
  fieldPath: z.string().optional(),
});

/** An object an Event is about (core/v1 ObjectReference). */
export type ObjectReference = z.infer<typeof ObjectReferenceSchema>;

const EventSourceSchema = z.strictObject({ component: z.string().optional(), host: z.string().optional() });
const SeriesSchema = z.strictObject({ count: z.number().int().optional(), lastObservedTime: z.string().nullable().optional() });
const time = z.string().nullable().optional();

const CoreEventSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  involvedObject: ObjectReferenceSchema,
  reason: z.string().optional(),
  message: z.string().optional(),
  source: EventSourceSchema.optional(),
  firstTimestamp: time,
  lastTimestamp: time,
  count: z.number().int().optional(),
  type: z.string().optional(),
  eventTime: time,
  series: SeriesSchema.nullable().optional(),
  action: z.string().optional(),
  related: ObjectReferenceSchema.nullable().optional(),
  reportingComponent: z.string().optional(),
  reportingInstance: z.string().optional(),
});

const EventsV1Schema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  eventTime: time,
  series: SeriesSchema.nullable().optional(),
  reportingController: z.string().optional(),
  reportingInstance: z.string().optional(),
  action: z.string().optional(),
  reason: z.string().optional(),
  regarding: ObjectReferenceSchema.optional(),
  related: ObjectReferenceSchema.nullable().optional(),
  note: z.string().optional(),
  type: z.string().optional(),
  deprecatedSource: EventSourceSchema.optional(),
  deprecatedFirstTimestamp: time,
  deprecatedLastTimestamp: time,
  deprecatedCount: z.number().int().optional(),
});

/** Kubernetes' limit on an events.k8s.io Event's `note`, in bytes (`NoteLengthLimit`, 1 KiB). */
export const NOTE_LENGTH_LIMIT = 1024;

/** The events.k8s.io/v1 field a core v1 field is served as (the table in the module doc). */
const RENAMED: [core: string, v1: string][] = [
  ["involvedObject", "regarding"],
  ["message", "note"],
  ["source", "deprecatedSource"],
  ["firstTimestamp", "deprecatedFirstTimestamp"],
  ["lastTimestamp", "deprecatedLastTimestamp"],
  ["count", "deprecatedCount"],
  ["reportingComponent", "reportingController"],
];

function rename(obj: KubeObject, from: 0 | 1, apiVersion: string): KubeObject {
  const out: KubeObject = { ...obj, apiVersion, kind: "Event" };
  for (const pair of RENAMED) {
    const a = pair[from];
    const b = pair[1 - from]!;
    delete out[b];
    if (a in obj) {
      out[b] = obj[a];
      delete out[a];
    }
  }
  return out;
}

/** A stored (core v1) Event as events.k8s.io/v1 serves it. Pure. */
export function toEventsV1(stored: KubeObject): KubeObject {
  return rename(stored, 0, "events.k8s.io/v1");
}

/** An events.k8s.io/v1 Event as it is stored (core v1). Pure. */
export function toCoreEvent(v1: KubeObject): KubeObject {
  return rename(v1, 1, "v1");
}

/** The age of an RFC 3339 time, as kube-apiserver's printer shows it (`<unknown>` when unset). */
function ageOf(t: unknown): string {
  const ms = typeof t === "string" ? Date.parse(t) : NaN;
  return Number.isNaN(ms) ? "<unknown>" : humanDuration(clock.now() - ms);
}

/** kube-apiserver's printer of an Event's LAST SEEN: the series' last observation, else lastTimestamp, else eventTime. */
function lastSeen(e: KubeObject): string {
  const series = e.series as { lastObservedTime?: string } | null | undefined;
  if (series?.lastObservedTime) return ageOf(series.lastObservedTime);
  return ageOf(e.lastTimestamp ?? e.eventTime);
}

function objectOf(e: KubeObject): string {
  const ref = (e.involvedObject ?? {}) as ObjectReference;
  return `${String(ref.kind ?? "").toLowerCase()}/${ref.name ?? ""}`;
}

/** kube-apiserver's Event printer (`printEvent`), over the stored (core v1) form. */
const CORE_COLUMNS: PrinterColumn[] = [
  { name: "Last Seen", type: "string", jsonPath: ".lastTimestamp", value: lastSeen },
  { name: "Type", type: "string", jsonPath: ".type", value: (e) => e.type ?? "" },
  { name: "Reason", type: "string", jsonPath: ".reason", value: (e) => e.reason ?? "" },
  { name: "Object", type: "string", jsonPath: ".involvedObject", value: objectOf },
  {
    name: "Subobject",
    type: "string",
    jsonPath: ".involvedObject.fieldPath",
    priority: 1,
    value: (e) => (e.involvedObject as ObjectReference | undefined)?.fieldPath ?? "",
  },
  {
    name: "Source",
    type: "string",
    jsonPath: ".source",
    priority: 1,
    value: (e) => {
      const s = (e.source ?? {}) as { component?: string; host?: string };
      const component = s.component || (e.reportingComponent as string | undefined) || "";
      return s.host ? `${component}, ${s.host}` : component;
    },
  },
  { name: "Message", type: "string", jsonPath: ".message", value: (e) => String(e.message ?? "").trim() },
  { name: "First Seen", type: "string", jsonPath: ".firstTimestamp", priority: 1, value: (e) => ageOf(e.firstTimestamp ?? e.eventTime) },
  {
    name: "Count",
    type: "string",
    jsonPath: ".count",
    priority: 1,
    value: (e) => String((e.series as { count?: number } | null | undefined)?.count ?? e.count ?? 1),
  },
  { name: "Name", type: "string", jsonPath: ".metadata.name", priority: 1, value: (e) => e.metadata.name },
];

/** The fields a core v1 Event list or watch may select on (kube-apiserver's `event.ToSelectableFields`). */
function coreFields(e: KubeObject): Record<string, string> {
  const ref = (e.involvedObject ?? {}) as ObjectReference;
  const source = (e.source ?? {}) as { component?: string };
  return {
    "metadata.name": e.metadata.name,
    "metadata.namespace": e.metadata.namespace ?? "",
    "involvedObject.kind": ref.kind ?? "",
    "involvedObject.namespace": ref.namespace ?? "",
    "involvedObject.name": ref.name ?? "",
    "involvedObject.uid": ref.uid ?? "",
    "involvedObject.apiVersion": ref.apiVersion ?? "",
    "involvedObject.resourceVersion": ref.resourceVersion ?? "",
    "involvedObject.fieldPath": ref.fieldPath ?? "",
    reason: String(e.reason ?? ""),
    reportingComponent: String(e.reportingComponent ?? ""),
    source: source.component ?? "",
    type: String(e.type ?? ""),
  };
}

/** The selectable fields of an events.k8s.io/v1 Event: the core ones under their events.k8s.io names. */
function v1Fields(e: KubeObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(coreFields(toCoreEvent(e)))) {
    const name = k.startsWith("involvedObject.")
      ? `regarding.${k.slice("involvedObject.".length)}`
      : k === "reportingComponent"
        ? "reportingController"
        : k === "source"
          ? "deprecatedSource"
          : k;
    out[name] = v;
  }
  return out;
}

/** kube-apiserver's limits on a legacy Event's fields once `eventTime` is set (pkg/apis/core/validation/events.go). */
const REPORTING_INSTANCE_LENGTH_LIMIT = 128;
const ACTION_LENGTH_LIMIT = 128;
const REASON_LENGTH_LIMIT = 128;

/**
 * kube-apiserver's `legacyValidateEvent`, over the stored (core v1) form, for every Event whatever
 * the API it comes through. Without `eventTime` (an old-style Event): `involvedObject.namespace`
 * must be the Event's namespace, or, when empty, the Event must live in `default` (an Event about
 * a cluster-scoped object). With `eventTime`: an empty `involvedObject.namespace` needs the Event
 * in `default` or `kube-system`; `reportingComponent` (events.k8s.io's `reportingController`) is
 * required and a qualified name; `reportingInstance`, `action` and `reason` are required, each at
 * most 128 characters; `message` (`note`) at most 1,024. Field paths are the core v1 names, as
 * kube-apiserver reports them through both APIs.
 */
function legacyValidate(e: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const ref = (e.involvedObject ?? {}) as ObjectReference;
  const ns = e.metadata.namespace ?? "";
  const ioNs = ref.namespace ?? "";
  const mismatch = () => causes.push(fieldInvalid("involvedObject.namespace", ioNs, "does not match event.namespace"));
  const str = (k: string) => (typeof e[k] === "string" ? (e[k] as string) : "");
  if (!e.eventTime) {
    if (ioNs === "" ? ns !== "" && ns !== "default" : ns !== ioNs) mismatch();
  } else {
    if (ioNs === "" && ns !== "default" && ns !== "kube-system") mismatch();
    const controller = str("reportingComponent");
    if (controller === "") causes.push(fieldRequired("reportingController"));
    for (const m of isQualifiedName(controller)) causes.push(fieldInvalid("reportingController", controller, m));
    const bounded = (field: string, value: string, limit: number, required = true) => {
      if (required && value.length === 0) causes.push(fieldRequired(field));
      if (utf8Length(value) > limit) causes.push(fieldInvalid(field, "", `can have at most ${limit} characters`));
    };
    bounded("reportingInstance", str("reportingInstance"), REPORTING_INSTANCE_LENGTH_LIMIT);
    bounded("action", str("action"), ACTION_LENGTH_LIMIT);
    bounded("reason", str("reason"), REASON_LENGTH_LIMIT);
    bounded("message", str("message"), NOTE_LENGTH_LIMIT, false);
  }
  return causes;
}

/** kube-apiserver's `validateV1EventSeries`: a series counts at least 2 and has a `lastObservedTime`. */
function validateSeries(e: KubeObject): StatusCause[] {
  const series = e.series as { count?: number; lastObservedTime?: string | null } | null | undefined;
  if (!series) return [];
  const causes: StatusCause[] = [];
  if ((series.count ?? 0) < 2) causes.push(fieldInvalid("series.count", "", "should be at least 2"));
  if (!series.lastObservedTime) causes.push(fieldRequired("series.lastObservedTime"));
  return causes;
}

/** The fields an update through events.k8s.io/v1 may not change (`ValidateEventUpdate`), in core v1 names. */
const IMMUTABLE_V1 = [
  "involvedObject",
  "reason",
  "message",
  "source",
  "firstTimestamp",
  "lastTimestamp",
  "count",
  "type",
  "eventTime",
  "action",
  "related",
  "reportingComponent",
  "reportingInstance",
];

/** The path kube-apiserver names a core v1 field by in its messages (reportingComponent is the internal ReportingController). */
const pathOf = (k: string) => (k === "reportingComponent" ? "reportingController" : k);

/**
 * events.k8s.io/v1's strict validation on top of the legacy one (`ValidateEventCreate`,
 * `ValidateEventUpdate` for that group version), over the core v1 form: on create `eventTime` is
 * required, `type` is `Normal` or `Warning`, the deprecated fields (`firstTimestamp`,
 * `lastTimestamp`, `count`, `source`: events.k8s.io's `deprecated*`) must be unset and a series
 * is checked; on update a changed series is checked and every other field is immutable.
 */
function strictValidate(e: KubeObject, old: KubeObject | undefined): StatusCause[] {
  if (old) {
    const causes = canonicalJson(e.series ?? null) !== canonicalJson(old.series ?? null) ? validateSeries(e) : [];
    for (const k of IMMUTABLE_V1)
      if (canonicalJson(e[k] ?? null) !== canonicalJson(old[k] ?? null)) causes.push(fieldInvalid(pathOf(k), e[k] ?? "", "field is immutable"));
    return causes;
  }
  const causes = validateSeries(e);
  if (!e.eventTime) causes.push(fieldRequired("eventTime"));
  if (e.type !== "Normal" && e.type !== "Warning") causes.push(fieldInvalid("type", "", `has invalid value: ${String(e.type ?? "")}`));
  for (const k of ["firstTimestamp", "lastTimestamp"]) if (e[k]) causes.push(fieldInvalid(k, "", "needs to be unset"));
  if (e.count) causes.push(fieldInvalid("count", "", "needs to be unset"));
  const source = (e.source ?? {}) as { component?: string; host?: string };
  if (source.component || source.host) causes.push(fieldInvalid("source", "", "needs to be unset"));
  return causes;
}

/** The Time fields of the stored form, and the MicroTime ones (`series.lastObservedTime` is handled apart). */
const TIME_FIELDS = ["firstTimestamp", "lastTimestamp", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"];

/**
 * Decodes an Event's timestamps as kube-apiserver's JSON decoding does (src/k8s/timestamps.ts):
 * `firstTimestamp`/`lastTimestamp` (`deprecated*` through events.k8s.io) as metav1.Time, `eventTime`
 * and `series.lastObservedTime` as metav1.MicroTime, each rewritten in its canonical UTC form, the
 * zero time and null dropped (stored absent). A string Go's parser refuses is 400 BadRequest
 * `Event in version "v1" cannot be handled as a Event: parsing time ...`, as kube-apiserver's
 * `transformDecodeError` answers, and nothing is stored.
 * @throws ApiError 400
 */
function decodeTimes(e: KubeObject): void {
  const put = (holder: Record<string, unknown>, k: string, micro: boolean, path: string) => {
    const v = holder[k];
    if (v === null) {
      delete holder[k];
      return;
    }
    if (typeof v !== "string") return; // the schema refuses it (422)
    const parsed = parseKubeTime(v, micro);
    if (!parsed.ok) throw badRequest(`Event in version "v1" cannot be handled as a Event: ${parsed.error}`, path);
    if (parsed.value === null) delete holder[k];
    else holder[k] = parsed.value;
  };
  for (const k of TIME_FIELDS) put(e, k, false, k);
  put(e, "eventTime", true, "eventTime");
  if (e.series && typeof e.series === "object") put(e.series as Record<string, unknown>, "lastObservedTime", true, "series.lastObservedTime");
}

/** Drops the fields a client sent as null (stored absent, as kube-apiserver's decoding leaves them) and decodes the timestamps. @throws ApiError 400 */
function dropNulls(e: KubeObject): void {
  for (const k of ["series", "related"]) if (e[k] === null) delete e[k];
  decodeTimes(e);
}

/** The core v1 Event kind: the stored form. */
export const EventKind: KindDefinition = {
  group: "",
  version: "v1",
  kind: "Event",
  listKind: "EventList",
  plural: "events",
  singular: "event",
  shortNames: ["ev"],
  namespaced: true,
  hasStatus: false,
  schema: CoreEventSchema,
  storage: "d1",
  printerColumns: CORE_COLUMNS,
  printsName: true,
  fieldSelectors: coreFields,
  defaults: dropNulls,
  validate: (e) => legacyValidate(e),
};

/** The events.k8s.io/v1 Event kind: the core v1 Events, converted (see the module doc). */
export const EventsV1EventKind: KindDefinition = {
  group: "events.k8s.io",
  version: "v1",
  kind: "Event",
  listKind: "EventList",
  plural: "events",
  singular: "event",
  shortNames: ["ev"],
  namespaced: true,
  hasStatus: false,
  schema: EventsV1Schema,
  storage: "d1",
  printerColumns: CORE_COLUMNS.map((c) => ({ ...c, value: (e: KubeObject) => c.value!(toCoreEvent(e)) })),
  printsName: true,
  fieldSelectors: v1Fields,
  conversion: { storage: EventKind, toStorage: toCoreEvent, fromStorage: toEventsV1 },
  defaults: dropNulls,
  validate: (e, old) => {
    const core = toCoreEvent(e);
    return [...legacyValidate(core), ...strictValidate(core, old && toCoreEvent(old))];
  },
};
