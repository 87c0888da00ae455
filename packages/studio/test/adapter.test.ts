/** The viewer adapter: drawn atoms ↔ sites, periodic images, bonds across the cell boundary. */
import { fromDict, supercell } from "atomstudio-core";
import { describe, expect, it } from "vitest";
import { buildScene, sitesOfAtoms } from "../src/viewer/adapter.ts";
import { viewerToolDefinitions, viewerTools } from "../src/viewer/tools.ts";

const cubic = (a: number, sites: [string, number[]][]) => ({
  lattice: {
    matrix: [
      [a, 0, 0],
      [0, a, 0],
      [0, 0, a],
    ],
  },
  sites: sites.map(([element, abc]) => ({ species: [{ element, occu: 1 }], abc })),
});

const dist = (p: { x: number; y: number; z: number }, q: { x: number; y: number; z: number }) =>
  Math.hypot(p.x - q.x, p.y - q.y, p.z - q.z);

describe("viewer adapter", () => {
  it("draws every site once, itself first, and maps every drawn atom back to its site", () => {
    const s = fromDict(
      cubic(3.6, [
        ["Cu", [0, 0, 0]],
        ["Cu", [0.5, 0.5, 0]],
        ["Cu", [0.5, 0, 0.5]],
        ["Cu", [0, 0.5, 0.5]],
      ]),
    );
    const scene = buildScene(s);
    for (let i = 0; i < s.length; i++) {
      const home = scene.atoms[scene.siteToAtom[i] as number]!;
      expect(home).toMatchObject({ site: i, image: false, offset: [0, 0, 0] });
      expect(scene.siteAtoms[i]![0]).toBe(scene.siteToAtom[i]);
    }
    expect(scene.atoms.filter((a) => !a.image)).toHaveLength(4);
    scene.atoms.forEach((a, id) => {
      expect(scene.atomToSite[id]).toBe(a.site);
      expect(scene.siteAtoms[a.site]).toContain(id);
    });
  });

  it("repeats atoms on faces, edges and corners of the cell as images", () => {
    const s = fromDict(
      cubic(4, [
        ["Na", [0, 0, 0]],
        ["Cl", [0.5, 0.5, 0.5]],
        ["O", [0.5, 0.5, 0]],
        ["H", [0, 0.5, 0.5]],
      ]),
    );
    const scene = buildScene(s, { bondedImages: false });
    const count = (site: number) => scene.siteAtoms[site]!.length;
    expect(count(0)).toBe(8); // corner
    expect(count(1)).toBe(1); // body centre
    expect(count(2)).toBe(2); // face
    expect(count(3)).toBe(2); // face
    const corners = scene.siteAtoms[0]!.map((id) => scene.atoms[id]!);
    expect(corners.filter((a) => a.image)).toHaveLength(7);
    for (const a of corners) for (const v of [a.x, a.y, a.z]) expect([0, 4]).toContain(Math.round(v * 1e6) / 1e6);
    // Near-boundary (within tolerance) counts; well inside does not.
    const near = buildScene(fromDict(cubic(4, [["Na", [0.999, 0.3, 0.3]]])), { bondedImages: false });
    expect(near.siteAtoms[0]).toHaveLength(2);
    expect(near.atoms[1]!.x).toBeCloseTo(0.999 * 4 - 4, 9);
    const inside = buildScene(fromDict(cubic(4, [["Na", [0.9, 0.3, 0.3]]])), { bondedImages: false });
    expect(inside.siteAtoms[0]).toHaveLength(1);
  });

  it("selections from drawn atoms are site indices: image atoms collapse onto their site", () => {
    const s = fromDict(
      cubic(4, [
        ["Na", [0, 0, 0]],
        ["Cl", [0.5, 0.5, 0.5]],
      ]),
    );
    const scene = buildScene(s);
    const all = scene.atoms.map((_, id) => id);
    expect(scene.atoms.length).toBeGreaterThan(2);
    expect(sitesOfAtoms(scene, all)).toEqual([0, 1]);
    const images = all.filter((id) => scene.atoms[id]!.image);
    expect(sitesOfAtoms(scene, images).every((i) => i < s.length)).toBe(true);
  });

  it("draws bonds across the cell boundary, to images, at the right length", () => {
    // An H2 molecule split by the face x = 0 of a 4 Å cell: H at x = 3.68 and x = 0.32, 0.64 Å apart through the face.
    const s = fromDict(
      cubic(4, [
        ["H", [0.92, 0.5, 0.5]],
        ["H", [0.08, 0.5, 0.5]],
      ]),
    );
    const scene = buildScene(s);
    expect(scene.bonds.length).toBeGreaterThan(0);
    for (const b of scene.bonds) {
      const [p, q] = [scene.atoms[b.a]!, scene.atoms[b.b]!];
      expect(dist(p, q)).toBeCloseTo(0.64, 6);
      expect(p.site).not.toBe(q.site);
      // One end is an image: the bond crosses the face x = 0 (or x = a).
      expect(p.image || q.image).toBe(true);
    }
    // Each site gets its bond, drawn to the image of the other.
    const bondedSites = new Set(
      scene.bonds.flatMap((b) => [scene.atoms[b.a]!, scene.atoms[b.b]!].filter((a) => !a.image).map((a) => a.site)),
    );
    expect(bondedSites).toEqual(new Set([0, 1]));
  });

  it("finds every bond of a periodic crystal: each Na in rock salt has six Cl neighbours", () => {
    const a = 5.64;
    const na = [
      [0, 0, 0],
      [0.5, 0.5, 0],
      [0.5, 0, 0.5],
      [0, 0.5, 0.5],
    ];
    const sites: [string, number[]][] = [
      ...na.map((p): [string, number[]] => ["Na", p]),
      ...na.map((p): [string, number[]] => ["Cl", [(p[0]! + 0.5) % 1, p[1]!, p[2]!]]),
    ];
    const scene = buildScene(fromDict(cubic(a, sites)));
    const degree = new Map<number, number>();
    for (const b of scene.bonds) {
      expect(dist(scene.atoms[b.a]!, scene.atoms[b.b]!)).toBeCloseTo(a / 2, 6);
      for (const id of [b.a, b.b]) degree.set(id, (degree.get(id) ?? 0) + 1);
    }
    for (let i = 0; i < 8; i++) expect(degree.get(scene.siteToAtom[i] as number)).toBe(6);
    // No duplicate bonds.
    expect(new Set(scene.bonds.map((b) => `${b.a}-${b.b}`)).size).toBe(scene.bonds.length);
  });

  it("bonds a one-atom cell to its own images (small cells need several image shells)", () => {
    const scene = buildScene(fromDict(cubic(1.5, [["C", [0.5, 0.5, 0.5]]])));
    const home = scene.siteToAtom[0] as number;
    const own = scene.bonds.filter((b) => b.a === home || b.b === home);
    expect(own).toHaveLength(6);
  });

  it("draws a molecule with no cell and no images", () => {
    const water = {
      "@class": "Molecule",
      sites: [
        { species: [{ element: "O", occu: 1 }], xyz: [0, 0, 0.1173] },
        { species: [{ element: "H", occu: 1 }], xyz: [0, 0.7572, -0.4692] },
        { species: [{ element: "H", occu: 1 }], xyz: [0, -0.7572, -0.4692] },
      ],
    };
    const scene = buildScene(water);
    expect(scene.atoms).toHaveLength(3);
    expect(scene.cellEdges).toHaveLength(0);
    expect(scene.bonds.map((b) => [b.a, b.b]).sort((x, y) => x[1]! - y[1]!)).toEqual([
      [0, 1],
      [0, 2],
    ]);
  });

  it("draws the 12 cell edges", () => {
    const scene = buildScene(fromDict(cubic(3, [["Cu", [0.3, 0.3, 0.3]]])));
    expect(scene.cellEdges).toHaveLength(12);
    for (const [p, q] of scene.cellEdges) expect(Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2])).toBeCloseTo(3, 9);
  });

  it("handles 10,000 atoms quickly", () => {
    const base = fromDict(
      cubic(3.615, [
        ["Cu", [0, 0, 0]],
        ["Cu", [0.5, 0.5, 0]],
        ["Cu", [0.5, 0, 0.5]],
        ["Cu", [0, 0.5, 0.5]],
      ]),
    );
    const big = supercell(supercell(base, [5, 5, 5]), [2, 2, 5]);
    expect(big.length).toBe(10_000);
    const t0 = performance.now();
    const scene = buildScene(big);
    const ms = performance.now() - t0;
    expect(scene.atoms.length).toBeGreaterThan(10_000);
    // fcc: 12 nearest neighbours per interior atom → about 6 bonds per atom.
    expect(scene.bonds.length).toBeGreaterThan(55_000);
    expect(ms).toBeLessThan(20_000);
  });
});

describe("viewer tool registry", () => {
  it("defines every client-only tool of the interface, each with a JSON schema and an implementation", () => {
    const names = [
      "toggle_atoms",
      "toggle_bonds",
      "toggle_unit_cell",
      "toggle_labels",
      "toggle_force_vectors",
      "reset_camera",
      "set_rotation",
      "select_atoms",
      "select_by_element",
      "clear_selection",
      "set_atom_radius",
      "set_bond_color",
    ];
    expect(viewerToolDefinitions.map((d) => d.name).sort()).toEqual([...names].sort());
    for (const d of viewerToolDefinitions) {
      expect(d.input_schema.type).toBe("object");
      expect(typeof viewerTools[d.name]).toBe("function");
    }
  });
});
