/** Shared by the UFF tests and benchmark: RMSD after optimal superposition (Kabsch, via Horn's quaternion). */
export const alignedRmsd = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  const n = a.length / 3;
  const ca = [0, 0, 0];
  const cb = [0, 0, 0];
  for (let i = 0; i < n; i++)
    for (let k = 0; k < 3; k++) {
      ca[k] = (ca[k] as number) + (a[3 * i + k] as number) / n;
      cb[k] = (cb[k] as number) + (b[3 * i + k] as number) / n;
    }
  const P = (i: number, k: number) => (a[3 * i + k] as number) - (ca[k] as number);
  const Q = (i: number, k: number) => (b[3 * i + k] as number) - (cb[k] as number);
  const R = [0, 1, 2].map(() => [0, 0, 0]);
  let e0 = 0;
  for (let i = 0; i < n; i++)
    for (let x = 0; x < 3; x++) {
      e0 += P(i, x) ** 2 + Q(i, x) ** 2;
      for (let y = 0; y < 3; y++) (R[x] as number[])[y] = ((R[x] as number[])[y] as number) + P(i, x) * Q(i, y);
    }
  const r = (x: number, y: number) => (R[x] as number[])[y] as number;
  const F = [
    [r(0, 0) + r(1, 1) + r(2, 2), r(1, 2) - r(2, 1), r(2, 0) - r(0, 2), r(0, 1) - r(1, 0)],
    [r(1, 2) - r(2, 1), r(0, 0) - r(1, 1) - r(2, 2), r(0, 1) + r(1, 0), r(0, 2) + r(2, 0)],
    [r(2, 0) - r(0, 2), r(0, 1) + r(1, 0), -r(0, 0) + r(1, 1) - r(2, 2), r(1, 2) + r(2, 1)],
    [r(0, 1) - r(1, 0), r(0, 2) + r(2, 0), r(1, 2) + r(2, 1), -r(0, 0) - r(1, 1) + r(2, 2)],
  ];
  const lmax = Math.max(...jacobiEigenvalues(F));
  return Math.sqrt(Math.max(0, (e0 - 2 * lmax) / n));
};

const jacobiEigenvalues = (m: number[][]): number[] => {
  const a = m.map((row) => [...row]);
  const n = a.length;
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += (a[p]?.[q] as number) ** 2;
    if (off < 1e-22) break;
    for (let p = 0; p < n; p++)
      for (let q = p + 1; q < n; q++) {
        const apq = a[p]?.[q] as number;
        if (Math.abs(apq) < 1e-300) continue;
        const app = a[p]?.[p] as number;
        const aqq = a[q]?.[q] as number;
        const theta = (aqq - app) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = a[k]?.[p] as number;
          const akq = a[k]?.[q] as number;
          (a[k] as number[])[p] = c * akp - s * akq;
          (a[k] as number[])[q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p]?.[k] as number;
          const aqk = a[q]?.[k] as number;
          (a[p] as number[])[k] = c * apk - s * aqk;
          (a[q] as number[])[k] = s * apk + c * aqk;
        }
      }
  }
  return a.map((row, i) => row[i] as number);
};

/**
 * RMSD up to the exchange of hydrogens on the same atom (a methyl group turned by 120° is the same
 * minimum), as RDKit's GetBestRMS allows symmetry-equivalent atoms. Both minimisers start from the
 * same coordinates and move without net rotation, so hydrogens are paired in the common frame
 * (closest permutation per parent atom) before the aligned RMSD.
 */
export const bestRmsd = (
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  z: readonly number[],
  bonds: readonly (readonly number[])[],
): number => {
  const perm = z.map((_, i) => i);
  const parent = new Map<number, number[]>();
  for (const [p, q] of bonds) {
    if (z[p as number] === 1 && (z[q as number] as number) > 1)
      parent.set(q as number, [...(parent.get(q as number) ?? []), p as number]);
    if (z[q as number] === 1 && (z[p as number] as number) > 1)
      parent.set(p as number, [...(parent.get(p as number) ?? []), q as number]);
  }
  const d2 = (i: number, j: number) =>
    [0, 1, 2].reduce((s, k) => s + ((a[3 * i + k] as number) - (b[3 * j + k] as number)) ** 2, 0);
  for (const hs of parent.values()) {
    let best = Number.POSITIVE_INFINITY;
    let bestP = hs;
    for (const p of permutations(hs)) {
      const s = hs.reduce((acc, h, k) => acc + d2(h, p[k] as number), 0);
      if (s < best) {
        best = s;
        bestP = p;
      }
    }
    hs.forEach((h, k) => {
      perm[h] = bestP[k] as number;
    });
  }
  return alignedRmsd(
    a,
    perm.flatMap((j) => [b[3 * j] as number, b[3 * j + 1] as number, b[3 * j + 2] as number]),
  );
};

const permutations = (xs: number[]): number[][] =>
  xs.length <= 1 ? [xs] : xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
