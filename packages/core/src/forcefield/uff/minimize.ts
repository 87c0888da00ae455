/**
 * L-BFGS minimisation (Nocedal & Wright, Algorithm 7.4) with a backtracking line search on the
 * Armijo condition, over the coordinates of the atoms that are not frozen. It is a generator:
 * each iteration yields the energy, the largest per-atom gradient norm and the coordinates, so a
 * caller (the studio's Web Worker) can stream steps and stop between any two.
 */
export interface MinimizeStep {
  /** Iteration number, 0 for the starting point. */
  step: number;
  energy: number;
  /** Largest per-atom gradient norm, in the field's units per Å. */
  gmax: number;
  x: Float64Array;
  converged: boolean;
}

export interface MinimizeOptions {
  /** Converged when every free atom's gradient norm is below this. */
  gmax: number;
  maxSteps: number;
  frozen?: readonly number[];
  /** Number of correction pairs kept. */
  memory?: number;
  /** Largest displacement of one atom in one step, Å. */
  maxStep?: number;
}

export type EnergyAndGradient = (x: Float64Array, grad: Float64Array) => number;

const dot = (a: Float64Array, b: Float64Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] as number) * (b[i] as number);
  return s;
};

const maskFrozen = (g: Float64Array, free: Uint8Array) => {
  for (let i = 0; i < g.length; i++) if (!free[(i / 3) | 0]) g[i] = 0;
};

const maxAtomNorm = (g: Float64Array) => {
  let m = 0;
  for (let i = 0; i < g.length; i += 3) {
    const v = Math.hypot(g[i] as number, g[i + 1] as number, g[i + 2] as number);
    if (v > m) m = v;
  }
  return m;
};

export function* minimize(f: EnergyAndGradient, start: ArrayLike<number>, options: MinimizeOptions): Generator<MinimizeStep> {
  const n = start.length;
  const free = new Uint8Array(n / 3).fill(1);
  for (const i of options.frozen ?? []) if (i >= 0 && i < n / 3) free[i] = 0;
  const m = options.memory ?? 20;
  const maxStep = options.maxStep ?? 0.3;
  const x = Float64Array.from(start);
  const g = new Float64Array(n);
  let e = f(x, g);
  maskFrozen(g, free);
  let gmax = maxAtomNorm(g);
  yield { step: 0, energy: e, gmax, x: Float64Array.from(x), converged: gmax < options.gmax };
  if (gmax < options.gmax) return;
  const S: Float64Array[] = [];
  const Y: Float64Array[] = [];
  const rho: number[] = [];
  const d = new Float64Array(n);
  const xNew = new Float64Array(n);
  const gNew = new Float64Array(n);
  const alpha = new Float64Array(m);
  for (let step = 1; step <= options.maxSteps; step++) {
    // Two-loop recursion: d = -H g.
    d.set(g);
    for (let k = S.length - 1; k >= 0; k--) {
      const a = (rho[k] as number) * dot(S[k] as Float64Array, d);
      alpha[k] = a;
      const y = Y[k] as Float64Array;
      for (let i = 0; i < n; i++) d[i] = (d[i] as number) - a * (y[i] as number);
    }
    if (S.length > 0) {
      const y = Y[S.length - 1] as Float64Array;
      const gamma = dot(S[S.length - 1] as Float64Array, y) / dot(y, y);
      for (let i = 0; i < n; i++) d[i] = (d[i] as number) * gamma;
    } else {
      // First step: a steepest-descent move of at most 0.05 Å on the atom pushed hardest.
      const scale = 0.05 / Math.max(gmax, 1e-12);
      for (let i = 0; i < n; i++) d[i] = (d[i] as number) * scale;
    }
    for (let k = 0; k < S.length; k++) {
      const b = (rho[k] as number) * dot(Y[k] as Float64Array, d);
      const s = S[k] as Float64Array;
      const a = alpha[k] as number;
      for (let i = 0; i < n; i++) d[i] = (d[i] as number) + (a - b) * (s[i] as number);
    }
    for (let i = 0; i < n; i++) d[i] = -(d[i] as number);
    maskFrozen(d, free);
    let slope = dot(d, g);
    if (slope >= 0) {
      // Not a descent direction: restart from steepest descent.
      S.length = 0;
      Y.length = 0;
      rho.length = 0;
      for (let i = 0; i < n; i++) d[i] = (-(g[i] as number) * 0.05) / Math.max(gmax, 1e-12);
      slope = dot(d, g);
    }
    const longest = maxAtomNorm(d);
    if (longest > maxStep) {
      const s = maxStep / longest;
      for (let i = 0; i < n; i++) d[i] = (d[i] as number) * s;
      slope *= s;
    }
    let t = 1;
    let eNew = e;
    let accepted = false;
    for (let tries = 0; tries < 40; tries++) {
      for (let i = 0; i < n; i++) xNew[i] = (x[i] as number) + t * (d[i] as number);
      eNew = f(xNew, gNew);
      if (eNew <= e + 1e-4 * t * slope) {
        accepted = true;
        break;
      }
      // Near the minimum energy differences drown in rounding: accept a step that leaves the
      // energy unchanged to rounding and lowers the gradient.
      if (Math.abs(eNew - e) <= 1e-12 * Math.max(1, Math.abs(e))) {
        maskFrozen(gNew, free);
        if (maxAtomNorm(gNew) < gmax) {
          accepted = true;
          break;
        }
      }
      // Quadratic interpolation of the step, kept within [0.1 t, 0.5 t].
      const tq = (-slope * t * t) / (2 * (eNew - e - slope * t));
      t = Math.min(0.5 * t, Math.max(0.1 * t, Number.isFinite(tq) ? tq : 0.5 * t));
    }
    if (!accepted) {
      yield { step, energy: e, gmax, x: Float64Array.from(x), converged: false };
      return;
    }
    maskFrozen(gNew, free);
    const s = new Float64Array(n);
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      s[i] = (xNew[i] as number) - (x[i] as number);
      y[i] = (gNew[i] as number) - (g[i] as number);
    }
    const sy = dot(s, y);
    if (sy > 1e-12) {
      S.push(s);
      Y.push(y);
      rho.push(1 / sy);
      if (S.length > m) {
        S.shift();
        Y.shift();
        rho.shift();
      }
    }
    x.set(xNew);
    g.set(gNew);
    e = eNew;
    gmax = maxAtomNorm(g);
    const converged = gmax < options.gmax;
    yield { step, energy: e, gmax, x: Float64Array.from(x), converged };
    if (converged) return;
  }
}
