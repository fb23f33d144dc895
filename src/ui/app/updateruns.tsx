/**
 * KubeFleet's staged update runs (docs/kubefleet.md "Staged update runs"): the list of
 * ClusterStagedUpdateRuns (for a user who may list across namespaces) and of the StagedUpdateRuns
 * of the namespace picked in the header, and one run's page: its placement, resource snapshot
 * index and state, its conditions, each stage with its clusters' states (Started, Succeeded) and
 * its before- and after-stage tasks (TimedWait, Approval), the run's approval requests still
 * waiting, each with an Approve button for a user whose RBAC may update the request's status
 * subresource (`clusterapprovalrequests/status`, or `approvalrequests/status` in a namespace;
 * asked with a SelfSubjectAccessReview), and the run's events. The Approve button sets the
 * request's `Approved` condition as `flotilla approve` does (src/kinds/fleet-updaterun-shapes.ts), naming
 * the signed-in user. Everything is watched, so a run moves on the page.
 * Routes: `#/updateruns`, `#/updateruns/<run>`, `#/updateruns/<ns>/<run>`.
 */
import { useEffect, useState } from "preact/hooks";
import type { Api, KubeObject } from "./api.ts";
import { EventList } from "./events.tsx";
import { condition } from "./format.ts";
import { useLiveList, useLiveObject } from "./live.ts";
import { isForbidden } from "./scope.tsx";
import { KindLists } from "./kind-lists.tsx";
import { ConditionBadge, Conditions, ErrorNote, StateBadge, useNow } from "./widgets.tsx";
import { clock } from "../../clock.ts";
import {
  approvalPatch,
  approvalSpec,
  pendingApprovals,
  TARGET_UPDATE_RUN_LABEL,
  type StageTaskStatus,
  type StageUpdatingStatus,
  type UpdateRunSpec,
  type UpdateRunStatus,
} from "../../kinds/fleet-updaterun-shapes.ts";

const FLEET = "/apis/placement.kubernetes-fleet.io/v1";
const CSURS = `${FLEET}/clusterstagedupdateruns`;

type Conds = { type: string; status: string; reason?: string; message?: string }[] | undefined;
const find = (conds: Conds, type: string) => conds?.find((c) => c.type === type);
const isTrue = (conds: Conds, type: string) => find(conds, type)?.status === "True";

/** The page of a run: a ClusterStagedUpdateRun by name, a StagedUpdateRun by namespace and name. */
function runHref(r: KubeObject): string {
  const parts = r.metadata.namespace ? [r.metadata.namespace, r.metadata.name] : [r.metadata.name];
  return `#/updateruns/${parts.map(encodeURIComponent).join("/")}`;
}

/**
 * A stage's state in one word, from its `Progressing` and `Succeeded` conditions as the run
 * controller sets them (src/fleet/updaterun/controller.ts, KubeFleet's reasons): NotStarted,
 * Updating, Waiting (for its tasks), Stopped, Succeeded, Skipped (no clusters), Failed.
 */
export function stageState(st: StageUpdatingStatus): string {
  const succeeded = find(st.conditions, "Succeeded");
  if (succeeded?.status === "True") return succeeded.reason === "StageUpdatingSkippedNoClusters" ? "Skipped" : "Succeeded";
  if (succeeded?.status === "False") return "Failed";
  const progressing = find(st.conditions, "Progressing");
  if (!progressing) return "NotStarted";
  if (progressing.status === "True") return "Updating";
  if (progressing.reason === "StageUpdatingStopped") return "Stopped";
  if (progressing.reason === "StageUpdatingWaiting") return "Waiting";
  return progressing.reason ?? "NotStarted";
}

/** A cluster's state in a stage, from its `Started` and `Succeeded` conditions: Pending, Updating, Succeeded, Skipped, Failed. */
function clusterState(conds: Conds): string {
  const succeeded = find(conds, "Succeeded");
  if (succeeded?.status === "True") return succeeded.reason === "ClusterUpdatingSkipped" ? "Skipped" : "Succeeded";
  if (succeeded?.status === "False") return "Failed";
  return isTrue(conds, "Started") ? "Updating" : "Pending";
}

