/**
 * Our readers against the field's own: every shared test file and a few synthetic edge cases are
 * read by pymatgen (CifParser, Poscar, Xdatcar, XYZ, Molecule.from_file, Structure.from_dict)
 * or ASE (extended XYZ, PDB: pymatgen has no reader for them), and what we write is read back by
 * the same reference readers. One Python process serves every case.
 */
import { readTestdata } from "atomstudio-testkit";
import { beforeAll, describe, expect, it } from "vitest";
import { initSymmetry, parseStructureFile, type Structure, writeStructureFile, writeStructureFrames } from "../src/index.ts";
import {
  type CompareOptions,
  compareFrame,
  framesOf,
  type OracleJob,
  type OracleResult,
  runIoOracle,
} from "./oracle/io-compare.ts";

interface Row {
  name: string;
  content: () => string;
  filename?: string;
  format: string;
  /** Reference readers, each compared with every frame we read. */
  readers: { reader: OracleJob["reader"]; frames?: "all" | "last"; opts?: CompareOptions }[];
  frames: number;
  /** Site properties that must match the reference's. */
  props?: string[];
}

const POSCAR_SD_VEL = `Si2 with selective dynamics and velocities
1.0
5.43 0.0 0.0
0.0 5.43 0.0
0.0 0.0 5.43
Si
2
Selective dynamics
Direct
0.0 0.0 0.0 T T F
0.25 0.25 0.25 F F F

  0.00100000 0.00200000 0.00300000
 -0.00100000 0.00000000 0.00400000
`;

const POSCAR_VASP4_LABELS = `NaCl written by VASP 4
1.0
0.0 2.845847 2.845847
2.845847 0.0 2.845847
2.845847 2.845847 0.0
1 1
Direct
0.0 0.0 0.0 Na
0.5 0.5 0.5 Cl
`;

/** VASP 4 without species anywhere but the comment line: pymatgen invents H, He; ASE reads the comment. */
const POSCAR_VASP4_COMMENT = `Fe2O3 hematite-like test cell
1.0
5.0 0.0 0.0
0.0 5.0 0.0
0.0 0.0 5.0
2 3
Direct
0.0 0.0 0.0
0.5 0.5 0.5
0.25 0.25 0.0
0.75 0.25 0.5
0.25 0.75 0.5
`;

const POSCAR_CART_SCALED = `CuAu, Cartesian, scale 2
2.0
1.5 0.0 0.0
0.0 1.5 0.0
0.1 0.0 1.6
Cu Au
1 1
Cartesian
0.0 0.0 0.0
0.75 0.75 0.0
`;

const POSCAR_VOLUME = `volume given as a negative scale
-64.0
1.0 0.0 0.0
0.0 1.0 0.0
0.0 0.0 1.0
Fe
2
Direct
0.0 0.0 0.0
0.5 0.5 0.5
`;

/** Symmetry with quoted operations (CIF 2 / DDLm names), oxidation states, labels only, text fields. */
const CIF_SYMOPS = `# a made-up triclinic salt
data_test_one
_audit_creation_method
;
 written by hand for the
 AtomStudio format tests
;
_cell_length_a 5.0(1)
_cell_length_b 6.0
_cell_length_c 7.0
_cell_angle_alpha 80.0
_cell_angle_beta 95.5(3)
_cell_angle_gamma 100.0
_space_group_name_H-M_alt 'P -1'
loop_
_space_group_symop_id
_space_group_symop_operation_xyz
1 'x, y, z'
2 '-x, -y, -z'
loop_
_atom_type_symbol
_atom_type_oxidation_number
Fe3+ 3
O2- -2
loop_
_atom_site_label
_atom_site_type_symbol
_atom_site_fract_x
_atom_site_fract_y
_atom_site_fract_z
_atom_site_occupancy
Fe1 Fe3+ 0.1 0.2 0.3 1
Fe2 Fe3+ 0.5 0.5 0.5 1
O1 O2- 0.3333 0.75 0.15(2) 1
O2 O2- 0.0 0.0 0.0 ?
`;

