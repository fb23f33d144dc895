/**
 * Runs `fn` over `items`, at most `concurrency` calls in flight at once (each worker takes the
 * next item when its call settles). `fn` gets the item and its index. Rejects with the first
 * rejection of `fn` (the other workers go on until their current call settles).
 */
export async function pool<T>(items: T[], concurrency: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}
