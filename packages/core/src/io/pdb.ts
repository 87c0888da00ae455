/**
 * PDB: ATOM/HETATM records, CRYST1, several models (MODEL/ENDMDL, or END between frames as
 * CP2K and VMD write them). A CRYST1 holds for every later model until another one appears
 * (ASE forgets it after each END; trajectories usually give it once). CRYST1 1 1 1 90 90 90 is
 * the PDB's "no cell" placeholder and gives a molecule. Cartesian coordinates are in the PDB
 * frame (a along x, b in the xy plane), so the lattice is built in that orientation.
 */
import { Lattice, type Mat3 } from "../lattice.ts";
import { speciesOf } from "../pymatgen.ts";
import { type SiteSpecies, Structure } from "../structure.ts";
import {
  extensionOf,
  FrameBudget,
  fmt,
  formatError,
  head,
  normalizeElement,
  orderedElements,
  parseNum,
  type ReadLimits,
  type StructureFormat,
  scanNumbers,
  splitLines,
  tokens,
} from "./util.ts";

const RAD = Math.PI / 180;

/** ASE's `cellpar_to_cell` (the PDB convention), exact zeros for right angles. */
export const cellFromParameters = (a: number, b: number, c: number, alpha: number, beta: number, gamma: number): Mat3 => {
  const eps = 2.842170943040401e-14;
  const ca = Math.abs(Math.abs(alpha) - 90) < eps ? 0 : Math.cos(alpha * RAD);
  const cb = Math.abs(Math.abs(beta) - 90) < eps ? 0 : Math.cos(beta * RAD);
  let cg: number;
  let sg: number;
  if (Math.abs(gamma - 90) < eps) [cg, sg] = [0, 1];
  else if (Math.abs(gamma + 90) < eps) [cg, sg] = [0, -1];
  else [cg, sg] = [Math.cos(gamma * RAD), Math.sin(gamma * RAD)];
  const cy = (ca - cb * cg) / sg;
  const cz2 = 1 - cb * cb - cy * cy;
  if (!(cz2 > 0)) throw formatError(`PDB: CRYST1 angles ${alpha}, ${beta}, ${gamma} do not form a cell`);
  return [
    [a, 0, 0],
    [b * cg, b * sg, 0],
    [c * cb, c * cy, c * Math.sqrt(cz2)],
  ];
};

const field = (line: string, from: number, to: number): string => line.slice(from, to).trim();

/** Element from columns 77-78, else from the atom name (column 13 blank: one-letter element). */
export const elementOf = (line: string): string | undefined => {
  const col = normalizeElement(field(line, 76, 78).replace(/[^A-Za-z]/g, ""));
  if (col) return col;
  const name = line.slice(12, 16);
  const letters = name.replace(/[^A-Za-z]/g, "");
  if (!letters) return undefined;
  if (name[0] === " " || /\d/.test(name[0] ?? "")) return normalizeElement(letters[0] as string);
  return normalizeElement(letters.slice(0, 2)) ?? normalizeElement(letters[0] as string);
};

export const readCryst1 = (line: string, where: string): Lattice | null => {
  let p = [
    field(line, 6, 15),
    field(line, 15, 24),
    field(line, 24, 33),
    field(line, 33, 40),
    field(line, 40, 47),
    field(line, 47, 54),
  ].map(parseNum);
  if (p.some(Number.isNaN)) p = tokens(line).slice(1, 7).map(parseNum);
  if (p.length !== 6 || p.some(Number.isNaN)) throw formatError(`${where}: CRYST1 needs a, b, c, alpha, beta, gamma`);
  const [a, b, c, al, be, ga] = p as [number, number, number, number, number, number];
  if (a === 1 && b === 1 && c === 1) return null;
  if (!(a > 0 && b > 0 && c > 0)) throw formatError(`${where}: CRYST1 lengths must be positive`);
  try {
    return new Lattice(cellFromParameters(a, b, c, al, be, ga));
  } catch (e) {
    throw formatError(`${where}: ${(e as Error).message}`);
  }
};

const pdbBuf = [0, 0, 0];

