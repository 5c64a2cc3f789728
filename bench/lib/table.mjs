/** A figure for a table: one decimal under 100, none from 100 on, '-' when there is none. */
export const fmt = (v) => (Number.isFinite(v) ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1)) : '-');

// The benchmarks' tables: columns aligned, the first `leftColumns` (what was measured) to the
// left, the figures to the right, a rule under the header.
export function formatTable(header, rows, leftColumns = 3) {
  const all = [header, ...rows].map((row) => row.map(String));
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i].length)));
  const line = (row) =>
    row.map((cell, i) => (i < leftColumns ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [line(all[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...all.slice(1).map(line)].join('\n');
}
