/**
 * The deliverables of one cluster's namespace as the cluster's Durable Object knows them, so that
 * a works poll woken by a change is answered without reading D1 (docs/agent-protocol.md "Works").
 * A deliverable is an object the hub delivers to a cluster's agent: a ManifestWork, or a
 * replicated Policy (issue 32); the protocol's works poll and `works` message carry both.
 *
 * Filled once from D1 by the first poll that needs it, then kept by the changes the delivery
 * hook (src/work/controller.ts) hands over after each commit: the deliverable as stored, with its
 * resourceVersion, or its removal. Changes may arrive in any order, before, during and after a
 * fill, so each is kept only when it is newer than what is known of its work:
 * - the fill reads the works with the store's resourceVersion (the counter every commit bumps) in
 *   one snapshot, so a stored work of resourceVersion at or below it is already reflected there
 *   (as it is, or by its absence after a removal): such a change that arrives late is dropped;
 * - a removal carries the removed object's resourceVersion (its own commit's is not known to the
 *   writer): it is kept as a tombstone at that version, which it wins at, so the removed version
 *   does not come back; a work created again has a higher one. A change that comes without the object (an outbox sweep
 * after a crash or a failed hook run) forgets everything: the next poll reads D1 again. As an
 * informer's cache, it is only as current as the changes it was told of; the works ETag, changed
 * after each, is what makes an agent poll.
 *
 * What a complete picture holds is also kept outside the object's memory, without the objects
 * ({@link KeptPicture}: the fill's resourceVersion and each entry's key, resourceVersion and
 * whether it is a removal; kept at each change the picture takes, forgotten with it). The
 * cluster's object keeps it in its agent's WebSocket attachment (durable-objects/cluster/connection.ts
 * `AttachmentPicture`), which the runtime holds with the hibernated socket, in memory: nothing is
 * written to storage. So it outlives the object's hibernation: an object woken by a delivered
 * change that it can prove is the namespace's only news — every deliverable the kept entries say
 * is there is the change's own, and the change is newer — takes up the picture from them and the
 * change, rather than reading the namespace from D1 at its push (a hibernated cluster object
 * woken by a placement's work, issue 42); so does a push or poll when the kept entries hold no
 * deliverable. Otherwise the kept entries are forgotten and the push reads D1 as before. They are
 * exactly what the picture in memory would have held had the object not been evicted: every
 * delivered change reaches the object (waking it) and is kept before anything is pushed; a change
 * without its object, a namespace over its bound, a fill that fails and the cluster's removal
 * forget them; a fill replaces them, and none are held while one is under way (a life that finds
 * kept entries it cannot take up forgets them before it reads). So the rules above hold across
 * a hibernation as within one life. Where nothing can be kept (no socket, a poll agent, a picture
 * over the attachment's bound) nothing is, and a woken object reads D1 as it always did.

 * A status write does not reach the picture (it is not a delivered change): a work's `status` and
 * `resourceVersion` here are those of its last delivered change, and a status report made on this
 * copy is refused by the commit's precondition and made again on a fresh read (src/agent-api/routes.ts).
 */
import type { KubeObject } from "../k8s/meta.ts";
import { adoptFrozen, fieldSpans, freezeRendered, frozenJson, lazyFrozen, stringifyObject, type FieldSpans } from "../k8s/frozen-json.ts";

/**
 * The kind of the other objects the works delivery carries (issue 32): the replicated Policies of
 * the cluster's namespace (`<rootns>.<rootname>`), kept and delivered with its ManifestWorks under
 * the same ETag, so one delivery (and one change) brings both to the agent.
 */
export const DELIVERED_POLICY_KIND = "Policy";

