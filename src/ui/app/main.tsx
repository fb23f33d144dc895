/**
 * The Flotilla dashboard (served at `/ui`): a Preact single-page app over the hub's own
 * Kubernetes API, signed in with a bearer token (the admin token, a ServiceAccount token, an OIDC
 * ID token: anything the hub's authentication chain accepts), kept for the browser tab only
 * (sessionStorage). A user without cluster-wide rights picks a namespace in the header and sees
 * the clusters of their cluster sets (src/ui/app/scope.tsx). Views, by URL fragment: `#/` the fleet, `#/clusters/<name>` a cluster,
 * `#/placements[/<ns>/<name>]`, `#/resourceplacements[/<crp>|/<ns>/<rp>]` (KubeFleet's placements),
 * `#/replicasets[/<ns>/<name>]`, `#/addons[/<name>]` (template add-ons), `#/updateruns[/<run>|/<ns>/<run>]` (KubeFleet's staged update runs), `#/events`. Every view lists what
 * it shows in pages and watches it, so it updates live without a reload.
 */
import { render } from "preact";
import { lazy, Suspense } from "preact/compat";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { Api, ApiFailure } from "./api.ts";
import { Fleet } from "./fleet.tsx";
import { ClusterView } from "./cluster.tsx";
import { ReplicaSets } from "./replicasets.tsx";
import { Addons } from "./addons.tsx";
import { Events } from "./events.tsx";
import { ResourcePlacements } from "./resourceplacements.tsx";
import { UpdateRuns } from "./updateruns.tsx";
import { NamespacePicker, ScopeContext, useScopeState } from "./scope.tsx";
import "./app.css";

// The placement view bundles the hub's scheduling modules (src/scheduling): loaded when opened.
const Placements = lazy(() => import("./placements.tsx").then((m) => ({ default: m.Placements })));

const TOKEN_KEY = "flotilla.token";
const THEME_KEY = "flotilla.theme";

/** The route of a URL fragment: its view and the path segments after it. */
function route(hash: string): { view: string; args: string[] } {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  return { view: parts[0] ?? "", args: parts.slice(1) };
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function SignIn({ onSignIn }: { onSignIn: (token: string, user: string) => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      const api = new Api(token.trim());
      const review = await api.request<{ status?: { userInfo?: { username?: string } } }>("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
        apiVersion: "authentication.k8s.io/v1",
        kind: "SelfSubjectReview",
      });
      onSignIn(token.trim(), review.status?.userInfo?.username ?? "signed in");
    } catch (err) {
      setError(err instanceof ApiFailure && err.status === 401 ? "The hub did not accept this token." : String((err as Error).message));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form onSubmit={(e) => void submit(e)} aria-labelledby="signin-title">
        <h1 id="signin-title">Flotilla</h1>
        <p>
          Sign in with a token the hub accepts: the admin token, a ServiceAccount token (<code>kubectl create token</code>) or an OIDC ID token.
        </p>
        <label for="token">Bearer token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="current-password"
          required
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
        />
        <button type="submit" disabled={busy || !token.trim()}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

function ThemeToggle() {
  const [theme, setTheme] = useState(() => localStorage.getItem(THEME_KEY) ?? "auto");
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem(THEME_KEY, theme);
  }, [theme]);
  const next = theme === "auto" ? "dark" : theme === "dark" ? "light" : "auto";
  return (
    <button class="theme" type="button" onClick={() => setTheme(next)} aria-label={`Theme: ${theme}. Switch to ${next}`} title={`Theme: ${theme}`}>
      {theme === "dark" ? "☾" : theme === "light" ? "☀" : "◐"}
    </button>
  );
}

const NAV = [
  ["", "Fleet"],
  ["placements", "Placements"],
  ["resourceplacements", "Resource placements"],
  ["replicasets", "Rollouts"],
  ["updateruns", "Update runs"],
  ["addons", "Add-ons"],
  ["events", "Events"],
] as const;

function Shell({ api, user, onSignOut }: { api: Api; user: string; onSignOut: () => void }) {
  const { view, args } = route(useHash());
  const where = `${view}/${args.join("/")}`;
  const section = view === "clusters" ? "" : view;
  const scope = useScopeState(api, user);
  // After a navigation inside the app, the keyboard's focus moves to the new view (as a page load would).
  const first = useRef(true);
  useEffect(() => {
    if (first.current) first.current = false;
    else document.getElementById("main")?.focus();
  }, [where]);
  let body;
  // Keyed by what they show: another object is a new view, with nothing of the previous one's state.
  if (view === "clusters" && args[0]) body = <ClusterView key={where} api={api} name={args[0]} />;
  else if (view === "placements") body = <Placements key={where} api={api} namespace={args[0]} name={args[1]} />;
  else if (view === "resourceplacements") body = <ResourcePlacements key={where} api={api} args={args} />;
  else if (view === "updateruns") body = <UpdateRuns key={where} api={api} args={args} />;
  else if (view === "replicasets") body = <ReplicaSets key={where} api={api} namespace={args[0]} name={args[1]} />;
  else if (view === "addons") body = <Addons key={where} api={api} name={args[0]} />;
  else if (view === "events") body = <Events api={api} />;
  else body = <Fleet api={api} />;
  return (
    <ScopeContext.Provider value={scope}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/">
          Flotilla
        </a>
        <nav aria-label="Views">
          {NAV.map(([v, label]) => (
            <a href={`#/${v}`} aria-current={section === v ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <NamespacePicker />
        <span class="user" title="Signed in as">
          {user}
        </span>
        <ThemeToggle />
        <button type="button" class="link" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<p class="muted">Loading…</p>}>{body}</Suspense>
      </main>
    </ScopeContext.Provider>
  );
}

function App() {
  const [session, setSession] = useState<{ token: string; user: string } | null>(() => {
    const raw = sessionStorage.getItem(TOKEN_KEY);
    return raw ? (JSON.parse(raw) as { token: string; user: string }) : null;
  });
  const api = useMemo(() => (session ? new Api(session.token) : null), [session]);
  useEffect(() => {
    // For the benchmark and the browser tests: the requests this page made.
    (globalThis as { flotillaRequests?: () => string[] }).flotillaRequests = () => api?.requests ?? [];
  }, [api]);
  if (!session || !api) {
    return (
      <SignIn
        onSignIn={(token, user) => {
          sessionStorage.setItem(TOKEN_KEY, JSON.stringify({ token, user }));
          setSession({ token, user });
        }}
      />
    );
  }
  return (
    <Shell
      api={api}
      user={session.user}
      onSignOut={() => {
        sessionStorage.removeItem(TOKEN_KEY);
        setSession(null);
      }}
    />
  );
}

document.documentElement.dataset.theme = localStorage.getItem(THEME_KEY) ?? "auto";
const root = document.getElementById("app")!;
// The page's "Loading" note goes: the app renders into an empty container.
root.textContent = "";
render(<App />, root);
