/** A few example structures, as the reduced dictionaries the core reads (lattice matrix + sites). */
type Site = [string, [number, number, number]];

const crystal = (matrix: number[][], sites: Site[]) => ({
  "@module": "pymatgen.core.structure",
  "@class": "Structure",
  lattice: { matrix },
  sites: sites.map(([element, abc]) => ({ species: [{ element, occu: 1 }], abc })),
});

const molecule = (sites: Site[]) => ({
  "@module": "pymatgen.core.structure",
  "@class": "Molecule",
  sites: sites.map(([element, xyz]) => ({ species: [{ element, occu: 1 }], xyz })),
});

const cubic = (a: number) => [
  [a, 0, 0],
  [0, a, 0],
  [0, 0, a],
];

const fcc = (el: string): Site[] => [
  [el, [0, 0, 0]],
  [el, [0.5, 0.5, 0]],
  [el, [0.5, 0, 0.5]],
  [el, [0, 0.5, 0.5]],
];

export interface Example {
  id: string;
  name: string;
  dict: Record<string, unknown>;
}

export const EXAMPLES: Example[] = [
  {
    id: "nacl",
    name: "NaCl (rock salt)",
    dict: crystal(cubic(5.64), [...fcc("Na"), ...fcc("Cl").map(([e, [x, y, z]]): Site => [e, [(x + 0.5) % 1, y, z]])]),
  },
  { id: "cu", name: "Cu (fcc)", dict: crystal(cubic(3.615), fcc("Cu")) },
  { id: "pt", name: "Pt (fcc)", dict: crystal(cubic(3.924), fcc("Pt")) },
  {
    id: "si",
    name: "Si (diamond)",
    dict: crystal(cubic(5.431), [...fcc("Si"), ...fcc("Si").map(([e, [x, y, z]]): Site => [e, [x + 0.25, y + 0.25, z + 0.25]])]),
  },
  {
    id: "tio2",
    name: "TiO2 (rutile)",
    dict: crystal(
      [
        [4.594, 0, 0],
        [0, 4.594, 0],
        [0, 0, 2.959],
      ],
      [
        ["Ti", [0, 0, 0]],
        ["Ti", [0.5, 0.5, 0.5]],
        ["O", [0.3053, 0.3053, 0]],
        ["O", [0.6947, 0.6947, 0]],
        ["O", [0.8053, 0.1947, 0.5]],
        ["O", [0.1947, 0.8053, 0.5]],
      ],
    ),
  },
  {
    id: "graphene",
    name: "Graphene",
    dict: crystal(
      [
        [2.468, 0, 0],
        [-1.234, 2.1373, 0],
        [0, 0, 15],
      ],
      [
        ["C", [1 / 3, 2 / 3, 0.5]],
        ["C", [2 / 3, 1 / 3, 0.5]],
      ],
    ),
  },
  {
    id: "water",
    name: "Water (molecule)",
    dict: molecule([
      ["O", [0, 0, 0.1173]],
      ["H", [0, 0.7572, -0.4692]],
      ["H", [0, -0.7572, -0.4692]],
    ]),
  },
  {
    id: "benzene",
    name: "Benzene (molecule)",
    dict: molecule(
      Array.from({ length: 12 }, (_, i): Site => {
        const k = i % 6;
        const r = i < 6 ? 1.397 : 2.481;
        const t = (k * Math.PI) / 3;
        return [i < 6 ? "C" : "H", [r * Math.cos(t), r * Math.sin(t), 0]];
      }),
    ),
  },
];

export const exampleById = (id: string): Example | undefined => EXAMPLES.find((e) => e.id === id);
