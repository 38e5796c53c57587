export interface Row {
  name: string;
  value: string;
  ratio: number;
  target: string;
  met: boolean;
}

/** Prints results as ratios against the baseline measured in the same run. */
export function printReport(title: string, baseline: string, rows: Row[]): void {
  process.stdout.write(`\n${title}\nbaseline: ${baseline}\n`);
  const width = Math.max(...rows.map((r) => r.name.length));
  for (const r of rows) {
    process.stdout.write(
      `  ${r.name.padEnd(width)}  ${r.value.padStart(22)}  ratio ${r.ratio.toFixed(2).padStart(6)}  target ${r.target.padEnd(8)} ${r.met ? "met" : "NOT MET"}\n`,
    );
  }
}
