/** Shared pieces of the views: the clock, badges, conditions, errors. */
import { useEffect, useState } from "preact/hooks";
import { ApiFailure } from "./api.ts";
import { age, conditionHealth, since, type Condition } from "./format.ts";

/** The current time (epoch ms), refreshed every `everyMs` so that ages move on screen. */
export function useNow(everyMs: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/** A state as a coloured badge with its word (colour is never the only cue). */
export function StateBadge({ state }: { state: string }) {
  return (
    <span class={`badge s-${state.toLowerCase()}`} data-state={state}>
      {state}
    </span>
  );
}

/**
 * A condition's status as a badge, coloured by its health as the condition's polarity says
 * (format.ts `conditionHealth`: `PlacementMisconfigured=False` is healthy); `label` is the word
 * shown (the status by default). `data-state` carries the label, `data-health` ok/warn/bad.
 */
export function ConditionBadge({ condition, label }: { condition: { type: string; status: string; reason?: string }; label?: string }) {
  const health = conditionHealth(condition);
  const text = label ?? condition.status;
  return (
    <span class={`badge h-${health}`} data-state={text} data-health={health} title={`${condition.type}=${condition.status}`}>
      {text}
    </span>
  );
}

/** A table of conditions with reasons, messages and transition ages. */
export function Conditions({ conditions, nowMs }: { conditions: Condition[] | undefined; nowMs: number }) {
  if (!conditions?.length) return <p class="muted">No conditions.</p>;
  return (
    <div class="table-wrap">
      <table class="conditions">
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Status</th>
            <th scope="col">Reason</th>
            <th scope="col">Message</th>
            <th scope="col">Changed</th>
          </tr>
        </thead>
        <tbody>
          {conditions.map((c) => (
            <tr key={c.type} data-condition={c.type}>
              <th scope="row">{c.type}</th>
              <td>
                <ConditionBadge condition={c} />
              </td>
              <td>{c.reason ?? ""}</td>
              <td class="msg">{c.message ?? ""}</td>
              <td title={c.lastTransitionTime}>{c.lastTransitionTime ? `${age(since(c.lastTransitionTime, nowMs))} ago` : ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** An API error as an alert (nothing when there is none). */
export function ErrorNote({ error, what }: { error?: Error; what?: string }) {
  if (!error) return null;
  const text = error instanceof ApiFailure ? `${error.status} ${error.reason}: ${error.message}` : error.message;
  return (
    <p class="error" role="alert">
      {what ? `${what}: ` : ""}
      {text}
    </p>
  );
}
