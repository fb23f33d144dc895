/**
 * Replay protection for WebhookReceivers: the delivery IDs a receiver has acted on, in D1
 * (`webhook_deliveries`, primary key (receiver_uid, delivery_id)).
 *
 * A delivery is *claimed* before its action runs, with one atomic `INSERT ... ON CONFLICT DO
 * NOTHING RETURNING`: of two concurrent deliveries with the same ID exactly one gets the claim,
 * the other 409. When the action fails, the claim is *released* (the row deleted), so nothing is
 * left changed and the sender may retry with the same delivery ID once the cause is fixed
 * (GitHub's "Redeliver" keeps the ID). The action therefore runs at most once per delivery ID;
 * if the Worker died between claim and action, a retry would get 409 although nothing was done
 * (at most once, rather than twice for a non-idempotent JSON Patch).
 *
 * Claims are kept `DELIVERY_RETENTION_SECONDS` (7 days, longer than GitHub's 3-day redelivery
 * window); older rows are deleted in the same batch as each new claim. The receiver
 * (src/webhook/receiver.ts) claims and releases through the Storage (src/store/storage.ts
 * `deliveries`).
 */
import { and, eq, lt, sql } from "drizzle-orm";
import { webhookDeliveries } from "../../db/schema.ts";
import { database } from "./objects.ts";

/** How long a delivery ID is remembered, in seconds (7 days). A replay older than this is accepted again. */
export const DELIVERY_RETENTION_SECONDS = 7 * 24 * 3600;

/**
 * Claims `deliveryId` for the receiver with uid `receiverUid` at `nowMs` (epoch milliseconds),
 * pruning claims older than the retention in the same atomic batch. Returns false when the ID was
 * already claimed (a replay).
 * @throws errors of D1
 */
export async function claimDelivery(d1: D1Database, receiverUid: string, deliveryId: string, nowMs: number): Promise<boolean> {
  const db = database(d1);
  const [, inserted] = await db.batch([
    db.delete(webhookDeliveries).where(lt(webhookDeliveries.receivedAt, nowMs - DELIVERY_RETENTION_SECONDS * 1000)),
    db
      .insert(webhookDeliveries)
      .values({ receiverUid, deliveryId, receivedAt: nowMs })
      .onConflictDoNothing()
      .returning({ one: sql<number>`1` }),
  ]);
  return inserted.length > 0;
}

/** Releases a claim whose action failed, so the same delivery ID may be retried. */
export async function releaseDelivery(d1: D1Database, receiverUid: string, deliveryId: string): Promise<void> {
  const db = database(d1);
  await db.delete(webhookDeliveries).where(and(eq(webhookDeliveries.receiverUid, receiverUid), eq(webhookDeliveries.deliveryId, deliveryId)));
}
