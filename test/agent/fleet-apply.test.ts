/**
 * The agent applies a work a KubeFleet placement rendered as KubeFleet's work applier does
 * (agent/src/work/fleet-apply.ts, conditions.ts, docs/kubefleet-apply.md): the work controller
 * against the simulated cluster over HTTP, both on injected clocks. Takeover, drift detection,
 * client- and server-side apply, availability per kind, deleteStrategy.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../agent/src/log.ts";
import { WorkController } from "../../agent/src/work/controller.ts";
import {
  APPLY_STRATEGY_ANNOTATION,
  DEFAULT_APPLY_STRATEGY,
  LAST_APPLIED_ANNOTATION,
  MANIFEST_HASH_ANNOTATION,
  UNAVAILABLE_PERIOD_ANNOTATION,
  type ApplyStrategy,
} from "../../agent/src/work/kubefleet.ts";
import type { Condition, ManifestWork, ManifestWorkStatus, Obj } from "../../agent/src/work/types.ts";
import { AGENT_NS, clockedSim, CM, deployment, JOB, podTemplate, ref, SVC, type Json } from "./clocked-sim.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const cond = (conds: Condition[] | undefined, type: string) => conds?.find((c) => c.type === type);
const statusOf = (reports: Array<{ name: string; status: ManifestWorkStatus }>, name: string) => {
  const r = reports.find((x) => x.name === name);
  if (!r) throw new Error(`no report for ${name}`);
  return r.status;
};
const manifestConds = (s: ManifestWorkStatus, name: string) => s.resourceStatus.manifests.find((m) => m.resourceMeta.name === name)?.conditions;

let generation = 0;
function fleetWork(
  name: string,
  manifests: unknown[],
  strategy: Partial<ApplyStrategy> = {},
  extra: Partial<ManifestWork["spec"]> = {},
  period = 60,
): ManifestWork {
  generation += 1;
  return {
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: {
      name,
      namespace: "c1",
      uid: randomUUID(),
      generation,
      annotations: { [APPLY_STRATEGY_ANNOTATION]: JSON.stringify({ ...DEFAULT_APPLY_STRATEGY, ...strategy }), [UNAVAILABLE_PERIOD_ANNOTATION]: String(period) },
    },
    spec: { workload: { manifests }, ...extra },
  };
}
/** The same work as the hub lists it once deleted there (held by its cleanup finalizer). */
function deleting(w: ManifestWork): ManifestWork {
  return {
    ...w,
    metadata: { ...w.metadata, deletionTimestamp: "2026-11-29T12:00:00Z", finalizers: ["cluster.open-cluster-management.io/manifest-work-cleanup"] },
  };
}
function updated(w: ManifestWork, manifests: unknown[]): ManifestWork {
  return { ...w, metadata: { ...w.metadata, generation: (w.metadata.generation ?? 0) + 1 }, spec: { ...w.spec, workload: { manifests } } };
}
const configMap = (name: string, data: Record<string, string>): Obj => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
  data,
});

async function fleetSetup(readyDelayMs = 1000) {
  const s = await clockedSim(readyDelayMs, (fn) => cleanups.push(fn));
  const c = new WorkController({
    kubeConfig: s.kc,
    namespace: AGENT_NS,
    logger: createLogger({ write: () => undefined }),
    watch: false,
    now: () => s.clock.now,
  });
  cleanups.push(() => c.close());
  return { ...s, c };
}