/** Most bytes (JSON length) of works a picture holds; a namespace with more is read from D1 at each changed poll. */
export const NAMESPACE_WORKS_MAX_BYTES = 256 * 1024;
/** How long a namespace found over {@link NAMESPACE_WORKS_MAX_BYTES} is not read for a picture, in milliseconds. */
export const LARGE_RETRY_MS = 60_000;
/** Most tombstones kept before the picture is forgotten (read again at the next poll). */
export const NAMESPACE_WORKS_MAX_TOMBSTONES = 256;

/**
 * One delivered change of a deliverable: a ManifestWork, or (`kind` {@link DELIVERED_POLICY_KIND})
 * a replicated Policy: its name, the resourceVersion of the write (for a removal, the removed
 * object's), and the object as stored (null: removed).
 */
export interface DeliverableDelta {
  name: string;
  resourceVersion: number;
  object: KubeObject | null;
  kind?: typeof DELIVERED_POLICY_KIND;
  /** The JSON length of `object`, when known. */
  bytes?: number;
}

/**
 * A {@link DeliverableDelta} as the delivery hook sends it to the cluster's Durable Object (RPC):
 * the object as its JSON text (null: removed). Workers' RPC copies an object argument with V8's
 * structured clone, which costs the sender more than `JSON.stringify` and the object more than
 * `JSON.parse` (bench:propagation: about 0.15 ms of hub CPU less per delivered work at 1,000
 * clusters).
 */
export interface DeliverableDeltaMessage {
  name: string;
  resourceVersion: number;
  json: string | null;
  kind?: typeof DELIVERED_POLICY_KIND;
  /**
   * The object's spec as its JSON text, when the writer held it as such (a frozen rendered spec,
   * src/k8s/frozen-json.ts): `json` then has `"spec":null` in its place. The object keeps it as
   * a frozen subtree with its text, so that what it serialises with it (the works it pushes, the
   * status reports it writes) splices the text in rather than serialising the spec again.
   */
  specJson?: string;
  /**
   * Where the spec's top-level fields lie in `specJson` (src/k8s/frozen-json.ts `fieldSpans`),
   * when the writer knew: the object then keeps the spec unparsed (`lazyFrozen`), each field
   * parsed only if something reads it (a work's `deleteOption`; the push, the agent's status
   * writes and the picture's size only need the text).
   */
  specFields?: FieldSpans;
}

/** `delta` as its {@link DeliverableDeltaMessage}. */
export function deltaMessage({ object, bytes: _bytes, ...rest }: DeliverableDelta): DeliverableDeltaMessage {
  if (!object) return { ...rest, json: null };
  const specJson = frozenJson(object.spec);
  if (specJson === undefined) return { ...rest, json: stringifyObject(object as unknown as Record<string, unknown>) };
  const specFields = fieldSpans(object.spec);
  return { ...rest, json: JSON.stringify({ ...object, spec: null }), specJson, ...(specFields ? { specFields } : {}) };
}

/**
 * The spec {@link deltaOf} last made in this isolate, with its text: a delta that carries the same
 * text gets the same frozen spec. A placement's create hands its one rendered spec to every
 * cluster's object, each call a copy of its text; the objects an isolate holds then share one
 * spec, so what is kept per spec is made once (its SHA-256, which each agent's status write keys
 * the shared spec's row by: src/store/d1/objects.ts `toRow`; its schema check; its fields parsed),
 * and each object holds a reference, not its own 30 KB copy. Only the last one is kept.
 */
let lastSpec: { text: string; value: Record<string, unknown> } | null = null;

/** The frozen spec of text `specJson` (with its fields' places `specFields`, when known), shared with the last delta of the same text. */
function sharedSpec(specJson: string, specFields: FieldSpans | undefined): Record<string, unknown> {
  if (lastSpec?.text === specJson) return lastSpec.value;
  // The spec's text is not parsed when its fields' places came with it: nothing here reads them.
  const value = specFields ? lazyFrozen(specJson, specFields) : adoptFrozen(JSON.parse(specJson) as Record<string, unknown>, specJson);
  lastSpec = { text: specJson, value };
  return value;
}