const CIF_TWO_BLOCKS = `data_first
_cell_length_a 4.0
_cell_length_b 4.0
_cell_length_c 4.0
_cell_angle_alpha 90
_cell_angle_beta 90
_cell_angle_gamma 90
_symmetry_space_group_name_H-M 'P 1'
loop_
_atom_site_label
_atom_site_fract_x
_atom_site_fract_y
_atom_site_fract_z
Cu1 0 0 0
Au1 0.5 0.5 0.5
data_second
_cell_length_a 3.0
_cell_length_b 3.5
_cell_length_c 4.0
_cell_angle_alpha 90
_cell_angle_beta 90
_cell_angle_gamma 120
loop_
_symmetry_equiv_pos_as_xyz
x,y,z
-x,-y,z
loop_
_atom_site_label
_atom_site_fract_x
_atom_site_fract_y
_atom_site_fract_z
_atom_site_occupancy
Ni1 0.1 0.2 0.25 0.5
Co1 0.1 0.2 0.25 0.5
Zn2 0.0 0.0 0.5 1.0
`;

/** A cell and sites, with only a space-group name or number: the operations come from tables. */
const cifBySymbol = (name: string, cell: number[], symmetry: string, sites: string): string =>
  [
    `data_${name}`,
    ...["a", "b", "c"].map((k, i) => `_cell_length_${k} ${cell[i]}`),
    ...["alpha", "beta", "gamma"].map((k, i) => `_cell_angle_${k} ${cell[i + 3]}`),
    symmetry,
    "loop_",
    "_atom_site_label",
    "_atom_site_fract_x",
    "_atom_site_fract_y",
    "_atom_site_fract_z",
    sites,
    "",
  ].join("\n");

const CIF_NO_SYMOPS = () =>
  readTestdata("structures/Cod_2100513.cif").replace(
    /loop_\n_symmetry_equiv_pos_site_id\n_symmetry_equiv_pos_as_xyz\n(.*\n){4}/,
    "",
  );

