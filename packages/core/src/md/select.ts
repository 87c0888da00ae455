/** Atom selections for trajectory analysis: by 0-based index or by element, never empty. */
import { fail } from "../errors.ts";
import type { Trajectory } from "../trajectory/trajectory.ts";

export interface AtomSelection {
  indices?: readonly number[] | undefined;
  elements?: readonly string[] | undefined;
}

/** Sorted atom indices of a selection (all atoms when neither field is given). */
export const selectAtoms = (
  traj: Pick<Trajectory, "elements" | "nAtoms">,
  sel: AtomSelection | undefined,
  what = "selection",
): Int32Array => {
  const n = traj.nAtoms;
  if (sel?.indices && sel.elements) fail("INVALID_SELECTION", `${what}: give indices or elements, not both`, { selection: what });
  if (sel?.indices) {
    const seen = new Uint8Array(n);
    for (const i of sel.indices) {
      if (!Number.isInteger(i) || i < 0 || i >= n)
        fail("INVALID_INDEX", `${what}: atom index ${i} is out of range (0–${n - 1})`, { selection: what, index: i });
      seen[i] = 1;
    }
    const out: number[] = [];
    for (let i = 0; i < n; i++) if (seen[i]) out.push(i);
    if (out.length === 0) fail("EMPTY_SELECTION", `${what} selects no atoms`, { selection: what });
    return Int32Array.from(out);
  }
  if (sel?.elements) {
    const want = new Set(sel.elements.map((e) => e.trim().toLowerCase()));
    const out: number[] = [];
    traj.elements.forEach((e, i) => {
      if (want.has(e.toLowerCase())) out.push(i);
    });
    if (out.length === 0)
      fail(
        "EMPTY_SELECTION",
        `${what}: no atom is ${[...want].join(" or ")} (the trajectory has ${[...new Set(traj.elements)].join(", ")})`,
        {
          selection: what,
          elements: sel.elements,
        },
      );
    return Int32Array.from(out);
  }
  return Int32Array.from({ length: n }, (_, i) => i);
};
