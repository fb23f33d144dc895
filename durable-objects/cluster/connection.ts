/**
 * The cluster object's side of the agent channel (docs/agent-protocol.md "Channel"): one
 * hibernatable WebSocket per cluster, accepted with `ctx.acceptWebSocket` (Cloudflare's WebSocket
 * Hibernation API: the object may be evicted from memory while the socket stays open, and a
 * message wakes it again, its constructor run anew).
 *
 * - The lease (OCM's `managed-cluster-lease`) is renewed by the agent's application ping, which the
 *   runtime answers without waking the object (`setWebSocketAutoResponse`); the renewal time is
 *   read back with `getWebSocketAutoResponseTimestamp` ({@link AgentConnection.lastPingMs}) by the
 *   lease check on the object's alarm, so an idle connected cluster costs one alarm per grace
 *   period and nothing else.
 * - Status changes, work status reports and `left` arrive as messages with a request id and are
 *   answered with `ack` or `error` (a Kubernetes Status), through the same paths as the HTTP
 *   routes (the heartbeat's commit, src/agent-api/work-report.ts).
 * - Works are pushed when they change ({@link AgentConnection.pushWorks}).
 *
 * Nothing here is kept in memory between events: what a connection needs (its key ID) is in its
 * attachment (`serializeAttachment`), and the live connection is found with `ctx.getWebSockets`.
 * The attachment also keeps what the object's picture of its namespace's works holds
 * ({@link AttachmentPicture}), so that an object woken by a delivered change pushes it without
 * reading D1 (src/work/namespace-deliverables.ts): the runtime holds it in memory with the
 * hibernated socket ("keeps a copy of value in memory (not on disk) to survive hibernation",
 * Cloudflare's WebSocket Hibernation API), so keeping it writes nothing to storage.
 */
import { stringifyObject } from "../../src/k8s/frozen-json.ts";
import { ApiError, forbidden, unauthorized } from "../../src/k8s/errors.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { INVALID_AGENT_CREDENTIAL } from "../../src/auth/credentials.ts";
import { decode, type Heartbeat } from "../../src/agent-api/protocol.ts";
import type { PolicyComplianceReportRequest, WorkStatusReport } from "../../src/agent-api/protocol.ts";
import type { ReportOutcome } from "./reports.ts";
import { ProxyStreams, type ProxyRequest } from "./proxy.ts";
import { COUNTED } from "../../src/metrics/families.ts";
import { count, flushSoon } from "../../src/metrics/recorder.ts";
import { splitDelivered, type KeptEntries, type KeptPicture } from "../../src/work/namespace-deliverables.ts";
import { writeAddonAvailability } from "../../src/addons/agent-health.ts";
import { issueAddonToken } from "../../src/addons/token-registration.ts";
import { clock } from "../../src/clock.ts";
import type { Env } from "../../src/env.ts";
import {
  AgentMessageSchema,
  CHANNEL_MAX_MESSAGE_BYTES,
  CHANNEL_MAX_WORKS_MESSAGE_BYTES,
  CHANNEL_PING,
  CHANNEL_PONG,
  CHANNEL_SUBPROTOCOL,
  ChannelAddonStatusSchema,
  ChannelAddonTokenSchema,
  ChannelReportSchema,
  ChannelComplianceSchema,
  ChannelStatusSchema,
  CloseCodes,
  type AgentMessage,
  type HubMessage,
} from "../../src/agent-api/channel-protocol.ts";

/** The request header by which the Worker tells the cluster's object which cluster the upgrade's token claims (its `sub`). */
export const CHANNEL_CLUSTER_HEADER = "x-flotilla-channel-cluster";
/** The request header by which the Worker tells the cluster's object the cluster named in the path. */
export const CHANNEL_TARGET_HEADER = "x-flotilla-channel-target";
/** Header of the upgrade the Worker forwards: the edge location the agent reached (src/edge.ts); set or removed by the Worker, never the agent's. */
export const CHANNEL_COLO_HEADER = "x-flotilla-channel-colo";

