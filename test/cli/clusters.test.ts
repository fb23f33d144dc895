/**
 * `flotilla` against a real hub (`wrangler dev`) and a real agent process: tokens, accept and
 * deny (with --wait), get clusters, taints; success and failure output of each.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../../agent/src/credentials.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { cond, MC, startAgent, stopAgent, waitFor, type AgentProcess } from "../e2e/support.ts";
import { flotilla } from "./support.ts";
import pkg from "../../package.json" with { type: "json" };

const pkgVersion = pkg.version;

const TOKEN_RE = /[a-z0-9]{6}\.[a-z0-9]{16}/;

describe("flotilla: tokens, accept/deny, get clusters, taints (real hub and agent)", () => {
  let hub: Hub;
  const agents: AgentProcess[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-cli-agent-"));

  const createCluster = async (name: string, labels: Record<string, string> = {}) => {
    const r = await admin(hub, "POST", MC, {
      apiVersion: "cluster.open-cluster-management.io/v1",
      kind: "ManagedCluster",
      metadata: { name, labels },
      spec: {},
    });
    expect(r.status).toBe(201);
  };

  beforeAll(async () => {
    hub = await startHub();
  });

  afterAll(async () => {
    for (const a of agents) await stopAgent(a);
    await hub?.stop();
  });

  describe("token create", () => {
    it("prints the token and the exact commands that install and join an agent", async () => {
      const r = await flotilla(["token", "create", "--ttl", "1h", "--description", "cli test"], { hub });
      expect(r.code).toBe(0);
      const token = TOKEN_RE.exec(r.stdout)?.[0];
      expect(token).toBeDefined();
      expect(r.stdout).toContain(
        `flotilla-agent install --hub-url ${hub.url} --cluster-name <CLUSTER_NAME> --bootstrap-token ${token} --image flotilla-agent:${pkgVersion} | kubectl apply -f -`,
      );
      expect(r.stdout).toContain(`npx flotilla-agent --hub-url ${hub.url} --cluster-name <CLUSTER_NAME> --bootstrap-token ${token}`);
      expect(r.stdout).toContain("--simulate");
      expect(r.stdout).toMatch(/in 1h\); auto-approve: no/);
      expect(r.stdout).toContain("flotilla accept <CLUSTER_NAME> --wait");
      const stored = await admin(hub, "GET", `/apis/flotilla.dev/v1alpha1/bootstraptokens/${token!.split(".")[0]}`);
      expect(stored.body.spec).toMatchObject({ ttlSeconds: 3600, autoApprove: false, description: "cli test" });
    });

    it("-o json and -o yaml print the BootstrapToken with status.token; --auto-approve and --cluster-name are honoured", async () => {
      const j = await flotilla(["token", "create", "--auto-approve", "-o", "json"], { hub });
      expect(j.code).toBe(0);
      const obj = JSON.parse(j.stdout);
      expect(obj.kind).toBe("BootstrapToken");
      expect(obj.spec.autoApprove).toBe(true);
      expect(obj.status.token).toMatch(TOKEN_RE);
      const y = await flotilla(["token", "create", "--ttl", "0", "-o", "yaml"], { hub });
      expect(y.code).toBe(0);
      expect(parseYaml(y.stdout).spec.ttlSeconds).toBe(0);
      const named = await flotilla(["token", "create", "--auto-approve", "--cluster-name", "edge-1", "--image", "registry.example.com/flotilla-agent:9"], {
        hub,
      });
      expect(named.stdout).toContain("--cluster-name edge-1 --bootstrap-token");
      expect(named.stdout).toMatch(/--bootstrap-token \S+ --image registry\.example\.com\/flotilla-agent:9 \| kubectl apply -f -/);
      expect(named.stdout).toContain("accepted as it registers (auto-approve)");
    });

    it("token create <token> re-creates a chosen token (a restored hub); a malformed one fails naming spec.token", async () => {
      const chosen = "cli0ab.0123456789abcdef";
      const r = await flotilla(["token", "create", chosen, "-o", "json"], { hub });
      expect(r.code, r.stderr).toBe(0);
      const obj = JSON.parse(r.stdout);
      expect(obj.metadata.name).toBe("cli0ab");
      expect(obj.status.token).toBe(chosen);
      expect(obj.spec.token).toBeUndefined();
      const bad = await flotilla(["token", "create", "nope"], { hub });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain("spec.token");
    });

    it("token list shows IDs, token delete revokes; an unknown ID fails with a hint", async () => {
      const created = JSON.parse((await flotilla(["token", "create", "--description", "to-revoke", "-o", "json"], { hub })).stdout);
      const id = created.metadata.name as string;
      const list = await flotilla(["token", "list"], { hub });
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/^ID\s+AUTO-APPROVE\s+EXPIRES\s+AGE\s+DESCRIPTION/);
      expect(list.stdout).toMatch(new RegExp(`${id}\\s+false\\s+\\S+\\s+\\S+\\s+to-revoke`));
      expect(list.stdout).not.toContain(created.status.token);
      const del = await flotilla(["token", "delete", created.status.token], { hub });
      expect(del.code).toBe(0);
      expect(del.stdout).toContain(`bootstrap token ${id} deleted`);
      expect((await admin(hub, "GET", `/apis/flotilla.dev/v1alpha1/bootstraptokens/${id}`)).status).toBe(404);
      const again = await flotilla(["token", "delete", id], { hub });
      expect(again.code).toBe(1);
      expect(again.stderr).toContain(`Error: bootstraptokens.flotilla.dev "${id}" not found`);
      expect(again.stderr).toContain("Hint: no such token; list them with `flotilla token list`");
    });

    it("a bad admin token fails with 401 and says where the token came from and what to do", async () => {
      const r = await flotilla(["--token", "wrong", "token", "create"], { hub });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(/^Error: /);
      expect(r.stderr).toContain(
        "Hint: the hub refused the admin token from --token; check --token / FLOTILLA_ADMIN_TOKEN (a local hub keeps it in .wrangler/state/admin-token)",
      );
      const env = await flotilla(["get", "clusters"], { hub, env: { FLOTILLA_ADMIN_TOKEN: "wrong" } });
      expect(env.code).toBe(1);
      expect(env.stderr).toContain("the admin token from FLOTILLA_ADMIN_TOKEN");
    });

    it("bad flags exit 2", async () => {
      const r = await flotilla(["token", "create", "--ttl", "soon"], { hub });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`"soon" is not a duration`);
      const o = await flotilla(["token", "create", "-o", "xml"], { hub });
      expect(o.code).toBe(2);
      expect(o.stderr).toMatch(/Allowed choices are json, yaml/);
    });
  });

  describe("accept and deny", () => {
    it("accept --wait waits for an agent to register, accepts it, and waits until it is Joined and Available", async () => {
      const token = JSON.parse((await flotilla(["token", "create", "-o", "json"], { hub })).stdout).status.token as string;
      let said = "";
      const waiting = flotilla(["accept", "cli1", "--wait", "--timeout", "90s"], { hub, onStderr: (s) => (said = s) });
      // The agent starts after the CLI began waiting for the cluster to register (it says so).
      await waitFor("the CLI to wait for cli1 to register", async () => said.includes("waiting for cluster cli1 to register"));
      agents.push(startAgent(hub, ["--cluster-name", "cli1", "--bootstrap-token", token, "--simulate-state", path.join(dir, "cli1.json")]));
      const r = await waiting;
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain("waiting for cluster cli1 to register");
      expect(r.stdout).toContain("cluster cli1 registered\ncluster cli1 accepted\n");
      expect(r.stdout).toContain("cluster cli1 joined and is available");
      const mc = (await admin(hub, "GET", `${MC}/cli1`)).body;
      expect(cond(mc, "ManagedClusterJoined")?.status).toBe("True");
      expect(cond(mc, "ManagedClusterConditionAvailable")?.status).toBe("True");
    });

    it("get clusters shows acceptance, conditions, version, taints and ages; -o json|yaml and names and -l work", async () => {
      await createCluster("pending1", { env: "test" });
      const r = await flotilla(["get", "clusters"], { hub });
      expect(r.code).toBe(0);
      const lines = r.stdout.trim().split("\n");
      expect(lines[0]).toMatch(/^NAME\s+ACCEPTED\s+JOINED\s+AVAILABLE\s+SINCE\s+VERSION\s+TAINTS\s+AGE$/);
      expect(lines.find((l) => l.startsWith("cli1 "))).toMatch(/^cli1\s+true\s+True\s+True\s+\d+[smhd]\S*\s+v1\.\d+\.\d+\s+-\s+\d+[smhd]/);
      expect(lines.find((l) => l.startsWith("pending1 "))).toMatch(
        /^pending1\s+false\s+-\s+-\s+-\s+-\s+cluster\.open-cluster-management\.io\/unreachable:NoSelect\s+\d+s/,
      );

      const json = JSON.parse((await flotilla(["get", "clusters", "-o", "json"], { hub })).stdout);
      expect(json.kind).toBe("ManagedClusterList");
      expect(json.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(expect.arrayContaining(["cli1", "pending1"]));
      const one = parseYaml((await flotilla(["get", "clusters", "cli1", "-o", "yaml"], { hub })).stdout);
      expect(one.kind).toBe("ManagedCluster");
      expect(one.metadata.name).toBe("cli1");
      const sel = await flotilla(["get", "clusters", "-l", "env=test"], { hub });
      expect(sel.stdout).toContain("pending1");
      expect(sel.stdout).not.toContain("cli1");
      const none = await flotilla(["get", "clusters", "-l", "env=none"], { hub });
      expect(none.code).toBe(0);
      expect(none.stdout).toBe("");
      expect(none.stderr).toBe("No clusters found.\n");
    });

    it("get clusters fails with hints: unknown name (404) and a bad selector (400)", async () => {
      const r = await flotilla(["get", "clusters", "nosuch"], { hub });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Error: managedclusters.cluster.open-cluster-management.io "nosuch" not found`);
      expect(r.stderr).toContain("Hint: no such cluster; list them with `flotilla get clusters`");
      const bad = await flotilla(["get", "clusters", "-l", "a in (b"], { hub });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/^Error: unable to parse requirement/);
      expect(bad.stderr).toContain("Hint: fix the value named above");
    });

    it("accept without --wait accepts and says what to do next; accepting again says so", async () => {
      const r = await flotilla(["accept", "pending1"], { hub });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("cluster pending1 accepted\n");
      expect(r.stdout).toContain("next: `flotilla get clusters` shows when the agents have joined");
      expect((await admin(hub, "GET", `${MC}/pending1`)).body.spec.hubAcceptsClient).toBe(true);
      const again = await flotilla(["accept", "--clusters", "pending1"], { hub });
      expect(again.stdout).toContain("cluster pending1 is already accepted");
    });

    it("accept of an unknown cluster fails with a hint; with several clusters the others still go through", async () => {
      const r = await flotilla(["accept", "nosuch"], { hub });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Error: managedclusters.cluster.open-cluster-management.io "nosuch" not found`);
      expect(r.stderr).toContain("Hint: no such cluster; list them with `flotilla get clusters`, or pass --wait to wait for it to register");
      await createCluster("pending2");
      const many = await flotilla(["accept", "nosuch", "pending2"], { hub });
      expect(many.code).toBe(1);
      expect(many.stdout).toContain("cluster pending2 accepted");
      expect(many.stderr).toContain(`"nosuch" not found`);
    });

    it("accept --wait times out with a hint when no agent joins", async () => {
      await createCluster("silent1");
      const r = await flotilla(["accept", "silent1", "--wait", "--timeout", "3s"], { hub });
      expect(r.code).toBe(1);
      expect(r.stdout).toContain("cluster silent1 accepted");
      expect(r.stderr).toContain("waiting for cluster silent1 to join (ManagedClusterJoined=-, ManagedClusterConditionAvailable=-)");
      expect(r.stderr).toContain("Error: timed out after 3s waiting for cluster silent1 to join");
      expect(r.stderr).toContain("Hint: is its agent running?");
      const unregistered = await flotilla(["accept", "ghost", "--wait", "--timeout", "2s"], { hub });
      expect(unregistered.code).toBe(1);
      expect(unregistered.stderr).toContain("Error: timed out after 2s waiting for cluster ghost to register");
      expect(unregistered.stderr).toContain("`flotilla token create` prints the command");
    });

    it("accept and deny without a cluster, or with a bad --timeout, are usage errors", async () => {
      const r = await flotilla(["accept"], { hub });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("error: name at least one cluster");
      const t = await flotilla(["deny", "x", "--wait", "--timeout", "0"], { hub });
      expect(t.code).toBe(2);
      expect(t.stderr).toContain("the timeout must be more than 0 seconds");
    });

    it("accept --key accepts the key a re-registration waits with; a wrong key ID fails and changes nothing", async () => {
      const token = await createBootstrapToken(hub, { autoApprove: true });
      const register = async (key: AgentKeyPair) => {
        const r = await fetch(`${hub.url}/agent/v1/register`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ clusterName: "rekey1", clusterId: "rekey1-id", publicKey: key.publicJwk, proof: await signProof("rekey1", key, "rekey1-id") }),
        });
        return r.status;
      };
      const first = await generateAgentKeyPair();
      const second = await generateAgentKeyPair();
      expect(await register(first)).toBe(201);
      expect(await register(second)).toBe(202);
      const warned = await flotilla(["accept", "rekey1"], { hub });
      expect(warned.code).toBe(0);
      expect(warned.stderr).toContain(`flotilla accept rekey1 --key ${second.kid}`);
      const wrong = await flotilla(["accept", "rekey1", "--key", first.kid], { hub });
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain(`cluster rekey1 is waiting with key ${second.kid}, not ${first.kid}`);
      const two = await flotilla(["accept", "rekey1", "pending1", "--key", second.kid], { hub });
      expect(two.code).toBe(2);
      const ok = await flotilla(["accept", "rekey1", "--key", second.kid], { hub });
      expect(ok.code).toBe(0);
      expect(ok.stdout).toContain(`key ${second.kid} accepted`);
      const mc = (await admin(hub, "GET", `${MC}/rekey1`)).body;
      expect(mc.metadata.annotations?.["flotilla.dev/pending-key-id"]).toBeUndefined();
      const info = async (key: AgentKeyPair) =>
        (await fetch(`${hub.url}/agent/v1/clusters/rekey1`, { headers: { authorization: `Bearer ${await signAgentToken("rekey1", key)}` } })).status;
      expect(await info(second)).toBe(200);
      expect(await info(first)).toBe(401);
    });

    it("accept --wait on a joined cluster whose agent re-registered with a new key fails at once, naming the key, never 'joined'", async () => {
      // cli1 is Joined and Available; another agent registers it with a new key (as after the
      // README's HTTPS section, run after the quick start): that key is held pending.
      const mc = (await admin(hub, "GET", `${MC}/cli1`)).body;
      const id = mc.status.clusterClaims.find((c: { name: string }) => c.name === "id.k8s.io").value as string;
      const token = await createBootstrapToken(hub);
      const key = await generateAgentKeyPair();
      const r = await fetch(`${hub.url}/agent/v1/register`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ clusterName: "cli1", clusterId: id, publicKey: key.publicJwk, proof: await signProof("cli1", key, id) }),
      });
      expect(r.status).toBe(202);
      const waited = await flotilla(["accept", "cli1", "--wait", "--timeout", "60s"], { hub });
      expect(waited.code).toBe(1);
      expect(waited.stdout).not.toContain("joined and is available");
      expect(waited.stderr).toContain(`Error: cluster cli1 cannot join: its agent registered with a new key ${key.kid}`);
      expect(waited.stderr).toContain(`Hint: if that key is your agent's (its log names it), run \`flotilla accept cli1 --key ${key.kid}\``);
    });

    it("deny --wait revokes an accepted cluster; denying again says it is not accepted; unknown clusters fail", async () => {
      const r = await flotilla(["deny", "pending2", "--wait"], { hub });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("cluster pending2 denied");
      expect(r.stdout).toContain("cluster pending2 is no longer accepted (HubAcceptedManagedCluster=False)");
      const mc = (await admin(hub, "GET", `${MC}/pending2`)).body;
      expect(mc.spec.hubAcceptsClient).toBe(false);
      expect(cond(mc, "HubAcceptedManagedCluster")?.status).toBe("False");
      const again = await flotilla(["deny", "pending2"], { hub });
      expect(again.code).toBe(0);
      expect(again.stdout).toBe("cluster pending2 is not accepted\n");
      const missing = await flotilla(["deny", "nosuch"], { hub });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("Hint: no such cluster; list them with `flotilla get clusters`");
    });
  });

  describe("taint", () => {
    it("adds taints without timeAdded (the hub stamps it) and keeps existing ones as they are", async () => {
      const r = await flotilla(["taint", "add", "pending1", "gpu=true:NoSelect", "maint:PreferNoSelect"], { hub });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe("cluster pending1 tainted gpu=true:NoSelect\ncluster pending1 tainted maint:PreferNoSelect\n");
      const before = (await admin(hub, "GET", `${MC}/pending1`)).body.spec.taints as { key: string; timeAdded: string }[];
      expect(before.map((t) => t.key)).toEqual(["cluster.open-cluster-management.io/unreachable", "gpu", "maint"]);
      expect(before.every((t) => typeof t.timeAdded === "string")).toBe(true);

      const same = await flotilla(["taint", "add", "pending1", "gpu=true:NoSelect"], { hub });
      expect(same.stdout).toBe("cluster pending1 already has taint gpu=true:NoSelect\n");
      const changed = await flotilla(["taint", "add", "pending1", "gpu=false:NoSelect"], { hub });
      expect(changed.code, changed.stderr).toBe(0);
      const after = (await admin(hub, "GET", `${MC}/pending1`)).body.spec.taints as { key: string; value?: string; timeAdded: string }[];
      expect(after.find((t) => t.key === "gpu")?.value).toBe("false");
      expect(after.find((t) => t.key === "maint")?.timeAdded).toBe(before.find((t) => t.key === "maint")?.timeAdded);

      const table = await flotilla(["get", "clusters", "pending1"], { hub });
      expect(table.stdout).toContain("gpu=false:NoSelect,maint:PreferNoSelect");
    });

    it("removes taints by key or key:effect; a missing taint fails and removes nothing", async () => {
      const miss = await flotilla(["taint", "remove", "pending1", "maint", "nothere"], { hub });
      expect(miss.code).toBe(1);
      expect(miss.stderr).toContain("Error: cluster pending1 has no taint nothere; nothing was removed");
      expect(miss.stderr).toMatch(/Hint: its taints are: .*maint:PreferNoSelect/);
      const r = await flotilla(["taint", "remove", "pending1", "maint:PreferNoSelect", "gpu"], { hub });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe("cluster pending1 untainted maint:PreferNoSelect\ncluster pending1 untainted gpu=false:NoSelect\n");
      const keys = ((await admin(hub, "GET", `${MC}/pending1`)).body.spec.taints as { key: string }[]).map((t) => t.key);
      expect(keys).toEqual(["cluster.open-cluster-management.io/unreachable"]);
    });

    it("warns when the hub puts back the taint it manages", async () => {
      const r = await flotilla(["taint", "remove", "pending1", "cluster.open-cluster-management.io/unreachable"], { hub });
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("warning: the hub put back cluster.open-cluster-management.io/unreachable:NoSelect");
    });

    it("fails for an unknown cluster (404) and for malformed taints (exit 2)", async () => {
      const r = await flotilla(["taint", "add", "nosuch", "a:NoSelect"], { hub });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("Hint: no such cluster; list them with `flotilla get clusters`");
      const bad = await flotilla(["taint", "add", "pending1", "gpu=true"], { hub });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`"gpu=true" is not KEY[=VALUE]:EFFECT`);
      const effect = await flotilla(["taint", "remove", "pending1", "gpu:Never"], { hub });
      expect(effect.code).toBe(2);
      expect(effect.stderr).toContain("the effect must be one of NoSelect, PreferNoSelect, NoSelectIfNew");
      const invalid = await flotilla(["taint", "add", "pending1", "bad key!:NoSelect"], { hub });
      expect(invalid.code).toBe(1);
      expect(invalid.stderr).toMatch(/Error: .*is invalid: spec\.taints\[\d\]\.key/);
    });
  });
});
