/**
 * `apps/v1` ControllerRevision, as kube-apiserver serves it (api `apps/v1/types.go`,
 * pkg/registry/apps/controllerrevision/strategy.go, pkg/apis/apps/validation
 * `ValidateControllerRevision`): an immutable snapshot of a controller's desired state (`data`,
 * any JSON) with a `revision` number. On the hub it is the revision history of a
 * ManifestWorkReplicaSet (OCM enhancement "Support Rollback for ManifestWorkReplicaSet":
 * src/work/replicaset/revisions.ts writes one per distinct `spec.manifestWorkTemplate`, named
 * `<replica set>-<hash>`, labelled with the replica set and the hash, owned by it); users and
 * `flotilla replicaset undo` read them (read-only to users: the view role reads them, as
 * Kubernetes' does).
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";
import { deepEqual } from "../k8s/fieldmanager.ts";
import { fieldForbidden, fieldInvalid } from "../k8s/validation.ts";

/** A ControllerRevision (api `apps/v1` ControllerRevision): no spec and no status. */
const ControllerRevisionSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  data: z
    .unknown()
    .optional()
    .describe("The serialized desired state the revision snapshots (any JSON; for a ManifestWorkReplicaSet `{spec: {manifestWorkTemplate}}`)."),
  revision: z.number().int().describe("The revision number: higher is newer (int64)."),
});

/** The revision number of a ControllerRevision (0 when absent). */
export function revisionNumber(o: KubeObject): number {
  return typeof o.revision === "number" ? o.revision : 0;
}

/**
 * The ControllerRevision kind: `kubectl get controllerrevisions` prints CONTROLLER (the owner with
 * `controller: true`, `<kind>.<group>/<name>`), REVISION and AGE (pkg/printers
 * `printControllerRevision`); `data` is immutable once created, `revision` is not negative.
 */
export const ControllerRevisionKind: KindDefinition = {
  group: "apps",
  version: "v1",
  kind: "ControllerRevision",
  listKind: "ControllerRevisionList",
  plural: "controllerrevisions",
  singular: "controllerrevision",
  shortNames: [],
  namespaced: true,
  hasStatus: false,
  schema: ControllerRevisionSchema,
  storage: "d1",
  // Written by the replica set controller only (Kubernetes' edit role only reads them too); an undo goes through the replica set's spec.
  systemOwned: true,
  printerColumns: [
    {
      name: "Controller",
      type: "string",
      jsonPath: ".metadata.ownerReferences",
      value: (o) => {
        const c = (o.metadata.ownerReferences ?? []).find((r) => r.controller);
        if (!c) return "<none>";
        const group = c.apiVersion.includes("/") ? c.apiVersion.slice(0, c.apiVersion.indexOf("/")) : "";
        return `${c.kind.toLowerCase()}${group ? `.${group}` : ""}/${c.name}`;
      },
    },
    { name: "Revision", type: "integer", jsonPath: ".revision", value: (o) => revisionNumber(o) },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  validate(obj: KubeObject, old?: KubeObject): StatusCause[] {
    const causes: StatusCause[] = [];
    if (revisionNumber(obj) < 0) causes.push(fieldInvalid("revision", obj.revision, "must be greater than or equal to 0"));
    if (old && !deepEqual(obj.data ?? null, old.data ?? null)) causes.push(fieldForbidden("data", "field is immutable"));
    return causes;
  },
};
