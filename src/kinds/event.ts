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
 * Validation as kube-apiserver's `ValidateEventCreate`/`ValidateEventUpdate`: through core v1,
 * `involvedObject.namespace` must match the Event's namespace when set (cluster-scoped objects'
 * Events may live in any namespace); through events.k8s.io/v1 also `eventTime`,
 * `reportingController`, `reportingInstance`, `action` and `reason` are required, `type` is
 * `Normal` or `Warning`, `note` at most 1 KiB, `series` with a `count` of at least 2 and a
 * `lastObservedTime`. Events expire `FLOTILLA_EVENT_TTL_SECONDS` after their last write
 * (src/events/expiry.ts). The hub records its own with src/events/record.ts.
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, PrinterColumn } from "../k8s/kind.ts";
import { ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";
import { humanDuration } from "../k8s/duration.ts";
import { clock } from "../clock.ts";

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

/** `involvedObject.namespace` must be the Event's own when set (kube-apiserver's legacy Event validation). */
function validateCore(e: KubeObject, field = "involvedObject"): StatusCause[] {
  const ref = (e[field] ?? {}) as ObjectReference;
  const ns = e.metadata.namespace ?? "";
  if (ref.namespace && ref.namespace !== ns)
    return [
      { field: `${field}.namespace`, message: `Invalid value: ${JSON.stringify(ref.namespace)}: does not match event.namespace`, reason: "FieldValueInvalid" },
    ];
  return [];
}

/** events.k8s.io/v1's stricter validation (`ValidateEventCreate` for that group version). */
function validateV1(e: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const causes = validateCore(e, "regarding");
  const required = (field: string) => {
    if (!e[field]) causes.push({ field, message: "Required value", reason: "FieldValueRequired" });
  };
  if (!old) {
    required("eventTime");
    required("reportingController");
    required("reportingInstance");
    required("action");
    required("reason");
  }
  if (e.type !== "Normal" && e.type !== "Warning")
    causes.push({
      field: "type",
      message: `Unsupported value: ${JSON.stringify(e.type ?? "")}: supported values: "Normal", "Warning"`,
      reason: "FieldValueNotSupported",
    });
  if (typeof e.note === "string" && new TextEncoder().encode(e.note).length > NOTE_LENGTH_LIMIT)
    causes.push({ field: "note", message: `Too long: may not be more than ${NOTE_LENGTH_LIMIT} bytes`, reason: "FieldValueTooLong" });
  const series = e.series as { count?: number; lastObservedTime?: string | null } | null | undefined;
  if (series) {
    if ((series.count ?? 0) < 2)
      causes.push({ field: "series.count", message: `Invalid value: ${series.count ?? 0}: should be at least 2`, reason: "FieldValueInvalid" });
    if (!series.lastObservedTime) causes.push({ field: "series.lastObservedTime", message: "Required value", reason: "FieldValueRequired" });
  }
  return causes;
}

/** Drops the fields a client sent as null (stored absent, as kube-apiserver's decoding leaves them). */
function dropNulls(e: KubeObject): void {
  for (const k of ["firstTimestamp", "lastTimestamp", "eventTime", "series", "related", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"])
    if (e[k] === null) delete e[k];
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
  validate: (e) => validateCore(e),
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
  validate: validateV1,
};