/** The tag every agent connection is accepted with (`ctx.getWebSockets(AGENT_TAG)`). */
const AGENT_TAG = "agent";

/**
 * Most UTF-16 code units of the works picture's JSON text a connection's attachment keeps
 * ({@link AttachmentPicture}); a larger picture is not kept. The runtime refuses an attachment
 * over 16 KiB as V8 serialises it (workerd src/workerd/api/web-socket.h `MAX_ATTACHMENT_SIZE`,
 * `1024 * 16`); the picture's text is ASCII (names are DNS labels: one byte a character), and the
 * rest of the attachment some 300 bytes. About 400 works of 20-character names.
 */
export const ATTACHMENT_WORKS_MAX_CHARS = 12 * 1024;

/** What a connection keeps across hibernation (its attachment, under the 16 KiB allowed: {@link ATTACHMENT_WORKS_MAX_CHARS}). */
export interface ConnectionAttachment {
  /** The cluster's name. */
  cluster: string;
  /** The key ID the connection authenticated with. */
  kid: string;
  /** When it was accepted, epoch milliseconds. */
  connectedMs: number;
  /** The lease interval the agent was last told (seconds). */
  toldSeconds: number;
  /** The hub's origin as the agent reached it (the issuer of the add-on tokens it asks for). */
  origin?: string;
  /**
   * What the object's picture of its namespace's works holds (src/work/namespace-deliverables.ts
   * `KeptEntries` as JSON), the same on every agent connection of the cluster; absent when none is
   * kept ({@link AttachmentPicture}).
   */
  works?: string;
}

/**
 * The works picture's kept entries (src/work/namespace-deliverables.ts `KeptPicture`) in the
 * attachments of the cluster's agent connections (`works`), so that they outlive the object's
 * hibernation without a write to its storage. Each one is kept on every open connection: a load
 * takes them only when every connection holds the same text (none when there is no connection:
 * a poll agent's cluster keeps nothing, and its woken object reads D1 as before). A picture over
 * {@link ATTACHMENT_WORKS_MAX_CHARS}, or one an attachment refused, is forgotten on every
 * connection instead. A connection accepted later is given what is kept
 * ({@link AttachmentPicture.text}), so a reconnect keeps the picture; a cluster's removal closes its
 * connections, and their attachments with them.
 */
export class AttachmentPicture implements KeptPicture {
  /**
   * The text kept in this object's life (null: none on any connection), undefined until this
   * life kept, forgot or read it.
   */
  private kept: string | null | undefined;

  /** @param sockets the cluster's open agent connections */
  constructor(private readonly sockets: () => WebSocket[]) {}

  load(): KeptEntries | null {
    const text = this.text();
    return text === null ? null : (JSON.parse(text) as KeptEntries);
  }

  save(kept: KeptEntries): void {
    const text = JSON.stringify(kept);
    if (text.length > ATTACHMENT_WORKS_MAX_CHARS || !this.put(text)) this.clear();
  }

  clear(): void {
    this.put(null);
  }

  /**
   * The kept entries' JSON text, or null: what this life kept, else what the open connections
   * hold alike.
   */
  text(): string | null {
    if (this.kept !== undefined) return this.kept;
    let text: string | undefined;
    for (const ws of this.sockets()) {
      const works = (ws.deserializeAttachment() as ConnectionAttachment | null)?.works;
      if (works === undefined || (text !== undefined && works !== text)) {
        // Connections that disagree keep nothing from now on (none may outlive the others with its own).
        this.put(null);
        return null;
      }
      text = works;
    }
    return (this.kept = text ?? null);
  }

  /** Sets `works` (null: none) in every connection's attachment. @returns whether every one took it */
  private put(works: string | null): boolean {
    // Nothing kept, as this life knows: nothing to forget.
    if (works === null && this.kept === null) return true;
    this.kept = works;
    let ok = true;
    for (const ws of this.sockets()) {
      try {
        // A fresh copy: set in place.
        const attachment = ws.deserializeAttachment() as ConnectionAttachment | null;
        // A connection without an attachment is not the channel's yet: it keeps nothing.
        if (!attachment || (works === null && attachment.works === undefined)) {
          ok &&= works === null;
          continue;
        }
        if (works === null) delete attachment.works;
        else attachment.works = works;
        ws.serializeAttachment(attachment);
      } catch {
        ok = false;
      }
    }
    return ok;
  }
}

