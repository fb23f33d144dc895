/**
 * The client conformance suite: real Kubernetes clients against a real hub (`wrangler dev` over
 * HTTPS), each case asserting what the client got as kube-apiserver would answer it. The Python
 * client is Debian's python3-kubernetes (`/usr/bin/python3`, installed by .ci/run), driven by
 * test/e2e/clients/python_client.py; kubectl is the real binary; @kubernetes/client-node's
 * informer is the reflector most Node controllers use.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import {} from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { CustomObjectsApi, KubeConfig, makeInformer, Watch, type KubernetesObject } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createNamespaces, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { waitFor, scratchDir, writeAdminKubeconfig } from "./support.ts";

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const { dir, file } = scratchDir("flotilla-clients-");
const PYTHON = "/usr/bin/python3";
const SCRIPT = path.join(root, "test/e2e/clients/python_client.py");
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";

let hub: Hub;
let kubeconfig: string;

function pythonEnv(): NodeJS.ProcessEnv {
  return { ...process.env, HUB: hub.url, TOKEN: hub.adminToken, CA: hub.caFile! };
}

/** Runs one scenario of the Python driver and returns the JSON it printed. */
async function python(scenario: string): Promise<Record<string, unknown>> {
  const { stdout } = await run(PYTHON, [SCRIPT, scenario], { env: pythonEnv(), timeout: 60_000 });
  return JSON.parse(stdout.trim().split("\n").pop()!) as Record<string, unknown>;
}

async function kubectl(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run("kubectl", ["--kubeconfig", kubeconfig, ...args], { cwd: dir });
}

async function restart(pruneEventLog: boolean): Promise<void> {
  const { stateDir, adminToken } = hub;
  const port = Number(new URL(hub.url).port);
  await hub.stop();
  if (pruneEventLog) {
    // As on a hub whose watch history no longer reaches back: every kept event is dropped, so a
    // client resuming from its last version must get 410 Expired and list again.
    const d1 = path.join(stateDir, "v3/d1/miniflare-D1DatabaseObject");
    for (const f of readdirSync(d1).filter((n) => n.endsWith(".sqlite") && n !== "metadata.sqlite")) {
      const db = new DatabaseSync(path.join(d1, f));
      db.exec("DELETE FROM events");
      db.close();
    }
  }
  hub = await startHub({ https: true, stateDir, port, adminToken, expectedServerErrors: FUTURE_LISTS });
}

/** The lists from a resourceVersion the hub has not reached, below: kube-apiserver answers them 504 Timeout. */
const FUTURE_LISTS = [
  {
    method: "GET",
    path: /^\/apis\/cluster\.open-cluster-management\.io\/v1\/managedclusters$/,
    status: 504,
    why: "a list from a future resourceVersion: 504 Too large resource version",
  },
];

beforeAll(async () => {
  hub = await startHub({ https: true, expectedServerErrors: FUTURE_LISTS });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
});

afterAll(async () => {
  await hub?.stop();
});

describe("the Python client (python3-kubernetes)", () => {
  it("discovers the API: /version/, /apis/, /api/", async () => {
    const got = await python("discovery");
    expect(got.gitVersion).toMatch(/^v1\.\d+\.\d+/);
    expect(got.groups).toEqual([
      "addon.open-cluster-management.io",
      "apiextensions.k8s.io",
      "apps",
      "authentication.k8s.io",
      "authorization.k8s.io",
      "autoscaling",
      "batch",
      "cluster.open-cluster-management.io",
      "clusterview.open-cluster-management.io",
      "coordination.k8s.io",
      "events.k8s.io",
      "flotilla.dev",
      "multicluster.x-k8s.io",
      "networking.k8s.io",
      "placement.kubernetes-fleet.io",
      "policy",
      "policy.karmada.io",
      "policy.open-cluster-management.io",
      "rbac.authorization.k8s.io",
      "work.karmada.io",
      "work.open-cluster-management.io",
    ]);
    expect(got.core).toEqual(["v1"]);
  });

  it("creates, lists by label, merge- and JSON-patches, deletes and deletes a collection", async () => {
    expect(await python("crud")).toEqual({
      namespace: { phase: "Active", finalizers: ["kubernetes"] },
      selected: ["p1", "p2"],
      merged: 2,
      jsonPatched: 3,
      collectionDeleted: ["p1", "p2"],
      left: [],
    });
  });

  it("lists through the dynamic client with a set-based selector", async () => {
    expect(await python("dynamic")).toEqual({ selected: ["dyn1"], kind: "ManagedClusterList" });
  });

  it("watches with watch=True and sees every change", async () => {
    expect(await python("watch")).toEqual({ events: ["ADDED:pyw1", "MODIFIED:pyw1", "ADDED:pyw2", "DELETED:pyw1"] });
  });
});