const ROWS: Row[] = [
  // pymatgen merges the Al/Nb sites and sorts by electronegativity within groups it builds by
  // composition; we match sites by species and position (periodic minimum image), not index.
  {
    name: "Cod_2100513.cif",
    content: () => readTestdata("structures/Cod_2100513.cif"),
    format: "cif",
    readers: [
      { reader: "cif", opts: { anyOrder: true } },
      { reader: "structure", opts: { anyOrder: true } },
    ],
    frames: 1,
  },
  {
    name: "POSCAR_LiFePO4",
    content: () => readTestdata("structures/POSCAR_LiFePO4"),
    format: "poscar",
    readers: [{ reader: "poscar" }, { reader: "structure" }],
    frames: 1,
  },
  {
    name: "benzene.xyz",
    content: () => readTestdata("structures/benzene.xyz"),
    format: "xyz",
    readers: [{ reader: "xyz" }, { reader: "molecule", frames: "last" }],
    frames: 1,
  },
  {
    name: "MOF-5.pdb",
    content: () => readTestdata("structures/MOF-5.pdb"),
    format: "pdb",
    readers: [{ reader: "pdb" }],
    frames: 1,
  },
  {
    name: "XDATCAR.MD",
    content: () => readTestdata("md/XDATCAR.MD"),
    format: "xdatcar",
    readers: [{ reader: "xdatcar" }],
    frames: 5,
  },
  // ASE drops the cell after the first END; we keep CRYST1 for every model (checked below).
  {
    name: "water.pdb",
    content: () => readTestdata("md/water.pdb.gz"),
    format: "pdb",
    readers: [{ reader: "pdb", opts: { skipLattice: true } }],
    frames: 100,
  },
  {
    name: "water.extxyz",
    content: () => readTestdata("md/water.extxyz.gz"),
    format: "extxyz",
    readers: [{ reader: "extxyz" }],
    frames: 100,
  },
  {
    name: "example_XDATCAR",
    content: () => readTestdata("md/example_XDATCAR.gz"),
    format: "xdatcar",
    readers: [{ reader: "xdatcar" }],
    frames: 140,
  },
  {
    name: "CONTCAR",
    content: () => readTestdata("lobster/NaCl/CONTCAR.gz"),
    format: "poscar",
    readers: [{ reader: "poscar" }, { reader: "structure" }],
    frames: 1,
  },
  {
    name: "POSCAR",
    content: () => POSCAR_SD_VEL,
    format: "poscar",
    readers: [{ reader: "poscar" }],
    frames: 1,
    props: ["selective_dynamics", "velocities"],
  },
  { name: "POSCAR.vasp4", content: () => POSCAR_VASP4_LABELS, format: "poscar", readers: [{ reader: "poscar" }], frames: 1 },
  {
    name: "Fe2O3.vasp4",
    content: () => POSCAR_VASP4_COMMENT,
    format: "poscar",
    readers: [{ reader: "asevasp" }],
    frames: 1,
  },
  { name: "CuAu.vasp", content: () => POSCAR_CART_SCALED, format: "poscar", readers: [{ reader: "poscar" }], frames: 1 },
  { name: "Fe.vasp", content: () => POSCAR_VOLUME, format: "poscar", readers: [{ reader: "poscar" }], frames: 1 },
  {
    name: "symops.cif",
    content: () => CIF_SYMOPS,
    format: "cif",
    readers: [{ reader: "cif", opts: { anyOrder: true } }],
    frames: 1,
  },
  {
    name: "two-blocks.cif",
    content: () => CIF_TWO_BLOCKS,
    format: "cif",
    readers: [{ reader: "cif", opts: { anyOrder: true } }],
    frames: 2,
  },
  // pymatgen builds the operations from its own tables; we take them from moyo's.
  {
    name: "Cod_2100513 without symops (H-M 'P 1 21/n 1').cif",
    content: CIF_NO_SYMOPS,
    format: "cif",
    readers: [{ reader: "cif", opts: { anyOrder: true } }],
    frames: 1,
  },
  {
    name: "NaCl by number.cif",
    content: () =>
      cifBySymbol("NaCl", [5.64, 5.64, 5.64, 90, 90, 90], "_space_group_IT_number 225", "Na1 0 0 0\nCl1 0.5 0.5 0.5"),
    format: "cif",
    readers: [{ reader: "cif", opts: { anyOrder: true } }],
    frames: 1,
  },
  {
    name: "Si by H-M name.cif",
    content: () => cifBySymbol("Si", [5.43, 5.43, 5.43, 90, 90, 90], "_symmetry_space_group_name_H-M 'F d -3 m'", "Si1 0 0 0"),
    format: "cif",
    readers: [{ reader: "cif", opts: { anyOrder: true } }],
    frames: 1,
  },
  {
    name: "Bi2Se3 R-3m hexagonal.cif",
    content: () =>
      cifBySymbol(
        "Bi2Se3",
        [4.14, 4.14, 28.64, 90, 90, 120],
        "_symmetry_space_group_name_H-M 'R -3 m'",
        "Bi1 0 0 0.4008\nSe1 0 0 0\nSe2 0 0 0.2117",
      ),
    format: "cif",
    readers: [{ reader: "cif", opts: { anyOrder: true } }],
    frames: 1,
  },
  {
    name: "P21/c by Hall symbol.cif",
    content: () =>
      cifBySymbol(
        "hall",
        [5.1, 6.2, 7.3, 90, 101.5, 90],
        // pymatgen does not read Hall symbols (it would fall back to P1); the number lets it agree.
        "_symmetry_space_group_name_Hall '-P 2ybc'\n_space_group_IT_number 14",
        "Fe1 0.1 0.2 0.3\nO1 0.4 0.15 0.05",
      ),
    format: "cif",
    readers: [{ reader: "cif", opts: { anyOrder: true } }],
    frames: 1,
  },
];

/** Formats we write for a row's structure, with the reference reader for each. */
const writeTargets = (s: Structure, frames: Structure[]): { format: string; reader: OracleJob["reader"]; multi: boolean }[] => {
  const ordered = frames.every((f) => f.species.every((sp) => sp.length === 1 && sp[0]!.occu === 1));
  const out: { format: string; reader: OracleJob["reader"]; multi: boolean }[] = [
    { format: "json", reader: "json", multi: false },
  ];
  if (s.lattice) out.push({ format: "cif", reader: "cif", multi: false });
  if (ordered) {
    out.push(
      { format: "xyz", reader: "xyz", multi: frames.length > 1 },
      { format: "extxyz", reader: "extxyz", multi: frames.length > 1 },
    );
    out.push({ format: "pdb", reader: "pdb", multi: frames.length > 1 });
    if (s.lattice) out.push({ format: "poscar", reader: "poscar", multi: false });
    if (s.lattice && frames.length > 1) out.push({ format: "xdatcar", reader: "xdatcar", multi: true });
  }
  return out;
};

