/**
 * What a kind contributes to the generic API machinery, after Kubernetes' generic registry
 * (`k8s.io/apiserver/pkg/registry/generic/registry/store.go` plus each kind's `strategy.go`):
 * its names, its schema and a small strategy. Adding a kind is one file under src/kinds/.
 */
import type { z } from "zod";
import type { StatusCause } from "./errors.ts";
import type { KubeObject } from "./meta.ts";

/** The time and identity of a write, passed to strategies so that they stay pure. */
export interface WriteContext {
  /** Current time, epoch milliseconds. */
  now: number;
  /** A fresh random UUID for the object (used on create). */
  newUid: () => string;
  /** Kind-specific extras a strategy may need (e.g. a generated secret). */
  extras?: Record<string, unknown>;
}

/** A printer column as a CRD declares it (`additionalPrinterColumns`). */
export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "boolean" | "date" | "number";
  jsonPath: string;
  priority?: number;
  /**
   * The cell computed from the object, when a JSONPath cannot say it (kube-apiserver's printers
   * for built-in kinds, e.g. a ServiceAccount's count of `secrets`); wins over `jsonPath`.
   */
  value?: (obj: KubeObject) => unknown;
}

/**
 * A subresource that is created (POST) with a body of another kind and answered with that kind, by
 * a handler of its own, e.g. a ServiceAccount's `token`, which takes and answers an
 * `authentication.k8s.io/v1` TokenRequest (kube-apiserver's TokenREST). Discovery lists it (verb
 * `create`, its group, version and kind) and OpenAPI documents its POST operation and schema.
 */
export interface CreateSubresource {
  /** The path segment after the object's name (`token`). */
  name: string;
  group: string;
  version: string;
  kind: string;
  /** The body's and the answer's schema (for OpenAPI). */
  schema: z.ZodType;
  /** What the operation does, for OpenAPI. */
  description: string;
}

/** A subresource written by a PUT of the whole object ({@link KindDefinition.updateSubresources}). */
export interface UpdateSubresource {
  /** The path segment after the object's name, e.g. `finalize`. */
  name: string;
  /** What the write carries in `WriteContext.extras` for the kind's strategy. */
  extras: Record<string, unknown>;
}

/** What {@link KindDefinition.createSecret} answers for one create. */
export interface CreatedSecret {
  /** Carried in `WriteContext.extras` (e.g. `{ secretHash }`). */
  extras: Record<string, unknown>;
  /** Puts the secret into the create's answer (a copy of the object as stored), in place. */
  reveal?(created: KubeObject): void;
}

/**
 * Whether a PATCH of kind `def` may be a strategic merge patch: kube-apiserver takes them for its
 * built-in kinds (the core group, RBAC, events.k8s.io), not for custom resources (a CRD's kind,
 * `openApiSchema` set, whatever its group: 415 as apiextensions-apiserver answers).
 */
export function acceptsStrategicMergePatch(def: KindDefinition): boolean {
  return !def.openApiSchema && STRATEGIC_MERGE_GROUPS.has(def.group);
}

/**
 * The groups of the built-in kinds the hub serves that take strategic merge patches: core, RBAC,
 * events.k8s.io, and those of the kinds stored as templates (src/kinds/builtin).
 */
const STRATEGIC_MERGE_GROUPS = new Set(["", "rbac.authorization.k8s.io", "events.k8s.io", "apps", "batch", "networking.k8s.io", "policy", "autoscaling"]);

/**
 * How a kind served from another kind's stored objects is converted, as kube-apiserver serves one
 * storage in several versions or groups (a CRD's `storage` version plus its conversion webhook, e.g.
 * add-ons' v1beta1 stored as v1alpha1; a built-in kind in two groups, e.g. events.k8s.io/v1 Events
 * stored as core v1 ones): objects live in `storage`'s rows; a read through this kind answers
 * `fromStorage` of the stored object (lists, watches and their selectors see that form); a write
 * computes the request on `fromStorage` of the stored object with this kind's schema, strategy,
 * validation and managedFields, and stores `toStorage` of the result through the storage kind's
 * store (src/store/store.ts `convertedStore`). Both functions are pure and return new objects.
 */
export interface VersionConversion {
  /** The storage version's kind definition. */
  storage: KindDefinition;
  toStorage(obj: KubeObject): KubeObject;
  fromStorage(obj: KubeObject): KubeObject;
}

/**
 * A `scale` subresource (a CRD version's `subresources.scale`, apiextensions' `ScaleREST`): the
 * object is read and written as an `autoscaling/v1` Scale whose `spec.replicas` is the value at
 * `specReplicasPath`, `status.replicas` the value at `statusReplicasPath` and `status.selector`
 * the string at `labelSelectorPath` (simple JSON paths such as `.spec.replicas`).
 */
