/**
 * ServiceAccounts and their tokens with the real kubectl over HTTPS: `kubectl create
 * serviceaccount`, `kubectl get serviceaccounts`, `kubectl create token [--duration]
 * [--audience]` (a TokenRequest kubectl sends in protobuf), the issuer discovery document and
 * JWKS fetched without a credential, and the token verified against that JWKS with jose, also
 * after the hub restarted on the same state (the generated signing key is kept).
 */
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { kubectlWith, writeAdminKubeconfig } from "./support.ts";

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), "flotilla-sa-"));

let hub: Hub;
let kubeconfig: string;

const { kubectl, kubectlFails } = kubectlWith(() => kubeconfig, dir);

/** GET of a public document (no credential): status, content type and parsed body. */
async function publicDoc(apiPath: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await hubFetch(hub, "GET", apiPath);
  return { status: r.status, body: JSON.parse(r.text) as Record<string, unknown> };
}

beforeAll(async () => {
  hub = await startHub({ https: true });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
});

afterAll(async () => {
  await hub?.stop();
});

describe("ServiceAccount tokens with kubectl", () => {
  let token: string;

  it("creates a ServiceAccount and lists it as kubectl's table", async () => {
    expect(await kubectl("create", "namespace", "ci")).toContain("namespace/ci created");
    expect(await kubectl("create", "serviceaccount", "deployer", "-n", "ci")).toContain("serviceaccount/deployer created");
    const table = await kubectl("get", "serviceaccounts", "-n", "ci");
    expect(table).toMatch(/^NAME\s+SECRETS\s+AGE\n/);
    expect(table).toMatch(/\ndeployer\s+0\s+\d+s\n/);
    // The namespace's own ServiceAccount, as kube-controller-manager makes it.
    expect(table).toMatch(/\ndefault\s+0\s+\d+s\n/);
    expect(await kubectl("get", "sa", "deployer", "-n", "ci", "-o", "jsonpath={.metadata.uid}")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("kubectl create token returns the hub's JWT, with the duration and audiences asked", async () => {
    const uid = await kubectl("get", "sa", "deployer", "-n", "ci", "-o", "jsonpath={.metadata.uid}");
    token = (await kubectl("create", "token", "deployer", "-n", "ci")).trim();
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({
      iss: hub.url,
      sub: "system:serviceaccount:ci:deployer",
      aud: [hub.url],
      "kubernetes.io": { namespace: "ci", serviceaccount: { name: "deployer", uid } },
    });
    expect(claims.exp! - claims.iat!).toBe(3600);

    const custom = decodeJwt(
      (await kubectl("create", "token", "deployer", "-n", "ci", "--duration", "10m", "--audience", "vault", "--audience", "ci.example")).trim(),
    );
    expect(custom.aud).toEqual(["vault", "ci.example"]);
    expect(custom.exp! - custom.iat!).toBe(600);

    // The namespace default's own ServiceAccount, without -n.
    expect(decodeJwt((await kubectl("create", "token", "default")).trim()).sub).toBe("system:serviceaccount:default:default");

    const asYaml = await kubectl("create", "token", "deployer", "-n", "ci", "-o", "yaml");
    expect(asYaml).toContain("kind: TokenRequest");
    expect(asYaml).toContain("expirationTimestamp:");
  });

  it("kubectl create token reports the hub's refusals: a missing ServiceAccount, a duration under 10 minutes", async () => {
    expect(await kubectlFails("create", "token", "nobody", "-n", "ci")).toContain('serviceaccounts "nobody" not found');
    expect(await kubectlFails("create", "token", "deployer", "-n", "ci", "--duration", "5m")).toContain("may not specify a duration less than 10 minutes");
  });

  it("serves the issuer discovery document and JWKS without a credential; the token verifies against them", async () => {
    const disc = await publicDoc("/.well-known/openid-configuration");
    expect(disc.status).toBe(200);
    expect(disc.body).toMatchObject({ issuer: hub.url, jwks_uri: `${hub.url}/openid/v1/jwks`, id_token_signing_alg_values_supported: ["ES256"] });
    const jwks = await publicDoc("/openid/v1/jwks");
    expect(jwks.status).toBe(200);
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks.body as unknown as JSONWebKeySet), {
      issuer: String(disc.body.issuer),
      audience: hub.url,
    });
    expect(payload.sub).toBe("system:serviceaccount:ci:deployer");
    expect(protectedHeader.alg).toBe("ES256");
  });

  it("keeps the signing key across a restart of npm start: the same JWKS, the token still verifies", async () => {
    const before = (await publicDoc("/openid/v1/jwks")).body;
    const { stateDir, adminToken } = hub;
    const port = Number(new URL(hub.url).port);
    await hub.stop();
    hub = await startHub({ https: true, stateDir, adminToken, port });
    const after = (await publicDoc("/openid/v1/jwks")).body;
    expect(after).toEqual(before);
    const { payload } = await jwtVerify(token, createLocalJWKSet(after as unknown as JSONWebKeySet), { issuer: hub.url, audience: hub.url });
    expect(payload.sub).toBe("system:serviceaccount:ci:deployer");
    expect(decodeJwt((await kubectl("create", "token", "deployer", "-n", "ci")).trim()).sub).toBe("system:serviceaccount:ci:deployer");
  });
  it("the token is the ServiceAccount's identity for kubectl, its RBAC applies, and it dies with the ServiceAccount", async () => {
    const t = (await kubectl("create", "token", "deployer", "-n", "ci")).trim();
    const as = (...args: string[]) =>
      run("kubectl", ["--kubeconfig", kubeconfig, "--token", t, ...args], { cwd: dir }).then(
        (r) => ({ code: 0, out: r.stdout }),
        (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` }),
      );
    expect((await as("auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")).out).toBe(
      'system:serviceaccount:ci:deployer ["system:serviceaccounts","system:serviceaccounts:ci","system:authenticated"]',
    );
    expect((await as("auth", "can-i", "list", "serviceaccounts", "-n", "ci")).out.trim()).toBe("no");
    await kubectl("create", "rolebinding", "deployer-view", "--clusterrole=view", "--serviceaccount=ci:deployer", "-n", "ci");
    expect((await as("get", "serviceaccounts", "-n", "ci", "-o", "name")).out).toContain("serviceaccount/deployer");
    expect((await as("get", "serviceaccounts", "-n", "default")).out).toContain("Forbidden");
    await kubectl("delete", "serviceaccount", "deployer", "-n", "ci");
    const gone = await as("get", "serviceaccounts", "-n", "ci");
    expect(gone.code).not.toBe(0);
    expect(gone.out).toContain("Unauthorized");
    // A ServiceAccount of the same name made again is another: the old token stays dead.
    await kubectl("create", "serviceaccount", "deployer", "-n", "ci");
    expect((await as("get", "serviceaccounts", "-n", "ci")).out).toContain("Unauthorized");
  });
});