/** The stage a run is at (the first not Succeeded), or "" when every stage is done. */
function currentStage(status: UpdateRunStatus | undefined): string {
  return status?.stagesStatus?.find((st) => !isTrue(st.conditions, "Succeeded"))?.stageName ?? "";
}

/** A run condition's status as a badge (`—` when the controller has not set it yet). */
function RunBadge({ r, type }: { r: KubeObject; type: string }) {
  const c = condition(r, type);
  return c ? <ConditionBadge condition={c} /> : <>—</>;
}

/** The rows of a list of runs: name, placement, state, resource index, Progressing, Succeeded, the stage it is at. */
function RunTable({ items, namespaced }: { items: KubeObject[]; namespaced: boolean }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {namespaced && <th scope="col">Namespace</th>}
            <th scope="col">Name</th>
            <th scope="col">Placement</th>
            <th scope="col">State</th>
            <th scope="col">Resource index</th>
            <th scope="col">Progressing</th>
            <th scope="col">Succeeded</th>
            <th scope="col">Stage</th>
          </tr>
        </thead>
        <tbody>
          {items.map((r) => {
            const spec = (r.spec ?? {}) as Partial<UpdateRunSpec>;
            const status = r.status as UpdateRunStatus | undefined;
            return (
              <tr
                key={`${r.metadata.namespace ?? ""}/${r.metadata.name}`}
                data-run={r.metadata.namespace ? `${r.metadata.namespace}/${r.metadata.name}` : r.metadata.name}
              >
                {namespaced && <td>{r.metadata.namespace}</td>}
                <th scope="row">
                  <a href={runHref(r)}>{r.metadata.name}</a>
                </th>
                <td>{spec.placementName ?? "—"}</td>
                <td>{spec.state ?? "Initialize"}</td>
                <td class="num">{status?.resourceSnapshotIndexUsed ?? spec.resourceSnapshotIndex ?? "latest"}</td>
                <td>
                  <RunBadge r={r} type="Progressing" />
                </td>
                <td>
                  <RunBadge r={r} type="Succeeded" />
                </td>
                <td>{currentStage(status) || "—"}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function RunList({ api }: { api: Api }) {
  return (
    <div class="view" data-view="updateruns">
      <h1>Update runs</h1>
      <p class="muted">KubeFleet's staged update runs: a placement rolled out stage by stage, with waits and approvals between stages.</p>
      <KindLists
        api={api}
        base={FLEET}
        cluster={{ kind: "ClusterStagedUpdateRun", resource: "clusterstagedupdateruns" }}
        namespaced={{ kind: "StagedUpdateRun", resource: "stagedupdateruns" }}
        table={(items, namespaced) => <RunTable items={items} namespaced={namespaced} />}
      />
    </div>
  );
}

/** A stage's before- or after-stage tasks: type, wait, approval request, and where each stands. */
function Tasks({ when, tasks }: { when: string; tasks: StageTaskStatus[] | undefined }) {
  if (!tasks?.length) return null;
  return (
    <ul class="tasks" data-tasks={when}>
      {tasks.map((t, i) => {
        const done = t.type === "TimedWait" ? isTrue(t.conditions, "WaitTimeElapsed") : isTrue(t.conditions, "ApprovalRequestApproved");
        const word = done ? (t.type === "TimedWait" ? "Elapsed" : "Approved") : isTrue(t.conditions, "ApprovalRequestCreated") ? "Waiting" : "Pending";
        return (
          <li key={i} data-task={`${when}/${t.type}`} data-task-state={word}>
            {when === "before" ? "Before the stage" : "After the stage"}: {t.type}
            {t.approvalRequestName ? ` (${t.approvalRequestName})` : ""} <StateBadge state={word} />
          </li>
        );
      })}
    </ul>
  );
}

/** One stage of a run: its state, its clusters in update order with their states, and its tasks. */
function Stage({ st, deletion }: { st: StageUpdatingStatus; deletion?: boolean }) {
  const state = stageState(st);
  return (
    <section class="stage" data-stage={st.stageName} data-stage-state={state} aria-label={`Stage ${st.stageName}`}>
      <h3>
        {deletion ? "Deletion stage" : `Stage ${st.stageName}`} <StateBadge state={state} />
      </h3>
      <Tasks when="before" tasks={st.beforeStageTaskStatus} />
      {st.clusters.length === 0 ? (
        <p class="muted">No cluster in this stage.</p>
      ) : (
        <div class="table-wrap">
          <table class="per-cluster">
            <thead>
              <tr>
                <th scope="col">Cluster</th>
                <th scope="col">State</th>
                <th scope="col">Message</th>
              </tr>
            </thead>
            <tbody>
              {st.clusters.map((c) => {
                const cs = clusterState(c.conditions);
                const last = find(c.conditions, "Succeeded") ?? find(c.conditions, "Started");
                return (
                  <tr key={c.clusterName} data-cluster={c.clusterName} data-cluster-state={cs}>
                    <th scope="row">
                      <a href={`#/clusters/${encodeURIComponent(c.clusterName)}`}>{c.clusterName}</a>
                    </th>
                    <td>
                      <StateBadge state={cs} />
                    </td>
                    <td class="msg">{last?.message ?? "—"}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <Tasks when="after" tasks={st.afterStageTaskStatus} />
    </section>
  );
}

/**
 * The run's approval requests still waiting, each with an Approve button when the signed-in user
 * may update its status (a SelfSubjectAccessReview for `update` on the status subresource).
 */
function PendingApprovals({ api, namespace, run }: { api: Api; namespace?: string; run: string }) {
  const resource = namespace ? "approvalrequests" : "clusterapprovalrequests";
  const collection = namespace ? `${FLEET}/namespaces/${encodeURIComponent(namespace)}/${resource}` : `${FLEET}/${resource}`;
  const list = useLiveList(api, collection, { labelSelector: `${TARGET_UPDATE_RUN_LABEL}=${run}` });
  const [allowed, setAllowed] = useState<boolean | undefined>(undefined);
  const [busy, setBusy] = useState("");
  const [error, setError] = useState<Error | undefined>(undefined);
  useEffect(() => {
    let stop = false;
    api
      .request<{ status?: { allowed?: boolean } }>("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { verb: "update", group: "placement.kubernetes-fleet.io", resource, subresource: "status", namespace } },
      })
      .then((r) => !stop && setAllowed(r.status?.allowed === true))
      .catch(() => !stop && setAllowed(false));
    return () => {
      stop = true;
    };
  }, [api, resource, namespace]);
  const approve = async (request: KubeObject) => {
    setBusy(request.metadata.name);
    setError(undefined);
    try {
      const who = await api
        .request<{ status?: { userInfo?: { username?: string } } }>("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
          apiVersion: "authentication.k8s.io/v1",
          kind: "SelfSubjectReview",
        })
        .then((r) => r.status?.userInfo?.username ?? "")
        .catch(() => "");
      await api.request(
        "PATCH",
        `${collection}/${encodeURIComponent(request.metadata.name)}/status`,
        approvalPatch(request, { user: who, via: "the Flotilla dashboard", reason: "ApprovedOnDashboard" }, clock.now()),
        "application/merge-patch+json",
      );
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy("");
    }
  };
  if (isForbidden(list.error)) return <p class="muted">Your access does not include this run's approval requests.</p>;
  const pending = pendingApprovals(list.items, run);
  return (
    <div data-approvals={pending.length} data-can-approve={allowed === undefined ? "" : String(allowed)}>
      <ErrorNote error={list.error} />
      <ErrorNote error={error} what="Approving" />
      {!list.loading && pending.length === 0 && <p class="muted">No approval is waiting.</p>}
      {pending.length > 0 && (
        <ul class="approvals">
          {pending.map((a) => (
            <li key={a.metadata.name} data-approval={a.metadata.name}>
              Stage <strong>{approvalSpec(a).targetStage}</strong> waits for an approval ({a.metadata.name}).{" "}
              {allowed ? (
                <button type="button" data-approve={a.metadata.name} disabled={busy === a.metadata.name} onClick={() => void approve(a)}>
                  {busy === a.metadata.name ? "Approving…" : "Approve"}
                </button>
              ) : allowed === false ? (
                <span class="muted">Approving needs update on {resource}/status.</span>
              ) : null}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function RunDetail({ api, namespace, name }: { api: Api; namespace?: string; name: string }) {
  const collection = namespace ? `${FLEET}/namespaces/${encodeURIComponent(namespace)}/stagedupdateruns` : CSURS;
  const kind = namespace ? "StagedUpdateRun" : "ClusterStagedUpdateRun";
  const { obj: r, error } = useLiveObject(api, collection, name);
  const nowMs = useNow(10_000);
  if (error) return <ErrorNote error={error} what={`${kind} ${namespace ? `${namespace}/` : ""}${name}`} />;
  if (!r)
    return (
      <p class="muted">
        Loading {kind} {name}…
      </p>
    );
  const spec = (r.spec ?? {}) as Partial<UpdateRunSpec>;
  const status = r.status as UpdateRunStatus | undefined;
  const placementHref = namespace
    ? `#/resourceplacements/${encodeURIComponent(namespace)}/${encodeURIComponent(spec.placementName ?? "")}`
    : `#/resourceplacements/${encodeURIComponent(spec.placementName ?? "")}`;
  return (
    <div class="view" data-view="updaterun" data-stage={currentStage(status)}>
      <p class="crumbs">
        <a href="#/updateruns">Update runs</a> / {namespace ? `${namespace} / ` : ""}
        {name}
      </p>
      <h1>
        {name} {condition(r, "Succeeded") && <RunBadge r={r} type="Succeeded" />}
      </h1>
      <dl class="facts">
        <dt>Kind</dt>
        <dd>{kind}</dd>
        <dt>Placement</dt>
        <dd>
          <a href={placementHref}>{spec.placementName}</a>
        </dd>
        <dt>Strategy</dt>
        <dd>{spec.stagedRolloutStrategyName}</dd>
        <dt>State</dt>
        <dd data-run-state>{spec.state ?? "Initialize"}</dd>
        <dt>Resource index</dt>
        <dd data-resource-index>{status?.resourceSnapshotIndexUsed ?? spec.resourceSnapshotIndex ?? "latest"}</dd>
      </dl>
      <section aria-labelledby="urc-h">
        <h2 id="urc-h">Conditions</h2>
        <Conditions conditions={status?.conditions} nowMs={nowMs} />
      </section>
      <section aria-labelledby="ura-h">
        <h2 id="ura-h">Approvals waiting</h2>
        <PendingApprovals api={api} namespace={namespace} run={name} />
      </section>
      <section aria-labelledby="urs-h">
        <h2 id="urs-h">Stages ({status?.stagesStatus?.length ?? 0})</h2>
        {!status?.stagesStatus?.length && <p class="muted">Not initialized yet.</p>}
        {status?.stagesStatus?.map((st) => (
          <Stage key={st.stageName} st={st} />
        ))}
        {status?.deletionStageStatus && status.deletionStageStatus.clusters.length > 0 && <Stage st={status.deletionStageStatus} deletion />}
      </section>
      <section aria-labelledby="urev-h">
        <h2 id="urev-h">Events</h2>
        <EventList api={api} regarding={{ kind, name }} namespace={namespace ?? "default"} limit={50} />
      </section>
    </div>
  );
}

/**
 * The update runs view: the list, a ClusterStagedUpdateRun's page (`args` its name), or a
 * StagedUpdateRun's (`args` its namespace and name).
 */
export function UpdateRuns({ api, args }: { api: Api; args: string[] }) {
  if (args.length >= 2) return <RunDetail api={api} namespace={args[0]} name={args[1]!} />;
  if (args.length === 1) return <RunDetail api={api} name={args[0]!} />;
  return <RunList api={api} />;
}
