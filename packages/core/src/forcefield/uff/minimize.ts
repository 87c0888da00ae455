/**
 * Quasi-Newton minimisation over the coordinates of the atoms that are not frozen, following the
 * scheme RDKit's ForceField::minimize uses (BFGS of Numerical Recipes §10.7 with its backtracking
 * line search, §9.7), so the same molecule takes about as many iterations here as in RDKit:
 *
 * - The minimiser sees a scaled gradient: a tenth of the true one, halved further while its largest
 *   component exceeds 10. The first step is then steepest descent of that length, and the inverse
 *   Hessian starts as the identity in those units. (RDKit scales the gradient the same way; without
 *   it the identity is a poor first guess and the line search spends many steps finding the scale.)
 * - The line search tries the full quasi-Newton step first and backtracks on the sufficient
 *   decrease condition with a quadratic, then cubic, model of the energy along the line.
 * - The inverse Hessian is dense (BFGS) up to DENSE_MAX_FREE_ATOMS free atoms, where it costs about
 *   as much per step as the field itself; beyond that, L-BFGS keeps `memory` pairs instead.
 *
 * It is a generator: each iteration yields the energy, the largest per-atom gradient norm and the
 * coordinates (a copy), so a caller (the studio's Web Worker) can stream steps and stop between any two.
 */
export interface MinimizeStep {
  /** Iteration number, 0 for the starting point. */
  step: number;
  energy: number;
  /** Largest per-atom gradient norm, in the field's units per Å. */
  gmax: number;
  /** All coordinates, frozen atoms included. */
  x: Float64Array;
  converged: boolean;
}

export interface MinimizeOptions {
  /** Converged when every free atom's gradient norm is below this. */
  gmax: number;
  maxSteps: number;
  frozen?: readonly number[];
  /**
   * Also converged when RDKit's relative gradient test passes at this tolerance (its `forceTol`,
   * 1e-4 by default there): max |g_i|·max(|x_i|, 1) / max(|E|·scale, 1) with the scaled gradient.
   */
  forceTol?: number;
  /** "bfgs": dense inverse Hessian; "lbfgs": limited memory. By default chosen by size. */
  method?: "bfgs" | "lbfgs";
  /** Correction pairs L-BFGS keeps. */
  memory?: number;
}

/** Energy at x; with `grad`, also the gradient written into it. */
export type EnergyAndGradient = (x: Float64Array, grad?: Float64Array) => number;

/** A dense inverse Hessian of 3n × 3n numbers, its upper triangle stored, costs 36 n² bytes: 23 MB at this size. */
export const DENSE_MAX_FREE_ATOMS = 800;

/** Sufficient decrease: the energy must drop by this fraction of the slope times the step. */
const ARMIJO = 1e-4;
/** A line search stops when no coordinate would move by more than this (relative) fraction. */
const MOVE_TOLERANCE = 1e-7;
/** A step this small relative to the coordinates is at the minimum to rounding (see `stalled` below). */
const STEP_TOLERANCE = 1.2e-7;
/** The inverse Hessian learns from a step only where s·y > √CURVATURE·|s|·|y| (clearly positive curvature). */
const CURVATURE = 3e-8;
/** Longest line step, relative to the coordinates' norm or count (large: it only stops runaways). */
const LONGEST_STEP = 100;
const LINE_SEARCH_TRIES = 1000;

const dot = (a: Float64Array, b: Float64Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] as number) * (b[i] as number);
  return s;
};

/**
 * The factor the minimiser's gradient is multiplied by (`factor`), and the scale RDKit's
 * convergence test divides by (`scale`): a tenth, with a further factor halved until the
 * largest scaled component is at most 10 once a tenth of the gradient is above 10.
 */
