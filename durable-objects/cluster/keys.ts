/**
 * The cluster's credentials: its registered public keys (one current, at most one retired by a
 * rotation and still valid for its grace), the pending key a registration waits with until an
 * admin accepts it, the verification of agent JWTs with them, and the replay cache of the JWT IDs
 * already used (docs/agent-protocol.md).
 */
import { decodeProtectedHeader, importJWK, jwtVerify, type JWK } from "jose";
import { invalid, unauthorized } from "../../src/k8s/errors.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { ACCEPT_KEY_ANNOTATION, ManagedClusterKind, PENDING_KEY_ANNOTATION } from "../../src/kinds/managedcluster.ts";
import { AGENT_AUDIENCE, CLOCK_SKEW_SECONDS } from "../../src/agent-api/protocol.ts";
import { INVALID_AGENT_CREDENTIAL } from "../../src/auth/credentials.ts";
import { checkTimes } from "../../src/auth/keys.ts";
import type { ClusterHost } from "./host.ts";

/** Creates the key tables and the replay cache (idempotent). */
export const KEYS_SCHEMA = `CREATE TABLE IF NOT EXISTS keys (kid TEXT PRIMARY KEY, jwk TEXT NOT NULL, not_after INTEGER);
  CREATE TABLE IF NOT EXISTS pending_key (one INTEGER PRIMARY KEY CHECK (one = 1), kid TEXT NOT NULL, jwk TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS seen_jti (jti TEXT PRIMARY KEY, exp INTEGER NOT NULL) WITHOUT ROWID;`;

/** How long a key replaced by rotation keeps working, in milliseconds. */
export const ROTATION_OVERLAP_MS = 5 * 60 * 1000;

/** How often, at most, a verification also purges the replay cache's expired rows, in milliseconds. */
const PURGE_INTERVAL_MS = 60_000;

/** A key waiting for an admin: its ID (thumbprint) and its JWK as stored (JSON). */
export interface PendingKey {
  kid: string;
  jwk: string;
}

/** Who signed a verified agent JWT (see {@link Keys.verify}). */
export interface Verified {
  kid: string;
  pending: boolean;
  retired: boolean;
}

/** The cluster's keys and replay cache, in the host's SQLite. */
export class Keys {
  private readonly cache = new Map<string, CryptoKey>();
  private lastPurgeMs = 0;

  constructor(private readonly host: Pick<ClusterHost, "exec">) {}

  /** Forgets the imported keys (after the keys changed or the storage was erased). */
  clearCache(): void {
    this.cache.clear();
  }

  /** Whether the cluster has any key (an admin-created cluster has none until its agent registers). */
  any(): boolean {
    return this.host.exec("SELECT 1 FROM keys LIMIT 1").length > 0;
  }

  /**
   * Whether `kid` is the cluster's current key: a key a rotation retired (still valid during its
   * grace) is not, so registering with it again is held for an admin like any other key.
   */
  isCurrent(kid: string): boolean {
    return this.host.exec("SELECT 1 FROM keys WHERE kid = ? AND not_after IS NULL", kid).length > 0;
  }

  /** Adds `kid` as a current key. */
  add(kid: string, publicKey: JWK): void {
    this.host.exec("INSERT INTO keys (kid, jwk, not_after) VALUES (?, ?, NULL)", kid, JSON.stringify(publicKey));
  }

  /** Holds `kid` as the cluster's pending key (replacing an earlier one) until an admin accepts it. */
  holdPending(kid: string, publicKey: JWK): void {
    this.host.exec(
      "INSERT INTO pending_key (one, kid, jwk) VALUES (1, ?, ?) ON CONFLICT (one) DO UPDATE SET kid = excluded.kid, jwk = excluded.jwk",
      kid,
      JSON.stringify(publicKey),
    );
  }

  /**
   * An admin write's answer to the pending key (OCM: approving the cluster's CSR). The pending-key
   * annotation is the hub's own; the accept annotation must name the pending key. Returns the key
   * to promote once the write committed (and removes both annotations from `next`), or null.
   * @throws ApiError 422 naming the annotation
   */
  acceptance(current: KubeObject | null, next: KubeObject): PendingKey | null {
    const ref = { group: ManagedClusterKind.group, plural: ManagedClusterKind.plural, kind: ManagedClusterKind.kind, name: next.metadata.name };
    const annotations = next.metadata.annotations ?? {};
    if (annotations[PENDING_KEY_ANNOTATION] !== current?.metadata.annotations?.[PENDING_KEY_ANNOTATION]) {
      throw invalid(ref, [
        { field: `metadata.annotations[${PENDING_KEY_ANNOTATION}]`, message: "set by the hub only: it shows the key a registration is waiting with" },
      ]);
    }
    const accept = annotations[ACCEPT_KEY_ANNOTATION];
    if (accept === undefined) return null;
    const pending = this.host.exec("SELECT kid, jwk FROM pending_key")[0] as PendingKey | undefined;
    if (!pending || pending.kid !== accept) {
      throw invalid(ref, [
        {
          field: `metadata.annotations[${ACCEPT_KEY_ANNOTATION}]`,
          message: `Invalid value: ${JSON.stringify(accept)}: no registration is waiting with this key ID`,
        },
      ]);
    }
    const rest = { ...annotations };
    delete rest[PENDING_KEY_ANNOTATION];
    delete rest[ACCEPT_KEY_ANNOTATION];
    next.metadata.annotations = rest;
    if (Object.keys(rest).length === 0) delete next.metadata.annotations;
    return pending;
  }

