/** Atom editing endpoints (`/api/structure-ops/*`): thin wrappers over the core's pure functions. */
import { addAtom, addAtoms, deleteAtoms, fromDict, moveAtom, moveAtoms, replaceAtom, toDict } from "atomstudio-core";
import { z } from "zod";
import { defineOperation } from "../registry/operation.ts";
import { ElementSymbol, Index, Indices, StructureJSON, StructureResult, Vec3 } from "../registry/schemas.ts";

const tag = "structure-ops";
const path = (p: string) => `/api/structure-ops/${p}`;
const badStructure = { status: 400, code: "INVALID_STRUCTURE", when: "structure JSON cannot be parsed" } as const;
const badIndex = { status: 400, code: "INVALID_INDEX", when: "index out of bounds" } as const;
const emptyIndices = { status: 400, code: "EMPTY_INDICES", when: "empty indices list" } as const;
const badElement = { status: 400, code: "INVALID_ELEMENT", when: "invalid element symbol" } as const;

export const addAtomOp = defineOperation({
  id: "add_atom",
  method: "POST",
  path: path("add-atom"),
  tag,
  summary: "Add one atom at a Cartesian position",
  input: z.object({ structure: StructureJSON, element: ElementSymbol.describe("element symbol"), position: Vec3 }),
  output: z.object({ ...StructureResult, added_index: z.number().int().nullable() }),
  errors: [badElement, badStructure],
  handler: ({ structure, element, position }) => {
    const r = addAtom(fromDict(structure), element, position);
    return { structure: toDict(r.structure), n_atoms: r.structure.length, added_index: r.addedIndex };
  },
  mcp: "svc_add_atom",
  assistant: { name: "add_atom", inject: "structure", replacesStructure: true },
});

export const addAtomsOp = defineOperation({
  id: "add_atoms",
  method: "POST",
  path: path("add-atoms"),
  tag,
  summary: "Add several atoms at Cartesian positions",
  input: z.object({
    structure: StructureJSON,
    atoms: z
      .array(z.object({ element: ElementSymbol, xyz: Vec3 }))
      .meta({ minItems: 1 })
      .describe("at least one atom"),
  }),
  output: z.object({ ...StructureResult, added_indices: z.array(z.number().int()) }),
  errors: [
    { status: 400, code: "EMPTY_ATOMS", when: "empty atoms list" },
    { ...badElement, when: "any invalid element symbol" },
    badStructure,
  ],
  handler: ({ structure, atoms }) => {
    const r = addAtoms(fromDict(structure), atoms);
    return { structure: toDict(r.structure), n_atoms: r.structure.length, added_indices: r.addedIndices };
  },
  mcp: "svc_add_atoms",
  assistant: { name: "add_atoms", inject: "structure", replacesStructure: true },
});

export const deleteAtomsOp = defineOperation({
  id: "delete_atoms",
  method: "POST",
  path: path("delete-atoms"),
  tag,
  summary: "Delete atoms by index",
  input: z.object({ structure: StructureJSON, indices: Indices }),
  output: z.object({ ...StructureResult, deleted_count: z.number().int() }),
  errors: [{ ...badIndex, when: "any index out of bounds" }, emptyIndices, badStructure],
  handler: ({ structure, indices }) => {
    const r = deleteAtoms(fromDict(structure), indices);
    return { structure: toDict(r.structure), n_atoms: r.structure.length, deleted_count: r.deletedCount };
  },
  mcp: "svc_delete_atoms",
  assistant: { name: "delete_atoms", inject: "structure", replacesStructure: true },
});

export const replaceAtomOp = defineOperation({
  id: "replace_atom",
  method: "POST",
  path: path("replace-atom"),
  tag,
  summary: "Replace the element of one atom; the atom keeps its position",
  input: z.object({ structure: StructureJSON, index: Index, new_element: ElementSymbol }),
  output: z.object({
    ...StructureResult,
    old_element: z.string(),
    new_element: z.string(),
    index: z.number().int(),
  }),
  errors: [badIndex, { ...badElement, when: "invalid new_element symbol" }, badStructure],
  handler: ({ structure, index, new_element }) => {
    const r = replaceAtom(fromDict(structure), index, new_element);
    return { structure: toDict(r.structure), n_atoms: r.structure.length, old_element: r.oldElement, new_element, index };
  },
  mcp: "svc_replace_atom",
  assistant: { name: "replace_atom", inject: "structure", replacesStructure: true },
});

export const moveAtomOp = defineOperation({
  id: "move_atom",
  method: "POST",
  path: path("move-atom"),
  tag,
  summary: "Move one atom to an absolute Cartesian position",
  input: z.object({ structure: StructureJSON, index: Index, new_position: Vec3 }),
  output: z.object({
    ...StructureResult,
    index: z.number().int(),
    old_position: z.array(z.number()),
    new_position: z.array(z.number()),
  }),
  errors: [badIndex, badStructure],
  handler: ({ structure, index, new_position }) => {
    const r = moveAtom(fromDict(structure), index, new_position);
    return { structure: toDict(r.structure), n_atoms: r.structure.length, index, old_position: r.oldPosition, new_position };
  },
  mcp: "svc_move_atom",
  assistant: { name: "move_atom", inject: "structure", replacesStructure: true },
});

export const moveAtomsOp = defineOperation({
  id: "move_atoms",
  method: "POST",
  path: path("move-atoms"),
  tag,
  summary: "Shift the listed atoms by the same Cartesian vector",
  input: z.object({ structure: StructureJSON, indices: Indices, displacement: Vec3 }),
  output: z.object({ ...StructureResult, moved_count: z.number().int(), displacement: z.array(z.number()) }),
  errors: [{ ...badIndex, when: "any index out of bounds" }, emptyIndices, badStructure],
  handler: ({ structure, indices, displacement }) => {
    const r = moveAtoms(fromDict(structure), indices, displacement);
    return { structure: toDict(r.structure), n_atoms: r.structure.length, moved_count: r.movedCount, displacement };
  },
  mcp: "svc_move_atoms",
  assistant: { name: "move_atoms", inject: "structure", replacesStructure: true },
});

export const structureOps = [addAtomOp, addAtomsOp, deleteAtomsOp, replaceAtomOp, moveAtomOp, moveAtomsOp];
