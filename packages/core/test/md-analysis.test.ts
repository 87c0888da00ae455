/**
 * MD analysis against independent codes run on the same frames: RDF vs `mdtraj.compute_rdf` and
 * a float64 brute force (27 images), RMSD vs `mdtraj.rmsd` (fitted) and the closed form on
 * unwrapped coordinates, H-bonds vs a brute-force minimum-image check and MDAnalysis's
 * `HydrogenBondAnalysis`, clustering vs scipy `linkage`/`fcluster` and scikit-learn.
 */
import { join } from "node:path";
import { generateTrajectory, readTestdata, runPython } from "atomstudio-testkit";
import { describe, expect, it } from "vitest";
import {
  cutLinkage,
  dbscan,
  forEachPairWithin,
  hydrogenBonds,
  kmeans,
  linkageMatrix,
  pairwiseRmsd,
  rdf,
  readTrajectory,
  rmsdSeries,
  selectAtoms,
  Trajectory,
  unwrappedCoordinates,
} from "../src/index.ts";

const ORACLE = join(import.meta.dirname, "oracle/md_oracle.py");

const water = readTrajectory(readTestdata("md/water.pdb.gz"), { filename: "water.pdb" }).trajectory;
const argyrodite = readTrajectory(readTestdata("md/example_XDATCAR.gz"), { filename: "XDATCAR" }).trajectory;
const triclinicCell = [12.1, 0, 0, 3.3, 11.4, 0, -2.7, 1.9, 12.6];
const gen = generateTrajectory({ nAtoms: 150, nFrames: 8, cell: triclinicCell, seed: 21, step: 0.2, elements: ["O", "H", "H"] });
const tric = new Trajectory({ elements: gen.elements, coords: gen.coords, cells: gen.cells });
const framesOf = (t: Trajectory, frames: number[]) =>
  frames.map((f) => Array.from({ length: t.nAtoms }, (_, i) => Array.from(t.frameCoords(f).subarray(3 * i, 3 * i + 3))));
const cellsOf = (t: Trajectory, frames: number[]) =>
  frames.map((f) => [0, 1, 2].map((r) => Array.from((t.cell(f) as Float64Array).subarray(3 * r, 3 * r + 3))));
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("neighbour list: cell lists equal all pairs by the minimum image", async () => {
  const cases = [
    ["triclinic generated, cutoff 5", tric, 5],
    ["argyrodite (416 atoms), cutoff 10", argyrodite, 10],
    ["water, cutoff 7.5 (half the cell)", water, 7.5],
  ] as const;
  const all = await runPython<{ counts: number[] }[]>(
    ORACLE,
    cases.map(([, t, c]) => ({
      kind: "rdf_brute",
      coords: framesOf(t, [0]),
      cells: cellsOf(t, [0]),
      a: range(t.nAtoms),
      b: range(t.nAtoms),
      r_max: c,
      n_bins: 1,
    })),
  );
  it.each(cases.map((c, k) => [c[0], c[1], c[2], k] as const))("%s", (_n, t, cutoff, k) => {
    let count = 0;
    const idx = Int32Array.from(range(t.nAtoms));
    forEachPairWithin(t.frameCoords(0), t.cell(0), cutoff, idx, idx, () => {
      count++;
    });
    expect(count).toBe(all[k]?.counts[0]);
  });
});

