export interface Row {
  name: string;
  value: string;
  ratio: number;
  /** lowest and highest ratio of the rounds, when the ratio is a median over rounds */
  spread?: { min: number; max: number };
  target: string;
  met: boolean;
}

/** Prints results as ratios against the baseline measured in the same run. */
export function printReport(title: string, baseline: string, rows: Row[]): void {
  process.stdout.write(`\n${title}\nbaseline: ${baseline}\n`);
  const width = Math.max(...rows.map((r) => r.name.length));
  const spreadWidth = rows.some((r) => r.spread) ? 12 : 0;
  for (const r of rows) {
    const spread = r.spread ? ` (${r.spread.min.toFixed(2)}–${r.spread.max.toFixed(2)})` : "";
    process.stdout.write(
      `  ${r.name.padEnd(width)}  ${r.value.padStart(22)}  ratio ${r.ratio.toFixed(2).padStart(6)}${spread.padEnd(spreadWidth)}  target ${r.target.padEnd(8)} ${r.met ? "MET" : "NOT MET"}\n`,
    );
  }
}