describe("the agent applies KubeFleet works as KubeFleet's work applier", () => {
  it("reports KubeFleet's Applied and Available: workloads when ready, data at once, untrackable kinds after unavailablePeriodSeconds", async () => {
    const { c, dyn, advance } = await fleetSetup(1000);
    const job = { apiVersion: "batch/v1", kind: "Job", metadata: { name: "once", namespace: "default" }, spec: { template: podTemplate("once", "busybox:1") } };
    const service = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: "default" },
      spec: { selector: { app: "web" }, ports: [{ port: 80 }] },
    };
    const w = fleetWork("crp-work", [configMap("cfg", { k: "v" }), deployment("web", "nginx:1.27"), service, job], {}, {}, 30);
    c.setWorks([w]);
    let s = statusOf(await c.sync(), "crp-work");
    expect(cond(manifestConds(s, "cfg"), "Applied")).toMatchObject({ status: "True", reason: "Applied" });
    expect(cond(manifestConds(s, "cfg"), "Available")).toMatchObject({ status: "True", reason: "Available" });
    const webDeploy = s.resourceStatus.manifests.find((m) => m.resourceMeta.kind === "Deployment")!;
    expect(cond(webDeploy.conditions, "Available")).toMatchObject({ status: "False", reason: "ManifestNotAvailableYet", observedGeneration: 1 });
    const webSvc = s.resourceStatus.manifests.find((m) => m.resourceMeta.kind === "Service")!;
    expect(cond(webSvc.conditions, "Available")).toMatchObject({ status: "True", reason: "Available" });
    expect(cond(manifestConds(s, "once"), "Available")).toMatchObject({ status: "Unknown", reason: "NotTrackable" });
    expect(cond(s.conditions, "Applied")).toMatchObject({ status: "True", reason: "AllManifestsApplied", observedGeneration: w.metadata.generation });
    expect(cond(s.conditions, "Available")).toMatchObject({
      status: "False",
      reason: "SomeManifestsAreNotAvailable",
      message: "Some manifests are not available (2 of 4 manifests are available)",
    });
    // The Deployment's replicas come up.
    advance(1000);
    s = statusOf(await c.sync(), "crp-work");
    expect(cond(s.resourceStatus.manifests.find((m) => m.resourceMeta.kind === "Deployment")!.conditions, "Available")).toMatchObject({
      status: "True",
      reason: "Available",
    });
    expect(cond(s.conditions, "Available")?.status).toBe("False");
    // The Job is not trackable: available unavailablePeriodSeconds (30) after it was applied.
    advance(28_000);
    s = statusOf(await c.sync(), "crp-work");
    expect(cond(manifestConds(s, "once"), "Available")?.status).toBe("Unknown");
    advance(1_000);
    s = statusOf(await c.sync(), "crp-work");
    expect(cond(manifestConds(s, "once"), "Available")).toMatchObject({ status: "True", reason: "NotTrackable" });
    expect(cond(s.conditions, "Available")).toMatchObject({ status: "True", reason: "WorkNotTrackable" });
    // A bad image: applied, never available.
    const w2 = updated(w, [configMap("cfg", { k: "v" }), deployment("web", "nginx:bad")]);
    c.setWorks([w2]);
    await c.sync();
    advance(600_000);
    s = statusOf(await c.sync(), "crp-work");
    expect(cond(s.conditions, "Applied")?.status).toBe("True");
    expect(cond(s.resourceStatus.manifests.find((m) => m.resourceMeta.kind === "Deployment")!.conditions, "Available")?.reason).toBe("ManifestNotAvailableYet");
    expect(cond(s.conditions, "Available")?.status).toBe("False");
    // Without the Job and the Service any more, and the image fixed: every manifest available.
    c.setWorks([updated(w2, [configMap("cfg", { k: "v" }), deployment("web", "nginx:1.28")])]);
    await c.sync();
    advance(1000);
    s = statusOf(await c.sync(), "crp-work");
    expect(cond(s.conditions, "Available")).toMatchObject({ status: "True", reason: "AllManifestsAvailable" });
    expect(await dyn.get(ref(JOB, "default", "once")).catch((e: Json) => e.code)).toBe(404);
  });

  it("an untrackable object is reported available at its period's end, on the status's whole-second clock, and the controller says when", async () => {
    const { kc, clock, advance } = await clockedSim(1000, (fn) => cleanups.push(fn));
    const c = new WorkController({ kubeConfig: kc, namespace: AGENT_NS, logger: createLogger({ write: () => undefined }), watch: true, now: () => clock.now });
    cleanups.push(() => c.close());
    advance(600); // mid-second: the status's timestamps (whole seconds) lag the clock
    const job = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "later", namespace: "default" },
      spec: { template: podTemplate("later", "busybox:1") },
    };
    c.setWorks([fleetWork("untracked", [job], {}, {}, 2)]);
    let s = statusOf(await c.sync(), "untracked");
    expect(cond(manifestConds(s, "later"), "Available")?.status).toBe("Unknown");
    // Due at the first whole second at or after applied + 2 s (12:00:02.600 → 12:00:03).
    expect(c.nextDueInMs()).toBe(2400);
    advance(2100); // 12:00:02.700: past the period, but the status's clock says 12:00:02
    s = statusOf(await c.sync(), "untracked");
    expect(cond(manifestConds(s, "later"), "Available")?.status).toBe("Unknown");
    expect(c.nextDueInMs()).toBe(300);
    advance(300);
    s = statusOf(await c.sync(), "untracked");
    expect(cond(manifestConds(s, "later"), "Available")).toMatchObject({ status: "True", reason: "NotTrackable" });
    expect(cond(s.conditions, "Available")).toMatchObject({ status: "True", reason: "WorkNotTrackable" });
    expect(c.nextDueInMs()).toBeUndefined();
    // And it stays so on the quiet passes that follow.
    advance(10_000);
    expect(cond(statusOf(await c.sync(), "untracked").conditions, "Available")?.status).toBe("True");
  });

  it("a workload not yet available is reported as soon as its watch sees it change, not at the next status sync", async () => {
    const { kc, clock, advance } = await clockedSim(1000, (fn) => cleanups.push(fn));
    const c = new WorkController({ kubeConfig: kc, namespace: AGENT_NS, logger: createLogger({ write: () => undefined }), watch: true, now: () => clock.now });
    cleanups.push(() => c.close());
    let signalled = 0;
    c.onWatchedChange(() => (signalled += 1));
    c.setWorks([fleetWork("watched", [deployment("web", "nginx:1.27")])]);
    const s = statusOf(await c.sync(), "watched");
    expect(cond(s.conditions, "Available")?.status).toBe("False");
    advance(1000);
    await expect.poll(() => signalled).toBeGreaterThan(0);
    expect(cond(statusOf(await c.sync(), "watched").conditions, "Available")).toMatchObject({ status: "True", reason: "AllManifestsAvailable" });
  });

  it("whenToTakeOver: Never leaves a pre-existing object alone (NotTakenOver) and never deletes it; Always takes it over", async () => {
    const { c, dyn } = await fleetSetup();
    await dyn.create(CM, "default", configMap("mine", { k: "theirs" }), "kubectl");
    const w = fleetWork("never", [configMap("mine", { k: "hub" }), configMap("new", { k: "hub" })], { whenToTakeOver: "Never" });
    c.setWorks([w]);
    const s = statusOf(await c.sync(), "never");
    expect(cond(manifestConds(s, "mine"), "Applied")).toMatchObject({ status: "False", reason: "NotTakenOver" });
    expect(cond(manifestConds(s, "mine"), "Applied")?.message).toContain("takeover is needed");
    expect(cond(manifestConds(s, "mine"), "Available")).toBeUndefined();
    expect(cond(manifestConds(s, "new"), "Applied")?.status).toBe("True");
    expect(cond(s.conditions, "Applied")).toMatchObject({
      status: "False",
      reason: "SomeManifestsAreNotApplied",
      message: "Failed to apply all manifests (1 of 2 manifests are applied)",
    });
    expect(cond(s.conditions, "Available")).toBeUndefined();
    expect((await dyn.get(ref(CM, "default", "mine"))).data.k).toBe("theirs");
    // Deleting the work deletes what it created, not what it never took over.
    c.setWorks([deleting(w)]);
    await c.sync();
    expect((await dyn.get(ref(CM, "default", "mine"))).data.k).toBe("theirs");
    expect(await dyn.get(ref(CM, "default", "new")).catch((e: Json) => e.code)).toBe(404);
    // Always (the default) takes it over and applies.
    const always = fleetWork("always", [configMap("mine", { k: "hub" })]);
    c.setWorks([always]);
    expect(cond(statusOf(await c.sync(), "always").conditions, "Applied")?.status).toBe("True");
    const live = await dyn.get(ref(CM, "default", "mine"));
    expect(live.data.k).toBe("hub");
    expect(live.metadata.annotations[MANIFEST_HASH_ANNOTATION]).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.parse(live.metadata.annotations[LAST_APPLIED_ANNOTATION]).data).toEqual({ k: "hub" });
  });

  it("whenToTakeOver: IfNoDiff takes over only an identical object, reporting the differences otherwise; owners block without allowCoOwnership", async () => {
    const { c, dyn } = await fleetSetup();
    await dyn.create(
      CM,
      "default",
      { ...configMap("differs", { k: "theirs", only: "member" }), metadata: { name: "differs", namespace: "default", labels: { team: "a" } } },
      "kubectl",
    );
    await dyn.create(CM, "default", configMap("same", { k: "hub" }), "kubectl");
    const owner = { apiVersion: "v1", kind: "ConfigMap", name: "same", uid: (await dyn.get(ref(CM, "default", "same"))).metadata.uid };
    await dyn.create(
      CM,
      "default",
      { ...configMap("owned", { k: "hub" }), metadata: { name: "owned", namespace: "default", ownerReferences: [owner] } },
      "kubectl",
    );
    const w = fleetWork("ifnodiff", [configMap("differs", { k: "hub" }), configMap("same", { k: "hub" }), configMap("owned", { k: "hub" })], {
      whenToTakeOver: "IfNoDiff",
    });
    c.setWorks([w]);
    const s = statusOf(await c.sync(), "ifnodiff");
    expect(cond(manifestConds(s, "differs"), "Applied")).toMatchObject({ status: "False", reason: "FailedToTakeOver" });
    const diffed = cond(manifestConds(s, "differs"), "Diffed");
    expect(diffed).toMatchObject({ status: "True", reason: "FoundDiff" });
    // Partial comparison: only the field the manifest sets differs.
    expect(JSON.parse(diffed!.message)).toEqual([{ path: "/data/k", valueInMember: "theirs", valueInHub: "hub" }]);
    expect((await dyn.get(ref(CM, "default", "differs"))).data).toEqual({ k: "theirs", only: "member" });
    expect(cond(manifestConds(s, "same"), "Applied")).toMatchObject({ status: "True", reason: "Applied" });
    expect(cond(manifestConds(s, "owned"), "Applied")).toMatchObject({ status: "False", reason: "FailedToTakeOver" });
    expect(cond(manifestConds(s, "owned"), "Applied")?.message).toContain("co-ownership is disallowed");
    // FullComparison counts the member's extra fields too.
    const full = fleetWork("full", [configMap("differs", { k: "theirs" })], { whenToTakeOver: "IfNoDiff", comparisonOption: "FullComparison" });
    c.setWorks([full]);
    const f = statusOf(await c.sync(), "full");
    expect(JSON.parse(cond(manifestConds(f, "differs"), "Diffed")!.message)).toEqual([
      { path: "/data/only", valueInMember: "member" },
      { path: "/metadata/labels/team", valueInMember: "a" },
    ]);
  });

  it("whenToApply: IfNotDrifted stops at a drift and reports it; a new manifest is applied over it; Always reverts it", async () => {
    const { c, dyn } = await fleetSetup();
    const w = fleetWork("drift", [configMap("cfg", { k: "hub", keep: "1" })], { whenToApply: "IfNotDrifted" });
    c.setWorks([w]);
    expect(cond(statusOf(await c.sync(), "drift").conditions, "Applied")?.status).toBe("True");
    await dyn.mergePatch(ref(CM, "default", "cfg"), { data: { k: "edited", extra: "x" } }, "kubectl-edit");
    let s = statusOf(await c.sync(), "drift");
    expect(cond(manifestConds(s, "cfg"), "Applied")).toMatchObject({ status: "False", reason: "FoundDrifts" });
    const drifted = cond(manifestConds(s, "cfg"), "Drifted")!;
    expect(drifted).toMatchObject({ status: "True", reason: "FoundDrifts", observedGeneration: 0 });
    // Partial comparison: the field added on the member is not a drift.
    expect(JSON.parse(drifted.message)).toEqual([{ path: "/data/k", valueInMember: "edited", valueInHub: "hub" }]);
    expect((await dyn.get(ref(CM, "default", "cfg"))).data.k).toBe("edited");
    // The drift keeps its first observed time.
    const first = drifted.lastTransitionTime;
    s = statusOf(await c.sync(), "drift");
    expect(cond(manifestConds(s, "cfg"), "Drifted")?.lastTransitionTime).toBe(first);
    // A new revision of the manifest is applied over the drift.
    const w2 = updated(w, [configMap("cfg", { k: "hub2", keep: "1" })]);
    c.setWorks([w2]);
    s = statusOf(await c.sync(), "drift");
    expect(cond(manifestConds(s, "cfg"), "Applied")?.status).toBe("True");
    expect(cond(manifestConds(s, "cfg"), "Drifted")).toBeUndefined();
    expect((await dyn.get(ref(CM, "default", "cfg"))).data).toMatchObject({ k: "hub2", keep: "1", extra: "x" });
    // Always: the drift is reverted at the next pass.
    c.setWorks([fleetWork("drift", [configMap("cfg", { k: "hub2", keep: "1" })], { whenToApply: "Always" })]);
    await c.sync();
    await dyn.mergePatch(ref(CM, "default", "cfg"), { data: { k: "edited" } }, "kubectl-edit");
    s = statusOf(await c.sync(), "drift");
    expect(cond(manifestConds(s, "cfg"), "Applied")?.status).toBe("True");
    expect((await dyn.get(ref(CM, "default", "cfg"))).data.k).toBe("hub2");
  });

  it("FullComparison reports drifts left after the apply (fields the manifest does not set) and still applies", async () => {
    const { c, dyn } = await fleetSetup();
    c.setWorks([fleetWork("fc", [configMap("cfg", { k: "hub" })], { comparisonOption: "FullComparison" })]);
    await c.sync();
    await dyn.mergePatch(ref(CM, "default", "cfg"), { metadata: { labels: { extra: "1" } } }, "kubectl-label");
    const s = statusOf(await c.sync(), "fc");
    expect(cond(manifestConds(s, "cfg"), "Applied")).toMatchObject({ status: "True", reason: "Applied" });
    expect(JSON.parse(cond(manifestConds(s, "cfg"), "Drifted")!.message)).toEqual([{ path: "/metadata/labels/extra", valueInMember: "1" }]);
  });

  it("ClientSideApply merges three ways: fields the hub drops go, fields others added stay", async () => {
    const { c, dyn } = await fleetSetup();
    const w = fleetWork("csa", [configMap("cfg", { a: "1", b: "2" })]);
    c.setWorks([w]);
    await c.sync();
    await dyn.mergePatch(ref(CM, "default", "cfg"), { data: { theirs: "x" } }, "someone");
    c.setWorks([updated(w, [configMap("cfg", { a: "1" })])]);
    expect(cond(statusOf(await c.sync(), "csa").conditions, "Applied")?.status).toBe("True");
    const live = await dyn.get(ref(CM, "default", "cfg"));
    expect(live.data).toEqual({ a: "1", theirs: "x" });
    expect(JSON.parse(live.metadata.annotations[LAST_APPLIED_ANNOTATION]).data).toEqual({ a: "1" });
  });

  it("ServerSideApply: a conflict fails without serverSideApplyConfig.force and is taken with it", async () => {
    const { c, dyn } = await fleetSetup();
    await dyn.create(CM, "default", configMap("shared", { owned: "theirs" }), "someone-else");
    const w = fleetWork("ssa", [configMap("shared", { owned: "ours" })], { type: "ServerSideApply", serverSideApplyConfig: { force: false } });
    c.setWorks([w]);
    const s = statusOf(await c.sync(), "ssa");
    expect(cond(manifestConds(s, "shared"), "Applied")).toMatchObject({ status: "False", reason: "ManifestApplyFailed" });
    expect(cond(manifestConds(s, "shared"), "Applied")?.message).toMatch(/conflict/);
    expect((await dyn.get(ref(CM, "default", "shared"))).data.owned).toBe("theirs");
    c.setWorks([fleetWork("ssa", [configMap("shared", { owned: "ours" })], { type: "ServerSideApply", serverSideApplyConfig: { force: true } })]);
    expect(cond(statusOf(await c.sync(), "ssa").conditions, "Applied")?.status).toBe("True");
    const live = await dyn.get(ref(CM, "default", "shared"));
    expect(live.data.owned).toBe("ours");
    expect(live.metadata.managedFields.some((f: Json) => f.manager === "work-agent" && f.operation === "Apply")).toBe(true);
  });

  it("deleteStrategy Abandon (deleteOption Orphan) keeps the objects when the work goes; Delete removes them", async () => {
    const { c, dyn } = await fleetSetup();
    const works = [
      fleetWork("abandon", [configMap("kept", { k: "v" })], {}, { deleteOption: { propagationPolicy: "Orphan" } }),
      fleetWork("del", [configMap("gone", { k: "v" })]),
    ];
    c.setWorks(works);
    await c.sync();
    c.setWorks(works.map(deleting));
    await c.sync();
    expect((await dyn.get(ref(CM, "default", "kept"))).data.k).toBe("v");
    expect(await dyn.get(ref(CM, "default", "gone")).catch((e: Json) => e.code)).toBe(404);
  });

  it("a Service is available once it has a cluster IP; the ownership after a takeover survives a new controller (the record)", async () => {
    const { c, dyn, kc, clock } = await fleetSetup();
    await dyn.create(SVC, "default", { apiVersion: "v1", kind: "Service", metadata: { name: "pre" }, spec: { ports: [{ port: 80 }] } }, "kubectl");
    c.setWorks([fleetWork("svc", [{ apiVersion: "v1", kind: "Service", metadata: { name: "pre", namespace: "default" }, spec: { ports: [{ port: 80 }] } }])]);
    const s = statusOf(await c.sync(), "svc");
    expect(cond(s.conditions, "Available")).toMatchObject({ status: "True", reason: "AllManifestsAvailable" });
    // A restarted agent reads its records: the object is Fleet's, so Never does not block it.
    const again = new WorkController({
      kubeConfig: kc,
      namespace: AGENT_NS,
      logger: createLogger({ write: () => undefined }),
      watch: false,
      now: () => clock.now,
    });
    cleanups.push(() => again.close());
    await again.init();
    again.setWorks([
      fleetWork("svc", [{ apiVersion: "v1", kind: "Service", metadata: { name: "pre", namespace: "default" }, spec: { ports: [{ port: 81 }] } }], {
        whenToTakeOver: "Never",
      }),
    ]);
    expect(cond(statusOf(await again.sync(), "svc").conditions, "Applied")?.status).toBe("True");
    expect((await dyn.get(ref(SVC, "default", "pre"))).spec.ports[0].port).toBe(81);
  });
});