describe("RDF", async () => {
  const O = selectAtoms(water, { elements: ["O"] });
  const H = selectAtoms(water, { elements: ["H"] });
  const Li = selectAtoms(argyrodite, { elements: ["Li"] });
  const S = selectAtoms(argyrodite, { elements: ["S"] });
  const cases = [
    { name: "water O–O, 100 frames", t: water, a: O, b: O, rMax: 7.5, nBins: 150, frames: range(100) },
    { name: "water O–H, 100 frames", t: water, a: O, b: H, rMax: 7.5, nBins: 75, frames: range(100) },
    { name: "argyrodite Li–S, 140 frames", t: argyrodite, a: Li, b: S, rMax: 10, nBins: 100, frames: range(140) },
    {
      name: "generated triclinic O–H",
      t: tric,
      a: selectAtoms(tric, { elements: ["O"] }),
      b: selectAtoms(tric, { elements: ["H"] }),
      rMax: 5,
      nBins: 50,
      frames: range(8),
    },
  ];
  const results = await runPython<Record<string, number[]>[]>(
    ORACLE,
    cases.flatMap((c) => {
      const common = {
        coords: framesOf(c.t, c.frames),
        cells: cellsOf(c.t, c.frames),
        a: Array.from(c.a),
        b: Array.from(c.b),
        r_max: c.rMax,
        n_bins: c.nBins,
      };
      return [
        { kind: "rdf_brute", ...common },
        { kind: "rdf_mdtraj", ...common, elements: c.t.elements },
      ];
    }),
  );
  it.each(cases.map((c, k) => [c.name, c, k] as const))(
    "%s: counts equal the float64 brute force, g(r) equals mdtraj's",
    (_n, c, k) => {
      const ours = rdf(c.t, { a: c.a, b: c.b, rMax: c.rMax, nBins: c.nBins });
      const brute = results[2 * k] as { counts: number[] };
      const md = results[2 * k + 1] as { r: number[]; g: number[] };
      expect(Array.from(ours.counts)).toEqual(brute.counts);
      // mdtraj works in float32: a pair on a bin edge may fall either side.
      const worst = Math.max(...Array.from(ours.g).map((g, q) => Math.abs(g - (md.g[q] as number))));
      expect(worst).toBeLessThan(0.02 * Math.max(...md.g));
      for (let q = 0; q < ours.r.length; q++) expect(ours.r[q]).toBeCloseTo(md.r[q] as number, 5);
    },
  );

  it("water O–O: first peak at 2.75 ± 0.05 Å, g(r) → 1, about 4–5 neighbours in the first shell", () => {
    const res = rdf(water, { a: O, b: O, rMax: 7.5, nBins: 150 });
    const peak = res.g.indexOf(Math.max(...res.g));
    expect(Math.abs((res.r[peak] as number) - 2.75)).toBeLessThanOrEqual(0.05);
    const tail = Array.from(res.g).filter((_, q) => (res.r[q] as number) > 6 && (res.r[q] as number) < 7.5);
    expect(Math.abs(tail.reduce((a, b) => a + b, 0) / tail.length - 1)).toBeLessThan(0.1);
    const firstMin = res.r.findIndex((r) => r >= 3.3);
    expect(res.cn[firstMin]).toBeGreaterThan(3.5);
    expect(res.cn[firstMin]).toBeLessThan(5.5);
  });

  it.each([
    ["no cell", new Trajectory({ elements: ["O", "O"], coords: new Float64Array(6), cells: null }), {}, "MISSING_LATTICE"],
    ["r_max beyond half the cell", water, { rMax: 7.6 }, "R_MAX_TOO_LARGE"],
  ] as const)("%s is %s", (_n, t, o, code) => {
    const a = Int32Array.from([0, 1]);
    expect(() => rdf(t, { a, b: a, ...o })).toThrow(expect.objectContaining({ code }));
  });
});

