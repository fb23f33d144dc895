import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, MCSET, snapshot, createCluster, merge, MWRS, PLACEMENTS, BINDINGS, SECRETS, decided } from "./helpers.ts";
import { waitFor } from "../wait.ts";

const RECEIVERS = (ns: string) => `/apis/flotilla.dev/v1alpha1/namespaces/${ns}/webhookreceivers`;
const IMAGE = "/spec/manifestWorkTemplate/workload/manifests/0/spec/template/spec/containers/0/image";
const MWRS_TARGET = { apiVersion: "work.open-cluster-management.io/v1alpha1", kind: "ManifestWorkReplicaSet", name: "web" };
const PLACEMENT_TARGET = { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", name: "hooked" };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

async function hmacHex(key: string, body: string): Promise<string> {
  const k = await crypto.subtle.importKey("raw", new TextEncoder().encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const sig = await crypto.subtle.sign("HMAC", k, new TextEncoder().encode(body));
  return [...new Uint8Array(sig)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** POSTs a delivery to a hook path with the given headers (no bearer token). */
async function deliver(path: string, body: string, headers: Record<string, string>): Promise<{ status: number; body: Json }> {
  const res = await exports.default.fetch(`https://hub.test${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A generic delivery signed with `key` (default: the `hook` Secret's token). */
async function generic(path: string, payload: unknown, deliveryId: string | null = crypto.randomUUID(), key = "s3cret") {
  const body = JSON.stringify(payload);
  const headers: Record<string, string> = { "X-Signature-256": `sha256=${await hmacHex(key, body)}` };
  if (deliveryId !== null) headers["X-Delivery-Id"] = deliveryId;
  return deliver(path, body, headers);
}

async function receiver(ns: string, name: string, spec: Json): Promise<string> {
  const r = await call("POST", RECEIVERS(ns), { apiVersion: "flotilla.dev/v1alpha1", kind: "WebhookReceiver", metadata: { name }, spec });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.status.webhookPath as string;
}

const spec = (action: Json, target: Json = MWRS_TARGET, extra: Json = {}) => ({ type: "generic", secretRef: { name: "hook" }, target, action, ...extra });

async function image(ns = "apps", name = "web"): Promise<string> {
  const r = await call("GET", `${MWRS(ns)}/${name}`);
  return r.body.spec.manifestWorkTemplate.workload.manifests[0].spec.template.spec.containers[0].image;
}

function deployment(img: string) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default" },
    spec: {
      selector: { matchLabels: { app: "web" } },
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: img }] } },
    },
  };
}

let releasePath = "";

beforeAll(async () => {
  await createNamespaces("apps");
  const s = await call("POST", SECRETS("apps"), { apiVersion: "v1", kind: "Secret", metadata: { name: "hook" }, stringData: { token: "s3cret" } });
  expect(s.status).toBe(201);
  expect(
    (await call("POST", MCSET, { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name: "hooks" } })).status,
  ).toBe(201);
  const cs = "cluster.open-cluster-management.io/clusterset";
  await createCluster("w1", { [cs]: "hooks", tier: "gold" });
  await createCluster("w2", { [cs]: "hooks", tier: "silver" });
  await createCluster("w3", { [cs]: "hooks", tier: "silver" });
  expect(
    (
      await call("POST", BINDINGS("apps"), {
        apiVersion: "cluster.open-cluster-management.io/v1beta2",
        kind: "ManagedClusterSetBinding",
        metadata: { name: "hooks" },
        spec: { clusterSet: "hooks" },
      })
    ).status,
  ).toBe(201);
  const p = await call("POST", PLACEMENTS("apps"), {
    apiVersion: "cluster.open-cluster-management.io/v1beta1",
    kind: "Placement",
    metadata: { name: "hooked" },
    spec: { clusterSets: ["hooks"], predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { tier: "gold" } } } }] },
  });
  expect(p.status).toBe(201);
  const m = await call("POST", MWRS("apps"), {
    apiVersion: "work.open-cluster-management.io/v1alpha1",
    kind: "ManifestWorkReplicaSet",
    metadata: { name: "web" },
    spec: { placementRefs: [{ name: "hooked" }], manifestWorkTemplate: { workload: { manifests: [deployment("nginx:1.25")] } } },
  });
  expect(m.status, JSON.stringify(m.body)).toBe(201);
  releasePath = await receiver("apps", "release", spec({ type: "JSONPatch", patch: [{ op: "replace", path: IMAGE, value: "nginx:{{ .release.tag }}" }] }));
});

describe("WebhookReceiver objects", () => {
  it("get a Flux-style unguessable webhookPath and Ready on create, stable across updates", async () => {
    expect(releasePath).toMatch(/^\/hooks\/[0-9a-f]{64}$/);
    const r = await call("GET", `${RECEIVERS("apps")}/release`);
    expect(r.body.status.conditions).toContainEqual(expect.objectContaining({ type: "Ready", status: "True", reason: "Succeeded", observedGeneration: 1 }));
    const patched = await call("PATCH", `${RECEIVERS("apps")}/release`, { metadata: { labels: { team: "web" } } }, merge);
    expect(patched.status).toBe(200);
    expect(patched.body.status.webhookPath).toBe(releasePath);
    const status = await call("PATCH", `${RECEIVERS("apps")}/release/status`, { status: { webhookPath: "/hooks/guessable" } }, merge);
    expect(status.status).toBe(200);
    expect(status.body.status.webhookPath).toBe(releasePath);
    const other = await receiver("apps", "other", spec({ type: "Reevaluate" }));
    expect(other).not.toBe(releasePath);
    const table = await exports.default.fetch(`https://hub.test${RECEIVERS("apps")}`, {
      headers: { authorization: "Bearer test-admin-token", accept: "application/json;as=Table;v=v1;g=meta.k8s.io" },
    });
    const t = (await table.json()) as Json;
    expect(t.rows.find((row: Json) => row.cells[0] === "release").cells.slice(1, 5)).toEqual(["generic", "web", "JSONPatch", "True"]);
  });

  it("refuses invalid specs with 422 (or 400 for unknown fields)", async () => {
    const bad: [Json, number, string][] = [
      [{ type: "generic", target: MWRS_TARGET, action: { type: "Reevaluate" } }, 422, "spec.secretRef"],
      [spec({ type: "Reevaluate" }, { apiVersion: "apps/v1", kind: "Deployment", name: "web" }), 422, "spec.target"],
      [spec({ type: "Reevaluate", patch: {} }), 422, "spec.action.patch"],
      [spec({ type: "MergePatch" }), 422, "spec.action.patch"],
      [spec({ type: "MergePatch", patch: [1] }), 422, "spec.action.patch"],
      [spec({ type: "MergePatch", patch: { spec: { x: "{{ release.tag }}" } } }), 422, "spec.action.patch.spec.x"],
      [spec({ type: "JSONPatch", patch: { op: "add" } }), 422, "spec.action.patch"],
      [spec({ type: "JSONPatch", patch: [{ op: "frobnicate", path: "/a" }] }), 422, "spec.action.patch[0].op"],
      [spec({ type: "JSONPatch", patch: [{ op: "replace", path: "spec", value: 1 }] }), 422, "spec.action.patch[0].path"],
      [spec({ type: "JSONPatch", patch: [{ op: "add", path: "/spec/x" }] }), 422, "spec.action.patch[0].value"],
      [spec({ type: "JSONPatch", patch: [{ op: "move", path: "/spec/x" }] }), 422, "spec.action.patch[0].from"],
      [spec({ type: "JSONPatch", patch: [{ op: "replace", path: "/spec/{{ .field }}", value: 1 }] }), 422, "spec.action.patch[0].path"],
      [spec({ type: "Reevaluate" }, MWRS_TARGET, { type: "gitlab" }), 422, "spec.type"],
      [spec({ type: "Reevaluate" }, MWRS_TARGET, { events: ["push"] }), 400, "spec.events"],
    ];
    for (const [s, code, field] of bad) {
      const r = await call("POST", RECEIVERS("apps"), { apiVersion: "flotilla.dev/v1alpha1", kind: "WebhookReceiver", metadata: { name: "bad" }, spec: s });
      expect(r.status, JSON.stringify(s)).toBe(code);
      expect(
        r.body.details.causes.map((c: Json) => c.field),
        JSON.stringify(s),
      ).toContain(field);
    }
    expect((await call("GET", `${RECEIVERS("apps")}/bad`)).status).toBe(404);
  });
});

