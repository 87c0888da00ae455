/** Property tests of the editing and building operations (fast-check). */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AtomStudioError,
  addAtoms,
  deleteAtoms,
  fromDict,
  merge,
  moveAtoms,
  type Structure,
  supercell,
  toDict,
} from "../src/index.ts";
import { generate } from "./generate.ts";

const SYMBOLS = ["H", "C", "O", "Fe", "Pt", "Xe"];
const coord = fc.double({ min: -50, max: 50, noNaN: true, noDefaultInfinity: true });
const vec = fc.tuple(coord, coord, coord);
const structureArb = fc
  .record({ n: fc.integer({ min: 1, max: 40 }), periodic: fc.boolean(), seed: fc.integer({ min: 1, max: 1e9 }) })
  .map((o) => fromDict(generate(o)));

const sameStructure = (a: Structure, b: Structure, tol: number) => {
  expect(b.length).toBe(a.length);
  expect(b.species).toEqual(a.species);
  expect(b.labels).toEqual(a.labels);
  for (let i = 0; i < a.cart.length; i++)
    expect(Math.abs((a.cart[i] as number) - (b.cart[i] as number))).toBeLessThanOrEqual(tol);
};

describe("properties", () => {
  it("add then delete returns the original", () => {
    fc.assert(
      fc.property(
        structureArb,
        fc.array(fc.record({ element: fc.constantFrom(...SYMBOLS), xyz: vec }), { minLength: 1, maxLength: 5 }),
        (s, atoms) => {
          const { structure, addedIndices } = addAtoms(s, atoms);
          sameStructure(s, deleteAtoms(structure, addedIndices).structure, 0);
        },
      ),
    );
  });

  it("a displacement and its negative return the original", () => {
    fc.assert(
      fc.property(structureArb, vec, fc.integer({ min: 0, max: 1e6 }), (s, d, k) => {
        const idx = [k % s.length, (k * 7) % s.length];
        const there = moveAtoms(s, idx, d).structure;
        const back = moveAtoms(there, idx, [-d[0], -d[1], -d[2]]).structure;
        sameStructure(s, back, 1e-12);
      }),
    );
  });

  it("supercell atom count is the product of the factors", () => {
    fc.assert(
      fc.property(
        structureArb.filter((s) => s.lattice !== null),
        fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 })),
        (s, f) => {
          const out = supercell(s, f);
          expect(out.length).toBe(s.length * f[0] * f[1] * f[2]);
          expect(out.lattice?.volume).toBeCloseTo((s.lattice?.volume ?? 0) * f[0] * f[1] * f[2], 6);
        },
      ),
      { numRuns: 50 },
    );
  });

  it("merge counts add up and the incoming centre lands on the position", () => {
    fc.assert(
      fc.property(structureArb, structureArb, vec, fc.constantFrom("preserve_lattice", "to_molecule"), (a, b, p, mode) => {
        const out = merge(a, b, p, mode);
        expect(out.length).toBe(a.length + b.length);
        expect(out.lattice === null).toBe(mode === "to_molecule" || a.lattice === null);
        const c = [0, 0, 0];
        for (let i = a.length; i < out.length; i++)
          for (let j = 0; j < 3; j++) c[j] = (c[j] as number) + (out.cart[3 * i + j] as number);
        for (let j = 0; j < 3; j++) expect((c[j] as number) / b.length).toBeCloseTo(p[j] as number, 8);
      }),
    );
  });

  it("toDict then fromDict is the identity", () => {
    fc.assert(
      fc.property(structureArb, (s) => {
        sameStructure(s, fromDict(toDict(s)), 1e-9);
      }),
    );
  });

  it("random malformed structures only ever throw AtomStudioError", () => {
    const junk = fc.oneof(
      fc.constant(null),
      fc.double(),
      fc.string(),
      fc.boolean(),
      fc.constant(Number.NaN),
      fc.constant(Number.POSITIVE_INFINITY),
      fc.array(fc.double(), { maxLength: 4 }),
      fc.object(),
    );
    const mutate = fc.tuple(
      structureArb,
      fc.constantFrom("sites", "lattice", "species", "abc", "xyz", "occu", "element", "matrix", "charge", "label", "properties"),
      junk,
    );
    fc.assert(
      fc.property(mutate, ([s, key, value]) => {
        const d = structuredClone(toDict(s)) as unknown as Record<string, unknown>;
        const site = (d.sites as Record<string, unknown>[])[0] as Record<string, unknown>;
        const sp = (site.species as Record<string, unknown>[])[0] as Record<string, unknown>;
        if (key in d) d[key] = value;
        else if (key in site) site[key] = value;
        else if (key in sp) sp[key] = value;
        else if (key === "matrix" && d.lattice) (d.lattice as Record<string, unknown>).matrix = value;
        try {
          fromDict(d);
        } catch (e) {
          expect(e).toBeInstanceOf(AtomStudioError);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("non-finite numbers are INVALID_STRUCTURE", () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() =>
        fromDict({ "@class": "Molecule", sites: [{ species: [{ element: "O", occu: 1 }], xyz: [0, bad, 0] }] }),
      ).toThrow(expect.objectContaining({ code: "INVALID_STRUCTURE" }));
    }
  });
});