const gradientScale = (g: Float64Array, free: Int32Array) => {
  let largest = 0;
  for (let k = 0; k < free.length; k++) {
    const v = Math.abs(g[free[k] as number] as number);
    if (v > largest) largest = v;
  }
  const tenth = 0.1 * largest;
  if (tenth <= 10) return { factor: 0.1, scale: 0.1 };
  let scale = 0.1;
  while (tenth * scale > 10) scale *= 0.5;
  return { factor: 0.1 * scale, scale };
};

interface InverseHessian {
  /** Forgets what it learnt (back to the identity) and writes out = −g. */
  reset(g: Float64Array, out: Float64Array): void;
  /**
   * Learns from a step s and the change y of the (scaled) gradient along it, then writes the next
   * search direction out = −H g for the gradient g at the step's end.
   */
  next(s: Float64Array, y: Float64Array, g: Float64Array, out: Float64Array): void;
}

/**
 * One pass of DenseInverseHessian's update and product, entry by entry, over rows first..last−1 of
 * the stored upper triangle, from each row's diagonal up to column `until` (exclusive).
 */
const updateRows = (
  h: Float64Array,
  hg: Float64Array,
  g: Float64Array,
  p: Float64Array,
  q: Float64Array,
  s: Float64Array,
  hy: Float64Array,
  first: number,
  last: number,
  until: number,
) => {
  const n = g.length;
  for (let a = first; a < last; a++) {
    // h_ab sits at a·n − a(a+1)/2 + b.
    const offset = a * n - (a * (a + 1)) / 2;
    const ga = g[a] as number;
    const pa = p[a] as number;
    const qa = q[a] as number;
    let acc = 0;
    for (let b = a; b < until; b++) {
      const v = (h[offset + b] as number) + pa * (s[b] as number) + qa * (hy[b] as number);
      h[offset + b] = v;
      acc += v * (g[b] as number);
      if (b !== a) hg[b] = (hg[b] as number) + v * ga;
    }
    hg[a] = (hg[a] as number) + acc;
  }
};

/**
 * The full BFGS inverse Hessian, starting from the identity. Being symmetric, only its upper
 * triangle is stored, row after row (n(n+1)/2 numbers), and each step makes one pass over it:
 * the pass applies the previous step's update and, with the updated entries, computes H g for the
 * new gradient. H y then follows from the previous H g (H y = H g_new − H g_old), and the next
 * direction from the update's vectors, so no second pass is needed. (RDKit's BFGSOpt makes three
 * passes over the full square matrix: H y, the update, H g.)
 */
class DenseInverseHessian implements InverseHessian {
  readonly #n: number;
  readonly #h: Float64Array;
  /** H g at the previous gradient (H already updated). */
  readonly #hgOld: Float64Array;
  readonly #hg: Float64Array;
  readonly #hy: Float64Array;
  /** The update not yet applied to #h: h_ij += p_i s_j + q_i (Hy)_j (zeros when there is none). */
  readonly #p: Float64Array;
  readonly #q: Float64Array;
  readonly #s: Float64Array;
  readonly #pendingHy: Float64Array;

  constructor(n: number) {
    this.#n = n;
    this.#h = new Float64Array((n * (n + 1)) / 2);
    this.#hgOld = new Float64Array(n);
    this.#hg = new Float64Array(n);
    this.#hy = new Float64Array(n);
    this.#p = new Float64Array(n);
    this.#q = new Float64Array(n);
    this.#s = new Float64Array(n);
    this.#pendingHy = new Float64Array(n);
  }

  reset(g: Float64Array, out: Float64Array) {
    const n = this.#n;
    const h = this.#h;
    h.fill(0);
    for (let i = 0, row = 0; i < n; row += n - i, i++) h[row] = 1;
    this.#p.fill(0);
    this.#q.fill(0);
    this.#hgOld.set(g);
    for (let i = 0; i < n; i++) out[i] = -(g[i] as number);
  }

