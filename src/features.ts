/**
 * The hub's feature gates, named and parsed as OCM's and Kubernetes' `--feature-gates` flag
 * (`k8s.io/component-base/featuregate`): `FLOTILLA_FEATURE_GATES` (a wrangler.toml var; `npm
 * start` passes the same-named environment variable) is a comma-separated list of
 * `<Gate>=<bool>`, each boolean as Go's `strconv.ParseBool` reads it (`1`, `t`, `T`, `TRUE`,
 * `true`, `True`, and their false twins). A gate not listed keeps its default; an unknown gate
 * or an unreadable value is ignored (a Worker has no start-up to refuse it at). Pure.
 *
 * Gates:
 * - `NilExecutorValidating` (default false, as OCM's hub work webhook): a ManifestWork (and here a
 *   ManifestWorkReplicaSet's template) without `spec.executor` is admitted as if it named the
 *   work agent's default ServiceAccount, so its author needs `execute-as` on
 *   `system:serviceaccount::klusterlet-work-sa` (src/kinds/manifestwork-executor.ts).
 */

/** The gates the hub knows, with their defaults. */
export const FEATURE_GATE_DEFAULTS = { NilExecutorValidating: false } as const;

/** A gate's name. */
export type FeatureGate = keyof typeof FEATURE_GATE_DEFAULTS;

const TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/**
 * Whether `gate` is on under `env.FLOTILLA_FEATURE_GATES` (see the module comment).
 * @example featureEnabled({ FLOTILLA_FEATURE_GATES: "NilExecutorValidating=true" }, "NilExecutorValidating") // true
 */
export function featureEnabled(env: { FLOTILLA_FEATURE_GATES?: string }, gate: FeatureGate): boolean {
  let on: boolean = FEATURE_GATE_DEFAULTS[gate];
  for (const item of (env.FLOTILLA_FEATURE_GATES ?? "").split(",")) {
    const eq = item.indexOf("=");
    if (eq < 0 || item.slice(0, eq).trim() !== gate) continue;
    const v = item.slice(eq + 1).trim();
    if (TRUE.has(v)) on = true;
    else if (FALSE.has(v)) on = false;
  }
  return on;
}
