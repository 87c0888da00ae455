/** Seeded generators of test structures (pymatgen dictionaries), molecules and crystals. */
export const rng = (seed: number) => {
  let s = seed >>> 0 || 1;
  return () => {
    // xorshift32: deterministic across runs and platforms
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
};

const ELEMENTS = ["H", "C", "N", "O", "Si", "Fe", "Ni", "Cu", "Pt", "Li", "Na", "Cl", "Ti", "Zn", "S", "Xe"];

export interface GenOptions {
  n: number;
  periodic: boolean;
  seed: number;
  /** Some sites partially occupied by two species. */
  disorder?: boolean;
  /** Site properties (magmom) on every site. */
  properties?: boolean;
}

export const generate = ({ n, periodic, seed, disorder = false, properties = false }: GenOptions): Record<string, unknown> => {
  const r = rng(seed);
  const pick = () => ELEMENTS[Math.floor(r() * ELEMENTS.length)] as string;
  const edge = Math.cbrt(Math.max(n, 1) * 12);
  const sites = Array.from({ length: n }, (_, i) => {
    const el = pick();
    const species =
      disorder && i % 5 === 0
        ? [
            { element: el, occu: 0.5 },
            { element: el === "Fe" ? "Ni" : "Fe", occu: 0.25 },
          ]
        : [{ element: el, occu: 1 }];
    const site: Record<string, unknown> = { species, properties: properties ? { magmom: Math.round(r() * 50) / 10 } : {} };
    if (periodic) site.abc = [r(), r(), r()];
    else site.xyz = [r() * edge, r() * edge, r() * edge];
    return site;
  });
  if (!periodic) return { "@module": "pymatgen.core.structure", "@class": "Molecule", charge: 0, sites, properties: {} };
  // A general triclinic cell, not too skewed.
  const a = edge * (0.9 + 0.2 * r());
  const matrix = [
    [a, 0.1 * edge * r(), 0],
    [0.2 * edge * r(), edge * (0.9 + 0.2 * r()), 0.1 * edge * r()],
    [0.1 * edge * r(), 0, edge * (0.9 + 0.2 * r())],
  ];
  return { "@module": "pymatgen.core.structure", "@class": "Structure", charge: 0, lattice: { matrix }, sites, properties: {} };
};