/** The {@link DeliverableDelta} a {@link DeliverableDeltaMessage} carries. */
export function deltaOf({ json, specJson, specFields, ...rest }: DeliverableDeltaMessage): DeliverableDelta {
  if (json === null) return { ...rest, object: null, bytes: 0 };
  const object = JSON.parse(json) as KubeObject;
  if (specJson === undefined) return { ...rest, object, bytes: json.length };
  object.spec = sharedSpec(specJson, specFields);
  return { ...rest, object, bytes: json.length - 4 + specJson.length };
}

/** One kept entry ({@link KeptEntries}): its key in the picture ({@link keyOf}), its resourceVersion, and 1 when it is a removal. */
export type KeptEntry = [key: string, resourceVersion: number, removed?: 1];

/** What a cluster's object keeps of a complete picture: the store's resourceVersion its fill read at, and its entries without their objects. */
export interface KeptEntries {
  asOf: number;
  entries: KeptEntry[];
}

/**
 * Where a cluster's object keeps what its complete picture holds across its hibernation (the
 * module comment; durable-objects/cluster/connection.ts keeps it in the agent connections'
 * WebSocket attachments, in memory). Synchronous; no call throws.
 */
export interface KeptPicture {
  /** What is kept, or null when nothing is. */
  load(): KeptEntries | null;
  /**
   * Keeps `kept` in place of what was kept; where it cannot be kept whole (no place, over a
   * bound), what was kept is forgotten instead, so that {@link load} never returns older entries.
   */
  save(kept: KeptEntries): void;
  /** Forgets what is kept. */
  clear(): void;
}

/** A delivered change as the kept entries judge it: its key in the picture, its resourceVersion, whether it is a removal. */
export interface ChangeKey {
  key: string;
  resourceVersion: number;
  removed: boolean;
}

/** The key of an object in the picture: works by name, Policies apart (a name has no `:`). */
export function keyOf(kind: string | undefined, name: string): string {
  return kind === DELIVERED_POLICY_KIND ? `policy:${name}` : name;
}

/** A delivery's objects split into ManifestWorks and replicated Policies (each list keeps its order). */
export function splitDelivered(items: readonly KubeObject[]): { works: KubeObject[]; policies: KubeObject[] } {
  const works: KubeObject[] = [];
  const policies: KubeObject[] = [];
  for (const o of items) (o.kind === DELIVERED_POLICY_KIND ? policies : works).push(o);
  return { works, policies };
}

/** A fill's read: every deliverable of the namespace, and the store's resourceVersion of that snapshot. */
export interface DeliverablesRead {
  items: KubeObject[];
  resourceVersion: number;
}

interface Entry {
  rv: number;
  /** The object as stored, null for a tombstone. */
  object: KubeObject | null;
  bytes: number;
}

/**
 * See the module comment. One per cluster Durable Object, given where it keeps its picture
 * across the object's hibernation (none: in memory only).
 */
export class NamespaceDeliverables {
  /** Null: nothing held (changes are not kept until a fill starts). */
  private entries: Map<string, Entry> | null = null;
  private complete = false;
  private bytes = 0;
  private tombstones = 0;
  /** Bumped by {@link invalidate}: a fill that started before it keeps nothing. */
  private epoch = 0;
  private filling: Promise<DeliverablesRead> | null = null;
  /** The store's resourceVersion when the fill read: stored versions up to it are in the picture. */
  private asOf = 0;
  /** Epoch milliseconds until which the namespace counts as too large to hold. */
  private largeUntil = 0;
  /** What {@link kept} holds, as loaded in this life (undefined: not loaded yet; null: nothing). */
  private keptEntries: KeptEntries | null | undefined;

  /** @param kept where what a complete picture holds is kept across the object's hibernation (none: memory only) */
  constructor(private readonly kept?: KeptPicture) {}

