/** Which analysis file a dropped file is, by its name (the service detects compression itself). */
export type AnalysisRole = "vasprun" | "kpoints" | "cohpcar" | "icohplist" | "structure";

export const analysisRole = (name: string): AnalysisRole | undefined => {
  const n = name.toUpperCase().replace(/\.(GZ|BZ2)$/, "");
  if (n.includes("VASPRUN") && (n.endsWith(".XML") || !n.includes("."))) return "vasprun";
  if (n.startsWith("KPOINTS")) return "kpoints";
  if (/^(COHPCAR|COOPCAR|COBICAR)/.test(n)) return "cohpcar";
  if (/^(ICOHPLIST|ICOOPLIST|ICOBILIST)/.test(n)) return "icohplist";
  return undefined;
};

/** A structure file that goes with LOBSTER files (only when dropped together with them). */
export const isStructureFile = (name: string): boolean => /^(CONTCAR|POSCAR)/i.test(name.replace(/\.(gz|bz2)$/i, ""));

/** TeX-ish k-point labels as written in KPOINTS (`\Gamma`, `\Sigma_1`) for display. */
export const prettyLabel = (label: string): string =>
  label
    .split("|")
    .map((l) =>
      l
        .replace(/\\?Gamma|^G$/i, "Γ")
        .replace(/\\Sigma/g, "Σ")
        .replace(/\\Delta/g, "Δ")
        .replace(/\\Lambda/g, "Λ")
        .replace(/_(\w)/g, "$1"),
    )
    .join("|");

/** Rows of numbers (and empty cells for missing values) as CSV. */
export const toCsv = (header: string[], columns: Array<ArrayLike<number | null>>): string => {
  const n = Math.max(0, ...columns.map((c) => c.length));
  const lines = [header.join(",")];
  for (let i = 0; i < n; i++) lines.push(columns.map((c) => (c[i] == null ? "" : String(c[i]))).join(","));
  return `${lines.join("\n")}\n`;
};