  /**
   * hg = H g after applying the pending update to H (adding zeros when there is none). Each stored
   * h_ij (j > i) serves rows i and j. Rows are taken four at a time, so that s_j, (Hy)_j, g_j and
   * (Hg)_j are loaded once for four entries: in JavaScript the loads, not the arithmetic, set the
   * pace (a third less time than row by row).
   */
  #updateAndMultiply(g: Float64Array) {
    const n = this.#n;
    const h = this.#h;
    const hg = this.#hg;
    const p = this.#p;
    const q = this.#q;
    const s = this.#s;
    const hy = this.#pendingHy;
    hg.fill(0);
    let i = 0;
    for (; i + 4 <= n; i += 4) {
      updateRows(h, hg, g, p, q, s, hy, i, i + 4, i + 4);
      // Row i+k's entry in column j sits at offsetK + j.
      const offset0 = i * n - (i * (i + 1)) / 2;
      const offset1 = offset0 + n - i - 1;
      const offset2 = offset1 + n - i - 2;
      const offset3 = offset2 + n - i - 3;
      const g0 = g[i] as number;
      const g1 = g[i + 1] as number;
      const g2 = g[i + 2] as number;
      const g3 = g[i + 3] as number;
      const p0 = p[i] as number;
      const p1 = p[i + 1] as number;
      const p2 = p[i + 2] as number;
      const p3 = p[i + 3] as number;
      const q0 = q[i] as number;
      const q1 = q[i + 1] as number;
      const q2 = q[i + 2] as number;
      const q3 = q[i + 3] as number;
      let acc0 = 0;
      let acc1 = 0;
      let acc2 = 0;
      let acc3 = 0;
      for (let j = i + 4; j < n; j++) {
        const sj = s[j] as number;
        const yj = hy[j] as number;
        const gj = g[j] as number;
        const h0 = (h[offset0 + j] as number) + p0 * sj + q0 * yj;
        const h1 = (h[offset1 + j] as number) + p1 * sj + q1 * yj;
        const h2 = (h[offset2 + j] as number) + p2 * sj + q2 * yj;
        const h3 = (h[offset3 + j] as number) + p3 * sj + q3 * yj;
        h[offset0 + j] = h0;
        h[offset1 + j] = h1;
        h[offset2 + j] = h2;
        h[offset3 + j] = h3;
        acc0 += h0 * gj;
        acc1 += h1 * gj;
        acc2 += h2 * gj;
        acc3 += h3 * gj;
        hg[j] = (hg[j] as number) + h0 * g0 + h1 * g1 + h2 * g2 + h3 * g3;
      }
      hg[i] = (hg[i] as number) + acc0;
      hg[i + 1] = (hg[i + 1] as number) + acc1;
      hg[i + 2] = (hg[i + 2] as number) + acc2;
      hg[i + 3] = (hg[i + 3] as number) + acc3;
    }
    updateRows(h, hg, g, p, q, s, hy, i, n, n);
  }

  next(s: Float64Array, y: Float64Array, g: Float64Array, out: Float64Array) {
    const n = this.#n;
    const hg = this.#hg;
    const hy = this.#hy;
    const hgOld = this.#hgOld;
    this.#updateAndMultiply(g);
    let sy = 0;
    let yhy = 0;
    let yy = 0;
    let ss = 0;
    let sg = 0;
    let hyg = 0;
    for (let i = 0; i < n; i++) {
      const v = (hg[i] as number) - (hgOld[i] as number);
      hy[i] = v;
      const yi = y[i] as number;
      const si = s[i] as number;
      const gi = g[i] as number;
      sy += yi * si;
      yhy += yi * v;
      yy += yi * yi;
      ss += si * si;
      sg += si * gi;
      hyg += v * gi;
    }
    // Update only where the curvature along the step is clearly positive. The BFGS update,
    // H += (s·y + y·Hy)/(s·y)² s sᵀ − (Hy sᵀ + s (Hy)ᵀ)/(s·y), is h_ij += p_i s_j + q_i (Hy)_j with
    // p = (s·y + y·Hy)/(s·y)² s − Hy/(s·y) and q = −s/(s·y); it reaches H at the next pass, and
    // the updated H g now: hg + p (s·g) + q (Hy·g).
    if (sy > Math.sqrt(CURVATURE * yy * ss)) {
      const alpha = (sy + yhy) / (sy * sy);
      const beta = 1 / sy;
      const p = this.#p;
      const q = this.#q;
      for (let i = 0; i < n; i++) {
        const si = s[i] as number;
        const pi = alpha * si - beta * (hy[i] as number);
        const qi = -beta * si;
        p[i] = pi;
        q[i] = qi;
        hg[i] = (hg[i] as number) + pi * sg + qi * hyg;
      }
      this.#s.set(s);
      this.#pendingHy.set(hy);
    } else {
      this.#p.fill(0);
      this.#q.fill(0);
    }
    hgOld.set(hg);
    for (let i = 0; i < n; i++) out[i] = -(hg[i] as number);
  }
}