  /**
   * Takes up a complete picture from the kept entries when none is held and they prove it
   * (the module comment): each deliverable they say is there is `change`'s own, and the change
   * wins over it; without a change, when they say none is there. Else the kept entries are
   * forgotten: with a change, it is not taken, so they no longer tell the namespace; without
   * one, a fill follows, during which nothing may be kept that its changes do not reach.
   */
  private restore(change?: ChangeKey): void {
    if (this.entries || !this.kept) return;
    if (this.keptEntries === undefined) this.keptEntries = this.kept.load();
    const kept = this.keptEntries;
    if (!kept) return;
    const covered = kept.entries.every(([key, rv, removed]) => {
      if (removed) return true;
      if (!change || key !== change.key) return false;
      // The change wins over the live entry as `apply` would let it (a removal at the same version wins).
      if (!change.removed && change.resourceVersion <= kept.asOf) return false;
      return change.resourceVersion > rv || (change.resourceVersion === rv && change.removed);
    });
    if (!covered) return this.forgetKept();
    this.entries = new Map();
    this.asOf = kept.asOf;
    // The removals; the one live entry there may be is the change's own, which the change replaces.
    for (const [key, rv, removed] of kept.entries) if (removed) this.set(key, { rv, object: null, bytes: 0 }, undefined);
    this.complete = true;
  }

  /** Forgets the kept entries. */
  private forgetKept(): void {
    this.keptEntries = null;
    this.kept?.clear();
  }

  /**
   * Keeps what the complete picture holds ({@link KeptPicture}); forgets instead a picture of two
   * live deliverables or more, which no later life could take up ({@link restore}: one change
   * covers one live entry at most), so a namespace of many works keeps nothing.
   */
  private keep(): void {
    if (!this.kept || !this.entries) return;
    const entries: KeptEntry[] = [];
    let live = 0;
    for (const [key, e] of this.entries) {
      if (e.object && ++live > 1) return this.forgetKept();
      entries.push(e.object ? [key, e.rv] : [key, e.rv, 1]);
    }
    this.keptEntries = { asOf: this.asOf, entries };
    this.kept.save(this.keptEntries);
  }

  /** Whether the picture holds every deliverable of the namespace (for tests). */
  get isComplete(): boolean {
    return this.complete;
  }

  /**
   * Whether delivered change `change` would be taken ({@link apply}): a picture is held or being
   * read, or the kept entries prove one with it (then taken up). When not, the next
   * {@link current} reads the namespace whole, so the change's message need not even be parsed.
   */
  takesChange(change: ChangeKey): boolean {
    this.restore(change);
    return this.entries !== null;
  }

  /** Takes one delivered change (kept only when newer than what the name holds). */
  apply(delta: DeliverableDelta): void {
    this.restore({ key: keyOf(delta.kind, delta.name), resourceVersion: delta.resourceVersion, removed: !delta.object });
    if (!this.entries) return;
    if (delta.object && this.complete && delta.resourceVersion <= this.asOf) return;
    const key = keyOf(delta.kind, delta.name);
    const held = this.entries.get(key);
    // A removal carries the removed object's resourceVersion: at the same one, it is the later.
    if (held && (held.rv > delta.resourceVersion || (held.rv === delta.resourceVersion && (delta.object || !held.object)))) return;
    const bytes = delta.object ? (delta.bytes ?? JSON.stringify(delta.object).length) : 0;
    this.set(key, { rv: delta.resourceVersion, object: delta.object, bytes }, held);
    if (this.bytes > NAMESPACE_WORKS_MAX_BYTES || this.tombstones > NAMESPACE_WORKS_MAX_TOMBSTONES) this.invalidate();
  }

  /**
   * Forgets everything (a change whose object is unknown), the kept picture too: the next
   * {@link current} reads again.
   */
  invalidate(): void {
    this.entries = null;
    this.complete = false;
    this.bytes = 0;
    this.tombstones = 0;
    this.epoch++;
    this.filling = null;
    this.forgetKept();
  }

