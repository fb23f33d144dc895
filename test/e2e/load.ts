/**
 * Load for end-to-end tests against a real hub (the wedge test, the soak): admin requests and
 * simulated agents (registered with a real key pair, signing a fresh JWT per request as the
 * agent does, docs/agent-protocol.md) that record every answer, so a test can say which request
 * got a 5xx.
 */
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../../agent/src/credentials.ts";
import { HubClient } from "../../agent/src/hub-client.ts";
import { admin, createBootstrapToken, type AdminResponse, type Hub } from "../../scripts/hub-process.ts";

/** Every answer a load run got with a status of 500 or more: what was asked, and what came back. */
export class ServerErrors {
  readonly seen: string[] = [];
  /** Records `status` for `what` when it is a 5xx (or no answer: status 0); returns it unchanged. */
  note(what: string, status: number, body?: unknown): number {
    if (status >= 500 || status === 0) this.seen.push(`${what} -> ${status} ${typeof body === "string" ? body : JSON.stringify(body)}`.slice(0, 400));
    return status;
  }
}

/** An admin request whose answer is checked for a 5xx (recorded in `errors`). */
export async function adminCall(hub: Hub, errors: ServerErrors, method: string, path: string, body?: unknown, contentType?: string): Promise<AdminResponse> {
  const r = await admin(hub, method, path, body, contentType);
  errors.note(`${method} ${path}`, r.status, r.body);
  return r;
}

export { pool } from "../../scripts/pool.ts";

/** A simulated agent: its cluster's name, key and the hub's key tag for it. */
export interface LoadAgent {
  name: string;
  key: AgentKeyPair;
  keyTag?: string;
  client: HubClient;
}

/**
 * Registers cluster `name` with a fresh key pair through `bootstrapToken` (an auto-approving
 * BootstrapToken, see {@link autoApproveToken}) and sends its first heartbeat.
 * @throws Error when the registration or the heartbeat is refused
 */
export async function registerAgent(hub: Hub, bootstrapToken: string, name: string): Promise<LoadAgent> {
  const key = await generateAgentKeyPair();
  const client = new HubClient({ hubUrl: hub.url, timeoutMs: 60_000 });
  const proof = await signProof(name, key, `id-${name}`);
  const r = await client.register(bootstrapToken, { clusterName: name, clusterId: `id-${name}`, publicKey: key.publicJwk, proof, claims: [] });
  if (!r.ok) throw new Error(`register ${name}: ${JSON.stringify(r.error)}`);
  const agent: LoadAgent = { name, key, keyTag: client.keyTag(key.kid), client };
  const hb = await agent.client.heartbeat(name, await tokenOf(agent), { healthy: true });
  if (!hb.ok) throw new Error(`heartbeat ${name}: ${JSON.stringify(hb.error)}`);
  return agent;
}

/** A fresh agent JWT of `agent` (a new `jti` each time: the hub refuses a replay). */
export function tokenOf(agent: LoadAgent): Promise<string> {
  return signAgentToken(agent.name, agent.key, { keyTag: agent.keyTag });
}

/** An auto-approving BootstrapToken's secret. */
export function autoApproveToken(hub: Hub): Promise<string> {
  return createBootstrapToken(hub, { autoApprove: true });
}

/** The HTTP status of an agent call's result (0: no answer), recorded in `errors` when a 5xx. */
export function statusOf(
  errors: ServerErrors,
  what: string,
  r: { ok: true; status: number } | { ok: false; error: { status?: number; message: string } },
): number {
  const status = r.ok ? r.status : (r.error.status ?? 0);
  return errors.note(what, status, r.ok ? undefined : r.error.message);
}

/** A ManifestWork carrying one ConfigMap named `name`. */
export function manifestWork(name: string, data: Record<string, string> = {}): Record<string, unknown> {
  return {
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name },
    spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data }] } },
  };
}

/** A work status as an agent reports it: Applied at `generation`, with `message`. */
export function appliedStatus(generation: number, message: string): Record<string, unknown> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return {
    conditions: [{ type: "Applied", status: "True", reason: "AppliedManifestWorkComplete", message, observedGeneration: generation, lastTransitionTime: now }],
  };
}

/** Paths of the kinds load tests write. */
export const PATHS = {
  placements: (ns: string) => `/apis/cluster.open-cluster-management.io/v1beta1/namespaces/${ns}/placements`,
  secrets: (ns: string) => `/api/v1/namespaces/${ns}/secrets`,
  works: (cluster: string) => `/apis/work.open-cluster-management.io/v1/namespaces/${cluster}/manifestworks`,
  clusters: "/apis/cluster.open-cluster-management.io/v1/managedclusters",
};
