/**
 * Rows as a plain-text table for a terminal: columns two spaces apart, each as wide as its widest
 * cell, names aligned left and the columns `alignRight` says (numbers) aligned right.
 */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[], alignRight: (column: number) => boolean = () => false): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const aligned = (cell: string, column: number) => (alignRight(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!));
  return [header, ...rows].map((row) => row.map(aligned).join('  ').trimEnd());
}