describe("RMSD", async () => {
  const water12 = Int32Array.from(range(12));
  const tricAll = Int32Array.from(range(tric.nAtoms));
  const [md, closedWater, closedTric] = await runPython<{ rmsd: number[] }[]>(ORACLE, [
    {
      kind: "rmsd_mdtraj",
      coords: framesOf(water, range(100)),
      elements: water.elements,
      atoms: Array.from(water12),
      reference: 3,
    },
    {
      kind: "rmsd_closed_form",
      coords: framesOf(water, range(100)),
      cells: cellsOf(water, range(100)),
      atoms: range(water.nAtoms),
      reference: 0,
    },
    {
      kind: "rmsd_closed_form",
      coords: framesOf(tric, range(8)),
      cells: cellsOf(tric, range(8)),
      atoms: range(tric.nAtoms),
      reference: 2,
    },
  ]);
  it("fitted: equal to mdtraj.rmsd (4 waters, reference frame 3)", () => {
    const ours = rmsdSeries(water, { atoms: water12, frames: range(100), reference: 3, fit: true, unwrap: false });
    for (let f = 0; f < 100; f++) expect(ours[f]).toBeCloseTo(md?.rmsd[f] as number, 4);
  });
  it.each([
    ["water, periodic jumps undone", water, Int32Array.from(range(water.nAtoms)), 0, closedWater, 100],
    ["generated triclinic with wrapped jumps", tric, tricAll, 2, closedTric, 8],
  ] as const)("plain: %s, equal to the closed form", (_n, t, atoms, reference, ref, F) => {
    const ours = rmsdSeries(t, { atoms, frames: range(F), reference, fit: false });
    for (let f = 0; f < F; f++) expect(ours[f]).toBeCloseTo(ref?.rmsd[f] as number, 9);
  });
  it("unwrapping follows atoms across faces (no jumps of a cell length)", () => {
    const xyz = unwrappedCoordinates(tric, tricAll, range(8));
    const n3 = 3 * tric.nAtoms;
    let worst = 0;
    for (let f = 1; f < 8; f++)
      for (let q = 0; q < n3; q++)
        worst = Math.max(worst, Math.abs((xyz[f * n3 + q] as number) - (xyz[(f - 1) * n3 + q] as number)));
    expect(worst).toBeLessThan(0.25 * 12.6 + 1);
  });
});

describe("hydrogen bonds", async () => {
  const O = selectAtoms(water, { elements: ["O"] });
  const H = selectAtoms(water, { elements: ["H"] });
  const frames = [0, 1, 50, 99];
  const [brute, mda] = await runPython<Record<string, unknown>[]>(ORACLE, [
    {
      kind: "hbonds_brute",
      coords: framesOf(water, range(100)),
      cells: cellsOf(water, range(100)),
      donors: Array.from(O),
      hydrogens: Array.from(H),
      acceptors: Array.from(O),
      frames,
      dh: 1.2,
      da: 3.0,
      angle: 150,
    },
    { kind: "hbonds_mda", coords: framesOf(water, range(100)), cells: cellsOf(water, [0]), elements: water.elements },
  ]);
  it("water, 4 frames: the same bonds as the brute-force minimum-image check", () => {
    const res = hydrogenBonds(water, { donors: O, hydrogens: H, acceptors: O, frames });
    const ours = frames.map((f) => {
      const out: number[][] = [];
      for (let q = 0; q < res.bonds.length; q += 4) if (res.bonds[q] === f) out.push(Array.from(res.bonds.subarray(q, q + 4)));
      return out.sort((x, y) => x[1]! - y[1]! || x[2]! - y[2]! || x[3]! - y[3]!);
    });
    const want = (brute as { bonds: number[][][] }).bonds.map((l) =>
      [...l].sort((x, y) => x[1]! - y[1]! || x[2]! - y[2]! || x[3]! - y[3]!),
    );
    expect(ours).toEqual(want);
    expect(Array.from(res.counts)).toEqual(want.map((l) => l.length));
  });
  it("water, 100 frames: counts per frame as MDAnalysis's HydrogenBondAnalysis", () => {
    const res = hydrogenBonds(water, { donors: O, hydrogens: H, acceptors: O, frames: range(100) });
    expect(Array.from(res.counts)).toEqual(mda?.counts);
  });
});

