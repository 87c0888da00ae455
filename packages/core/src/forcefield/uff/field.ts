/**
 * The Universal Force Field (Rappé et al., J. Am. Chem. Soc. 114, 10024, 1992) as RDKit implements
 * it: bond stretch (harmonic), angle bend (Fourier series, with RDKit's special small-ring and
 * coordination cases), torsion, inversion, and Lennard-Jones 12-6 van der Waals between atoms three
 * or more bonds apart within the same fragment; optional Coulomb electrostatics (off by default, as
 * in RDKit, which has none). Energies in kcal/mol, gradients in kcal/mol/Å.
 *
 * Terms are stored in flat typed arrays so energy and gradient cost one pass without allocation.
 */
import { AtomStudioError } from "../../errors.ts";
import { type Hybridization, type MolGraph, type PerceivedChemistry, perceiveChemistry } from "./chemistry.ts";
import { UFF_PARAMETER_ROWS } from "./parameters.ts";

interface AtomicParams {
  r1: number;
  theta0: number;
  x1: number;
  D1: number;
  Z1: number;
  V1: number;
  U1: number;
  Xi: number;
}

const PARAMS: ReadonlyMap<string, AtomicParams> = new Map(
  UFF_PARAMETER_ROWS.map(([label, r1, theta0, x1, D1, , Z1, V1, U1, Xi]) => [
    label,
    { r1, theta0: (theta0 * Math.PI) / 180, x1, D1, Z1, V1, U1, Xi },
  ]),
);

const LAMBDA = 0.1332;
const G = 332.06;
/** Coulomb constant in kcal·Å/(mol·e²), as UFF papers use. */
const COULOMB = 332.0637;
const ANGLE_CORRECTION_THRESHOLD = 0.866;

const restLength = (order: number, p: AtomicParams, q: AtomicParams): number => {
  const rBO = -LAMBDA * (p.r1 + q.r1) * Math.log(order);
  const d = Math.sqrt(p.Xi) - Math.sqrt(q.Xi);
  const rEN = (p.r1 * q.r1 * d * d) / (p.Xi * p.r1 + q.Xi * q.r1);
  return p.r1 + q.r1 + rBO - rEN;
};

const angleForceConstant = (theta0: number, o12: number, o23: number, p1: AtomicParams, p2: AtomicParams, p3: AtomicParams) => {
  const c = Math.cos(theta0);
  const r12 = restLength(o12, p1, p2);
  const r23 = restLength(o23, p2, p3);
  const r13 = Math.sqrt(r12 * r12 + r23 * r23 - 2 * r12 * r23 * c);
  const beta = (2 * G) / (r12 * r23);
  const pre = (beta * p1.Z1 * p3.Z1) / r13 ** 5;
  const rTerm = r12 * r23;
  return pre * rTerm * (3 * rTerm * (1 - c * c) - r13 * r13 * c);
};

const isGroup6 = (z: number) => z === 8 || z === 16 || z === 34 || z === 52 || z === 84;
const equation17 = (order: number, p: AtomicParams, q: AtomicParams) => 5 * Math.sqrt(p.U1 * q.U1) * (1 + 4.18 * Math.log(order));

export interface UffOptions {
  /** van der Waals pairs farther apart than this multiple of x_ij at set-up are left out (RDKit: 10). */
  vdwThreshold?: number;
  /** Leave out non-bonded terms between disconnected fragments (RDKit's default: true). */
  ignoreInterfragmentInteractions?: boolean;
  /** Partial charges (e) per atom: adds Coulomb terms between atoms three or more bonds apart. */
  charges?: readonly number[];
  /** Dielectric constant for the optional electrostatics. */
  dielectric?: number;
}

export interface UffTermCounts {
  bond: number;
  angle: number;
  torsion: number;
  inversion: number;
  vdw: number;
  electrostatic: number;
}

export type UffTermName = keyof UffTermCounts;

/** A UFF force field built for one molecule (topology and parameters fixed at construction). */
export class UffField {
  readonly n: number;
  readonly labels: readonly string[];
  readonly chemistry: PerceivedChemistry;
  // bonds: i, j, r0, kb
  private readonly bI: Int32Array;
  private readonly bP: Float64Array;
  // angles: i, j, k, order | theta0, ka, C0, C1, C2
  private readonly aI: Int32Array;
  private readonly aP: Float64Array;
  // torsions: i, j, k, l, order | V, cosTerm
  private readonly tI: Int32Array;
  private readonly tP: Float64Array;
  // inversions: i, j(centre), k, l | K, C0, C1, C2
  private readonly iI: Int32Array;
  private readonly iP: Float64Array;
  // vdW, one array per column (these pairs are most of the terms): 3i, 3j | xij², Dij, (threshold·xij)²
  private readonly vI3: Int32Array;
  private readonly vJ3: Int32Array;
  private readonly vX2: Float64Array;
  private readonly vD: Float64Array;
  private readonly vCut2: Float64Array;
  // electrostatics: i, j | qiqj*k/eps
  private readonly eI: Int32Array;
  private readonly eP: Float64Array;