  /**
   * The namespace's works, sorted by name, at `now` (epoch milliseconds): from the picture when it
   * is complete, else from `read` (every work of the namespace as D1 holds it, with the store's
   * resourceVersion read in the same snapshot), which then fills the picture. Null when the
   * namespace's works are over {@link NAMESPACE_WORKS_MAX_BYTES}: the caller reads them itself
   * (for {@link LARGE_RETRY_MS} after that was found, this reads nothing).
   * @throws what `read` throws (nothing is kept then)
   */
  async current(now: number, read: () => Promise<DeliverablesRead>): Promise<{ works: KubeObject[]; read: boolean } | null> {
    this.restore();
    if (this.complete && this.entries) return { works: this.live(), read: false };
    if (now < this.largeUntil) return null;
    if (!this.filling) {
      const epoch = this.epoch;
      this.entries ??= new Map();
      const filling = read();
      this.filling = filling;
      filling.then(
        (items) => {
          if (this.epoch === epoch) this.fill(items, now);
        },
        () => {
          if (this.epoch === epoch) this.invalidate();
        },
      );
    }
    const { items } = await this.filling;
    if (this.complete && this.entries) return { works: this.live(), read: true };
    return this.largeUntil > now ? null : { works: [...items].sort(byName), read: true };
  }

  private fill({ items, resourceVersion }: DeliverablesRead, now: number): void {
    this.filling = null;
    this.asOf = resourceVersion;
    // A change that came during the read and is not newer than it: the read tells its work's state.
    for (const [name, e] of this.entries!) if (e.object && e.rv <= resourceVersion) this.set(name, { rv: 0, object: null, bytes: 0 }, e, true);
    for (const w of items) {
      const rv = Number(w.metadata.resourceVersion);
      const key = keyOf(w.kind, w.metadata.name);
      const held = this.entries!.get(key);
      if (!held || held.rv < rv) this.set(key, { rv, object: w, bytes: stringifyObject(withFrozenSpec(w) as unknown as Record<string, unknown>).length }, held);
    }
    if (this.bytes > NAMESPACE_WORKS_MAX_BYTES) {
      this.invalidate();
      this.largeUntil = now + LARGE_RETRY_MS;
      return;
    }
    this.complete = true;
    this.keep();
  }

  /**
   * Sets (or, `drop`, deletes) the entry of `name`, which held `held`; written through to the
   * kept picture when the picture is complete (a fill keeps its picture whole when it completes).
   */
  private set(name: string, entry: Entry, held: Entry | undefined, drop = false): void {
    this.bytes += (drop ? 0 : entry.bytes) - (held?.bytes ?? 0);
    this.tombstones += (drop || entry.object ? 0 : 1) - (held && !held.object ? 1 : 0);
    if (drop) this.entries!.delete(name);
    else this.entries!.set(name, entry);
    if (this.complete) this.keep();
  }

  private live(): KubeObject[] {
    const works: KubeObject[] = [];
    for (const e of this.entries!.values()) if (e.object) works.push(e.object);
    return works.sort(byName);
  }
}

/**
 * A ManifestWork read from D1 with its spec deep-frozen, its JSON text kept (src/k8s/frozen-json.ts),
 * as a delivered change's spec is kept ({@link deltaOf}): it is serialised once here, then spliced
 * into what carries it (its size here, the works pushed to the agent) and shared, not copied, by
 * its agent's status writes (src/k8s/write.ts). A placement's works carry some 30 KB each.
 */
function withFrozenSpec(w: KubeObject): KubeObject {
  const spec = (w as KubeObject & { spec?: unknown }).spec;
  if (w.kind === "ManifestWork" && spec !== null && typeof spec === "object" && frozenJson(spec) === undefined) freezeRendered(spec);
  return w;
}

function byName(a: KubeObject, b: KubeObject): number {
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}
