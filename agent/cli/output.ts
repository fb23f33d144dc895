/**
 * How the CLI prints results: kubectl-style tables (upper-case headers, columns separated by
 * three spaces) and objects as JSON or YAML (`-o json|yaml`).
 */
import { stringify as toYaml } from "yaml";

/** The machine-readable formats of `-o`. */
export const OUTPUT_FORMATS = ["json", "yaml"] as const;

/** A machine-readable format of `-o`. */
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/**
 * Renders rows under headers, each column as wide as its widest cell; the last column is not
 * padded. Callers pass `-` themselves for missing values, so that every cell is one word.
 *
 * @returns the table (header line first), each line ending with a newline.
 */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("   ")
      .trimEnd() + "\n";
  return line(headers) + rows.map(line).join("");
}

/** Renders a value as pretty JSON or as YAML, ending with a newline. */
export function renderObject(value: unknown, format: OutputFormat): string {
  return format === "json" ? `${JSON.stringify(value, null, 2)}\n` : toYaml(value);
}
