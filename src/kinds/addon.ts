/**
 * OCM's add-on API (`addon.open-cluster-management.io`), served in `v1alpha1` (the storage version,
 * as OCM's CRDs declare it) and `v1beta1` together, converted as OCM converts them
 * (src/kinds/addon-conversion.ts): ClusterManagementAddOn (cluster-scoped), ManagedClusterAddOn (in the
 * cluster's namespace, named after its ClusterManagementAddOn), AddOnDeploymentConfig (namespaced)
 * and AddOnTemplate (cluster-scoped, v1alpha1 only). Schemas, defaults and printer columns follow
 * open-cluster-management-io/api `addon/v1alpha1` and `addon/v1beta1` (types and CRDs).
 *
 * Fields the hub does not implement are refused with 422 naming them (src/k8s/unimplemented.ts's
 * rule): an AddOnDeploymentConfig's proxy `caBundle` and resource `claims`, an
 * AddOnTemplate's `CustomSigner` registration, configs of a resource other than
 * `addondeploymentconfigs` and `addontemplates`. The add-on manager (src/addons/) writes the
 * ManagedClusterAddOns' and ClusterManagementAddOns' status.
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { addFieldErrors, ConditionsSchema, ObjectMetaSchema, objectSchema, type KubeObject } from "../k8s/meta.ts";
import { fieldForbidden, fieldNotSupported, fieldRequired, type FieldError } from "../k8s/validation.ts";
import { tryParseQuantity } from "../k8s/quantity.ts";
import { ManifestWorkSpecSchema, RolloutStrategySchema, validateWorkSpec } from "./manifestwork.ts";
import { admitAddonWrite } from "./addon-admission.ts";
import { PLACEMENT_REFERENCE_CHANGE_COUNTER } from "./placement.ts";
import { cmaToV1alpha1, cmaToV1beta1, mcaToV1alpha1, mcaToV1beta1, sameFields } from "./addon-conversion.ts";

/** The add-on API group. */
export const ADDON_GROUP = "addon.open-cluster-management.io";
/** OCM's default install namespace of an add-on agent (the CRDs' default of `installNamespace`, `agentInstallNamespace`). */
export const DEFAULT_INSTALL_NAMESPACE = "open-cluster-management-agent-addon";
/** The config resources the hub reads (group `addon.open-cluster-management.io`). */
export const SUPPORTED_CONFIG_RESOURCES = ["addondeploymentconfigs", "addontemplates"] as const;

const DNS_LABEL_OR_EMPTY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$/;

/**
 * A config's `{group, resource}`: only the add-on API's own config kinds are read by the hub, so
 * any other is refused (422 NotSupported on `resource`), never accepted and ignored.
 */
const ConfigGroupResource = {
  group: z.string().optional(),
  resource: z.string().min(1),
};
function supportedConfig<T extends z.ZodObject>(schema: T) {
  return schema.superRefine((v, ctx) => {
    const c = v as { group?: string; resource?: string };
    if ((c.group ?? "") !== ADDON_GROUP) addFieldErrors(ctx, v, [fieldNotSupported("group", c.group ?? "", [ADDON_GROUP])]);
    else if (!(SUPPORTED_CONFIG_RESOURCES as readonly string[]).includes(c.resource ?? ""))
      addFieldErrors(ctx, v, [fieldNotSupported("resource", c.resource ?? "", SUPPORTED_CONFIG_RESOURCES)]);
  });
}
/**
 * A list the CRD declares `x-kubernetes-list-type: map` (keys named in `keys`), as OCM's config
 * lists (`+listType=map`, e.g. `supportedConfigs` keyed by `group` and `resource`): a second item
 * with the same keys is refused as kube-apiserver refuses it, `<list>[i]: Duplicate value:
 * map[string]interface {}{"group":"…", "resource":"…"}` (a key left out counts as its CRD default,
 * `""` for `group`).
 */
function mapList<T extends z.ZodType>(item: T, keys: string[]) {
  return z
    .array(item)
    .meta({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys })
    .superRefine((items, ctx) => {
      const seen = new Set<string>();
      const errors: FieldError[] = [];
      items.forEach((v, i) => {
        const o = (v ?? {}) as Record<string, unknown>;
        const shown = [...keys].sort().map((k) => `${JSON.stringify(k)}:${JSON.stringify(o[k] ?? (k === "group" ? "" : null))}`);
        const id = shown.join(", ");
        if (seen.has(id)) errors.push({ field: `[${i}]`, reason: "FieldValueDuplicate", message: `Duplicate value: map[string]interface {}{${id}}` });
        seen.add(id);
      });
      addFieldErrors(ctx, items, errors);
    });
}

