/** Structures that tests and benchmarks build (pymatgen dictionaries). */

type SiteDict = { species: Array<{ element: string; occu: number }>; xyz: number[] };

const FCC_BASIS = [
  [0, 0, 0],
  [0.5, 0.5, 0],
  [0.5, 0, 0.5],
  [0, 0.5, 0.5],
] as const;

/** The conventional fcc cell (4 atoms, cubic, edge `a`) as pymatgen writes a Structure. */
export const fccCell = ({ element = "Cu", a = 3.61 } = {}) => ({
  "@module": "pymatgen.core.structure",
  "@class": "Structure",
  charge: 0,
  lattice: {
    matrix: [
      [a, 0, 0],
      [0, a, 0],
      [0, 0, a],
    ],
    pbc: [true, true, true],
  },
  properties: {},
  sites: FCC_BASIS.map((abc) => ({ species: [{ element, occu: 1 }], abc: [...abc], label: element, properties: {} })),
});

/**
 * A cluster cut from an fcc crystal (reps^3 conventional cells, 4 reps^3 atoms), every atom
 * nudged deterministically by up to `jitter` Angstrom, so a relaxation has work to do.
 */
export const fccCluster = (
  reps: number,
  { element = "Cu", a = 3.61, jitter = 0.15 } = {},
): { "@class": "Molecule"; sites: SiteDict[] } => {
  const sites: SiteDict[] = [];
  let k = 0;
  for (let i = 0; i < reps; i++)
    for (let j = 0; j < reps; j++)
      for (let l = 0; l < reps; l++)
        for (const [x, y, z] of FCC_BASIS) {
          k++;
          const d = (s: number) => jitter * Math.sin(k * s);
          sites.push({
            species: [{ element, occu: 1 }],
            xyz: [(i + x) * a + d(1.3), (j + y) * a + d(2.1), (l + z) * a + d(3.7)],
          });
        }
  return { "@class": "Molecule", sites };
};

/** A CIF whose listed operations are `nOps` translations along x, with `nSites` sites each on its own orbit. */
export const cifBomb = (nOps: number, nSites: number, ops?: string[]): string =>
  [
    "data_bomb",
    "_cell_length_a 40",
    "_cell_length_b 40",
    "_cell_length_c 40",
    "_cell_angle_alpha 90",
    "_cell_angle_beta 90",
    "_cell_angle_gamma 90",
    "loop_",
    "_symmetry_equiv_pos_as_xyz",
    ...(ops ?? Array.from({ length: nOps }, (_, k) => `x+${k}/${nOps},y,z`)),
    "loop_",
    "_atom_site_label",
    "_atom_site_type_symbol",
    "_atom_site_fract_x",
    "_atom_site_fract_y",
    "_atom_site_fract_z",
    ...Array.from(
      { length: nSites },
      (_, i) => `C${i} C 0 ${((i % 100) / 100 + 0.001).toFixed(4)} ${(Math.floor(i / 100) / 100 + 0.001).toFixed(4)}`,
    ),
  ].join("\n");
