/**
 * `kubectl get` tables: the apiserver's `meta.k8s.io/v1` Table for a kind with printer columns
 * (a CRD's `additionalPrinterColumns`; apiextensions' table convertor): a Name column, then the
 * kind's columns. `date` columns are shown as ages ("5m", "3h"), as the apiserver renders them.
 */
import { evaluate } from "./jsonpath.ts";
import type { KindDefinition, PrinterColumn } from "./kind.ts";
import type { KubeObject } from "./meta.ts";

/**
 * A duration as Kubernetes prints ages (apimachinery `duration.HumanDuration`): `45s`, `5m30s`,
 * `12m`, `5h10m`, `30h`, `3d4h`, `200d`, `2y100d`, `9y`. `ms` is in milliseconds.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  const years = Math.floor(days / 365);
  const with2 = (a: number, ua: string, b: number, ub: string) => (b === 0 ? `${a}${ua}` : `${a}${ua}${b}${ub}`);
  if (seconds < 120) return `${seconds}s`;
  if (minutes < 10) return with2(minutes, "m", seconds % 60, "s");
  if (minutes < 180) return `${minutes}m`;
  if (hours < 8) return with2(hours, "h", minutes % 60, "m");
  if (hours < 48) return `${hours}h`;
  if (hours < 192) return with2(days, "d", hours % 24, "h");
  if (days < 365 * 2) return `${days}d`;
  if (days < 365 * 8) return with2(years, "y", days % 365, "d");
  return `${years}y`;
}

const AGE: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

function columnsOf(def: KindDefinition): PrinterColumn[] {
  return def.printerColumns && def.printerColumns.length > 0 ? def.printerColumns : [AGE];
}

function cell(obj: KubeObject, col: PrinterColumn, nowMs: number): unknown {
  if (col.value) return col.value(obj);
  let values: unknown[];
  try {
    values = evaluate(obj, col.jsonPath);
  } catch {
    return null;
  }
  if (values.length === 0) return null;
  if (col.type === "date") {
    const t = Date.parse(String(values[0]));
    return Number.isNaN(t) ? null : humanDuration(nowMs - t);
  }
  if (values.length > 1) return values.map((v) => (typeof v === "object" ? JSON.stringify(v) : String(v))).join(",");
  const v = values[0];
  return typeof v === "object" && v !== null ? JSON.stringify(v) : v;
}

/**
 * Builds the Table for `items`. `includeObject` is the request's `includeObject` (None, Metadata
 * — the default — or Object); `nowMs` is epoch milliseconds for ages.
 */
export function toTable(def: KindDefinition, items: KubeObject[], resourceVersion: string, includeObject: string | undefined, nowMs: number) {
  const columns = columnsOf(def);
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion },
    columnDefinitions: [
      { name: "Name", type: "string", format: "name", description: "Name must be unique within a namespace.", priority: 0 },
      ...columns.map((c) => ({ name: c.name, type: c.type === "date" ? "string" : c.type, format: c.type === "date" ? "date" : "", description: c.name, priority: c.priority ?? 0 })),
    ],
    rows: items.map((o) => ({
      cells: [o.metadata.name, ...columns.map((c) => cell(o, c, nowMs))],
      object:
        includeObject === "None"
          ? undefined
          : includeObject === "Object"
            ? o
            : { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o.metadata },
    })),
  };
}