const ConfigReferent = { namespace: z.string().optional(), name: z.string().min(1) };
const ConfigSpecHash = z.strictObject({ namespace: z.string().optional(), name: z.string(), specHash: z.string() });
const AddOnMeta = z.strictObject({ displayName: z.string().optional(), description: z.string().optional() });
/** `AddOnConfig` (both versions): a config referenced by group, resource, namespace and name. */
const AddOnConfigSchema = supportedConfig(z.strictObject({ ...ConfigGroupResource, ...ConfigReferent }));

const PlacementStrategySchema = z.strictObject({
  namespace: z.string().min(1),
  name: z.string().min(1),
  configs: z.array(AddOnConfigSchema).optional(),
  rolloutStrategy: RolloutStrategySchema.optional(),
});
const InstallStrategySchema = z.strictObject({
  type: z.enum(["Manual", "Placements"]).optional(),
  placements: mapList(PlacementStrategySchema, ["namespace", "name"]).optional(),
});
const InstallConfigReference = z.strictObject({
  ...ConfigGroupResource,
  desiredConfig: ConfigSpecHash.nullable().optional(),
  lastKnownGoodConfig: ConfigSpecHash.nullable().optional(),
  lastAppliedConfig: ConfigSpecHash.nullable().optional(),
});
const InstallProgression = z.strictObject({
  namespace: z.string(),
  name: z.string(),
  configReferences: z.array(InstallConfigReference).optional(),
  conditions: ConditionsSchema.optional(),
});
const DefaultConfigReference = z.strictObject({ ...ConfigGroupResource, desiredConfig: ConfigSpecHash.nullable().optional() });

const CmaV1alpha1Schema = objectSchema(
  z.strictObject({
    addOnMeta: AddOnMeta.optional(),
    // Deprecated and informational only in OCM (shown as CRD NAME); stored as given.
    addOnConfiguration: z
      .strictObject({ crdName: z.string().optional(), crName: z.string().optional(), lastObservedGeneration: z.number().int().optional() })
      .optional(),
    supportedConfigs: mapList(
      supportedConfig(z.strictObject({ ...ConfigGroupResource, defaultConfig: z.strictObject(ConfigReferent).nullable().optional() })),
      ["group", "resource"],
    ).optional(),
    installStrategy: InstallStrategySchema.optional(),
  }),
  z.strictObject({ defaultconfigReferences: z.array(DefaultConfigReference).optional(), installProgressions: z.array(InstallProgression).optional() }),
);

const CmaV1beta1Schema = objectSchema(
  z.strictObject({
    addOnMeta: AddOnMeta.optional(),
    defaultConfigs: mapList(AddOnConfigSchema, ["group", "resource"]).optional(),
    installStrategy: InstallStrategySchema.optional(),
  }),
  z.strictObject({ defaultConfigReferences: z.array(DefaultConfigReference).optional(), installProgressions: z.array(InstallProgression).optional() }),
);

function defaultInstallStrategy(obj: KubeObject): void {
  const spec = (obj.spec ??= {}) as { installStrategy?: { type?: string; placements?: { rolloutStrategy?: { type?: string } }[] } };
  spec.installStrategy ??= { type: "Manual" };
  spec.installStrategy.type ??= "Manual";
  for (const p of spec.installStrategy.placements ?? []) {
    p.rolloutStrategy ??= { type: "All" };
    p.rolloutStrategy.type ??= "All";
  }
}

function validateCma(obj: KubeObject): StatusCause[] {
  const spec = (obj.spec ?? {}) as { installStrategy?: { type?: string; placements?: unknown[] } };
  if (spec.installStrategy?.type !== "Placements" && (spec.installStrategy?.placements?.length ?? 0) > 0) {
    return [
      {
        field: "spec.installStrategy.placements",
        reason: "FieldValueForbidden",
        message: 'Forbidden: placements are only used with installStrategy type "Placements"',
      },
    ];
  }
  return [];
}