  constructor(graph: MolGraph, positions: ArrayLike<number>, options: UffOptions = {}) {
    const n = graph.z.length;
    this.n = n;
    const chem = perceiveChemistry(graph, positions);
    this.chemistry = chem;
    this.labels = chem.labels;
    const missing = chem.labels.map((l, i) => ({ index: i, label: l })).filter(({ label }) => !PARAMS.has(label));
    if (missing.length > 0)
      throw new AtomStudioError(
        "UNSUPPORTED_ATOM_TYPES",
        `UFF has no parameters for atom${missing.length > 1 ? "s" : ""} ${missing.map((m) => `${m.index} (${m.label})`).join(", ")}`,
        { atoms: missing.map((m) => m.index), labels: missing.map((m) => m.label) },
      );
    const p = chem.labels.map((l) => PARAMS.get(l) as AtomicParams);
    const hyb = chem.hybridization;
    const { neighbors, neighborBonds, bondOrders } = chem;
    const bondIdx = new Map<number, number>();
    const key = (a: number, b: number) => (a < b ? a * n + b : b * n + a);
    for (const [bi, b] of graph.bonds.entries()) bondIdx.set(key(b.a, b.b), bi);
    const orderOf = (a: number, b: number) => bondOrders[bondIdx.get(key(a, b)) as number] as number;

    // Bonds.
    const bI: number[] = [];
    const bP: number[] = [];
    for (const [bi, b] of graph.bonds.entries()) {
      const r0 = restLength(bondOrders[bi] as number, p[b.a] as AtomicParams, p[b.b] as AtomicParams);
      bI.push(b.a, b.b);
      bP.push(r0, (2 * G * (p[b.a] as AtomicParams).Z1 * (p[b.b] as AtomicParams).Z1) / r0 ** 3);
    }

    // Angles.
    const aI: number[] = [];
    const aP: number[] = [];
    const inRingOf = (a: number, size: number) => chem.ringSizes[a]?.has(size) ?? false;
    const addAngle = (i: number, j: number, k: number, orderIn: number) => {
      let order = orderIn;
      let theta0 = (p[j] as AtomicParams).theta0;
      if (order >= 30) {
        theta0 = ({ 30: 150, 35: 60, 40: 135, 45: 90 }[order] as number) * (Math.PI / 180);
        order = 0;
      }
      const ka = angleForceConstant(
        theta0,
        orderOf(i, j),
        orderOf(k, j),
        p[i] as AtomicParams,
        p[j] as AtomicParams,
        p[k] as AtomicParams,
      );
      let C0 = 0;
      let C1 = 0;
      let C2 = 0;
      if (order === 0) {
        const s = Math.sin(theta0);
        const c = Math.cos(theta0);
        C2 = 1 / (4 * Math.max(s * s, 1e-8));
        C1 = -4 * C2 * c;
        C0 = C2 * (2 * c * c + 1);
      }
      aI.push(i, j, k, order);
      aP.push(theta0, ka, C0, C1, C2);
    };
    for (let j = 0; j < n; j++) {
      const nb = neighbors[j] as number[];
      if (nb.length === 1) continue;
      if (hyb[j] === "SP3D" && nb.length === 5) continue;
      for (let x = 0; x < nb.length; x++) {
        for (let y = x + 1; y < nb.length; y++) {
          const i = nb[x] as number;
          const k = nb[y] as number;
          let order = 0;
          switch (hyb[j]) {
            case "SP":
              order = 1;
              break;
            case "SP2":
              order = 3;
              if (inRingOf(j, 3)) {
                if (inRingOf(i, 3) !== inRingOf(k, 3)) order = 30;
                else if (inRingOf(i, 3) && inRingOf(k, 3)) order = 35;
              } else if (inRingOf(j, 4)) {
                if (inRingOf(i, 4) !== inRingOf(k, 4)) order = 40;
                else if (inRingOf(i, 4) && inRingOf(k, 4)) order = 45;
              }
              break;
            case "SP3D2":
              order = 4;
              break;
            default:
              order = 0;
          }
          addAngle(i, j, k, order);
        }
      }
    }
    // Trigonal bipyramids: the most opposed pair is axial (linear term), equatorial pairs trigonal.
    for (let c = 0; c < n; c++) {
      const nb = neighbors[c] as number[];
      if (!(hyb[c] === "SP3D" && nb.length === 5)) continue;
      let best = 100;
      let ax: [number, number] = [0, 1];
      for (let x = 0; x < 5; x++)
        for (let y = x + 1; y < 5; y++) {
          const d = unitDot(positions, c, nb[x] as number, nb[y] as number);
          if (d < best) {
            best = d;
            ax = [x, y];
          }
        }
      const eq = [0, 1, 2, 3, 4].filter((x) => x !== ax[0] && x !== ax[1]);
      const at = (x: number) => nb[x] as number;
      addAngle(at(ax[0]), c, at(ax[1]), 2);
      addAngle(at(eq[0] as number), c, at(eq[1] as number), 3);
      addAngle(at(eq[0] as number), c, at(eq[2] as number), 3);
      addAngle(at(eq[1] as number), c, at(eq[2] as number), 3);
      for (const a of ax) for (const e of eq) addAngle(at(a), c, at(e), 0);
    }

    // Torsions about bonds between atoms of degree > 1 that are in no triple bond.
    const tI: number[] = [];
    const tP: number[] = [];
    const inTriple = graph.z.map((_, a) => (neighborBonds[a] as number[]).some((bi) => graph.bonds[bi]?.order === 3));
    const torsionHyb = (h: Hybridization | undefined) => h === "SP2" || h === "SP3";
    for (const [bi, b] of graph.bonds.entries()) {
      const j = b.a;
      const k = b.b;
      if ((neighbors[j] as number[]).length < 2 || (neighbors[k] as number[]).length < 2) continue;
      if (inTriple[j] || inTriple[k]) continue;
      if (!torsionHyb(hyb[j]) || !torsionHyb(hyb[k])) continue;
      const order = bondOrders[bi] as number;
      const zj = graph.z[j] as number;
      const zk = graph.z[k] as number;
      const start = tP.length;
      for (const i of neighbors[j] as number[]) {
        if (i === k) continue;
        for (const l of neighbors[k] as number[]) {
          if (l === j || l === i) continue;
          const endSp2 = hyb[i] === "SP2" || hyb[l] === "SP2";
          let V: number;
          let nOrder: number;
          let cosTerm: number;
          if (hyb[j] === "SP3" && hyb[k] === "SP3") {
            V = Math.sqrt((p[j] as AtomicParams).V1 * (p[k] as AtomicParams).V1);
            nOrder = 3;
            cosTerm = -1;
            if (order === 1 && isGroup6(zj) && isGroup6(zk)) {
              V = Math.sqrt((zj === 8 ? 2 : 6.8) * (zk === 8 ? 2 : 6.8));
              nOrder = 2;
              cosTerm = -1;
            }
          } else if (hyb[j] === "SP2" && hyb[k] === "SP2") {
            V = equation17(order, p[j] as AtomicParams, p[k] as AtomicParams);
            nOrder = 2;
            cosTerm = 1;
          } else {
            V = 1;
            nOrder = 6;
            cosTerm = 1;
            if (order === 1) {
              if ((hyb[j] === "SP3" && isGroup6(zj) && !isGroup6(zk)) || (hyb[k] === "SP3" && isGroup6(zk) && !isGroup6(zj))) {
                V = equation17(order, p[j] as AtomicParams, p[k] as AtomicParams);
                nOrder = 2;
                cosTerm = -1;
              } else if (endSp2) {
                V = 2;
                nOrder = 3;
                cosTerm = -1;
              }
            }
          }
          tI.push(i, j, k, l, nOrder);
          tP.push(V, cosTerm);
        }
      }
      // The barrier is shared among the torsions about the bond.
      const count = (tP.length - start) / 2;
      for (let x = start; x < tP.length; x += 2) tP[x] = (tP[x] as number) / count;
    }

    // Inversions at sp2 C, N, O and at P, As, Sb, Bi with three neighbours.
    const iI: number[] = [];
    const iP: number[] = [];
    for (let j = 0; j < n; j++) {
      const z = graph.z[j] as number;
      const nb = neighbors[j] as number[];
      if (![6, 7, 8, 15, 33, 51, 83].includes(z) || nb.length !== 3) continue;
      if ((z === 6 || z === 7 || z === 8) && hyb[j] !== "SP2") continue;
      const boundToSp2O = z === 6 && nb.some((a) => graph.z[a] === 8 && hyb[a] === "SP2");
      let K: number;
      let C0: number;
      let C1: number;
      let C2: number;
      if (z === 6 || z === 7 || z === 8) {
        C0 = 1;
        C1 = -1;
        C2 = 0;
        K = boundToSp2O ? 50 : 6;
      } else {
        const w0 = (({ 15: 84.4339, 33: 86.9735, 51: 87.7047, 83: 90 }[z] as number) * Math.PI) / 180;
        C2 = 1;
        C1 = -4 * Math.cos(w0);
        C0 = -(C1 * Math.cos(w0) + C2 * Math.cos(2 * w0));
        K = 22 / (C0 + C1 + C2);
      }
      K /= 3;
      const [a, b, c] = nb as [number, number, number];
      for (const [i, k, l] of [
        [a, b, c],
        [a, c, b],
        [b, c, a],
      ] as const) {
        iI.push(i, j, k, l);
        iP.push(K, C0, C1, C2);
      }
    }

    // Non-bonded pairs: 1-4 and farther, same fragment, within the threshold at set-up.
    const thresh = options.vdwThreshold ?? 10;
    const ignoreInterfrag = options.ignoreInterfragmentInteractions ?? true;
    const fragment = fragments(n, neighbors);
    const close = new Set<number>();
    for (let j = 0; j < n; j++) {
      const nb = neighbors[j] as number[];
      for (const a of nb) close.add(key(a, j));
      for (let x = 0; x < nb.length; x++)
        for (let y = x + 1; y < nb.length; y++) close.add(key(nb[x] as number, nb[y] as number));
    }
    const vI3: number[] = [];
    const vJ3: number[] = [];
    const vX2: number[] = [];
    const vD: number[] = [];
    const vCut2: number[] = [];
    const eI: number[] = [];
    const eP: number[] = [];
    const q = options.charges;
    const eps = options.dielectric ?? 1;
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        if (ignoreInterfrag && fragment[i] !== fragment[j]) continue;
        if (close.has(key(i, j))) continue;
        const pi = p[i] as AtomicParams;
        const pj = p[j] as AtomicParams;
        const xij = Math.sqrt(pi.x1 * pj.x1);
        const dx = (positions[3 * i] as number) - (positions[3 * j] as number);
        const dy = (positions[3 * i + 1] as number) - (positions[3 * j + 1] as number);
        const dz = (positions[3 * i + 2] as number) - (positions[3 * j + 2] as number);
        if (Math.sqrt(dx * dx + dy * dy + dz * dz) < thresh * xij) {
          vI3.push(3 * i);
          vJ3.push(3 * j);
          vX2.push(xij * xij);
          vD.push(Math.sqrt(pi.D1 * pj.D1));
          vCut2.push((thresh * xij) ** 2);
        }
        if (q) {
          const qq = (q[i] ?? 0) * (q[j] ?? 0);
          if (qq !== 0) {
            eI.push(i, j);
            eP.push((COULOMB * qq) / eps);
          }
        }
      }
    }
    this.bI = Int32Array.from(bI);
    this.bP = Float64Array.from(bP);
    this.aI = Int32Array.from(aI);
    this.aP = Float64Array.from(aP);
    this.tI = Int32Array.from(tI);
    this.tP = Float64Array.from(tP);
    this.iI = Int32Array.from(iI);
    this.iP = Float64Array.from(iP);
    this.vI3 = Int32Array.from(vI3);
    this.vJ3 = Int32Array.from(vJ3);
    this.vX2 = Float64Array.from(vX2);
    this.vD = Float64Array.from(vD);
    this.vCut2 = Float64Array.from(vCut2);
    this.eI = Int32Array.from(eI);
    this.eP = Float64Array.from(eP);
  }

  get termCounts(): UffTermCounts {
    return {
      bond: this.bI.length / 2,
      angle: this.aI.length / 4,
      torsion: this.tI.length / 5,
      inversion: this.iI.length / 4,
      vdw: this.vI3.length,
      electrostatic: this.eI.length / 2,
    };
  }

  /** Total energy (kcal/mol); with `grad`, also adds the gradient (kcal/mol/Å) into it. */
  energy(x: ArrayLike<number>, grad?: Float64Array): number {
    if (grad) grad.fill(0);
    // Term by term rather than through termEnergies: no object per call (the minimiser calls this
    // about twice per step).
    return (
      this.bondTerms(x, grad) +
      this.angleTerms(x, grad) +
      this.torsionTerms(x, grad) +
      this.inversionTerms(x, grad) +
      this.vdwTerms(x, grad) +
      this.electrostaticTerms(x, grad)
    );
  }

  /** Energy per kind of term (kcal/mol); with `grad`, accumulates the gradient (not zeroed here). */
  termEnergies(x: ArrayLike<number>, g?: Float64Array): UffTermCounts {
    return {
      bond: this.bondTerms(x, g),
      angle: this.angleTerms(x, g),
      torsion: this.torsionTerms(x, g),
      inversion: this.inversionTerms(x, g),
      vdw: this.vdwTerms(x, g),
      electrostatic: this.electrostaticTerms(x, g),
    };
  }

  private bondTerms(x: ArrayLike<number>, g?: Float64Array): number {
    let e = 0;
    const I = this.bI;
    const P = this.bP;
    for (let t = 0, m = I.length / 2; t < m; t++) {
      const i = 3 * (I[2 * t] as number);
      const j = 3 * (I[2 * t + 1] as number);
      const dx = (x[i] as number) - (x[j] as number);
      const dy = (x[i + 1] as number) - (x[j + 1] as number);
      const dz = (x[i + 2] as number) - (x[j + 2] as number);
      const r = Math.sqrt(dx * dx + dy * dy + dz * dz);
      const r0 = P[2 * t] as number;
      const k = P[2 * t + 1] as number;
      const d = r - r0;
      e += 0.5 * k * d * d;
      if (g && r > 0) {
        const f = (k * d) / r;
        accumulate(g, i, f * dx, f * dy, f * dz);
        accumulate(g, j, -f * dx, -f * dy, -f * dz);
      }
    }
    return e;
  }

  private angleTerms(x: ArrayLike<number>, g?: Float64Array): number {
    let e = 0;
    const I = this.aI;
    const P = this.aP;
    for (let t = 0, m = I.length / 4; t < m; t++) {
      const i = 3 * (I[4 * t] as number);
      const j = 3 * (I[4 * t + 1] as number);
      const k = 3 * (I[4 * t + 2] as number);
      const order = I[4 * t + 3] as number;
      const theta0 = P[5 * t] as number;
      const ka = P[5 * t + 1] as number;
      const C0 = P[5 * t + 2] as number;
      const C1 = P[5 * t + 3] as number;
      const C2 = P[5 * t + 4] as number;
      const ax = (x[i] as number) - (x[j] as number);
      const ay = (x[i + 1] as number) - (x[j + 1] as number);
      const az = (x[i + 2] as number) - (x[j + 2] as number);
      const bx = (x[k] as number) - (x[j] as number);
      const by = (x[k + 1] as number) - (x[j + 1] as number);
      const bz = (x[k + 2] as number) - (x[j + 2] as number);
      const d1 = Math.sqrt(ax * ax + ay * ay + az * az);
      const d2 = Math.sqrt(bx * bx + by * by + bz * bz);
      let c = (ax * bx + ay * by + az * bz) / (d1 * d2);
      c = clampUnit(c);
      const s2 = 1 - c * c;
      const cos2 = c * c - s2;
      let term: number;
      if (order === 0) term = C0 + C1 * c + C2 * cos2;
      else {
        let r: number;
        if (order === 1) r = -c;
        else if (order === 2) r = cos2;
        else if (order === 3) r = c * (c * c - 3 * s2);
        else r = c ** 4 - 6 * c * c * s2 + s2 * s2;
        term = (1 - r) / (order * order);
      }
      e += ka * term;
      const corrected = order > 0 && order < 5 && c > ANGLE_CORRECTION_THRESHOLD;
      if (corrected) e += Math.exp(-20 * (Math.acos(c) - theta0 + 0.25));
      if (g) {
        const s = Math.max(Math.sqrt(s2), 1e-8);
        const sin2 = 2 * s * c;
        let dE: number;
        if (order === 0) dE = -ka * (C1 * s + 2 * C2 * sin2);
        else {
          if (order === 1) dE = -s;
          else if (order === 2) dE = sin2;
          else if (order === 3) dE = s * (3 - 4 * s * s);
          else dE = c * s * (4 - 8 * s * s);
          dE *= ka / order;
        }
        if (corrected) dE += -20 * Math.exp(-20 * (Math.acos(c) - theta0 + 0.25));
        // dE/dx = dE/dθ · dθ/dcos · dcos/dx, with dθ/dcos = -1/sinθ.
        const f = dE / -s;
        // Multiplying by the reciprocals of the lengths: three divisions, not twelve.
        const inverse1 = 1 / d1;
        const inverse2 = 1 / d2;
        const ux = ax * inverse1;
        const uy = ay * inverse1;
        const uz = az * inverse1;
        const vx = bx * inverse2;
        const vy = by * inverse2;
        const vz = bz * inverse2;
        const f1 = f * inverse1;
        const f3 = f * inverse2;
        const g1x = f1 * (vx - c * ux);
        const g1y = f1 * (vy - c * uy);
        const g1z = f1 * (vz - c * uz);
        const g3x = f3 * (ux - c * vx);
        const g3y = f3 * (uy - c * vy);
        const g3z = f3 * (uz - c * vz);
        accumulate(g, i, g1x, g1y, g1z);
        accumulate(g, k, g3x, g3y, g3z);
        accumulate(g, j, -g1x - g3x, -g1y - g3y, -g1z - g3z);
      }
    }
    return e;
  }

  private torsionTerms(x: ArrayLike<number>, g?: Float64Array): number {
    let e = 0;
    const I = this.tI;
    const P = this.tP;
    for (let t = 0, m = I.length / 5; t < m; t++) {
      const i = 3 * (I[5 * t] as number);
      const j = 3 * (I[5 * t + 1] as number);
      const k = 3 * (I[5 * t + 2] as number);
      const l = 3 * (I[5 * t + 3] as number);
      const order = I[5 * t + 4] as number;
      const V = P[2 * t] as number;
      const cosTerm = P[2 * t + 1] as number;
      // b1 = j - i, b2 = k - j, b3 = l - k; n1 = b1 × b2, n2 = b2 × b3.
      const b1x = (x[j] as number) - (x[i] as number);
      const b1y = (x[j + 1] as number) - (x[i + 1] as number);
      const b1z = (x[j + 2] as number) - (x[i + 2] as number);
      const b2x = (x[k] as number) - (x[j] as number);
      const b2y = (x[k + 1] as number) - (x[j + 1] as number);
      const b2z = (x[k + 2] as number) - (x[j + 2] as number);
      const b3x = (x[l] as number) - (x[k] as number);
      const b3y = (x[l + 1] as number) - (x[k + 1] as number);
      const b3z = (x[l + 2] as number) - (x[k + 2] as number);
      const n1x = b1y * b2z - b1z * b2y;
      const n1y = b1z * b2x - b1x * b2z;
      const n1z = b1x * b2y - b1y * b2x;
      const n2x = b2y * b3z - b2z * b3y;
      const n2y = b2z * b3x - b2x * b3z;
      const n2z = b2x * b3y - b2y * b3x;
      const n1sq = n1x * n1x + n1y * n1y + n1z * n1z;
      const n2sq = n2x * n2x + n2y * n2y + n2z * n2z;
      const d1 = Math.sqrt(n1sq);
      const d2 = Math.sqrt(n2sq);
      let c = 0;
      if (d1 > 1e-10 && d2 > 1e-10) {
        c = (n1x * n2x + n1y * n2y + n1z * n2z) / (d1 * d2);
        c = clampUnit(c);
      }
      const s2 = 1 - c * c;
      let cosN: number;
      if (order === 2) cosN = 1 - 2 * s2;
      else if (order === 3) cosN = c * (c * c - 3 * s2);
      else cosN = 1 + s2 * (-32 * s2 * s2 + 48 * s2 - 18);
      e += (V / 2) * (1 - cosTerm * cosN);
      if (g && d1 > 1e-10 && d2 > 1e-10) {
        // E depends on cosφ only: dE/dcos = (V/2)(-cosTerm)·d cos(nφ)/d cos.
        let dCosN: number;
        if (order === 2) dCosN = 4 * c;
        else if (order === 3) dCosN = 12 * c * c - 3;
        else dCosN = 192 * c ** 5 - 192 * c ** 3 + 36 * c;
        const f = (V / 2) * -cosTerm * dCosN;
        // dcos/dn1 = (n2/|n2| - c n1/|n1|)/|n1|, dcos/dn2 likewise; chain through n = a × b.
        // (Two divisions, not twelve: multiplying by the reciprocals.)
        const inverse1 = 1 / d1;
        const inverse2 = 1 / d2;
        const u1 = c * inverse1;
        const u2 = c * inverse2;
        const w = inverse1 * inverse2;
        const p1x = n2x * w - n1x * u1 * inverse1;
        const p1y = n2y * w - n1y * u1 * inverse1;
        const p1z = n2z * w - n1z * u1 * inverse1;
        const p2x = n1x * w - n2x * u2 * inverse2;
        const p2y = n1y * w - n2y * u2 * inverse2;
        const p2z = n1z * w - n2z * u2 * inverse2;
        // n1 = b1 × b2: dn1·p = p·(db1 × b2) + p·(b1 × db2) = db1·(b2 × p) + db2·(p × b1).
        const gb1x = b2y * p1z - b2z * p1y;
        const gb1y = b2z * p1x - b2x * p1z;
        const gb1z = b2x * p1y - b2y * p1x;
        let gb2x = p1y * b1z - p1z * b1y;
        let gb2y = p1z * b1x - p1x * b1z;
        let gb2z = p1x * b1y - p1y * b1x;
        gb2x += b3y * p2z - b3z * p2y;
        gb2y += b3z * p2x - b3x * p2z;
        gb2z += b3x * p2y - b3y * p2x;
        const gb3x = p2y * b2z - p2z * b2y;
        const gb3y = p2z * b2x - p2x * b2z;
        const gb3z = p2x * b2y - p2y * b2x;
        accumulate(g, i, -f * gb1x, -f * gb1y, -f * gb1z);
        accumulate(g, j, f * (gb1x - gb2x), f * (gb1y - gb2y), f * (gb1z - gb2z));
        accumulate(g, k, f * (gb2x - gb3x), f * (gb2y - gb3y), f * (gb2z - gb3z));
        accumulate(g, l, f * gb3x, f * gb3y, f * gb3z);
      }
    }
    return e;
  }

  private inversionTerms(x: ArrayLike<number>, g?: Float64Array): number {
    let e = 0;
    const I = this.iI;
    const P = this.iP;
    for (let t = 0, m = I.length / 4; t < m; t++) {
      const i = 3 * (I[4 * t] as number);
      const j = 3 * (I[4 * t + 1] as number);
      const k = 3 * (I[4 * t + 2] as number);
      const l = 3 * (I[4 * t + 3] as number);
      const K = P[4 * t] as number;
      const C0 = P[4 * t + 1] as number;
      const C1 = P[4 * t + 2] as number;
      const C2 = P[4 * t + 3] as number;
      let rix = (x[i] as number) - (x[j] as number);
      let riy = (x[i + 1] as number) - (x[j + 1] as number);
      let riz = (x[i + 2] as number) - (x[j + 2] as number);
      let rkx = (x[k] as number) - (x[j] as number);
      let rky = (x[k + 1] as number) - (x[j + 1] as number);
      let rkz = (x[k + 2] as number) - (x[j + 2] as number);
      let rlx = (x[l] as number) - (x[j] as number);
      let rly = (x[l + 1] as number) - (x[j + 1] as number);
      let rlz = (x[l + 2] as number) - (x[j + 2] as number);
      const dI = Math.sqrt(rix * rix + riy * riy + riz * riz);
      const dK = Math.sqrt(rkx * rkx + rky * rky + rkz * rkz);
      const dL = Math.sqrt(rlx * rlx + rly * rly + rlz * rlz);
      if (dI < 1e-8 || dK < 1e-8 || dL < 1e-8) continue;
      rix /= dI;
      riy /= dI;
      riz /= dI;
      rkx /= dK;
      rky /= dK;
      rkz /= dK;
      rlx /= dL;
      rly /= dL;
      rlz /= dL;
      // n = (-rI) × rK, normalised; cosY = n·rL.
      let nx = -(riy * rkz - riz * rky);
      let ny = -(riz * rkx - rix * rkz);
      let nz = -(rix * rky - riy * rkx);
      const nl = Math.sqrt(nx * nx + ny * ny + nz * nz);
      if (nl < 1e-8) continue;
      nx /= nl;
      ny /= nl;
      nz /= nl;
      let cosY = nx * rlx + ny * rly + nz * rlz;
      cosY = clampUnit(cosY);
      const sinYSq = 1 - cosY * cosY;
      const sinYe = sinYSq > 0 ? Math.sqrt(sinYSq) : 0;
      e += K * (C0 + C1 * sinYe + C2 * (2 * sinYe * sinYe - 1));
      if (g) {
        const sinY = Math.max(Math.sqrt(sinYSq), 1e-8);
        let cosT = rix * rkx + riy * rky + riz * rkz;
        cosT = clampUnit(cosT);
        const sinTSq = 1 - cosT * cosT;
        const sinT = Math.max(Math.sqrt(sinTSq), 1e-8);
        const dEdW = -K * (C1 * cosY + 4 * C2 * cosY * sinY);
        // t1 = rL × rK, t2 = rI × rL, t3 = rK × rI.
        const t1x = rly * rkz - rlz * rky;
        const t1y = rlz * rkx - rlx * rkz;
        const t1z = rlx * rky - rly * rkx;
        const t2x = riy * rlz - riz * rly;
        const t2y = riz * rlx - rix * rlz;
        const t2z = rix * rly - riy * rlx;
        const t3x = rky * riz - rkz * riy;
        const t3y = rkz * rix - rkx * riz;
        const t3z = rkx * riy - rky * rix;
        const term1 = sinY * sinT;
        const term2 = cosY / (sinY * sinTSq);
        const gix = (t1x / term1 - (rix - rkx * cosT) * term2) / dI;
        const giy = (t1y / term1 - (riy - rky * cosT) * term2) / dI;
        const giz = (t1z / term1 - (riz - rkz * cosT) * term2) / dI;
        const gkx = (t2x / term1 - (rkx - rix * cosT) * term2) / dK;
        const gky = (t2y / term1 - (rky - riy * cosT) * term2) / dK;
        const gkz = (t2z / term1 - (rkz - riz * cosT) * term2) / dK;
        const glx = (t3x / term1 - (rlx * cosY) / sinY) / dL;
        const gly = (t3y / term1 - (rly * cosY) / sinY) / dL;
        const glz = (t3z / term1 - (rlz * cosY) / sinY) / dL;
        accumulate(g, i, dEdW * gix, dEdW * giy, dEdW * giz);
        accumulate(g, k, dEdW * gkx, dEdW * gky, dEdW * gkz);
        accumulate(g, l, dEdW * glx, dEdW * gly, dEdW * glz);
        accumulate(g, j, -dEdW * (gix + gkx + glx), -dEdW * (giy + gky + gly), -dEdW * (giz + gkz + glz));
      }
    }
    return e;
  }

  /**
   * Lennard-Jones 12-6, D((x/r)¹² − 2(x/r)⁶), written in r² so that a pair costs one division and
   * no square root (these pairs are most of the field's terms).
   */
  private vdwTerms(x: ArrayLike<number>, g?: Float64Array): number {
    let e = 0;
    const I3 = this.vI3;
    const J3 = this.vJ3;
    const X2 = this.vX2;
    const DD = this.vD;
    const CUT2 = this.vCut2;
    for (let t = 0, m = I3.length; t < m; t++) {
      const i = I3[t] as number;
      const j = J3[t] as number;
      const dx = (x[i] as number) - (x[j] as number);
      const dy = (x[i + 1] as number) - (x[j + 1] as number);
      const dz = (x[i + 2] as number) - (x[j + 2] as number);
      const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 > (CUT2[t] as number) || r2 <= 0) continue;
      const D = DD[t] as number;
      const inverseR2 = 1 / r2;
      const q2 = (X2[t] as number) * inverseR2;
      const q6 = q2 * q2 * q2;
      e += D * q6 * (q6 - 2);
      if (g) {
        // dE/dr / r = 12 D (q⁶ − q¹²) / r². Written out rather than through accumulate(): Chromium
        // does not always inline it, and this loop runs thousands of times per evaluation.
        const f = 12 * D * q6 * (1 - q6) * inverseR2;
        const fx = f * dx;
        const fy = f * dy;
        const fz = f * dz;
        g[i] = (g[i] as number) + fx;
        g[i + 1] = (g[i + 1] as number) + fy;
        g[i + 2] = (g[i + 2] as number) + fz;
        g[j] = (g[j] as number) - fx;
        g[j + 1] = (g[j + 1] as number) - fy;
        g[j + 2] = (g[j + 2] as number) - fz;
      }
    }
    return e;
  }

  private electrostaticTerms(x: ArrayLike<number>, g?: Float64Array): number {
    let e = 0;
    const I = this.eI;
    const P = this.eP;
    for (let t = 0, m = I.length / 2; t < m; t++) {
      const i = 3 * (I[2 * t] as number);
      const j = 3 * (I[2 * t + 1] as number);
      const dx = (x[i] as number) - (x[j] as number);
      const dy = (x[i + 1] as number) - (x[j + 1] as number);
      const dz = (x[i + 2] as number) - (x[j + 2] as number);
      const r = Math.sqrt(dx * dx + dy * dy + dz * dz);
      const k = P[t] as number;
      e += k / r;
      if (g) {
        const f = -k / (r * r * r);
        accumulate(g, i, f * dx, f * dy, f * dz);
        accumulate(g, j, -f * dx, -f * dy, -f * dz);
      }
    }
    return e;
  }
}