  /** Makes the accepted pending key the cluster's only key: every earlier key stops at once. */
  promote(key: PendingKey): void {
    this.host.exec("DELETE FROM keys");
    this.host.exec("INSERT INTO keys (kid, jwk, not_after) VALUES (?, ?, NULL)", key.kid, key.jwk);
    this.host.exec("DELETE FROM pending_key");
    this.cache.clear();
  }

  /**
   * Key rotation signed with the current key (the caller checked that the signing key is not
   * retired; the Worker verified the proof for the new key): the new key becomes current, the key
   * it replaces works for ROTATION_OVERLAP_MS more (milliseconds from `now`, epoch milliseconds),
   * and the grace of every older key ends at once, so a chain of rotations never leaves more than
   * one retired key alive. Rotating to a retired key makes it current again. A pending key, if
   * any, still waits for the admin.
   */
  rotate(publicKey: JWK, kid: string, now: number): { kid: string } {
    this.host.exec("DELETE FROM keys WHERE not_after IS NOT NULL AND kid != ?", kid);
    this.host.exec("UPDATE keys SET not_after = ? WHERE not_after IS NULL AND kid != ?", now + ROTATION_OVERLAP_MS, kid);
    this.host.exec(
      "INSERT INTO keys (kid, jwk, not_after) VALUES (?, ?, NULL) ON CONFLICT (kid) DO UPDATE SET not_after = NULL",
      kid,
      JSON.stringify(publicKey),
    );
    return { kid };
  }

  /**
   * The verification key for `kid`: one of the cluster's keys still valid at `now` (epoch
   * milliseconds), or its pending key (`pending: true`), else null. `retired` is true for a key
   * that a rotation replaced and that works only until its grace ends (`not_after`). A stored key
   * that no longer imports (registered by an older hub without a check) is treated as unknown.
   */
  private async key(kid: string, now: number): Promise<{ key: CryptoKey; pending: boolean; retired: boolean } | null> {
    let row = this.host.exec("SELECT jwk, not_after FROM keys WHERE kid = ?", kid)[0];
    let pending = false;
    if (!row) {
      row = this.host.exec("SELECT jwk, NULL AS not_after FROM pending_key WHERE kid = ?", kid)[0];
      pending = true;
    }
    if (!row) return null;
    if (row.not_after !== null && (row.not_after as number) <= now) return null;
    let key = this.cache.get(kid);
    if (!key) {
      try {
        key = (await importJWK(JSON.parse(row.jwk as string) as JWK, "ES256")) as CryptoKey;
      } catch {
        return null;
      }
      this.cache.set(kid, key);
    }
    return { key, pending, retired: row.not_after !== null };
  }

  /**
   * Verifies an agent JWT (see docs/agent-protocol.md) at `now` (epoch milliseconds): ES256
   * signature by a key of this cluster (or its pending key: then `pending` is true), `iss`/`sub`
   * equal to the cluster `name`, `aud` "flotilla", lifetime at most 60 s, not issued in the
   * future, 30 s clock skew, and a `jti` never seen before (the replay cache). Every failure has
   * the same message, so a caller learns nothing about the cluster. `retired`: signed by a key in
   * its rotation grace period (see {@link rotate}). With `record` false the `jti` is checked but
   * not recorded, so the same token can still be used once.
   *
   * @throws ApiError 401 on any failure.
   */
  async verify(token: string, name: string, now: number, record = true): Promise<Verified> {
    const refuse = () => unauthorized(INVALID_AGENT_CREDENTIAL);
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw refuse();
    }
    if (!kid) throw refuse();
    const found = await this.key(kid, now);
    if (!found) throw refuse();
    let payload;
    try {
      ({ payload } = await jwtVerify(token, found.key, {
        algorithms: ["ES256"],
        audience: AGENT_AUDIENCE,
        issuer: name,
        subject: name,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ["exp", "iat", "jti"],
        currentDate: new Date(now),
      }));
    } catch {
      throw refuse();
    }
    checkTimes(payload.iat!, payload.exp!, now, refuse);
    const jti = String(payload.jti);
    if (jti.length > 128) throw refuse();
    if (!record) {
      if (this.host.exec("SELECT 1 FROM seen_jti WHERE jti = ?", jti).length > 0) throw refuse();
      return { kid, pending: found.pending, retired: found.retired };
    }
    const seen = this.host.exec(
      "INSERT INTO seen_jti (jti, exp) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING RETURNING jti",
      jti,
      (payload.exp! + CLOCK_SKEW_SECONDS) * 1000,
    );
    if (seen.length === 0) throw refuse();
    if (now - this.lastPurgeMs > PURGE_INTERVAL_MS) this.purgeReplays(now);
    return { kid, pending: found.pending, retired: found.retired };
  }

  /**
   * Deletes the replay cache's rows of tokens expired at `now` (epoch milliseconds, clock skew
   * included): such a token fails its time check anyway.
   */
  purgeReplays(now: number): void {
    this.lastPurgeMs = now;
    this.host.exec("DELETE FROM seen_jti WHERE exp < ?", now);
  }
}