/** ClusterManagementAddOn `v1alpha1` (the storage version). */
export const ClusterManagementAddOnKind: KindDefinition = {
  group: ADDON_GROUP,
  version: "v1alpha1",
  kind: "ClusterManagementAddOn",
  listKind: "ClusterManagementAddOnList",
  plural: "clustermanagementaddons",
  singular: "clustermanagementaddon",
  shortNames: ["cma", "cmas"],
  namespaced: false,
  hasStatus: true,
  schema: CmaV1alpha1Schema,
  storage: "d1",
  changeCounter: PLACEMENT_REFERENCE_CHANGE_COUNTER,
  printerColumns: [
    { name: "DISPLAY NAME", type: "string", jsonPath: ".spec.addOnMeta.displayName" },
    { name: "CRD NAME", type: "string", jsonPath: ".spec.addOnConfiguration.crdName" },
  ],
  defaults: defaultInstallStrategy,
  validate: validateCma,
};

/** ClusterManagementAddOn `v1beta1` (stored as v1alpha1). */
export const ClusterManagementAddOnV1beta1Kind: KindDefinition = {
  ...ClusterManagementAddOnKind,
  version: "v1beta1",
  schema: CmaV1beta1Schema,
  printerColumns: [{ name: "DISPLAY NAME", type: "string", jsonPath: ".spec.addOnMeta.displayName" }],
  conversion: { storage: ClusterManagementAddOnKind, toStorage: cmaToV1alpha1, fromStorage: cmaToV1beta1 },
};

const ObjectReference = z.strictObject({ group: z.string(), resource: z.string(), namespace: z.string().optional(), name: z.string() });
const HealthCheck = z.strictObject({ mode: z.enum(["Lease", "Customized"]).optional() });
const ConfigReferenceCommon = {
  ...ConfigGroupResource,
  lastObservedGeneration: z.number().int().optional(),
  desiredConfig: ConfigSpecHash.nullable().optional(),
  lastAppliedConfig: ConfigSpecHash.nullable().optional(),
};
const SubjectV1alpha1 = z.strictObject({ user: z.string(), groups: z.array(z.string()).optional(), organizationUnit: z.array(z.string()).optional() });
const BaseSubject = { user: z.string(), groups: z.array(z.string()).optional() };

const McaV1alpha1Schema = objectSchema(
  z.strictObject({
    installNamespace: z
      .string()
      .max(63)
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must match ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
      .optional(),
    configs: z.array(AddOnConfigSchema).optional(),
  }),
  z.strictObject({
    conditions: ConditionsSchema.optional(),
    relatedObjects: z.array(ObjectReference).optional(),
    addOnMeta: AddOnMeta.optional(),
    addOnConfiguration: z
      .strictObject({ crdName: z.string().optional(), crName: z.string().optional(), lastObservedGeneration: z.number().int().optional() })
      .optional(),
    supportedConfigs: z.array(z.strictObject(ConfigGroupResource)).optional(),
    configReferences: z.array(z.strictObject({ ...ConfigReferenceCommon, namespace: z.string().optional(), name: z.string() })).optional(),
    namespace: z.string().optional(),
    registrations: z.array(z.strictObject({ signerName: z.string(), subject: SubjectV1alpha1.optional() })).optional(),
    healthCheck: HealthCheck.optional(),
    kubeClientDriver: z.string().optional(),
  }),
);

const McaV1beta1Schema = objectSchema(
  z.strictObject({ configs: z.array(AddOnConfigSchema).optional() }),
  z.strictObject({
    conditions: ConditionsSchema.optional(),
    relatedObjects: z.array(ObjectReference).optional(),
    addOnMeta: AddOnMeta.optional(),
    supportedConfigs: z.array(z.strictObject(ConfigGroupResource)).optional(),
    configReferences: z.array(z.strictObject(ConfigReferenceCommon)).optional(),
    namespace: z.string().optional(),
    registrations: z
      .array(
        z.strictObject({
          type: z.enum(["kubeClient", "customSigner"]),
          kubeClient: z.strictObject({ subject: z.strictObject(BaseSubject).optional(), driver: z.string().optional() }).optional(),
          customSigner: z
            .strictObject({ signerName: z.string(), subject: z.strictObject({ ...BaseSubject, organizationUnits: z.array(z.string()).optional() }).optional() })
            .optional(),
        }),
      )
      .optional(),
    healthCheck: HealthCheck.optional(),
  }),
);

