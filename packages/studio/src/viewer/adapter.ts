/**
 * From a structure to what the 3D viewer draws, with no WebGL in sight (so it is unit-tested in
 * Node): the atoms (each site once, plus periodic images at the cell's boundaries and the images
 * that complete bonds across the boundary), the bonds between drawn atoms (found with periodic
 * images, so bonds across the cell boundary are there), the unit cell's edges, and the map from
 * drawn atoms back to site indices. Selections go through that map: an image atom is never a
 * site of its own.
 */
import { type AnyStructureDict, elementInfo, fromDict, majorityElement, type Structure, type Vec3 } from "atomstudio-core";

export interface SceneAtom {
  /** Index of the structure's site this atom draws. */
  site: number;
  elem: string;
  x: number;
  y: number;
  z: number;
  /** Lattice translation from the site's own position (0,0,0 for the site itself). */
  offset: Vec3;
  /** True for a periodic image (never the site itself). */
  image: boolean;
}

export interface SceneBond {
  /** Indices into `atoms`, a < b. */
  a: number;
  b: number;
}

export interface Scene {
  atoms: SceneAtom[];
  bonds: SceneBond[];
  /** Edges of the unit cell as [start, end] pairs; empty for molecules. */
  cellEdges: [Vec3, Vec3][];
  /** Drawn atom index → site index. */
  atomToSite: Int32Array;
  /** Site index → index of the drawn atom that is the site itself. */
  siteToAtom: Int32Array;
  /** Site index → every drawn atom of that site (itself first, then its images). */
  siteAtoms: number[][];
}

export interface SceneOptions {
  /** Repeat atoms lying on a cell face, edge or corner on the opposite side(s). Default true. */
  boundaryImages?: boolean;
  /** Draw the images that complete bonds leaving the cell. Default true. */
  bondedImages?: boolean;
  /** Bond when distance < (r_cov,i + r_cov,j) * bondScale. Default 1.15. */
  bondScale?: number;
  /** Distance within which an atom counts as on a boundary, Angstrom. Default 0.05. */
  boundaryTolerance?: number;
  /** Skip bonds above this many sites (the viewer stays usable on huge inputs). Default 200000. */
  maxBondSites?: number;
}

const DEFAULT_RADIUS = 1.5;
const MIN_BOND = 0.4;

/** Majority element of a site (the one drawn). */
const siteElement = (s: Structure, i: number): string => majorityElement(s.species[i], "X");

const key = (site: number, t: Vec3): string => `${site},${t[0]},${t[1]},${t[2]}`;

export const toStructure = (input: Structure | AnyStructureDict | Record<string, unknown>): Structure =>
  "cart" in input && input.cart instanceof Float64Array ? (input as Structure) : fromDict(input);