/**
 * What the channel needs from the cluster object. Every method that changes the cluster runs in
 * the object's queue ({@link ConnectionHost.serial}); the others are read only.
 */
export interface ConnectionHost {
  /**
   * Verifies an agent JWT for cluster `name` at `now` (epoch ms) and records its `jti`.
   * @throws ApiError 401 (one message for every failure)
   */
  verify(token: string, name: string, now: number): Promise<{ kid: string; pending: boolean; retired: boolean }>;
  /** The cluster's ManagedCluster (read only), or null when there is none. */
  current(): KubeObject | null;
  /** Runs `fn` in the object's queue of mutations. */
  serial<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Renews the lease as an HTTP heartbeat without status does (at connect): the lease row and the
   * alarm; and records `colo`, the edge location the agent connected through (src/edge.ts), on the
   * ManagedCluster when it changed (a D1 commit only then).
   * @throws ApiError 403 when the cluster is not accepted, what the commit throws
   */
  renew(current: KubeObject, now: number, colo?: string): Promise<void>;
  /**
   * Commits the agent's view of its cluster as an HTTP heartbeat does (conditions, status; a D1
   * commit only when the status changed); the lease row is written only when the pings do not
   * already keep the lease valid (cluster/lease.ts `Lease.pingsRenew`). Returns the lease
   * interval (seconds).
   * @throws ApiError 403 when the cluster is not accepted, what the commit throws
   */
  heartbeat(current: KubeObject, hb: Heartbeat, now: number): Promise<{ leaseDurationSeconds: number }>;
  /** The works ETag and whether the cluster is leaving. */
  worksState(): { etag: string; leaving: boolean };
  /**
   * The namespace's works as the object keeps them (src/work/namespace-deliverables.ts), read from D1
   * when it has none yet; null when the namespace holds too many bytes of works to keep.
   */
  works(): Promise<KubeObject[] | null>;
  /**
   * Ends the cluster's leave as `POST .../left` does (the ManagedCluster and its namespace go).
   * @throws ApiError 409 when the cluster is not leaving
   */
  left(current: KubeObject): Promise<void>;
  /**
   * Records that the agent was just told the lease interval `seconds` (a `lease` message), as an
   * HTTP heartbeat's answer tells it: the lease's grace follows it from now on.
   */
  recordTold(seconds: number): void;
  /** The lease interval the cluster's spec asks for (seconds). */
  leaseDurationSeconds(current: KubeObject): number;
  /** Whether the hub accepts the cluster (`hubAcceptsClient`). */
  accepted(current: KubeObject): boolean;
  /**
   * Writes a work status report (src/agent-api/work-report.ts) in the order of the work's reports,
   * stale when its sequence is not newer than the one committed (cluster/reports.ts).
   * @throws ApiError what the report's write throws
   */
  workReport(cluster: string, work: string, report: WorkStatusReport, bytes: number): Promise<ReportOutcome>;
  /**
   * Writes a policy compliance report (src/agent-api/policy-report.ts) in the order of the policy's
   * reports, stale as {@link workReport} is.
   * @throws ApiError what the report's write throws
   */
  complianceReport(cluster: string, policy: string, report: PolicyComplianceReportRequest): Promise<ReportOutcome>;
  /** Runs `fn` after every earlier call of the same `key` finished (the add-on status reports). */
  inOrder(key: string, fn: () => Promise<void>): Promise<void>;
  /**
   * Keeps `works`, the works of `cluster`'s namespace just pushed to its agent in a message of
   * `bytes` characters, for the agent's reports to write on (src/agent-api/delivered.ts `workCopies`).
   */
  pushed(cluster: string, works: KubeObject[], bytes: number): void;
}