/** ManagedClusterAddOn `v1alpha1` (the storage version; in the cluster's namespace). */
export const ManagedClusterAddOnKind: KindDefinition = {
  group: ADDON_GROUP,
  version: "v1alpha1",
  kind: "ManagedClusterAddOn",
  listKind: "ManagedClusterAddOnList",
  plural: "managedclusteraddons",
  singular: "managedclusteraddon",
  shortNames: ["mca", "mcas"],
  namespaced: true,
  hasStatus: true,
  schema: McaV1alpha1Schema,
  storage: "d1",
  printerColumns: [
    { name: "Available", type: "string", jsonPath: '.status.conditions[?(@.type=="Available")].status' },
    { name: "Degraded", type: "string", jsonPath: '.status.conditions[?(@.type=="Degraded")].status' },
    { name: "Progressing", type: "string", jsonPath: '.status.conditions[?(@.type=="Progressing")].status' },
  ],
  defaults(obj) {
    const spec = (obj.spec ??= {}) as { installNamespace?: string };
    spec.installNamespace ??= DEFAULT_INSTALL_NAMESPACE;
  },
  // A config reference its writer could not follow is refused; the manager's configReferences stay its own.
  finalize: (obj, old, ctx) => admitAddonWrite(obj, old, ctx),
  validate(obj): StatusCause[] {
    // OCM's hosted mode (the agent on another cluster than the one it manages) is not implemented.
    const hosting = `${ADDON_GROUP}/hosting-cluster-name`;
    if (obj.metadata.annotations?.[hosting] === undefined) return [];
    return [fieldForbidden(`metadata.annotations[${hosting}]`, "hosted mode of add-ons is not implemented by this hub's add-on manager")];
  },
};

/** ManagedClusterAddOn `v1beta1` (stored as v1alpha1; `installNamespace` is an annotation there). */
export const ManagedClusterAddOnV1beta1Kind: KindDefinition = {
  ...ManagedClusterAddOnKind,
  version: "v1beta1",
  schema: McaV1beta1Schema,
  defaults: undefined,
  conversion: { storage: ManagedClusterAddOnKind, toStorage: mcaToV1alpha1, fromStorage: mcaToV1beta1 },
};

/** A field the hub does not implement: any value other than an empty one is refused (422 Forbidden). */
function notImplemented<T extends z.ZodType>(schema: T, why: string) {
  return schema.superRefine((v, ctx) => {
    const empty =
      v === null || v === undefined || (Array.isArray(v) && v.length === 0) || (typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0);
    if (!empty) addFieldErrors(ctx, v, [fieldForbidden("", why)]);
  });
}

const TolerationSchema = z.strictObject({
  key: z.string().optional(),
  operator: z.enum(["Exists", "Equal"]).optional(),
  value: z.string().optional(),
  effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute", ""]).optional(),
  tolerationSeconds: z.number().int().nullable().optional(),
});