export interface ScaleSubresource {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

/**
 * One served kind. `storage` says who writes its objects: `d1` for the generic D1 store,
 * `cluster` for the per-cluster Durable Object (ManagedCluster), which serialises them and
 * commits them to D1.
 */
export interface KindDefinition {
  group: string;
  version: string;
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  /** The categories discovery lists it in (`all`: `kubectl get all` shows it), as kube-apiserver's `CategoriesProvider`. */
  categories?: string[];
  namespaced: boolean;
  /** True when the kind has a `/status` subresource (status changes only through it). */
  hasStatus: boolean;
  /**
   * Lists of `status` whose items the schema checks one by one, with no bound or rule across them
   * (a placement's `placementStatuses`): an item that is a frozen tree which passed the schema
   * before (src/k8s/frozen-json.ts `freezeTree`, `rememberChecked`) is not checked again, as the
   * write path does not check a frozen rendered spec again (src/k8s/write.ts `trustedOmitted`).
   */
  statusItemLists?: readonly string[];
  /** The whole object as a client may send it (strict: unknown fields are reported). */
  schema: z.ZodType;
  storage: "d1" | "cluster";
  /** Names must be DNS-1123 labels (namespace-like kinds such as ManagedCluster) rather than subdomains. */
  nameIsLabel?: boolean;
  /** Names must be DNS-1035 labels (a letter first), as a Service's (`ValidateServiceName`). */
  nameIsDNS1035Label?: boolean;
  /**
   * Names need only be valid path segments (not `.` or `..`, no `/` or `%`), as Kubernetes'
   * RBAC kinds' (`system:discovery`): apimachinery's `path.IsValidPathSegmentName`.
   */
  nameIsPathSegment?: boolean;
  /**
   * The id of a row of the `counters` table (above 1, the resourceVersion counter's) that every
   * committed write of this kind sets to its resourceVersion, in its own batch: readers that cache
   * a derived view of every object of the kind (the RBAC authorizer) compare it to see a change
   * with one read by key (src/store/d1/objects.ts `changeCounterValue`).
   */
  changeCounter?: number;
  /**
   * Answered, not stored (Kubernetes' access and identity reviews): only `create` (a POST on the
   * collection) is served and its answer is computed from the request (src/api/reviews.ts); every
   * other method is 405. Discovery lists the verb `create` only.
   */
  createOnly?: boolean;
  /** When set, users may not create, update, patch or delete objects of this kind (written by the hub only). */
  systemOwned?: boolean;
  /**
   * A read-only view of another kind's objects (OCM's `clusterview.open-cluster-management.io`):
   * only list and watch are served (other methods 405), showing the objects of `viewOf` that the
   * requesting user may see (src/auth/clusterview.ts), as they are stored. Discovery lists the
   * verbs `list` and `watch`.
   */
  viewOf?: KindDefinition;
  /**
   * Computed when read, never stored (a cluster's `coordination.k8s.io` Lease, from the lease
   * record its Durable Object keeps: src/api/leases.ts): only get and list are served, through
   * the generic list machinery with the kind's own reader instead of D1's rows; create, update,
   * patch, delete and deletecollection are 405 MethodNotAllowed saying `refusal`, and so is
   * watch (`watchRefusal`). Discovery lists the verbs `get` and `list`. It has no D1 rows, so
   * the namespace controller and the garbage collector pass it by. Implies `systemOwned`.
   */
  computed?: { refusal: string; watchRefusal: string };
  printerColumns?: PrinterColumn[];
  /**
   * The printer columns are the whole Table, their own Name column included (kube-apiserver's
   * printers for built-in kinds that show the name elsewhere, e.g. an Event's at priority 1):
   * no Name column is put first.
   */
  printsName?: boolean;
  /**
   * The fields a `fieldSelector` may name and their values as strings (kube-apiserver's
   * `GetAttrs`/`ToSelectableFields` of the kind); absent: `metadata.name` and
   * `metadata.namespace` only. Any other field is 400 `field label not supported`.
   */
  fieldSelectors?: (obj: KubeObject) => Record<string, string>;
  /** Sets defaults on a create or update body (mutates). */
  defaults?(obj: KubeObject): void;
  /** Kind-specific validation of the object about to be stored; `old` is absent on create. */
  validate?(obj: KubeObject, old: KubeObject | undefined): StatusCause[];
  /** Mutates an object about to be created (server-set fields). May throw ApiError. */
  prepareForCreate?(obj: KubeObject, ctx: WriteContext): void;
  /** Mutates an object about to replace `old` (server-set fields). May throw ApiError. */
  prepareForUpdate?(obj: KubeObject, old: KubeObject, ctx: WriteContext): void;
  /**
   * Refuses a delete of `current` before anything else is checked (kube-apiserver's admission
   * of a delete, e.g. NamespaceLifecycle's immortal namespaces). @throws ApiError
   */
  validateDelete?(current: KubeObject): void;
  /**
   * Whether something besides `metadata.finalizers` holds a deleted object (a Namespace's
   * `spec.finalizers`, kube-apiserver's `ShouldDeleteNamespaceDuringUpdate`): a delete then only
   * sets `deletionTimestamp`, and the object goes once this and `metadata.finalizers` are empty.
   */
  holdsDeletion?(obj: KubeObject): boolean;
  /** Mutates an object whose deletion starts (its `deletionTimestamp` just set): server-set fields (a Namespace's phase). */
  prepareForDelete?(obj: KubeObject, ctx: WriteContext): void;
  /**
   * Async last step of a write of a D1-stored kind, after defaults, the strategy and validation
   * and before the commit: server-set fields that need WebCrypto (a digest). Mutates `obj`; `old`
   * is null on create. May throw ApiError.
   */
  finalize?(obj: KubeObject, old: KubeObject | null, ctx: WriteContext): Promise<void>;
  /**
   * Top-level fields stored encrypted at rest (kube-apiserver's EncryptionConfiguration
   * `resources`), each sealed as a whole by the D1 store (src/store/d1/objects.ts); e.g. a Secret's `data`.
   */
  encryptedFields?: string[];
  /**
   * The D1 store keeps a large `spec` (at least `SHARED_SPEC_MIN_CHARS` of JSON,
   * src/store/d1/objects.ts) once for every object that has the same one, content-addressed by
   * its SHA-256, and the object's row refers to it: a status write then rewrites the object
   * without its spec. Reads give the object as written. Set for ManifestWorks, whose spec a
   * placement renders alike for many clusters.
   */
  sharedSpec?: boolean;
  /** Subresources created with a body of another kind (a ServiceAccount's `token`). */
  createSubresources?: CreateSubresource[];
  /**
   * Subresources written by a PUT of the whole object, as kube-apiserver's `FinalizeREST` of a
   * Namespace (`finalize`): the write is an update of the object whose `WriteContext.extras`
   * carry `extras`, by which the kind's strategy changes only what the subresource owns. Any
   * other method is 405; discovery lists the verb `update`.
   */
  updateSubresources?: UpdateSubresource[];
  /**
   * Set on a kind whose collection may not be deleted at once (a Namespace's, as
   * kube-apiserver's): deletecollection is 405 MethodNotAllowed saying this, and discovery does
   * not list the verb.
   */
  deleteCollectionRefusal?: string;
  /**
   * A secret the create of an object mints and the hub keeps only a digest of (a
   * BootstrapToken's, kubeadm's `<id>.<secret>`), run on a create body before anything else:
   * takes a secret the body chooses out of it, in place (it may set `metadata.name`), or mints
   * one, and answers the `WriteContext.extras` the create carries (the digest) and what the
   * create's answer reveals once (`reveal` mutates the answer, a copy of the object stored). A
   * dry run (`dryRun`) takes the chosen secret out alike, mints nothing and reveals nothing.
   * @throws ApiError 422 for a chosen secret that is not valid
   */
  createSecret?(body: unknown, dryRun: boolean): Promise<CreatedSecret>;
  /**
   * The kind's OpenAPI v3 schema as kube-apiserver publishes it, when it is not derived from
   * `schema` (the built-in Kubernetes kinds, src/kinds/builtin: Kubernetes' own schemas, whose
   * nested types are components such as `io.k8s.api.core.v1.PodSpec`): `schema` is the kind's
   * (the hub adds `x-kubernetes-group-version-kind`), `components` the schemas it refers to by
   * `#/components/schemas/<name>`, added to every document that documents the kind. Pure; may be
   * called on every document build (cache inside).
   */
  openAPI?(): { schema: Record<string, unknown>; components: Record<string, Record<string, unknown>> };
  /** Strips fields that are stored but never served (e.g. a token's hash). */
  present?(obj: KubeObject): KubeObject;
  /** Set on a kind served from another kind's stored objects ({@link VersionConversion}). */
  conversion?: VersionConversion;
  /** The kind's `scale` subresource ({@link ScaleSubresource}), as a CRD version declares it. */
  scale?: ScaleSubresource;
  /**
   * Set on a custom resource's kind only: its CRD version's structural `openAPIV3Schema` as JSON
   * (no `$ref`s), which its OpenAPI v3 documents publish (`kubectl explain` reads it, with
   * `apiVersion`, `kind` and `metadata` added) and by whose list types and map keys the field
   * manager merges (`fieldTypeOf`). A built-in kind's published schema is {@link openAPI} instead.
   */
  openApiSchema?: Record<string, unknown>;
}

/** `<group>/<version>` as it appears in `apiVersion`. */
export function apiVersionOf(def: KindDefinition): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}

/** The D1 `resource` key of a kind: `<group>/<plural>`. */
export function resourceKey(def: KindDefinition): string {
  return `${def.group}/${def.plural}`;
}