/** The UTF-8 length of `s` in bytes. */
function utf8Length(s: string): number {
  return s.length * 3 <= CHANNEL_MAX_MESSAGE_BYTES ? s.length : new TextEncoder().encode(s).length;
}

/** The agent channel of one cluster object; see the module comment. */
export class AgentConnection {
  /** The works sends in flight, in order ({@link sendWorks}). */
  private sending: Promise<void> = Promise.resolve();
  /** The `left` request whose answer goes out just before the leave closes the connection. */
  private leaving: { ws: WebSocket; id: string } | null = null;
  /** The proxied requests to the member cluster's API on this channel (cluster/proxy.ts). */
  private readonly proxy: ProxyStreams;
  /** Where the works picture is kept across hibernation: the connections' attachments. */
  readonly picture = new AttachmentPicture(() => this.sockets());

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly host: ConnectionHost,
  ) {
    // Answered by the runtime without waking the object; the answer's time renews the lease.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(CHANNEL_PING, CHANNEL_PONG));
    this.proxy = new ProxyStreams(
      () => this.host.current()?.metadata.name ?? "",
      () => this.sockets().at(-1),
    );
  }

  /**
   * Runs one proxied request to the member cluster's API over the agent's channel (docs/proxy.md;
   * cluster/proxy.ts `ProxyStreams.handle`): the member's answer, streamed, or a Status (503 when
   * no agent is connected, 429, 502, 504).
   */
  proxyRequest(req: ProxyRequest): Promise<Response> {
    return this.proxy.handle(req);
  }

  /** The agent's connection `ws` closed: its proxied streams end. */
  closed(ws: WebSocket): void {
    this.proxy.closed(ws);
  }

  /** The open agent connections (normally one; a replaced one may still be closing). */
  private sockets(): WebSocket[] {
    return this.ctx.getWebSockets(AGENT_TAG);
  }

  /**
   * The last lease renewal by a ping on any agent connection of this cluster, epoch ms, or null
   * when none was answered (`getWebSocketAutoResponseTimestamp`).
   */
  lastPingMs(): number | null {
    let last: number | null = null;
    for (const ws of this.sockets()) {
      const at = this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime();
      if (at !== undefined && (last === null || at > last)) last = at;
    }
    return last;
  }

  /**
   * Accepts an agent's upgrade (the Worker checked the upgrade headers and admitted the token,
   * src/agent-api/channel.ts): verifies its JWT, checks that it names this cluster (403), that the key
   * is neither pending (403) nor retired by a rotation (403: connect with the current key) and
   * that the hub accepts the cluster (403); then closes any earlier connection
   * ({@link CloseCodes.Replaced}), accepts the socket and renews the lease. Answers 101 with the
   * subprotocol, or the Status of the refusal (401 for any credential that does not verify).
   */
  async accept(request: Request): Promise<Response> {
    const name = request.headers.get(CHANNEL_CLUSTER_HEADER) ?? "";
    const target = request.headers.get(CHANNEL_TARGET_HEADER) ?? "";
    const token = /^Bearer (.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
    try {
      return await this.host.serial(async () => {
        const now = clock.now();
        const current = this.host.current();
        if (!current || !token) throw unauthorized(INVALID_AGENT_CREDENTIAL);
        const { kid, pending, retired } = await this.host.verify(token, name, now);
        if (target !== name) throw forbidden(`the credential of cluster ${name} may not act on cluster ${target}`);
        if (pending) throw forbidden(`the key ${kid} of cluster ${name} waits for an admin to accept it (flotilla accept ${name} --key ${kid})`);
        if (retired) throw forbidden(`the key ${kid} of cluster ${name} was replaced by a rotation; connect with the cluster's current key`);
        await this.host.renew(current, now, request.headers.get(CHANNEL_COLO_HEADER) || undefined);
        // What the earlier connections keep of the works picture, read before they are closed.
        const works = this.picture.text();
        for (const old of this.sockets()) closeQuietly(old, CloseCodes.Replaced, "replaced by a newer connection of this cluster");
        const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
        this.ctx.acceptWebSocket(server, [AGENT_TAG]);
        server.serializeAttachment({
          cluster: name,
          kid,
          connectedMs: now,
          toldSeconds: this.host.leaseDurationSeconds(current),
          origin: new URL(request.url).origin,
          ...(works === null ? {} : { works }),
        } satisfies ConnectionAttachment);
        return new Response(null, { status: 101, webSocket: client, headers: { "sec-websocket-protocol": CHANNEL_SUBPROTOCOL } });
      });
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      return new Response(JSON.stringify(e.toStatus()), { status: e.code, headers: { "content-type": "application/json" } });
    }
  }

  /**
   * Handles one frame from an agent (the object may just have been woken for it). A frame that is
   * not a channel message closes the connection ({@link CloseCodes.BadMessage}; 1009 when over
   * {@link CHANNEL_MAX_MESSAGE_BYTES}); a request whose body is invalid is answered with an
   * `error` carrying the Status the HTTP route would answer, and the connection stays.
   */
  async message(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    // Binary frames are the bodies of proxied streams (cluster/proxy.ts).
    if (typeof data !== "string") {
      if (!this.proxy.data(ws, data)) closeQuietly(ws, CloseCodes.BadMessage, "a binary frame too short to name a proxied stream");
      return;
    }
    if (data === CHANNEL_PING) return; // Answered by the runtime; seen here only if the pair was unset.
    const bytes = utf8Length(data);
    if (bytes > CHANNEL_MAX_MESSAGE_BYTES) return closeQuietly(ws, 1009, `a message may have at most ${CHANNEL_MAX_MESSAGE_BYTES} bytes`);
    let parsed: AgentMessage;
    try {
      const result = AgentMessageSchema.safeParse(JSON.parse(data));
      if (!result.success) return closeQuietly(ws, CloseCodes.BadMessage, "not a channel message");
      parsed = result.data;
    } catch {
      return closeQuietly(ws, CloseCodes.BadMessage, "not JSON");
    }
    const attachment = ws.deserializeAttachment() as ConnectionAttachment | null;
    if (!attachment) return closeQuietly(ws, CloseCodes.BadMessage, "unknown connection");
    if (parsed.type === "hello") return this.hello(ws, parsed.worksEtag);
    if (parsed.type === "proxy-head" || parsed.type === "proxy-end" || parsed.type === "proxy-credit") return this.proxy.message(ws, parsed);
    let code = 200;
    try {
      const answer = await this.request(ws, attachment, parsed, bytes);
      if (answer) send(ws, answer);
    } catch (e) {
      if (!(e instanceof ApiError)) console.error(`cluster ${attachment.cluster}: channel ${parsed.type} failed`, e);
      const error = e instanceof ApiError ? e : new ApiError(500, "InternalError", "Internal error occurred");
      code = error.code;
      send(ws, { type: "error", id: parsed.id, status: error.toStatus() });
    }
    // Counted in memory and sent in a batch after the answer (src/metrics/recorder.ts); a ping
    // never gets here (the runtime answers it).
    count(COUNTED.agentRequests, { route: parsed.type, transport: "channel", code });
    if (parsed.type === "status") count(COUNTED.heartbeats, { transport: "channel", code });
    flushSoon(this.env, (p) => this.ctx.waitUntil(p), 0);
  }

  /** Runs a request message; returns its `ack` (null when the leave's close answers it). */
  private async request(
    ws: WebSocket,
    attachment: ConnectionAttachment,
    msg: Exclude<AgentMessage, { type: "hello" | "proxy-head" | "proxy-end" | "proxy-credit" }>,
    bytes: number,
  ): Promise<HubMessage | null> {
    switch (msg.type) {
      case "status": {
        const hb = decode(ChannelStatusSchema, msg.status, "heartbeats");
        const { leaseDurationSeconds } = await this.host.serial(async () => this.host.heartbeat(this.requireCluster(), hb, clock.now()));
        return { type: "ack", id: msg.id, leaseDurationSeconds };
      }
      case "report": {
        const report = decode(ChannelReportSchema, msg.report, "workstatuses");
        const current = this.requireCluster();
        if (!this.host.accepted(current)) throw forbidden(`cluster ${current.metadata.name} is not accepted by the hub`);
        return ackOf(msg.id, await this.host.workReport(attachment.cluster, msg.work, report, bytes));
      }
      case "compliance": {
        const report = decode(ChannelComplianceSchema, msg.report, "policystatuses");
        this.requireAccepted();
        return ackOf(msg.id, await this.host.complianceReport(attachment.cluster, msg.policy, report));
      }
      case "addon-status": {
        const body = decode(ChannelAddonStatusSchema, msg.status, "addonstatuses");
        this.requireAccepted();
        await this.host.inOrder("addons", async () => {
          await writeAddonAvailability(this.env, attachment.cluster, body, clock.now(), (p) => this.ctx.waitUntil(p));
        });
        return { type: "ack", id: msg.id };
      }
      case "addon-token": {
        const body = decode(ChannelAddonTokenSchema, msg.request, "addontokens");
        this.requireAccepted();
        const issued = await issueAddonToken(this.env, attachment.cluster, msg.addon, attachment.origin ?? "", body.expirationSeconds, clock.now());
        return { type: "ack", id: msg.id, token: issued.token, expirationTimestamp: issued.expirationTimestamp };
      }
      case "left": {
        this.leaving = { ws, id: msg.id };
        try {
          await this.host.serial(async () => this.host.left(this.requireCluster()));
        } finally {
          this.leaving = null;
        }
        // The leave removed the cluster, which closed the connection after sending the ack.
        return null;
      }
    }
  }

  /** The cluster, which the hub must accept (403 otherwise, as an HTTP agent call answers). */
  private requireAccepted(): KubeObject {
    const current = this.requireCluster();
    if (!this.host.accepted(current)) throw forbidden(`cluster ${current.metadata.name} is not accepted by the hub`);
    return current;
  }

  private requireCluster(): KubeObject {
    const current = this.host.current();
    if (!current) throw unauthorized(INVALID_AGENT_CREDENTIAL);
    return current;
  }

  /** Answers `hello`: the lease interval and works ETag, then the works when the agent's ETag differs. */
  private async hello(ws: WebSocket, agentEtag: string | undefined): Promise<void> {
    const current = this.host.current();
    if (!current) return closeQuietly(ws, CloseCodes.Left, "the cluster is gone");
    const state = this.host.worksState();
    send(ws, { type: "welcome", leaseDurationSeconds: this.host.leaseDurationSeconds(current), worksEtag: state.etag, leaving: state.leaving });
    if (agentEtag !== state.etag) await this.sendWorks(ws);
  }

  /**
   * Sends the connected agent the cluster's works after they changed (a work created, changed or
   * deleted, or a leave started): the works the object keeps, or `works-changed` when the
   * namespace is too large for one message. Called from the object's `deliverablesChanged`.
   */
  async pushWorks(): Promise<void> {
    if (this.sockets().length > 0) await this.sendWorks(null);
  }

  /**
   * Sends the works to `to` (null: every agent connection of the cluster), after the sends before
   * it: messages go out in the order of the changes, so the last one an agent gets is the newest.
   */
  private sendWorks(to: WebSocket | null): Promise<void> {
    const run = this.sending.then(() => this.sendWorksNow(to));
    this.sending = run.catch(() => undefined);
    return run;
  }

  private async sendWorksNow(to: WebSocket | null): Promise<void> {
    // The ETag is read before the works: the works an agent holds are then at least as new as the
    // ETag it says `hello` with, never older (a later change has another ETag, and is sent).
    const { etag, leaving } = this.host.worksState();
    const items = await this.host.works();
    const sockets = to ? [to] : this.sockets();
    if (sockets.length === 0) return;
    let message: string | null = null;
    if (items) {
      const split = splitDelivered(items);
      const strip = (list: KubeObject[]) => list.map(({ status: _status, ...rest }) => rest as KubeObject);
      const works = strip(split.works);
      // `policies` only when there are some: a cluster without policies gets the message it always got.
      const body = {
        type: "works",
        etag,
        leaving,
        works,
        ...(split.policies.length ? { policies: strip(split.policies) } : {}),
      } satisfies HubMessage;
      // Each work's frozen spec (src/k8s/frozen-json.ts: as the delivery handed it over) is spliced in as its text.
      const worksJson = `[${works.map((w) => stringifyObject(w as unknown as Record<string, unknown>)).join(",")}]`;
      message = stringifyObject(body, { works: worksJson });
      if (message.length > CHANNEL_MAX_WORKS_MESSAGE_BYTES) message = null;
      else {
        // The cluster's name as its connections' attachments say (accept checked they agree), without deserialising one.
        const cluster = this.host.current()?.metadata.name;
        if (cluster) this.host.pushed(cluster, split.works, message.length);
      }
    }
    message ??= JSON.stringify({ type: "works-changed", etag, leaving } satisfies HubMessage);
    for (const ws of sockets) sendRaw(ws, message);
  }

  /**
   * Closes the cluster's connections with `code` (one of {@link CloseCodes}), those whose key is
   * not `keepKid` when given (a rotation or an accepted pending key ends the connections of the
   * keys it replaced). A `left` request being answered gets its `ack` first.
   */
  closeAll(code: number, reason: string, keepKid?: string): void {
    for (const ws of this.sockets()) {
      const attachment = ws.deserializeAttachment() as ConnectionAttachment | null;
      if (keepKid !== undefined && attachment?.kid === keepKid) continue;
      if (this.leaving?.ws === ws) send(ws, { type: "ack", id: this.leaving.id });
      closeQuietly(ws, code, reason);
      this.proxy.closed(ws);
    }
  }

  /**
   * Follows a change of the stored ManagedCluster: a cluster the hub no longer accepts has its
   * connection closed ({@link CloseCodes.Denied}); a new lease interval is sent to the agent
   * (a `lease` message) and recorded as told ({@link ConnectionHost.recordTold}).
   */
  /**
   * Tells the connected agent that the hub found its lease expired (Available Unknown, `stored`
   * the ManagedCluster as committed): a `lease` message with the interval, after which the agent
   * sends its status again, which brings Available back when it is alive (an agent resumed after
   * SIGSTOP on a socket that stayed open). The message waits in the socket while nobody reads.
   */
  leaseExpired(stored: KubeObject): void {
    const seconds = this.host.leaseDurationSeconds(stored);
    for (const ws of this.sockets()) send(ws, { type: "lease", leaseDurationSeconds: seconds });
  }

  objectChanged(stored: KubeObject): void {
    if (!this.host.accepted(stored)) return this.closeAll(CloseCodes.Denied, "the hub does not accept the cluster");
    const seconds = this.host.leaseDurationSeconds(stored);
    let told = false;
    for (const ws of this.sockets()) {
      const attachment = ws.deserializeAttachment() as ConnectionAttachment | null;
      if (!attachment || attachment.toldSeconds === seconds) continue;
      send(ws, { type: "lease", leaseDurationSeconds: seconds });
      ws.serializeAttachment({ ...attachment, toldSeconds: seconds } satisfies ConnectionAttachment);
      told = true;
    }
    if (told) this.host.recordTold(seconds);
  }
}

/** The `ack` of a report: the object's new resourceVersion, or `stale` with the sequence the hub holds. */
function ackOf(id: string, outcome: ReportOutcome): HubMessage {
  if (outcome.stale) return { type: "ack", id, resourceVersion: "", stale: true, sequence: outcome.sequence };
  return { type: "ack", id, resourceVersion: outcome.object?.metadata.resourceVersion ?? "" };
}

function send(ws: WebSocket, message: HubMessage): void {
  sendRaw(ws, JSON.stringify(message));
}

function sendRaw(ws: WebSocket, text: string): void {
  try {
    ws.send(text);
  } catch {
    // The connection closed meanwhile: the agent reconnects and says hello again.
  }
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed.
  }
}