/** L-BFGS (Nocedal & Wright, Algorithm 7.4): the last `m` pairs, oldest overwritten first. */
class LimitedInverseHessian implements InverseHessian {
  readonly #s: Float64Array[];
  readonly #y: Float64Array[];
  readonly #rho: Float64Array;
  readonly #alpha: Float64Array;
  #count = 0;
  #next = 0;

  constructor(n: number, m: number) {
    this.#s = Array.from({ length: m }, () => new Float64Array(n));
    this.#y = Array.from({ length: m }, () => new Float64Array(n));
    this.#rho = new Float64Array(m);
    this.#alpha = new Float64Array(m);
  }

  reset(g: Float64Array, out: Float64Array) {
    this.#count = 0;
    this.#next = 0;
    for (let i = 0; i < g.length; i++) out[i] = -(g[i] as number);
  }

  next(s: Float64Array, y: Float64Array, g: Float64Array, out: Float64Array) {
    this.#learn(s, y);
    this.#direction(g, out);
  }

  #direction(g: Float64Array, out: Float64Array) {
    const m = this.#s.length;
    const n = out.length;
    out.set(g);
    for (let k = 0; k < this.#count; k++) {
      const slot = (this.#next - 1 - k + m) % m;
      const a = (this.#rho[slot] as number) * dot(this.#s[slot] as Float64Array, out);
      this.#alpha[slot] = a;
      const y = this.#y[slot] as Float64Array;
      for (let i = 0; i < n; i++) out[i] = (out[i] as number) - a * (y[i] as number);
    }
    if (this.#count > 0) {
      const newest = (this.#next - 1 + m) % m;
      const y = this.#y[newest] as Float64Array;
      const gamma = 1 / ((this.#rho[newest] as number) * dot(y, y));
      for (let i = 0; i < n; i++) out[i] = (out[i] as number) * gamma;
    }
    for (let k = this.#count - 1; k >= 0; k--) {
      const slot = (this.#next - 1 - k + m) % m;
      const b = (this.#rho[slot] as number) * dot(this.#y[slot] as Float64Array, out);
      const s = this.#s[slot] as Float64Array;
      const c = (this.#alpha[slot] as number) - b;
      for (let i = 0; i < n; i++) out[i] = (out[i] as number) + c * (s[i] as number);
    }
    for (let i = 0; i < n; i++) out[i] = -(out[i] as number);
  }

  #learn(s: Float64Array, y: Float64Array) {
    const sy = dot(s, y);
    if (!(sy > Math.sqrt(CURVATURE * dot(y, y) * dot(s, s)))) return;
    const m = this.#s.length;
    (this.#s[this.#next] as Float64Array).set(s);
    (this.#y[this.#next] as Float64Array).set(y);
    this.#rho[this.#next] = 1 / sy;
    this.#next = (this.#next + 1) % m;
    this.#count = Math.min(this.#count + 1, m);
  }
}

const largestAtomNorm = (g: Float64Array, freeAtoms: Int32Array) => {
  let m = 0;
  for (let k = 0; k < freeAtoms.length; k++) {
    const i = 3 * (freeAtoms[k] as number);
    const gx = g[i] as number;
    const gy = g[i + 1] as number;
    const gz = g[i + 2] as number;
    // Not Math.hypot: V8 calls it with boxed arguments, an allocation per atom and step.
    const v = Math.sqrt(gx * gx + gy * gy + gz * gz);
    if (v > m) m = v;
  }
  return m;
};

export function* minimize(f: EnergyAndGradient, start: ArrayLike<number>, options: MinimizeOptions): Generator<MinimizeStep> {
  const nAtoms = Math.floor(start.length / 3);
  const isFrozen = new Uint8Array(nAtoms);
  for (const i of options.frozen ?? []) if (i >= 0 && i < nAtoms) isFrozen[i] = 1;
  const freeAtoms = Int32Array.from({ length: nAtoms }, (_, i) => i).filter((i) => !isFrozen[i]);
  // The minimiser works on the free coordinates only: `free[k]` is the k-th one's index in x.
  const free = new Int32Array(3 * freeAtoms.length);
  for (let k = 0; k < freeAtoms.length; k++) for (let d = 0; d < 3; d++) free[3 * k + d] = 3 * (freeAtoms[k] as number) + d;
  const n = free.length;

  const x = Float64Array.from(start);
  const g = new Float64Array(x.length);
  let e = f(x, g);
  let gmax = largestAtomNorm(g, freeAtoms);
  let converged = gmax < options.gmax;
  yield { step: 0, energy: e, gmax, x: x.slice(), converged };
  if (converged || n === 0) return;

  const dense = options.method ? options.method === "bfgs" : freeAtoms.length <= DENSE_MAX_FREE_ATOMS;
  const hessian: InverseHessian = dense ? new DenseInverseHessian(n) : new LimitedInverseHessian(n, options.memory ?? 20);

  const p = new Float64Array(n); // free coordinates
  const gs = new Float64Array(n); // scaled gradient on them
  const dir = new Float64Array(n);
  const s = new Float64Array(n);
  const y = new Float64Array(n);
  const xTrial = Float64Array.from(x);
  const gTrial = new Float64Array(x.length);

  let scale = gradientScale(g, free);
  let norm2 = 0;
  for (let k = 0; k < n; k++) {
    const v = x[free[k] as number] as number;
    p[k] = v;
    norm2 += v * v;
    gs[k] = scale.factor * (g[free[k] as number] as number);
  }
  hessian.reset(gs, dir);
  const longestStep = LONGEST_STEP * Math.max(Math.sqrt(norm2), n);

  /** RDKit's relative gradient test on the scaled gradient. */
  const relativeGradient = () => {
    let test = 0;
    for (let k = 0; k < n; k++) test = Math.max(test, Math.abs(gs[k] as number) * Math.max(Math.abs(p[k] as number), 1));
    return test / Math.max(Math.abs(e) * scale.scale, 1);
  };

  for (let step = 1; step <= options.maxSteps; step++) {
    let slope = dot(dir, gs);
    if (!(slope < 0)) {
      // Not a descent direction (the inverse Hessian has gone bad): start again from steepest descent.
      hessian.reset(gs, dir);
      slope = dot(dir, gs);
      if (!(slope < 0)) break;
    }
    const length = Math.sqrt(dot(dir, dir));
    if (length > longestStep) {
      const c = longestStep / length;
      for (let k = 0; k < n; k++) dir[k] = (dir[k] as number) * c;
      slope *= c;
    }

    // Line search along dir: the full step first, then backtracking.
    let relativeMove = 0;
    for (let k = 0; k < n; k++)
      relativeMove = Math.max(relativeMove, Math.abs(dir[k] as number) / Math.max(Math.abs(p[k] as number), 1));
    // The full step is always tried, even one below the move tolerance: near the minimum a
    // requested gradient may need steps that small.
    const smallestLambda = Math.min(MOVE_TOLERANCE / relativeMove, 1);
    let lambda = 1;
    let previousLambda = 0;
    let previousE = 0;
    let eTrial = e;
    let accepted = false;
    for (let tries = 0; tries < LINE_SEARCH_TRIES && lambda >= smallestLambda; tries++) {
      for (let k = 0; k < n; k++) xTrial[free[k] as number] = (p[k] as number) + lambda * (dir[k] as number);
      eTrial = f(xTrial, gTrial);
      if (eTrial - e <= ARMIJO * lambda * slope) {
        accepted = true;
        break;
      }
      // Near the minimum energy differences drown in rounding: accept a step that leaves the
      // energy unchanged to rounding and lowers the gradient.
      if (Math.abs(eTrial - e) <= 1e-12 * Math.max(1, Math.abs(e)) && largestAtomNorm(gTrial, freeAtoms) < gmax) {
        accepted = true;
        break;
      }
      let next: number;
      if (tries === 0) {
        // Quadratic through E(0), E'(0) and E(1).
        next = -slope / (2 * (eTrial - e - slope));
      } else {
        // Cubic through E(0), E'(0) and the last two trials.
        const r1 = eTrial - e - lambda * slope;
        const r2 = previousE - e - previousLambda * slope;
        const a = (r1 / (lambda * lambda) - r2 / (previousLambda * previousLambda)) / (lambda - previousLambda);
        const b =
          ((-previousLambda * r1) / (lambda * lambda) + (lambda * r2) / (previousLambda * previousLambda)) /
          (lambda - previousLambda);
        if (a === 0) next = -slope / (2 * b);
        else {
          const disc = b * b - 3 * a * slope;
          if (disc < 0) next = 0.5 * lambda;
          else if (b <= 0) next = (-b + Math.sqrt(disc)) / (3 * a);
          else next = -slope / (b + Math.sqrt(disc));
        }
        next = Math.min(next, 0.5 * lambda);
      }
      previousLambda = lambda;
      previousE = eTrial;
      // NaN (an overflowing trial) falls back to a tenth.
      lambda = next >= 0.1 * lambda ? next : 0.1 * lambda;
    }
    if (!accepted) {
      // No lower energy along the line above rounding: the minimum as far as this search can tell.
      yield { step, energy: e, gmax, x: x.slice(), converged };
      return;
    }

    let stepSize = 0;
    for (let k = 0; k < n; k++) {
      const i = free[k] as number;
      const now = xTrial[i] as number;
      s[k] = now - (p[k] as number);
      stepSize = Math.max(stepSize, Math.abs(s[k] as number) / Math.max(Math.abs(now), 1));
      p[k] = now;
      x[i] = now;
    }
    g.set(gTrial);
    e = eTrial;
    const gmaxBefore = gmax;
    gmax = largestAtomNorm(g, freeAtoms);
    scale = gradientScale(g, free);
    for (let k = 0; k < n; k++) {
      const v = scale.factor * (g[free[k] as number] as number);
      y[k] = v - (gs[k] as number);
      gs[k] = v;
    }
    converged = gmax < options.gmax || (options.forceTol !== undefined && relativeGradient() < options.forceTol);
    // A step below rounding of the coordinates ends the run (RDKit calls it converged), unless it
    // still lowered the gradient towards a requested gmax that RDKit's test does not stand in for.
    const stalled = stepSize < STEP_TOLERANCE && (options.forceTol !== undefined || !(gmax < gmaxBefore));
    yield { step, energy: e, gmax, x: x.slice(), converged };
    if (converged || stalled) return;
    hessian.next(s, y, gs, dir);
  }
}