interface Parsed {
  frames: Structure[];
  format: string;
  written: { format: string; text: string; reread: Structure[] }[];
}

const parsed = new Map<string, Parsed>();
let oracle: Record<string, OracleResult> = {};

beforeAll(async () => {
  await initSymmetry();
  const jobs: OracleJob[] = [];
  for (const row of ROWS) {
    const content = row.content();
    const r = parseStructureFile(content, { filename: row.name });
    const frames = r.frames ?? [r.structure];
    const written: Parsed["written"] = [];
    for (const t of writeTargets(r.structure, frames)) {
      // Long trajectories are written in part: the reference readers are slow on them.
      const list = t.multi ? frames.slice(0, 5) : [r.structure];
      const text = t.multi ? writeStructureFrames(list, t.format) : writeStructureFile(r.structure, t.format);
      const back = parseStructureFile(text, { format: t.format });
      written.push({ format: t.format, text, reread: back.frames ?? [back.structure] });
      jobs.push({ id: `${row.name}>${t.format}`, reader: t.reader, content: text, name: `written.${t.format}` });
    }
    parsed.set(row.name, { frames, format: r.format, written });
    for (const rd of row.readers) jobs.push({ id: `${row.name}:${rd.reader}`, reader: rd.reader, content, name: row.name });
  }
  oracle = await runIoOracle(jobs);
}, 600_000);

describe("reading agrees with pymatgen / ASE", () => {
  it.each(ROWS)("$name", (row) => {
    const p = parsed.get(row.name)!;
    expect(p.format).toBe(row.format);
    expect(p.frames.length).toBe(row.frames);
    for (const rd of row.readers) {
      const ref = framesOf(oracle[`${row.name}:${rd.reader}`]);
      if (rd.frames === "last") {
        expect(compareFrame(p.frames[p.frames.length - 1]!, ref[0]!, rd.opts), `${rd.reader}`).toEqual([]);
        continue;
      }
      expect(ref.length, `${rd.reader} frame count`).toBe(p.frames.length);
      p.frames.forEach((s, k) => {
        expect(compareFrame(s, ref[k]!, rd.opts), `${rd.reader} frame ${k}`).toEqual([]);
      });
      for (const prop of row.props ?? []) {
        const mine = p.frames[0]!.siteProperties.map((sp) => sp[prop]);
        expect(mine, `site property ${prop}`).toEqual(ref[0]!.props[prop]);
      }
    }
  });

  it("keeps the CRYST1 of the first model for every model of water.pdb", () => {
    const frames = parsed.get("water.pdb")!.frames;
    const ref = framesOf(oracle["water.pdb:pdb"])[0]!;
    expect(compareFrame(frames[0]!, ref)).toEqual([]);
    for (const f of frames) expect(f.lattice?.matrix).toEqual(frames[0]!.lattice?.matrix);
  });
});

describe("what we write, pymatgen / ASE read back", () => {
  const cases = ROWS.map((r) => r.name);
  it.each(cases)("%s", (name) => {
    const p = parsed.get(name)!;
    expect(p.written.length).toBeGreaterThan(0);
    for (const w of p.written) {
      const ref = framesOf(oracle[`${name}>${w.format}`]);
      expect(ref.length, `${w.format} frame count`).toBe(w.reread.length);
      // Compared with our own reading of the same text: CIF and PDB store cell parameters, so the
      // orientation is the reader's convention; the round-trip tests compare with the original.
      w.reread.forEach((s, k) => {
        const opts: CompareOptions = { anyOrder: w.format === "cif" };
        expect(compareFrame(s, ref[k]!, opts), `${w.format} frame ${k}`).toEqual([]);
      });
    }
  });
});
