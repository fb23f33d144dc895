/**
 * Server-side printing: the `meta.k8s.io/v1` `Table` kube-apiserver returns when a client (kubectl
 * get) asks with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`. Columns follow kubectl's
 * usual output for the common kinds; custom resources use their CRD `additionalPrinterColumns`;
 * everything else gets NAME and AGE. The Table itself is built by the hub's printer
 * (src/k8s/table.ts), which also evaluates the JSONPaths and renders ages.
 */
import type { PrinterColumn } from "../../src/k8s/kind.ts";
import type { KubeObject as HubObject } from "../../src/k8s/meta.ts";
import { tableOf } from "../../src/k8s/table.ts";
import type { ResourceType } from "./resources.ts";
import { isObj, type KubeObject, type Obj } from "./types.ts";

/** True when the Accept header asks for a Table rendering (`as=Table`). */
export function wantsTable(accept: string | undefined): boolean {
  return !!accept && /as=Table/.test(accept);
}

function num(v: unknown): number {
  return typeof v === "number" ? v : 0;
}

const AGE: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

/** A column computed from the object (the built-in kinds' printers). */
function col(name: string, type: PrinterColumn["type"], cell: (o: KubeObject) => unknown): PrinterColumn {
  return { name, type, jsonPath: "", value: (o) => cell(o as unknown as KubeObject) };
}

/** The columns after Name: a CRD's printer columns, or kubectl's for the built-in kinds. */
function columnsFor(rt: ResourceType): PrinterColumn[] {
  const status = (o: KubeObject): Obj => (isObj(o.status) ? o.status : {});
  const spec = (o: KubeObject): Obj => (isObj(o.spec) ? o.spec : {});
  if (rt.printerColumns) {
    return rt.printerColumns.map((c) => ({
      name: String(c.name ?? ""),
      type: String(c.type ?? "string") as PrinterColumn["type"],
      jsonPath: String(c.jsonPath ?? ""),
      priority: typeof c.priority === "number" ? c.priority : 0,
    }));
  }
  const key = `${rt.group}/${rt.kind}`;
  switch (key) {
    case "/Namespace":
      return [col("Status", "string", (o) => status(o).phase ?? ""), AGE];
    case "/Node":
      return [
        col("Status", "string", (o) => {
          const ready =
            Array.isArray(status(o).conditions) && (status(o).conditions as unknown[]).some((c) => isObj(c) && c.type === "Ready" && c.status === "True");
          return `${ready ? "Ready" : "NotReady"}${spec(o).unschedulable === true ? ",SchedulingDisabled" : ""}`;
        }),
        col("Roles", "string", () => "<none>"),
        AGE,
        col("Version", "string", (o) => (isObj(status(o).nodeInfo) ? (status(o).nodeInfo as Obj).kubeletVersion : "")),
      ];
    case "apps/Deployment":
      return [
        col("Ready", "string", (o) => `${num(status(o).readyReplicas)}/${typeof spec(o).replicas === "number" ? spec(o).replicas : 1}`),
        col("Up-to-date", "integer", (o) => num(status(o).updatedReplicas)),
        col("Available", "integer", (o) => num(status(o).availableReplicas)),
        AGE,
      ];
    case "apps/DaemonSet":
      return [
        ...["desiredNumberScheduled", "currentNumberScheduled", "numberReady", "updatedNumberScheduled", "numberAvailable"].map((f, i) =>
          col(["Desired", "Current", "Ready", "Up-to-date", "Available"][i] ?? f, "integer", (o) => num(status(o)[f])),
        ),
        AGE,
      ];
    case "batch/Job":
      return [
        col("Status", "string", (o) => (num(status(o).succeeded) > 0 ? "Complete" : "Running")),
        col("Completions", "string", (o) => `${num(status(o).succeeded)}/${typeof spec(o).completions === "number" ? spec(o).completions : 1}`),
        AGE,
      ];
    case "/Pod":
      return [
        col("Ready", "string", (o) => {
          const cs = Array.isArray(status(o).containerStatuses) ? (status(o).containerStatuses as unknown[]) : [];
          const total = Array.isArray(spec(o).containers) ? (spec(o).containers as unknown[]).length : 0;
          return `${cs.filter((c) => isObj(c) && c.ready === true).length}/${total}`;
        }),
        col("Status", "string", (o) => status(o).phase ?? "Pending"),
        col("Restarts", "string", () => "0"),
        AGE,
      ];
    case "/Secret":
      return [col("Type", "string", (o) => o.type ?? "Opaque"), col("Data", "integer", (o) => (isObj(o.data) ? Object.keys(o.data).length : 0)), AGE];
    case "/ConfigMap":
      return [
        col("Data", "integer", (o) => (isObj(o.data) ? Object.keys(o.data).length : 0) + (isObj(o.binaryData) ? Object.keys(o.binaryData).length : 0)),
        AGE,
      ];
    case "apiextensions.k8s.io/CustomResourceDefinition":
      return [col("Created At", "date", (o) => o.metadata.creationTimestamp)];
    default:
      return [AGE];
  }
}

/**
 * Renders `items` as a Table. `includeObject` follows the `?includeObject=` query parameter:
 * `None`, `Metadata` (default: rows carry a PartialObjectMetadata) or `Object`.
 */
export function toTable(rt: ResourceType, items: KubeObject[], resourceVersion: string, includeObject: string | null): Obj {
  return tableOf(columnsFor(rt), items as unknown as HubObject[], resourceVersion, includeObject ?? undefined, Date.now());
}