describe("a watch and a list from a resourceVersion the hub has not reached", () => {
  /** kube-apiserver's message for it (storage.NewTooLargeResourceVersionError on a 504 Timeout). */
  const tooLarge = (rv: string) => new RegExp(`^Timeout: Too large resource version: ${rv}, current: \\d+$`);
  const ahead = async () =>
    String(Number(((await admin(hub, "GET", `${MC}?limit=1`)).body as { metadata: { resourceVersion: string } }).metadata.resourceVersion) + 1_000_000);

  it("the Python client raises 504 Timeout for both, the list's Status naming ResourceVersionTooLarge", async () => {
    const got = (await python("future")) as { ahead: string; watch: { status: number; reason: string }; list: Record<string, unknown> };
    // The watch client raises the ERROR event's Status as "<reason>: <message>".
    expect(got.watch.status).toBe(504);
    expect(got.watch.reason).toMatch(new RegExp(`^Timeout: Timeout: Too large resource version: ${got.ahead}, current: \\d+$`));
    expect(got.list).toEqual({ status: 504, reason: "Timeout", causes: ["ResourceVersionTooLarge"], retryAfter: "1" });
  });

  it("kubectl get --raw of the watch prints the ERROR event", async () => {
    const rv = await ahead();
    const { stdout } = await kubectl("get", "--raw", `${MC}?watch=1&resourceVersion=${rv}`);
    const events = stdout
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { type: string; object: { code: number; reason: string; message: string; details: { causes: { reason: string }[] } } });
    expect(events).toHaveLength(1);
    expect(events[0]!.type).toBe("ERROR");
    expect(events[0]!.object).toMatchObject({
      kind: "Status",
      code: 504,
      reason: "Timeout",
      details: { causes: [{ reason: "ResourceVersionTooLarge" }], retryAfterSeconds: 1 },
    });
    expect(events[0]!.object.message).toMatch(tooLarge(rv));
  });

  it("client-node's Watch gets the ERROR event and ends; its list call rejects with 504", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const rv = await ahead();
    const events: { type: string; object: { code?: number; reason?: string; message?: string } }[] = [];
    await new Promise<void>((resolve, reject) => {
      void new Watch(kc).watch(
        MC,
        { resourceVersion: rv },
        (type, object) => events.push({ type, object }),
        (err) => (err ? reject(err as Error) : resolve()),
      );
    });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "ERROR", object: { code: 504, reason: "Timeout" } });
    expect(events[0]!.object.message).toMatch(tooLarge(rv));
    const api = kc.makeApiClient(CustomObjectsApi);
    const listed = await api
      .listClusterCustomObject({ group: "cluster.open-cluster-management.io", version: "v1", plural: "managedclusters", resourceVersion: rv })
      .then(
        () => undefined,
        (e: { code?: number; body?: unknown }) => e,
      );
    expect(listed?.code).toBe(504);
    const status = (typeof listed?.body === "string" ? JSON.parse(listed.body) : listed?.body) as { reason: string; details: { causes: { reason: string }[] } };
    expect(status).toMatchObject({ reason: "Timeout", details: { causes: [{ reason: "ResourceVersionTooLarge" }] } });
  });
});