export const readPdb = (content: string, limits?: ReadLimits): Structure[] => {
  const lines = splitLines(content);
  const frames: Structure[] = [];
  const budget = new FrameBudget(limits, "PDB");
  let lattice: Lattice | null = null;
  let elements: string[] = [];
  let names: string[] = [];
  let coords: number[] = [];
  let cache: { key: string; species: SiteSpecies[]; labels: string[] } | null = null;
  const finish = (): void => {
    if (elements.length === 0) return;
    budget.frame(elements.length);
    const key = `${elements.join(" ")}\u0000${names.join(" ")}`;
    if (!cache || cache.key !== key) cache = { key, species: elements.map((e) => speciesOf(e)), labels: names };
    frames.push(new Structure({ lattice, species: cache.species, cart: Float64Array.from(coords), labels: cache.labels }));
    elements = [];
    names = [];
    coords = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const rec = line.slice(0, 6);
    if (rec === "ATOM  " || rec === "HETATM" || rec === "ATOM") {
      const where = `PDB line ${i + 1}`;
      // Columns 31-54 usually have spaces between the numbers; when they run together, slice them.
      const cols = line.slice(30, 54);
      const xyz =
        cols.length === 24 && scanNumbers(cols, pdbBuf, 3) === 3
          ? pdbBuf
          : [field(line, 30, 38), field(line, 38, 46), field(line, 46, 54)].map(parseNum);
      if (xyz.some(Number.isNaN)) throw formatError(`${where}: coordinates in columns 31-54 are not numbers`);
      const el = elementOf(line);
      if (!el)
        throw formatError(`${where}: no element in columns 77-78 or in the atom name ${JSON.stringify(line.slice(12, 16))}`);
      elements.push(el);
      names.push(field(line, 12, 16) || el);
      coords.push(xyz[0] as number, xyz[1] as number, xyz[2] as number);
    } else if (rec === "CRYST1") lattice = readCryst1(line, `PDB line ${i + 1}`);
    else if (rec.startsWith("MODEL") || rec.startsWith("END")) finish();
  }
  finish();
  if (frames.length === 0) throw formatError("PDB: no ATOM or HETATM records");
  return frames;
};

/** Atom names start in column 14 for one-letter elements, as the PDB convention aligns them. */
const atomName = (label: string | undefined, el: string): string => {
  const name = label && /^\S{1,4}$/.test(label) ? label : el;
  return name.length < 4 && el.length === 1 && name.startsWith(el) ? ` ${name}`.padEnd(4) : name.padEnd(4);
};

const writeModels = (list: readonly Structure[]): string => {
  const out: string[] = [];
  list.forEach((s, m) => {
    const el = orderedElements(s, "PDB");
    let pos: Float64Array = s.cart;
    if (s.lattice) {
      const [a, b, c] = s.lattice.lengths;
      const [al, be, ga] = s.lattice.angles;
      const cryst = `CRYST1${fmt(a, 3, 9)}${fmt(b, 3, 9)}${fmt(c, 3, 9)}${fmt(al, 2, 7)}${fmt(be, 2, 7)}${fmt(ga, 2, 7)} P 1           1`;
      // Repeated for every model: ASE and others forget the cell after each END/ENDMDL.
      out.push(cryst);
      // PDB coordinates live in the frame of the CRYST1 parameters: rotate into it.
      const std = new Lattice(cellFromParameters(a, b, c, al, be, ga));
      const fr = s.frac;
      pos = new Float64Array(fr.length);
      for (let i = 0; i < s.length; i++) {
        const p = std.toCartesian([fr[3 * i]!, fr[3 * i + 1]!, fr[3 * i + 2]!]);
        pos.set(p, 3 * i);
      }
    }
    if (list.length > 1) out.push(`MODEL     ${String(m + 1).padStart(4)}`);
    for (let i = 0; i < s.length; i++) {
      const e = el[i] as string;
      out.push(
        `HETATM${String((i + 1) % 100000).padStart(5)} ${atomName(s.labels[i], e)} MOL A   1    ${fmt(pos[3 * i]!, 3, 8)}${fmt(pos[3 * i + 1]!, 3, 8)}${fmt(pos[3 * i + 2]!, 3, 8)}  1.00  0.00          ${e.toUpperCase().padStart(2)}`,
      );
    }
    if (list.length > 1) out.push("ENDMDL");
  });
  out.push("END");
  return `${out.join("\n")}\n`;
};

export const pdbFormat: StructureFormat = {
  id: "pdb",
  name: "PDB",
  extensions: ["pdb", "ent"],
  detect(content, filename) {
    const ext = extensionOf(filename);
    if (ext === "pdb" || ext === "ent") return 1;
    const h = head(content);
    return /^(ATOM {2}|HETATM)/m.test(h) ? 0.8 : /^(CRYST1|HEADER|MODEL |COMPND|REMARK)/m.test(h) ? 0.4 : 0;
  },
  read: readPdb,
  write: (s) => writeModels([s]),
  writeFrames: writeModels,
};