/** A resource quantity (`100m`, `128Mi`, or a number), as Kubernetes parses it. */
const Quantity = z.union([z.number(), z.string()]).superRefine((v, ctx) => {
  if (typeof v === "string" && tryParseQuantity(v) === undefined)
    addFieldErrors(ctx, v, [
      {
        field: "",
        reason: "FieldValueInvalid",
        message: `Invalid value: ${JSON.stringify(v)}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
      },
    ]);
});

/** `AddOnDeploymentConfig.spec` (both versions). */
export const AddOnDeploymentConfigSpecSchema = z.strictObject({
  customizedVariables: mapList(
    z.strictObject({
      name: z
        .string()
        .min(1)
        .max(255)
        .regex(/^[a-zA-Z_][_a-zA-Z0-9]*$/, "must match ^[a-zA-Z_][_a-zA-Z0-9]*$"),
      value: z.string().max(1024).optional(),
    }),
    ["name"],
  ).optional(),
  nodePlacement: z
    .strictObject({ nodeSelector: z.record(z.string(), z.string()).optional(), tolerations: z.array(TolerationSchema).optional() })
    .nullable()
    .optional(),
  registries: z.array(z.strictObject({ mirror: z.string().min(1), source: z.string().min(1) })).optional(),
  proxyConfig: z
    .strictObject({
      httpProxy: z.string().optional(),
      httpsProxy: z.string().optional(),
      caBundle: notImplemented(z.string(), "a proxy CA bundle is not implemented by this hub's add-on manager").optional(),
      noProxy: z.string().optional(),
    })
    .optional(),
  agentInstallNamespace: z.string().max(63).regex(DNS_LABEL_OR_EMPTY, "must match ^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$").optional(),
  resourceRequirements: mapList(
    z.strictObject({
      containerID: z
        .string()
        .regex(
          /^(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs|pods|\*):.+:.+$/,
          "must match ^(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs|pods|\\*):.+:.+$",
        ),
      resources: z.strictObject({
        limits: z.record(z.string(), Quantity).optional(),
        requests: z.record(z.string(), Quantity).optional(),
        claims: notImplemented(
          z.array(z.strictObject({ name: z.string(), request: z.string().optional() })),
          "resource claims of add-on agents are not implemented by this hub's add-on manager",
        ).optional(),
      }),
    }),
    ["containerID"],
  ).optional(),
});

/** AddOnDeploymentConfig `v1alpha1` (the storage version; namespaced). */
export const AddOnDeploymentConfigKind: KindDefinition = {
  group: ADDON_GROUP,
  version: "v1alpha1",
  kind: "AddOnDeploymentConfig",
  listKind: "AddOnDeploymentConfigList",
  plural: "addondeploymentconfigs",
  singular: "addondeploymentconfig",
  shortNames: [],
  namespaced: true,
  hasStatus: false,
  schema: z.strictObject({ apiVersion: z.string(), kind: z.string(), metadata: ObjectMetaSchema, spec: AddOnDeploymentConfigSpecSchema.optional() }),
  storage: "d1",
  defaults(obj) {
    const spec = (obj.spec ??= {}) as { agentInstallNamespace?: string };
    spec.agentInstallNamespace ??= DEFAULT_INSTALL_NAMESPACE;
  },
};

/** AddOnDeploymentConfig `v1beta1` (same fields; stored as v1alpha1). */
export const AddOnDeploymentConfigV1beta1Kind: KindDefinition = {
  ...AddOnDeploymentConfigKind,
  version: "v1beta1",
  conversion: { storage: AddOnDeploymentConfigKind, toStorage: sameFields("v1alpha1"), fromStorage: sameFields("v1beta1") },
};

const RegistrationSpecSchema = z
  .strictObject({
    type: z.enum(["KubeClient", "CustomSigner"]),
    kubeClient: z
      .strictObject({
        hubPermissions: z
          .array(
            z.strictObject({
              type: z.enum(["CurrentCluster", "SingleNamespace"]),
              currentCluster: z.strictObject({ clusterRoleName: z.string().min(1) }).optional(),
              singleNamespace: z
                .strictObject({ namespace: z.string(), roleRef: z.strictObject({ apiGroup: z.string(), kind: z.string(), name: z.string() }) })
                .optional(),
            }),
          )
          .optional(),
      })
      .optional(),
    customSigner: z.record(z.string(), z.unknown()).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.type === "CustomSigner") addFieldErrors(ctx, v.type, [fieldNotSupported("type", v.type, ["KubeClient"])]);
  });

/** AddOnTemplate `v1alpha1` (cluster-scoped; OCM serves it in v1alpha1 only). */
export const AddOnTemplateKind: KindDefinition = {
  group: ADDON_GROUP,
  version: "v1alpha1",
  kind: "AddOnTemplate",
  listKind: "AddOnTemplateList",
  plural: "addontemplates",
  singular: "addontemplate",
  shortNames: [],
  namespaced: false,
  hasStatus: false,
  schema: z.strictObject({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: ObjectMetaSchema,
    spec: z.strictObject({ addonName: z.string().min(1), agentSpec: ManifestWorkSpecSchema, registration: z.array(RegistrationSpecSchema).optional() }),
  }),
  storage: "d1",
  printerColumns: [{ name: "ADDON NAME", type: "string", jsonPath: ".spec.addonName" }],
  validate(obj): StatusCause[] {
    const agentSpec = (obj.spec as { agentSpec?: { workload?: { manifests?: unknown[] } } } | undefined)?.agentSpec;
    return [
      ...validateWorkSpec(agentSpec as Record<string, unknown> | undefined, "spec.agentSpec"),
      ...unservedManifestMarks(agentSpec?.workload?.manifests ?? []),
      ...hubPermissionErrors(obj),
    ];
  },
};

/**
 * A hub permission's binding must say where it binds, as OCM's template add-on requires when it
 * binds them (`pkg/addon/templateagent/registration.go`: "current cluster is required when the
 * HubPermission type is CurrentCluster", "single namespace is required when the HubPermission type
 * is SingleNamespace"): refused at admission (422 naming the field) rather than failing on every
 * cluster later. A `SingleNamespace` binding needs a non-empty `singleNamespace.namespace` (a
 * RoleBinding needs a namespace) and a `roleRef.name`; a `CurrentCluster` one a `clusterRoleName`.
 */
function hubPermissionErrors(obj: KubeObject): StatusCause[] {
  type Permission = {
    type?: string;
    currentCluster?: { clusterRoleName?: string };
    singleNamespace?: { namespace?: string; roleRef?: { kind?: string; name?: string } };
  };
  const registrations = (obj.spec as { registration?: { kubeClient?: { hubPermissions?: Permission[] } }[] } | undefined)?.registration ?? [];
  const causes: StatusCause[] = [];
  registrations.forEach((r, i) =>
    (r.kubeClient?.hubPermissions ?? []).forEach((p, j) => {
      const at = `spec.registration[${i}].kubeClient.hubPermissions[${j}]`;
      if (p.type === "SingleNamespace") {
        if (!p.singleNamespace)
          causes.push(fieldRequired(`${at}.singleNamespace`, "single namespace is required when the HubPermission type is SingleNamespace"));
        else {
          if (!p.singleNamespace.namespace) causes.push(fieldRequired(`${at}.singleNamespace.namespace`, "the namespace the role is bound in"));
          if (!p.singleNamespace.roleRef?.name) causes.push(fieldRequired(`${at}.singleNamespace.roleRef.name`));
          const kind = p.singleNamespace.roleRef?.kind;
          if (kind && kind !== "Role" && kind !== "ClusterRole")
            causes.push(fieldNotSupported(`${at}.singleNamespace.roleRef.kind`, kind, ["Role", "ClusterRole"]));
        }
      } else if (p.type === "CurrentCluster" && !p.currentCluster) {
        causes.push(fieldRequired(`${at}.currentCluster`, "current cluster is required when the HubPermission type is CurrentCluster"));
      }
    }),
  );
  return causes;
}

/**
 * OCM's add-on framework marks a template's manifest as a pre-delete hook (run when the add-on
 * is removed, not deployed) or places it in hosted mode by these annotations (and the older
 * label); this hub's manager does neither, so a manifest carrying one is refused (422 naming it)
 * rather than deployed as an ordinary manifest.
 */
const UNSERVED_MANIFEST_MARKS: { where: "annotations" | "labels"; key: string; what: string }[] = [
  { where: "annotations", key: `${ADDON_GROUP}/addon-pre-delete`, what: "pre-delete hooks of add-ons" },
  { where: "labels", key: "open-cluster-management.io/addon-pre-delete", what: "pre-delete hooks of add-ons" },
  { where: "annotations", key: `${ADDON_GROUP}/hosted-manifest-location`, what: "hosted mode of add-ons" },
  { where: "labels", key: `${ADDON_GROUP}/hosted-manifest-location`, what: "hosted mode of add-ons" },
];

function unservedManifestMarks(manifests: unknown[]): StatusCause[] {
  const causes: StatusCause[] = [];
  manifests.forEach((m, i) => {
    const meta = ((m as { metadata?: { annotations?: Record<string, string>; labels?: Record<string, string> } } | null)?.metadata ?? {}) as Record<
      string,
      Record<string, string> | undefined
    >;
    for (const mark of UNSERVED_MANIFEST_MARKS) {
      if (meta[mark.where]?.[mark.key] === undefined) continue;
      causes.push(
        fieldForbidden(
          `spec.agentSpec.workload.manifests[${i}].metadata.${mark.where}[${mark.key}]`,
          `${mark.what} are not implemented by this hub's add-on manager`,
        ),
      );
    }
  });
  return causes;
}

/** Every add-on kind, in the order discovery lists them (v1beta1 first: the preferred version, as Kubernetes orders CRD versions). */
export const ADDON_KINDS: KindDefinition[] = [
  ClusterManagementAddOnV1beta1Kind,
  ManagedClusterAddOnV1beta1Kind,
  AddOnDeploymentConfigV1beta1Kind,
  ClusterManagementAddOnKind,
  ManagedClusterAddOnKind,
  AddOnDeploymentConfigKind,
  AddOnTemplateKind,
];