/** Build the scene of a structure (a core Structure or a pymatgen dictionary). */
export const buildScene = (input: Structure | AnyStructureDict | Record<string, unknown>, opts: SceneOptions = {}): Scene => {
  const s = toStructure(input);
  const n = s.length;
  const bondScale = opts.bondScale ?? 1.15;
  const tolA = opts.boundaryTolerance ?? 0.05;
  const elems = Array.from({ length: n }, (_, i) => siteElement(s, i));
  const radii = elems.map((e) => elementInfo(e)?.covalentRadius ?? DEFAULT_RADIUS);
  const lat = s.lattice;
  const m = lat?.matrix;
  const pbc = lat?.pbc ?? [false, false, false];

  const atoms: SceneAtom[] = [];
  const index = new Map<string, number>();
  const siteAtoms: number[][] = Array.from({ length: n }, () => []);
  const place = (site: number, t: Vec3, image: boolean): number => {
    const k = key(site, t);
    const have = index.get(k);
    if (have !== undefined) return have;
    let x = s.cart[3 * site] as number;
    let y = s.cart[3 * site + 1] as number;
    let z = s.cart[3 * site + 2] as number;
    if (m && (t[0] || t[1] || t[2])) {
      x += t[0] * m[0][0] + t[1] * m[1][0] + t[2] * m[2][0];
      y += t[0] * m[0][1] + t[1] * m[1][1] + t[2] * m[2][1];
      z += t[0] * m[0][2] + t[1] * m[1][2] + t[2] * m[2][2];
    }
    const id = atoms.length;
    atoms.push({ site, elem: elems[site] as string, x, y, z, offset: t, image });
    index.set(k, id);
    (siteAtoms[site] as number[]).push(id);
    return id;
  };
  for (let i = 0; i < n; i++) place(i, [0, 0, 0], false);

  // Perpendicular widths of the cell (distance between opposite faces), per axis.
  const widths: Vec3 = [0, 0, 0];
  if (lat) for (let k = 0; k < 3; k++) widths[k] = lat.volume / crossNorm(m![(k + 1) % 3]!, m![(k + 2) % 3]!);
  const frac = lat ? s.frac : null;

  if (lat && frac && (opts.boundaryImages ?? true)) {
    for (let i = 0; i < n; i++) {
      const choices: number[][] = [[0], [0], [0]];
      for (let k = 0; k < 3; k++) {
        if (!pbc[k]) continue;
        const f = frac[3 * i + k] as number;
        const tol = tolA / (widths[k] as number);
        if (Math.abs(f) < tol) choices[k]!.push(1);
        else if (Math.abs(f - 1) < tol) choices[k]!.push(-1);
      }
      for (const a of choices[0]!)
        for (const b of choices[1]!) for (const c of choices[2]!) if (a || b || c) place(i, [a, b, c], true);
    }
  }

  // Periodic neighbour search on a grid: each site's neighbours (j, t) within bonding distance.
  const bonds: SceneBond[] = [];
  const maxR = radii.reduce((a, b) => Math.max(a, b), 0);
  const cutoff = 2 * maxR * bondScale;
  const neighbours: { j: number; t: Vec3 }[][] = Array.from({ length: n }, () => []);
  if (n > 0 && n <= (opts.maxBondSites ?? 200_000)) {
    // Candidate points: every site, and its images near the occupied fractional range.
    const pts: { j: number; t: Vec3; x: number; y: number; z: number }[] = [];
    const ranges: [[number, number], [number, number], [number, number]] = [
      [0, 0],
      [0, 0],
      [0, 0],
    ];
    if (lat && frac) {
      for (let k = 0; k < 3; k++) {
        if (!pbc[k]) continue;
        let lo = Number.POSITIVE_INFINITY;
        let hi = Number.NEGATIVE_INFINITY;
        for (let i = 0; i < n; i++) {
          const f = frac[3 * i + k] as number;
          lo = Math.min(lo, f);
          hi = Math.max(hi, f);
        }
        const margin = cutoff / (widths[k] as number);
        ranges[k] = [lo - margin, hi + margin];
      }
    }
    const reach = (k: number): number => (lat && pbc[k] ? Math.ceil(cutoff / (widths[k] as number)) + 1 : 0);
    const [ra, rb, rc] = [reach(0), reach(1), reach(2)];
    for (let i = 0; i < n; i++) {
      for (let a = -ra; a <= ra; a++)
        for (let b = -rb; b <= rb; b++)
          for (let c = -rc; c <= rc; c++) {
            if (a || b || c) {
              const f = frac!;
              const fa = (f[3 * i] as number) + a;
              const fb = (f[3 * i + 1] as number) + b;
              const fc = (f[3 * i + 2] as number) + c;
              if (a && (fa < ranges[0][0] || fa > ranges[0][1])) continue;
              if (b && (fb < ranges[1][0] || fb > ranges[1][1])) continue;
              if (c && (fc < ranges[2][0] || fc > ranges[2][1])) continue;
            }
            const t: Vec3 = [a, b, c];
            let x = s.cart[3 * i] as number;
            let y = s.cart[3 * i + 1] as number;
            let z = s.cart[3 * i + 2] as number;
            if (m) {
              x += a * m[0][0] + b * m[1][0] + c * m[2][0];
              y += a * m[0][1] + b * m[1][1] + c * m[2][1];
              z += a * m[0][2] + b * m[1][2] + c * m[2][2];
            }
            pts.push({ j: i, t, x, y, z });
          }
    }
    const cellOf = (v: number): number => Math.floor(v / cutoff);
    const grid = new Map<string, number[]>();
    pts.forEach((p, idx) => {
      const g = `${cellOf(p.x)},${cellOf(p.y)},${cellOf(p.z)}`;
      const list = grid.get(g);
      if (list) list.push(idx);
      else grid.set(g, [idx]);
    });
    for (let i = 0; i < n; i++) {
      const x = s.cart[3 * i] as number;
      const y = s.cart[3 * i + 1] as number;
      const z = s.cart[3 * i + 2] as number;
      const gx = cellOf(x);
      const gy = cellOf(y);
      const gz = cellOf(z);
      for (let dx = -1; dx <= 1; dx++)
        for (let dy = -1; dy <= 1; dy++)
          for (let dz = -1; dz <= 1; dz++) {
            const list = grid.get(`${gx + dx},${gy + dy},${gz + dz}`);
            if (!list) continue;
            for (const idx of list) {
              const p = pts[idx]!;
              if (p.j === i && !(p.t[0] || p.t[1] || p.t[2])) continue;
              const d2 = (p.x - x) ** 2 + (p.y - y) ** 2 + (p.z - z) ** 2;
              const lim = ((radii[i] as number) + (radii[p.j] as number)) * bondScale;
              if (d2 < lim * lim && d2 > MIN_BOND * MIN_BOND) neighbours[i]!.push({ j: p.j, t: p.t });
            }
          }
    }
    // Images that complete bonds leaving the cell from a site itself.
    if (lat && (opts.bondedImages ?? true))
      for (let i = 0; i < n; i++) for (const { j, t } of neighbours[i]!) if (t[0] || t[1] || t[2]) place(j, t, true);
    // Bonds between drawn atoms: atom (i, u) to (j, u + t) when both are drawn.
    const seen = new Set<number>();
    const nAtoms = atoms.length;
    for (let id = 0; id < nAtoms; id++) {
      const A = atoms[id]!;
      for (const { j, t } of neighbours[A.site]!) {
        const other = index.get(key(j, [A.offset[0] + t[0], A.offset[1] + t[1], A.offset[2] + t[2]]));
        if (other === undefined || other === id) continue;
        const a = Math.min(id, other);
        const b = Math.max(id, other);
        const h = a * nAtoms + b;
        if (seen.has(h)) continue;
        seen.add(h);
        bonds.push({ a, b });
      }
    }
  }

  const cellEdges: [Vec3, Vec3][] = [];
  if (m) {
    const corner = (a: number, b: number, c: number): Vec3 => [
      a * m[0][0] + b * m[1][0] + c * m[2][0],
      a * m[0][1] + b * m[1][1] + c * m[2][1],
      a * m[0][2] + b * m[1][2] + c * m[2][2],
    ];
    for (const [p, q] of [
      [
        [0, 0, 0],
        [1, 0, 0],
      ],
      [
        [0, 0, 0],
        [0, 1, 0],
      ],
      [
        [0, 0, 0],
        [0, 0, 1],
      ],
      [
        [1, 0, 0],
        [1, 1, 0],
      ],
      [
        [1, 0, 0],
        [1, 0, 1],
      ],
      [
        [0, 1, 0],
        [1, 1, 0],
      ],
      [
        [0, 1, 0],
        [0, 1, 1],
      ],
      [
        [0, 0, 1],
        [1, 0, 1],
      ],
      [
        [0, 0, 1],
        [0, 1, 1],
      ],
      [
        [1, 1, 0],
        [1, 1, 1],
      ],
      [
        [1, 0, 1],
        [1, 1, 1],
      ],
      [
        [0, 1, 1],
        [1, 1, 1],
      ],
    ] as [Vec3, Vec3][])
      cellEdges.push([corner(...p), corner(...q)]);
  }

  const atomToSite = new Int32Array(atoms.length);
  atoms.forEach((a, id) => {
    atomToSite[id] = a.site;
  });
  const siteToAtom = new Int32Array(n);
  for (let i = 0; i < n; i++) siteToAtom[i] = siteAtoms[i]![0]!;
  return { atoms, bonds, cellEdges, atomToSite, siteToAtom, siteAtoms };
};

const crossNorm = (u: readonly number[], v: readonly number[]): number => {
  const x = (u[1] as number) * (v[2] as number) - (u[2] as number) * (v[1] as number);
  const y = (u[2] as number) * (v[0] as number) - (u[0] as number) * (v[2] as number);
  const z = (u[0] as number) * (v[1] as number) - (u[1] as number) * (v[0] as number);
  return Math.hypot(x, y, z);
};

/** Site indices of drawn atoms, unique and sorted: image atoms collapse onto their site. */
export const sitesOfAtoms = (scene: Pick<Scene, "atomToSite">, drawn: Iterable<number>): number[] => {
  const out = new Set<number>();
  for (const id of drawn) {
    const site = scene.atomToSite[id];
    if (site !== undefined && id >= 0) out.add(site);
  }
  return [...out].sort((a, b) => a - b);
};
