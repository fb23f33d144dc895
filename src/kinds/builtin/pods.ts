/**
 * The pod template shared by the workload kinds (Deployment, StatefulSet, DaemonSet, Job,
 * CronJob's job template): the part of Kubernetes' defaulting (`pkg/apis/core/v1/defaults.go`
 * SetDefaults_PodSpec, SetDefaults_Container, SetDefaults_ContainerPort) and validation
 * (`pkg/apis/core/validation` ValidatePodTemplateSpec: containers, names, images, restart
 * policy, ports) a user of the hub meets. The hub runs no pods: these objects are templates, so
 * what concerns a running pod (volumes' sources, probes' handlers, security contexts) is checked
 * only by the schema.
 */
import type { StatusCause } from "../../k8s/errors.ts";
import { isJsonObject, type JsonObject } from "../../k8s/meta.ts";
import { fieldDuplicate, fieldInvalid, fieldNotSupported, fieldRequired, isDNS1123Label, validateLabels } from "../../k8s/validation.ts";

/** Drops every `null` field of a JSON value, in place (Go's decoder leaves such a field unset). */
export function dropNulls(v: unknown): void {
  if (Array.isArray(v)) for (const x of v) dropNulls(x);
  else if (isJsonObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (x === null) delete v[k];
      else dropNulls(x);
    }
  }
}

const obj = (v: unknown): JsonObject | undefined => (isJsonObject(v) ? v : undefined);
const list = (v: unknown): JsonObject[] => (Array.isArray(v) ? v.filter(isJsonObject) : []);

/** `imagePullPolicy`'s default (SetDefaults_Container): Always for `:latest` or an untagged image, else IfNotPresent. */
function pullPolicyOf(image: string): string {
  if (image.includes("@")) return "IfNotPresent";
  const last = image.slice(image.lastIndexOf("/") + 1);
  const tag = last.includes(":") ? last.slice(last.lastIndexOf(":") + 1) : "";
  return tag === "" || tag === "latest" ? "Always" : "IfNotPresent";
}

function defaultContainer(c: JsonObject): void {
  if (typeof c.image === "string" && c.imagePullPolicy === undefined) c.imagePullPolicy = pullPolicyOf(c.image);
  c.terminationMessagePath ??= "/dev/termination-log";
  c.terminationMessagePolicy ??= "File";
  for (const p of list(c.ports)) p.protocol ??= "TCP";
  for (const e of list(c.env)) {
    const ref = obj(obj(e.valueFrom)?.fieldRef);
    if (ref) ref.apiVersion ??= "v1";
  }
}

/**
 * Sets a pod template's defaults (SetDefaults_PodSpec, SetDefaults_Container,
 * SetDefaults_ContainerPort), in place: restartPolicy Always (unless set), dnsPolicy
 * ClusterFirst, schedulerName default-scheduler, terminationGracePeriodSeconds 30, an empty
 * securityContext; each container's imagePullPolicy, termination message path and policy, port
 * protocols TCP.
 */
export function defaultPodTemplate(template: unknown): void {
  const spec = obj(obj(template)?.spec);
  if (!spec) return;
  spec.restartPolicy ??= "Always";
  spec.dnsPolicy ??= "ClusterFirst";
  spec.schedulerName ??= "default-scheduler";
  spec.terminationGracePeriodSeconds ??= 30;
  spec.securityContext ??= {};
  for (const c of [...list(spec.containers), ...list(spec.initContainers)]) defaultContainer(c);
}

function validateContainers(containers: unknown, path: string, required: boolean, names: Set<string>): StatusCause[] {
  const out: StatusCause[] = [];
  const items = Array.isArray(containers) ? containers : [];
  if (required && items.length === 0) out.push(fieldRequired(path));
  items.forEach((c, i) => {
    const at = `${path}[${i}]`;
    if (!isJsonObject(c)) return;
    const name = typeof c.name === "string" ? c.name : "";
    if (!name) out.push(fieldRequired(`${at}.name`));
    else {
      for (const m of isDNS1123Label(name)) out.push(fieldInvalid(`${at}.name`, name, m));
      if (names.has(name)) out.push(fieldDuplicate(`${at}.name`, name));
      names.add(name);
    }
    if (typeof c.image !== "string" || c.image.trim() === "") out.push(fieldRequired(`${at}.image`));
    const ports = new Set<string>();
    list(c.ports).forEach((p, j) => {
      const pat = `${at}.ports[${j}]`;
      const port = p.containerPort;
      if (typeof port === "number" && (port < 1 || port > 65535))
        out.push(fieldInvalid(`${pat}.containerPort`, port, "must be between 1 and 65535, inclusive"));
      if (typeof p.hostPort === "number" && p.hostPort !== 0 && (p.hostPort < 1 || p.hostPort > 65535))
        out.push(fieldInvalid(`${pat}.hostPort`, p.hostPort, "must be between 1 and 65535, inclusive"));
      if (typeof p.name === "string" && p.name !== "") {
        if (ports.has(p.name)) out.push(fieldDuplicate(`${pat}.name`, p.name));
        ports.add(p.name);
      }
    });
    const env = new Set<string>();
    list(c.env).forEach((e, j) => {
      if (typeof e.name !== "string" || e.name === "") out.push(fieldRequired(`${at}.env[${j}].name`));
      else env.add(e.name);
    });
  });
  return out;
}

/**
 * Validates a pod template as ValidatePodTemplateSpec does for the parts above: template labels,
 * at least one container, container names (DNS-1123 labels, unique across init and regular
 * containers), images, ports, env names, and the restart policy (`allowed`, e.g. only Always for
 * a Deployment, OnFailure or Never for a Job). `path` is the template's field path.
 */
export function validatePodTemplate(template: unknown, path: string, allowed: readonly string[]): StatusCause[] {
  const t = obj(template);
  if (!t) return [fieldRequired(path)];
  const out: StatusCause[] = [];
  const labels = obj(obj(t.metadata)?.labels) as Record<string, string> | undefined;
  if (labels) out.push(...validateLabels(labels, `${path}.metadata.labels`));
  const spec = obj(t.spec);
  if (!spec) return [...out, fieldRequired(`${path}.spec`)];
  const names = new Set<string>();
  out.push(...validateContainers(spec.initContainers, `${path}.spec.initContainers`, false, names));
  out.push(...validateContainers(spec.containers, `${path}.spec.containers`, true, names));
  const rp = spec.restartPolicy;
  if (typeof rp === "string" && !allowed.includes(rp)) out.push(fieldNotSupported(`${path}.spec.restartPolicy`, rp, allowed));
  return out;
}

/** The containers of a pod template, for the printers' CONTAINERS and IMAGES columns. */
export function containersOf(template: unknown): { names: string; images: string } {
  const cs = list(obj(obj(template)?.spec)?.containers);
  return { names: cs.map((c) => String(c.name ?? "")).join(","), images: cs.map((c) => String(c.image ?? "")).join(",") };
}