describe("10,000 atoms (generated, wrapped jumps)", async () => {
  const g = generateTrajectory({ nAtoms: 10_000, nFrames: 3, cell: [46, 0, 0, 4, 45, 0, -3, 2, 47], seed: 77, step: 0.01 });
  const big = new Trajectory({ elements: g.elements, coords: g.coords, cells: g.cells });
  const O = selectAtoms(big, { elements: ["O"] });
  const H = selectAtoms(big, { elements: ["H"] });
  const frames = [0, 1, 2];
  const [md, mda] = await runPython<Record<string, number[]>[]>(ORACLE, [
    {
      kind: "rdf_mdtraj",
      coords: framesOf(big, frames),
      cells: cellsOf(big, frames),
      a: Array.from(O),
      b: Array.from(H),
      r_max: 8,
      n_bins: 80,
      elements: big.elements,
    },
    { kind: "hbonds_mda", coords: framesOf(big, frames), cells: cellsOf(big, [0]), elements: big.elements, triclinic: true },
  ]);
  it("O–H RDF equals mdtraj's", () => {
    const ours = rdf(big, { a: O, b: H, rMax: 8, nBins: 80 });
    const worst = Math.max(...Array.from(ours.g).map((v, q) => Math.abs(v - ((md as { g: number[] }).g[q] as number))));
    expect(worst).toBeLessThan(0.01);
  });
  it("H-bond counts per frame equal MDAnalysis's", () => {
    const res = hydrogenBonds(big, { donors: O, hydrogens: H, acceptors: O, frames });
    expect(Array.from(res.counts)).toEqual(mda?.counts);
  });
});

describe("clustering", async () => {
  // Three well-separated conformational states of 12 atoms, 10 noisy frames each.
  const n = 12;
  const F = 30;
  const coords = new Float64Array(F * 3 * n);
  let seed = 5;
  const rand = () => {
    seed = (seed * 16807) % 2147483647;
    return seed / 2147483647 - 0.5;
  };
  const states = [0, 1, 2].map(() => Float64Array.from({ length: 3 * n }, () => rand() * 8));
  for (let f = 0; f < F; f++)
    for (let q = 0; q < 3 * n; q++) coords[f * 3 * n + q] = (states[f % 3]?.[q] as number) + rand() * 0.3;
  const traj = new Trajectory({ elements: Array(n).fill("C"), coords, cells: null });
  const atoms = Int32Array.from(range(n));
  const xyz = unwrappedCoordinates(traj, atoms, range(F));
  const dist = pairwiseRmsd(xyz, n, false);
  const methods = ["single", "complete", "average", "ward"] as const;
  const ours = methods.map((m) => cutLinkage(linkageMatrix(dist, F, m), F, { k: 3 }));
  const db = dbscan(dist, F, 1.0, 3);
  const km = kmeans(xyz, F, 3, { seed: 1 }).labels;
  const distRows = Array.from({ length: F }, (_, i) => Array.from(dist.subarray(i * F, i * F + F)));
  const results = await runPython<{ ari: number; Z: number[][]; dbscan_ari?: number; kmeans_ari?: number }[]>(
    ORACLE,
    methods.map((m, k) => ({
      kind: "cluster",
      dist: distRows,
      method: m,
      k: 3,
      ours: Array.from(ours[k] as Int32Array),
      ...(k === 0
        ? {
            eps: 1.0,
            min_samples: 3,
            ours_dbscan: Array.from(db),
            x: Array.from({ length: F }, (_, i) => Array.from(xyz.subarray(i * 3 * n, (i + 1) * 3 * n))),
            ours_kmeans: Array.from(km),
          }
        : {}),
    })),
  );
  it.each(methods.map((m, k) => [m, k] as const))(
    "agglomerative %s: merge heights and clusters equal scipy's (ARI 1)",
    (m, k) => {
      const Z = linkageMatrix(dist, F, m);
      const ref = results[k] as { ari: number; Z: number[][] };
      expect(ref.ari).toBe(1);
      for (let s = 0; s < F - 1; s++) expect(Z[4 * s + 2]).toBeCloseTo(ref.Z[s]?.[2] as number, 9);
    },
  );
  it("DBSCAN (precomputed) and k-means equal scikit-learn's (ARI 1)", () => {
    expect(results[0]?.dbscan_ari).toBe(1);
    expect(results[0]?.kmeans_ari).toBe(1);
  });
});
