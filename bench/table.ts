/** Printing benchmark figures as Markdown tables (the form the README's benchmark table takes). */

/**
 * Prints `title`, then a Markdown table of `header` and `rows`: the first column left-aligned,
 * the others right-aligned (figures).
 */
export function printTable(title: string, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => "| " + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ") + " |";
  console.log(`\n${title}`);
  console.log(line(header));
  console.log("|" + widths.map((w, i) => (i === 0 ? "-".repeat(w + 2) : "-".repeat(w + 1) + ":")).join("|") + "|");
  for (const r of rows) console.log(line(r));
}