describe("POST /hooks/{id}", () => {
  it("the end-to-end flow: forged signature 401, signed delivery 200 patches the MWRS, replay 409", async () => {
    const payload = { release: { tag: "1.27" } };
    const before = await snapshot();
    const forged = await generic(releasePath, payload, "d-1", "not-the-token");
    expect(forged.status).toBe(401);
    expect(forged.body).toMatchObject({ kind: "Status", status: "Failure", reason: "Unauthorized", code: 401 });
    expect(await snapshot()).toBe(before);
    const ok = await generic(releasePath, payload, "d-1");
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({
      action: "JSONPatch",
      deliveryId: "d-1",
      changed: true,
      target: { kind: "ManifestWorkReplicaSet", namespace: "apps", name: "web" },
    });
    expect(await image()).toBe("nginx:1.27");
    const mwrs = await call("GET", `${MWRS("apps")}/web`);
    expect(ok.body.target.resourceVersion).toBe(mwrs.body.metadata.resourceVersion);
    expect(mwrs.body.metadata.generation).toBe(2);
    const afterOk = await snapshot();
    const replay = await generic(releasePath, payload, "d-1");
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ kind: "Status", reason: "Conflict" });
    expect(replay.body.message).toContain("replay");
    expect(await snapshot()).toBe(afterOk);
    // Events on the receiver: the accepted delivery and the refused replay, never the payload; the
    // forged one (no valid signature) records nothing.
    const recorded = await waitFor("the deliveries' Events", async () => {
      const r = await call(
        "GET",
        `/api/v1/namespaces/apps/events?fieldSelector=${encodeURIComponent("involvedObject.kind=WebhookReceiver,involvedObject.name=release")}`,
      );
      return r.body.items.length >= 2 && (r.body.items as Json[]);
    });
    expect(recorded.map((e) => [e.reason, e.type, e.message]).sort()).toEqual([
      ["WebhookDeliveryAccepted", "Normal", "delivery accepted: ManifestWorkReplicaSet apps/web patched (JSONPatch)"],
      ["WebhookDeliveryRefused", "Warning", "delivery refused: 409 Conflict"],
    ]);
    expect(JSON.stringify(recorded)).not.toContain("1.27");
  });

  it("refuses missing or malformed signatures and missing delivery IDs, changing nothing", async () => {
    const before = await snapshot();
    const body = JSON.stringify({ release: { tag: "9" } });
    const cases: [Record<string, string>, number][] = [
      [{ "X-Delivery-Id": "x1" }, 401],
      [{ "X-Delivery-Id": "x1", "X-Signature-256": "sha1=abc" }, 401],
      [{ "X-Delivery-Id": "x1", "X-Signature-256": `sha256=${"0".repeat(64)}` }, 401],
      [{ "X-Delivery-Id": "x1", "X-Hub-Signature-256": `sha256=${await hmacHex("s3cret", body)}` }, 401],
      [{ "X-Signature-256": `sha256=${await hmacHex("s3cret", body)}` }, 400],
      [{ "X-Delivery-Id": "has space", "X-Signature-256": `sha256=${await hmacHex("s3cret", body)}` }, 400],
    ];
    for (const [headers, code] of cases) {
      const r = await deliver(releasePath, body, headers);
      expect(r.status, JSON.stringify(headers)).toBe(code);
      expect(r.body.kind).toBe("Status");
    }
    // The signature covers the raw bytes: the same JSON re-serialised differently does not verify.
    const sig = await hmacHex("s3cret", body);
    expect(
      (await deliver(releasePath, JSON.stringify({ release: { tag: "9" } }, null, 2), { "X-Delivery-Id": "x2", "X-Signature-256": `sha256=${sig}` })).status,
    ).toBe(401);
    expect(await snapshot()).toBe(before);
  });

  it("a payload without the templated field is 422 and changes nothing; the same delivery may then be retried", async () => {
    const before = await snapshot();
    const r = await generic(releasePath, { release: { name: "x" } }, "d-missing");
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ kind: "Status", reason: "Invalid", message: "payload has no .release.tag" });
    const notJson = await deliver(releasePath, "tag=1", { "X-Delivery-Id": "d-missing", "X-Signature-256": `sha256=${await hmacHex("s3cret", "tag=1")}` });
    expect(notJson.status).toBe(400);
    expect(await snapshot()).toBe(before);
    const retry = await generic(releasePath, { release: { tag: "1.28" } }, "d-missing");
    expect(retry.status).toBe(200);
    expect(await image()).toBe("nginx:1.28");
  });

  it("github: X-Hub-Signature-256 and X-GitHub-Delivery, ping answers 200 and does nothing", async () => {
    const path = await receiver("apps", "gh", {
      ...spec({ type: "MergePatch", patch: { metadata: { annotations: { "example.com/commit": "{{ .head_commit.id }}" } } } }),
      type: "github",
    });
    const before = await snapshot();
    const ping = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 });
    const pong = await deliver(path, ping, {
      "X-GitHub-Event": "ping",
      "X-GitHub-Delivery": "g-ping",
      "X-Hub-Signature-256": `sha256=${await hmacHex("s3cret", ping)}`,
    });
    expect(pong.status).toBe(200);
    const badPing = await deliver(path, ping, {
      "X-GitHub-Event": "ping",
      "X-GitHub-Delivery": "g-ping",
      "X-Hub-Signature-256": `sha256=${await hmacHex("wrong", ping)}`,
    });
    expect(badPing.status).toBe(401);
    expect(await snapshot()).toBe(before);
    const push = JSON.stringify({ ref: "refs/heads/main", head_commit: { id: "abc123" } });
    const sig = `sha256=${await hmacHex("s3cret", push)}`;
    const generic256 = await deliver(path, push, { "X-GitHub-Event": "push", "X-GitHub-Delivery": "g-1", "X-Signature-256": sig });
    expect(generic256.status).toBe(401);
    const ok = await deliver(path, push, { "X-GitHub-Event": "push", "X-GitHub-Delivery": "g-1", "X-Hub-Signature-256": sig });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await call("GET", `${MWRS("apps")}/web`)).body.metadata.annotations["example.com/commit"]).toBe("abc123");
    const again = await deliver(path, push, { "X-GitHub-Event": "push", "X-GitHub-Delivery": "g-1", "X-Hub-Signature-256": sig });
    expect(again.status).toBe(409);
    const noId = await deliver(path, push, { "X-GitHub-Event": "push", "X-Hub-Signature-256": sig });
    expect(noId.status).toBe(400);
    // GitHub's form-encoded content type: the signature is over the raw body, the payload is its `payload` field.
    const form = `payload=${encodeURIComponent(JSON.stringify({ head_commit: { id: "def456" } }))}`;
    const formed = await exports.default.fetch(`https://hub.test${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "g-2",
        "X-Hub-Signature-256": `sha256=${await hmacHex("s3cret", form)}`,
      },
      body: form,
    });
    expect(formed.status).toBe(200);
    expect((await call("GET", `${MWRS("apps")}/web`)).body.metadata.annotations["example.com/commit"]).toBe("def456");
  });

  it("a JSON body is read as JSON whatever its content type (curl -d sends application/x-www-form-urlencoded)", async () => {
    const body = JSON.stringify({ release: { tag: "1.29" } });
    const res = await exports.default.fetch(`https://hub.test${releasePath}`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "X-Delivery-Id": "d-curl",
        "X-Signature-256": `sha256=${await hmacHex("s3cret", body)}`,
      },
      body,
    });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await image()).toBe("nginx:1.29");
  });

  it("MergePatch on an MWRS changes its spec", async () => {
    const path = await receiver("apps", "mwrs-merge", spec({ type: "MergePatch", patch: { spec: { cascadeDeletionPolicy: "{{ .policy }}" } } }));
    const r = await generic(path, { policy: "Foreground" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((await call("GET", `${MWRS("apps")}/web`)).body.spec.cascadeDeletionPolicy).toBe("Foreground");
    const same = await generic(path, { policy: "Foreground" });
    expect(same.status).toBe(200);
    expect(same.body.changed).toBe(false);
  });

  it("a delivery cannot give the MWRS an executor its receiver may not run as (403, nothing written)", async () => {
    const executor = { subject: { type: "ServiceAccount", serviceAccount: { namespace: "kube-system", name: "{{ .sa }}" } } };
    const merged = await receiver("apps", "exec-merge", spec({ type: "MergePatch", patch: { spec: { manifestWorkTemplate: { executor } } } }));
    const jp = await receiver(
      "apps",
      "exec-json",
      spec({ type: "JSONPatch", patch: [{ op: "add", path: "/spec/manifestWorkTemplate/executor", value: executor }] }),
    );
    const before = await snapshot();
    for (const path of [merged, jp]) {
      const r = await generic(path, { sa: "admin" });
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(r.body.message).toContain(`user "system:webhookreceiver:apps:exec-`);
    }
    expect(await snapshot()).toBe(before);
    expect((await call("GET", `${MWRS("apps")}/web`)).body.spec.manifestWorkTemplate.executor).toBeUndefined();
  });

  it("JSONPatch and MergePatch on a Placement: decisions follow before the delivery returns", async () => {
    expect(await decided("apps", "hooked")).toEqual(["w1"]);
    const jp = await receiver(
      "apps",
      "tier",
      spec(
        {
          type: "JSONPatch",
          patch: [
            { op: "test", path: "/spec/predicates/0/requiredClusterSelector/labelSelector/matchLabels/tier", value: "{{ .from }}" },
            { op: "replace", path: "/spec/predicates/0/requiredClusterSelector/labelSelector/matchLabels/tier", value: "{{ .to }}" },
          ],
        },
        PLACEMENT_TARGET,
      ),
    );
    const r = await generic(jp, { from: "gold", to: "silver" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await decided("apps", "hooked")).toEqual(["w2", "w3"]);
    // A failing test operation: 422, nothing changes.
    const before = await snapshot();
    const failed = await generic(jp, { from: "gold", to: "bronze" });
    expect(failed.status).toBe(422);
    expect(failed.body.message).toContain("test");
    expect(await snapshot()).toBe(before);

    const mp = await receiver("apps", "count", spec({ type: "MergePatch", patch: { spec: { numberOfClusters: "{{ .count }}" } } }, PLACEMENT_TARGET));
    const one = await generic(mp, { count: 1 });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect((await call("GET", `${PLACEMENTS("apps")}/hooked`)).body.spec.numberOfClusters).toBe(1);
    expect((await decided("apps", "hooked")).length).toBe(1);
  });

  it("an invalid result is 422 and leaves the target unchanged", async () => {
    const mp = await receiver("apps", "count-bad", spec({ type: "MergePatch", patch: { spec: { numberOfClusters: "{{ .count }}" } } }, PLACEMENT_TARGET));
    const jp = await receiver(
      "apps",
      "image-bad",
      spec({ type: "JSONPatch", patch: [{ op: "remove", path: "/spec/manifestWorkTemplate/workload/manifests/0/kind" }] }),
    );
    const unresolvable = await receiver("apps", "nowhere", spec({ type: "JSONPatch", patch: [{ op: "replace", path: "/spec/nothing/here", value: 1 }] }));
    const unknownField = await receiver("apps", "unknown-field", spec({ type: "MergePatch", patch: { spec: { replicas: 3 } } }));
    const before = await snapshot();
    const many = await generic(mp, { count: "many" });
    expect(many.status).toBe(422);
    expect(many.body.reason).toBe("Invalid");
    expect(many.body.details.causes.map((c: Json) => c.field)).toContain("spec.numberOfClusters");
    const nokind = await generic(jp, {});
    expect(nokind.status).toBe(422);
    expect((await generic(unresolvable, {})).status).toBe(422);
    expect((await generic(unknownField, {})).status).toBe(422);
    expect(await snapshot()).toBe(before);
  });

  it("Reevaluate re-runs the Placement's scheduling and the MWRS's controller", async () => {
    const p = await receiver("apps", "resched", spec({ type: "Reevaluate" }, PLACEMENT_TARGET));
    const r = await deliver(p, "", { "X-Delivery-Id": "re-1", "X-Signature-256": `sha256=${await hmacHex("s3cret", "")}` });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ action: "Reevaluate", target: { kind: "Placement", name: "hooked" } });
    expect(typeof r.body.target.resourceVersion).toBe("string");
    const m = await receiver("apps", "reeval", spec({ type: "Reevaluate" }));
    const r2 = await generic(m, {});
    expect(r2.status, JSON.stringify(r2.body)).toBe(200);
    expect(r2.body.target).toMatchObject({ kind: "ManifestWorkReplicaSet", name: "web" });
  });

  it("answers 404 for an unknown hook, 413 for an oversized body, 405 for other methods", async () => {
    expect((await generic(`/hooks/${"a".repeat(64)}`, {})).status).toBe(404);
    expect((await generic("/hooks/not-a-hook", {})).status).toBe(404);
    const big = JSON.stringify({ release: { tag: "x".repeat(1024 * 1024) } });
    const r = await deliver(releasePath, big, { "X-Delivery-Id": "big", "X-Signature-256": `sha256=${await hmacHex("s3cret", big)}` });
    expect(r.status).toBe(413);
    expect(r.body.reason).toBe("RequestEntityTooLarge");
    const get = await exports.default.fetch(`https://hub.test${releasePath}`);
    expect(get.status).toBe(405);
  });

  it("a receiver whose Secret or token is missing, or whose target is gone, answers 401 / 422, never 500", async () => {
    const noSecret = await receiver("apps", "no-secret", { ...spec({ type: "Reevaluate" }), secretRef: { name: "absent" } });
    const r = await generic(noSecret, {});
    expect(r.status).toBe(401);
    expect(r.body.message).toContain('"absent" was not found');
    expect((await call("POST", SECRETS("apps"), { apiVersion: "v1", kind: "Secret", metadata: { name: "no-token" }, stringData: { other: "x" } })).status).toBe(
      201,
    );
    const noToken = await receiver("apps", "no-token", { ...spec({ type: "Reevaluate" }), secretRef: { name: "no-token" } });
    const r2 = await generic(noToken, {});
    expect(r2.status).toBe(401);
    expect(r2.body.message).toContain('no data key "token"');
    const gone = await receiver(
      "apps",
      "gone",
      spec({ type: "JSONPatch", patch: [{ op: "add", path: "/metadata/labels", value: {} }] }, { ...MWRS_TARGET, name: "absent" }),
    );
    const before = await snapshot();
    const r3 = await generic(gone, {}, "gone-1");
    expect(r3.status).toBe(422);
    expect(r3.body.message).toContain("not found");
    expect(await snapshot()).toBe(before);
    // A deleted receiver's path is unknown.
    expect((await call("DELETE", `${RECEIVERS("apps")}/gone`)).status).toBe(200);
    expect((await generic(gone, {})).status).toBe(404);
  });
});