const accumulate = (g: Float64Array, i: number, x: number, y: number, z: number) => {
  g[i] = (g[i] as number) + x;
  g[i + 1] = (g[i + 1] as number) + y;
  g[i + 2] = (g[i + 2] as number) + z;
};

const unitDot = (pos: ArrayLike<number>, c: number, a: number, b: number): number => {
  const u = [0, 1, 2].map((k) => (pos[3 * a + k] as number) - (pos[3 * c + k] as number));
  const v = [0, 1, 2].map((k) => (pos[3 * b + k] as number) - (pos[3 * c + k] as number));
  const nu = Math.hypot(...u);
  const nv = Math.hypot(...v);
  return (
    ((u[0] as number) * (v[0] as number) + (u[1] as number) * (v[1] as number) + (u[2] as number) * (v[2] as number)) / (nu * nv)
  );
};

const fragments = (n: number, neighbors: number[][]): Int32Array => {
  const frag = new Int32Array(n).fill(-1);
  let f = 0;
  for (let s = 0; s < n; s++) {
    if (frag[s] !== -1) continue;
    const stack = [s];
    frag[s] = f;
    while (stack.length) {
      const u = stack.pop() as number;
      for (const v of neighbors[u] as number[])
        if (frag[v] === -1) {
          frag[v] = f;
          stack.push(v);
        }
    }
    f++;
  }
  return frag;
};

const clampUnit = (c: number): number => Math.min(1, Math.max(-1, c));