describe("kubectl's less common paths", () => {
  it("needs at most 3 requests for get mcl with a cold discovery cache", async () => {
    const cache = mkdtempSync(path.join(dir, "cache-"));
    const { stderr } = await kubectl("get", "mcl", "--cache-dir", cache, "-v=6");
    const requests = stderr.split("\n").filter((l) => /round_trippers.*\b(GET|POST|PUT|PATCH|DELETE) https:/.test(l));
    expect(requests.length).toBeLessThanOrEqual(3);
  });

  it("validates with the downloaded OpenAPI: a served read-only kind gets the server's answer, an unserved kind no mapping", async () => {
    const cache = mkdtempSync(path.join(dir, "cache-"));
    const pd = file(
      "pd.yaml",
      "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: PlacementDecision\nmetadata:\n  name: mine\n  namespace: default\n",
    );
    const denied = await kubectl("apply", "--cache-dir", cache, "-f", pd).then(
      () => "",
      (e: { stderr?: string }) => String(e.stderr),
    );
    expect(denied).toContain("Error from server (MethodNotAllowed)");
    expect(denied).not.toContain("error validating");
    const unserved = file(
      "replicaset.yaml",
      // apps/v1 is served (Deployments, StatefulSets, DaemonSets as templates); its ReplicaSets are not.
      "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: d\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
    );
    const unmapped = await kubectl("apply", "--cache-dir", cache, "-f", unserved).then(
      () => "",
      (e: { stderr?: string }) => String(e.stderr),
    );
    expect(unmapped).toContain('no matches for kind "ReplicaSet" in version "apps/v1"');
    expect(unmapped).toContain("ensure CRDs are installed first");
    const explained = (await kubectl("explain", "placements.spec.numberOfClusters")).stdout;
    expect(explained).toMatch(/KIND:\s+Placement/);
    expect(explained).toMatch(/FIELD:\s+numberOfClusters <integer>/);
  });

  it("patches with --type=json, deletes by label, and reads YAML", async () => {
    await kubectl("create", "namespace", "kns");
    const placement = file(
      "kp.yaml",
      "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: kp\n  namespace: kns\n  labels:\n    app: x\nspec:\n  numberOfClusters: 1\n",
    );
    await kubectl("apply", "-f", placement);
    await kubectl("patch", "placement", "kp", "-n", "kns", "--type=json", "-p", '[{"op":"replace","path":"/spec/numberOfClusters","value":4}]');
    expect((await kubectl("get", "placement", "kp", "-n", "kns", "-o", "jsonpath={.spec.numberOfClusters}")).stdout).toBe("4");
    const failed = await kubectl(
      "patch",
      "placement",
      "kp",
      "-n",
      "kns",
      "--type=json",
      "-p",
      '[{"op":"test","path":"/spec/numberOfClusters","value":1}]',
    ).then(
      () => "",
      (e: { stderr?: string }) => String(e.stderr),
    );
    expect(failed).toMatch(/the test did not hold|Invalid/);
    expect((await kubectl("delete", "placements", "-n", "kns", "-l", "app=x")).stdout).toContain('placement.cluster.open-cluster-management.io "kp" deleted');
  });
});

