/**
 * Server-side printing: the `meta.k8s.io/v1` `Table` kube-apiserver returns when a client (kubectl
 * get) asks with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`. Columns follow kubectl's
 * usual output for the common kinds; custom resources use their CRD `additionalPrinterColumns`
 * (simple `.a.b` JSONPaths), everything else gets NAME and AGE.
 */
import { humanDuration } from "../../src/k8s/duration.ts";
import type { ResourceType } from "./resources.ts";
import { isObj, type KubeObject, type Obj } from "./types.ts";

/** True when the Accept header asks for a Table rendering (`as=Table`). */
export function wantsTable(accept: string | undefined): boolean {
  return !!accept && /as=Table/.test(accept);
}

function age(ts: unknown): string {
  if (typeof ts !== "string") return "<unknown>";
  return humanDuration(Date.now() - Date.parse(ts));
}

function at(obj: unknown, jsonPath: string): unknown {
  let cur = obj;
  for (const p of jsonPath.replace(/^\{?\./, "").replace(/\}$/, "").split(".")) {
    if (!p) continue;
    cur = isObj(cur) ? cur[p] : undefined;
  }
  return cur;
}

interface Column {
  name: string;
  type: string;
  format?: string;
  cell: (o: KubeObject) => unknown;
}

function num(v: unknown): number {
  return typeof v === "number" ? v : 0;
}

function columnsFor(rt: ResourceType): Column[] {
  const name: Column = { name: "Name", type: "string", format: "name", cell: (o) => o.metadata.name };
  const ageCol: Column = { name: "Age", type: "string", cell: (o) => age(o.metadata.creationTimestamp) };
  const status = (o: KubeObject): Obj => (isObj(o.status) ? o.status : {});
  const spec = (o: KubeObject): Obj => (isObj(o.spec) ? o.spec : {});
  if (rt.printerColumns) {
    const cols: Column[] = rt.printerColumns.map((c) => {
      const path = String(c.jsonPath ?? "");
      const type = String(c.type ?? "string");
      return { name: String(c.name ?? ""), type, cell: (o: KubeObject) => {
        const v = at(o, path);
        if (type === "date") return age(v);
        return v === undefined ? "" : typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? v : JSON.stringify(v);
      } };
    });
    return [name, ...cols];
  }
  const key = `${rt.group}/${rt.kind}`;
  switch (key) {
    case "/Namespace":
      return [name, { name: "Status", type: "string", cell: (o) => status(o).phase ?? "" }, ageCol];
    case "/Node":
      return [
        name,
        { name: "Status", type: "string", cell: (o) => {
          const ready = Array.isArray(status(o).conditions) && (status(o).conditions as unknown[]).some((c) => isObj(c) && c.type === "Ready" && c.status === "True");
          return `${ready ? "Ready" : "NotReady"}${spec(o).unschedulable === true ? ",SchedulingDisabled" : ""}`;
        } },
        { name: "Roles", type: "string", cell: () => "<none>" },
        ageCol,
        { name: "Version", type: "string", cell: (o) => (isObj(status(o).nodeInfo) ? (status(o).nodeInfo as Obj).kubeletVersion : "") },
      ];
    case "apps/Deployment":
      return [
        name,
        { name: "Ready", type: "string", cell: (o) => `${num(status(o).readyReplicas)}/${typeof spec(o).replicas === "number" ? spec(o).replicas : 1}` },
        { name: "Up-to-date", type: "integer", cell: (o) => num(status(o).updatedReplicas) },
        { name: "Available", type: "integer", cell: (o) => num(status(o).availableReplicas) },
        ageCol,
      ];
    case "apps/DaemonSet":
      return [name, ...["desiredNumberScheduled", "currentNumberScheduled", "numberReady", "updatedNumberScheduled", "numberAvailable"].map((f, i) => ({ name: ["Desired", "Current", "Ready", "Up-to-date", "Available"][i] ?? f, type: "integer", cell: (o: KubeObject) => num(status(o)[f]) })), ageCol];
    case "batch/Job":
      return [name, { name: "Status", type: "string", cell: (o) => (num(status(o).succeeded) > 0 ? "Complete" : "Running") }, { name: "Completions", type: "string", cell: (o) => `${num(status(o).succeeded)}/${typeof spec(o).completions === "number" ? spec(o).completions : 1}` }, ageCol];
    case "/Pod":
      return [name, { name: "Ready", type: "string", cell: (o) => {
        const cs = Array.isArray(status(o).containerStatuses) ? (status(o).containerStatuses as unknown[]) : [];
        const total = Array.isArray(spec(o).containers) ? (spec(o).containers as unknown[]).length : 0;
        return `${cs.filter((c) => isObj(c) && c.ready === true).length}/${total}`;
      } }, { name: "Status", type: "string", cell: (o) => status(o).phase ?? "Pending" }, { name: "Restarts", type: "string", cell: () => "0" }, ageCol];
    case "/Secret":
      return [name, { name: "Type", type: "string", cell: (o) => o.type ?? "Opaque" }, { name: "Data", type: "integer", cell: (o) => (isObj(o.data) ? Object.keys(o.data).length : 0) }, ageCol];
    case "/ConfigMap":
      return [name, { name: "Data", type: "integer", cell: (o) => (isObj(o.data) ? Object.keys(o.data).length : 0) + (isObj(o.binaryData) ? Object.keys(o.binaryData).length : 0) }, ageCol];
    case "apiextensions.k8s.io/CustomResourceDefinition":
      return [name, { name: "Created At", type: "date", cell: (o) => o.metadata.creationTimestamp }];
    default:
      return [name, ageCol];
  }
}

/**
 * Renders `items` as a Table. `includeObject` follows the `?includeObject=` query parameter:
 * `None`, `Metadata` (default: rows carry a PartialObjectMetadata) or `Object`.
 */
export function toTable(rt: ResourceType, items: KubeObject[], resourceVersion: string, includeObject: string | null): Obj {
  const cols = columnsFor(rt);
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion },
    columnDefinitions: cols.map((c) => ({ name: c.name, type: c.type, format: c.format ?? "", description: "", priority: 0 })),
    rows: items.map((o) => {
      const row: Obj = { cells: cols.map((c) => c.cell(o)) };
      if (includeObject === "Object") row.object = o;
      else if (includeObject !== "None") row.object = { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o.metadata };
      return row;
    }),
  };
}
