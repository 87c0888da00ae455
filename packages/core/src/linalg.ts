/** Small dense 3x3 helpers shared by the building operations (row-vector convention). */
import type { Mat3, Vec3 } from "./lattice.ts";

export const det3 = (m: readonly (readonly number[])[]): number => {
  const [a, b, c] = m as [number[], number[], number[]];
  return (
    (a[0] as number) * ((b[1] as number) * (c[2] as number) - (b[2] as number) * (c[1] as number)) -
    (a[1] as number) * ((b[0] as number) * (c[2] as number) - (b[2] as number) * (c[0] as number)) +
    (a[2] as number) * ((b[0] as number) * (c[1] as number) - (b[1] as number) * (c[0] as number))
  );
};

export const inv3 = (m: readonly (readonly number[])[]): Mat3 => {
  const [a, b, c] = m as [Vec3, Vec3, Vec3];
  const inv = 1 / det3(m);
  return [
    [(b[1] * c[2] - b[2] * c[1]) * inv, (a[2] * c[1] - a[1] * c[2]) * inv, (a[1] * b[2] - a[2] * b[1]) * inv],
    [(b[2] * c[0] - b[0] * c[2]) * inv, (a[0] * c[2] - a[2] * c[0]) * inv, (a[2] * b[0] - a[0] * b[2]) * inv],
    [(b[0] * c[1] - b[1] * c[0]) * inv, (a[1] * c[0] - a[0] * c[1]) * inv, (a[0] * b[1] - a[1] * b[0]) * inv],
  ];
};

/** A·B for 3x3 matrices. */
export const mul3 = (a: readonly (readonly number[])[], b: readonly (readonly number[])[]): Mat3 => {
  const out: Mat3 = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ];
  for (let i = 0; i < 3; i++)
    for (let j = 0; j < 3; j++) {
      let s = 0;
      for (let k = 0; k < 3; k++) s += (a[i]?.[k] as number) * (b[k]?.[j] as number);
      (out[i] as Vec3)[j] = s;
    }
  return out;
};

/** Row vector times matrix: v·M. */
export const vecMul = (v: ArrayLike<number>, m: readonly (readonly number[])[], out: Vec3 = [0, 0, 0]): Vec3 => {
  const x = v[0] as number,
    y = v[1] as number,
    z = v[2] as number;
  for (let j = 0; j < 3; j++) out[j] = x * (m[0]?.[j] as number) + y * (m[1]?.[j] as number) + z * (m[2]?.[j] as number);
  return out;
};

export const gcd = (a: number, b: number): number => {
  let x = Math.abs(a);
  let y = Math.abs(b);
  while (y) [x, y] = [y, x % y];
  return x;
};

export const lcm = (a: number, b: number): number => (a === 0 || b === 0 ? 0 : Math.abs((a / gcd(a, b)) * b));

/** numpy's round: half to even (only exact halves differ from Math.round). */
export const roundHalfEven = (x: number): number => {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
};

/** numpy.isclose with its default tolerances. */
export const isClose = (a: number, b: number, rtol = 1e-5, atol = 1e-8): boolean => Math.abs(a - b) <= atol + rtol * Math.abs(b);

/** Lengths of the rows of a 3x3 matrix. */
export const rowLengths = (m: readonly (readonly number[])[]): Vec3 =>
  m.map((r) => Math.sqrt((r[0] as number) ** 2 + (r[1] as number) ** 2 + (r[2] as number) ** 2)) as Vec3;

/** alpha, beta, gamma in degrees of the lattice whose rows are `m`, computed as pymatgen does. */
export const rowAngles = (m: readonly (readonly number[])[]): Vec3 => {
  const l = rowLengths(m);
  const out: number[] = [];
  for (let d = 0; d < 3; d++) {
    const j = (d + 1) % 3;
    const k = (d + 2) % 3;
    const a = m[j] as number[];
    const b = m[k] as number[];
    const dot = (a[0] as number) * (b[0] as number) + (a[1] as number) * (b[1] as number) + (a[2] as number) * (b[2] as number);
    const cos = Math.min(1, Math.max(-1, dot / ((l[j] as number) * (l[k] as number))));
    out.push((Math.acos(cos) * 180) / Math.PI);
  }
  return out as Vec3;
};