describe("kubectl and namespaces (core v1)", () => {
  it("get, create and delete namespace: the built-in ones, STATUS and AGE, NotFound in a missing one, content deleted with it", async () => {
    const listed = (await kubectl("get", "namespaces")).stdout;
    expect(listed.split("\n")[0]).toMatch(/^NAME\s+STATUS\s+AGE$/);
    for (const ns of ["default", "kube-node-lease", "kube-public", "kube-system"]) expect(listed).toMatch(new RegExp(`^${ns}\\s+Active\\s+\\d+[smhd]`, "m"));
    const placement = file(
      "team.yaml",
      "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: tp\n  namespace: team-x\nspec:\n  numberOfClusters: 1\n",
    );
    const missing = await kubectl("apply", "-f", placement).then(
      () => "",
      (e: { stderr?: string }) => String(e.stderr),
    );
    expect(missing).toContain('namespaces "team-x" not found');
    expect((await kubectl("create", "namespace", "team-x")).stdout).toBe("namespace/team-x created\n");
    expect(
      (await kubectl("get", "ns", "team-x", "-o", "jsonpath={.status.phase} {.spec.finalizers[0]} {.metadata.labels.kubernetes\\.io/metadata\\.name}")).stdout,
    ).toBe("Active kubernetes team-x");
    expect((await kubectl("apply", "-f", placement)).stdout).toContain("placement.cluster.open-cluster-management.io/tp created");
    // Client-side apply of an existing namespace sends a strategic merge patch, as for every core kind.
    const nsFile = (team: string) => file(`ns-${team}.yaml`, `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-x\n  labels:\n    team: ${team}\n`);
    expect((await kubectl("apply", "-f", nsFile("blue"))).stdout).toContain("namespace/team-x configured");
    expect((await kubectl("apply", "-f", nsFile("green"))).stdout).toContain("namespace/team-x configured");
    expect((await kubectl("get", "ns", "team-x", "-o", "jsonpath={.metadata.labels.team}")).stdout).toBe("green");
    // kubectl's typed create of a core kind sends protobuf.
    expect((await kubectl("create", "secret", "generic", "hook", "-n", "team-x", "--from-literal=token=s3cret")).stdout).toBe("secret/hook created\n");
    expect((await kubectl("get", "secret", "hook", "-n", "team-x", "-o", "jsonpath={.data.token}")).stdout).toBe(btoa("s3cret"));
    // kubectl delete waits until the namespace is gone, its Placement with it.
    expect((await kubectl("delete", "namespace", "team-x", "--timeout=60s")).stdout).toContain('namespace "team-x" deleted');
    expect((await admin(hub, "GET", "/api/v1/namespaces/team-x")).status).toBe(404);
    expect((await admin(hub, "GET", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/team-x/placements/tp")).status).toBe(404);
    expect((await admin(hub, "GET", "/api/v1/namespaces/team-x/secrets/hook")).status).toBe(404);
    const immortal = await kubectl("delete", "namespace", "default").then(
      () => "",
      (e: { stderr?: string }) => String(e.stderr),
    );
    expect(immortal).toContain('Error from server (Forbidden): namespaces "default" is forbidden: this namespace may not be deleted');
  });
});

describe("kubectl's everyday verbs on an OCM kind", () => {
  it("apply (client- and server-side), diff, replace, edit, label, annotate, describe, wait, create, delete --all", async () => {
    expect((await kubectl("create", "namespace", "kv")).stdout).toContain("namespace/kv created");
    const yaml = (n: number) =>
      `apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: kv\n  namespace: kv\nspec:\n  numberOfClusters: ${n}\n`;
    const one = file("kv1.yaml", yaml(1));
    expect((await kubectl("apply", "-f", one)).stdout).toContain("placement.cluster.open-cluster-management.io/kv created");
    expect((await kubectl("apply", "--server-side", "-f", one)).stdout).toContain("serverside-applied");
    const two = file("kv2.yaml", yaml(2));
    // diff exits 1 when it finds a difference, and shows it.
    const diff = await kubectl("diff", "-f", two).then(
      () => "",
      (e: { code?: number; stdout?: string }) => (e.code === 1 ? String(e.stdout) : `failed: ${String(e.code)}`),
    );
    expect(diff).toMatch(/^-\s+numberOfClusters: 1$/m);
    expect(diff).toMatch(/^\+\s+numberOfClusters: 2$/m);
    expect((await kubectl("replace", "-f", two)).stdout).toContain("replaced");
    const editor = file("editor.sh", '#!/bin/sh\nsed -i "s/numberOfClusters: 2/numberOfClusters: 5/" "$1"\n');
    await run("chmod", ["+x", editor]);
    const edited = await run("kubectl", ["--kubeconfig", kubeconfig, "edit", "placement", "kv", "-n", "kv"], {
      env: { ...process.env, EDITOR: editor, KUBE_EDITOR: editor },
    });
    expect(edited.stdout).toContain("edited");
    expect((await kubectl("get", "placement", "kv", "-n", "kv", "-o", "jsonpath={.spec.numberOfClusters}")).stdout).toBe("5");
    expect((await kubectl("label", "placement", "kv", "-n", "kv", "tier=web")).stdout).toContain("labeled");
    expect((await kubectl("annotate", "placement", "kv", "-n", "kv", "note=hi")).stdout).toContain("annotated");
    const described = (await kubectl("describe", "placement", "kv", "-n", "kv")).stdout;
    expect(described).toMatch(/^Labels:\s+tier=web$/m);
    expect(described).toMatch(/^Annotations:\s+note: hi$/m);
    // No cluster can satisfy it: PlacementSatisfied is False, and wait sees that.
    expect((await kubectl("wait", "placement", "kv", "-n", "kv", "--for=condition=PlacementSatisfied=False", "--timeout=20s")).stdout).toContain(
      "condition met",
    );
    const resources = (await kubectl("api-resources", "-o", "wide")).stdout;
    expect(resources).toMatch(
      /^managedclusters\s+mcl,mcls\s+cluster\.open-cluster-management\.io\/v1\s+false\s+ManagedCluster\s+create,delete,deletecollection,get,list,patch,update,watch\s/m,
    );
    expect(resources).toMatch(/^placementdecisions\s+cluster\.open-cluster-management\.io\/v1beta1\s+true\s+PlacementDecision\s+get,list,watch\s/m);
    const versions = (await kubectl("api-versions")).stdout.split("\n");
    expect(versions).toEqual(
      expect.arrayContaining([
        "cluster.open-cluster-management.io/v1",
        "cluster.open-cluster-management.io/v1beta1",
        "work.open-cluster-management.io/v1",
        "v1",
      ]),
    );
    const again = await kubectl("create", "-f", one).then(
      () => "",
      (e: { stderr?: string }) => String(e.stderr),
    );
    expect(again).toContain("AlreadyExists");
    expect((await kubectl("delete", "placements", "-n", "kv", "--all")).stdout).toContain('placement.cluster.open-cluster-management.io "kv" deleted');
  });

  it("get -w streams a change", async () => {
    await kubectl("create", "ns", "kw");
    const watcher = spawn("kubectl", ["--kubeconfig", kubeconfig, "get", "placements", "-n", "kw", "-w", "--output-watch-events"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    watcher.stdout.on("data", (d: Buffer) => (out += d.toString()));
    try {
      await waitFor(
        "the watch to start",
        async () => {
          await admin(hub, "POST", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/kw/placements", {
            apiVersion: "cluster.open-cluster-management.io/v1beta1",
            kind: "Placement",
            metadata: { generateName: "kw-" },
          });
          return /ADDED\s+kw-/.test(out);
        },
        30_000,
        1000,
      );
    } finally {
      watcher.kill();
    }
  });
});

describe("API machinery over HTTP, as client-go and GitOps tools send it", () => {
  const PLS = "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/am/placements";
  const auth = () => ({ authorization: `Bearer ${hub.adminToken}` });

  beforeAll(() => createNamespaces(hub, "am", "gc"));

  it("YAML in and out, metadata-only lists, the watch-list bookmark, a selector with empty values", async () => {
    const created = await hubFetch(
      hub,
      "POST",
      PLS,
      { ...auth(), "content-type": "application/yaml", accept: "application/yaml" },
      "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: am1\n  labels:\n    x: a\n",
    );
    expect(created.status).toBe(201);
    expect(created.text).toMatch(/^kind: Placement$/m);
    const meta = JSON.parse(
      (await hubFetch(hub, "GET", PLS, { ...auth(), accept: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json" })).text,
    );
    expect(meta).toMatchObject({
      kind: "PartialObjectMetadataList",
      apiVersion: "meta.k8s.io/v1",
      items: [{ kind: "PartialObjectMetadata", metadata: { name: "am1" } }],
    });
    const lines = (
      await hubFetch(hub, "GET", `${PLS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=2`, auth())
    ).text
      .split("\n")
      .filter((l) => l.trim());
    const events = lines.map((l) => JSON.parse(l) as { type: string; object: { metadata: { name?: string; annotations?: Record<string, string> } } });
    expect(events[0]).toMatchObject({ type: "ADDED", object: { metadata: { name: "am1" } } });
    expect(events[1]).toMatchObject({ type: "BOOKMARK", object: { metadata: { annotations: { "k8s.io/initial-events-end": "true" } } } });
    const selected = JSON.parse((await hubFetch(hub, "GET", `${PLS}?labelSelector=${encodeURIComponent("x in (a,,)")}`, auth())).text);
    expect(selected.items.map((o: { metadata: { name: string } }) => o.metadata.name)).toEqual(["am1"]);
  });

  it("kubectl delete --cascade: orphan keeps the dependents without the reference, foreground and background remove them", async () => {
    const make = async (name: string, owner?: { name: string; uid: string }) => {
      const body = {
        apiVersion: "cluster.open-cluster-management.io/v1beta1",
        kind: "Placement",
        metadata: {
          name,
          ...(owner
            ? {
                ownerReferences: [
                  { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", name: owner.name, uid: owner.uid, blockOwnerDeletion: true },
                ],
              }
            : {}),
        },
      };
      const r = await admin(hub, "POST", PLS.replace("/am/", "/gc/"), body);
      expect(r.status).toBe(201);
      return (r.body as { metadata: { name: string; uid: string } }).metadata;
    };
    for (const cascade of ["orphan", "foreground", "background"]) {
      const owner = await make(`owner-${cascade}`);
      await make(`dep-${cascade}`, owner);
      await kubectl("delete", "placement", `owner-${cascade}`, "-n", "gc", `--cascade=${cascade}`, "--wait=true", "--timeout=30s");
      const dep = await admin(hub, "GET", `${PLS.replace("/am/", "/gc/")}/dep-${cascade}`);
      if (cascade === "orphan") {
        expect(dep.status).toBe(200);
        expect((dep.body as { metadata: { ownerReferences?: unknown } }).metadata.ownerReferences).toBeUndefined();
      } else {
        expect(dep.status).toBe(404);
      }
    }
  });
});

describe("watchers across a hub restart", () => {
  const N = 100;
  const names = Array.from({ length: N }, (_, i) => `follow-${String(i).padStart(3, "0")}`);

  /** Sets label step=`step` on every cluster in `which`, 8 at a time. */
  async function setStep(which: string[], step: string): Promise<void> {
    for (let i = 0; i < which.length; i += 8) {
      await Promise.all(
        which.slice(i, i + 8).map(async (n) => {
          const res = await admin(hub, "PATCH", `${MC}/${n}`, { metadata: { labels: { follow: "yes", step } } }, "application/merge-patch+json");
          expect(res.status).toBe(200);
        }),
      );
    }
  }

  it("an informer and the Python reflector see every change to 100 ManagedClusters, none missed", async () => {
    for (let i = 0; i < N; i += 8) {
      await Promise.all(
        names.slice(i, i + 8).map((n) =>
          admin(hub, "POST", MC, {
            apiVersion: "cluster.open-cluster-management.io/v1",
            kind: "ManagedCluster",
            metadata: { name: n, labels: { follow: "yes", step: "0" } },
          }),
        ),
      );
    }

    // client-node's informer, restarted on error as its documentation shows.
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const api = kc.makeApiClient(CustomObjectsApi);
    const informer = makeInformer<KubernetesObject>(
      kc,
      MC,
      () =>
        api.listClusterCustomObject({
          group: "cluster.open-cluster-management.io",
          version: "v1",
          plural: "managedclusters",
          labelSelector: "follow=yes",
        }) as never,
      "follow=yes",
    );
    const informerSaw = new Set<string>();
    for (const verb of ["add", "update", "delete"] as const)
      informer.on(verb, (o) => informerSaw.add(`${verb}:${o.metadata?.name}:${o.metadata?.labels?.step}`));
    let restarts = 0;
    informer.on("error", () => {
      restarts++;
      setTimeout(() => void informer.start().catch(() => undefined), 300);
    });
    await informer.start();

    // The Python reflector: one JSON line per change it learns.
    const py: ChildProcess = spawn(PYTHON, [SCRIPT, "follow"], { env: pythonEnv(), stdio: ["pipe", "pipe", "inherit"] });
    const pyState = new Map<string, string | null>();
    let buf = "";
    py.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      for (let i; (i = buf.indexOf("\n")) >= 0; buf = buf.slice(i + 1)) {
        const line = JSON.parse(buf.slice(0, i)) as { name?: string; step?: string | null };
        if (line.name) pyState.set(line.name, line.step ?? null);
      }
    });

    const caughtUp =
      (step: string, gone: string[] = []) =>
      async () => {
        const cached = new Map(informer.list().map((o) => [o.metadata!.name!, o.metadata!.labels?.step]));
        return names.every((n) => (gone.includes(n) ? !cached.has(n) && pyState.get(n) === null : cached.get(n) === step && pyState.get(n) === step));
      };
    try {
      await waitFor("both watchers to hold the 100 clusters", caughtUp("0"), 60_000);

      // Changes, then a restart during which the watches break: both resume from their last version.
      await setStep(names, "1");
      await restart(false);
      await setStep(names.slice(10), "2");
      for (const n of names.slice(0, 10)) expect((await admin(hub, "DELETE", `${MC}/${n}`)).status).toBe(200);
      await waitFor("both watchers to see the changes made across the restart", caughtUp("2", names.slice(0, 10)), 90_000);

      // A restart after which the history no longer reaches back: both get 410 and list again.
      await restart(true);
      await setStep(names.slice(10), "3");
      await waitFor("both watchers to list again after 410 and see the rest", caughtUp("3", names.slice(0, 10)), 90_000);
      expect(restarts).toBeGreaterThan(0);
      // Every step of every surviving cluster reached the informer (an add, an update, or a relist's).
      for (const n of names.slice(10))
        for (const step of ["0", "1", "2", "3"])
          expect(
            [...informerSaw].some((e) => e.endsWith(`:${n}:${step}`)),
            `${n} step ${step}`,
          ).toBe(true);
    } finally {
      await informer.stop();
      py.stdin!.end();
      py.kill();
    }
  }, 300_000);
});
