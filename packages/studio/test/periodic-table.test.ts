/** Where the element picker puts each element: the 18-column table, f block on rows 9 and 10. */
import { ELEMENTS } from "atomstudio-core";
import { describe, expect, it } from "vitest";
import { tablePosition } from "../src/ui/elements.ts";

describe("periodic table positions", () => {
  it.each([
    ["H", 1, 1],
    ["He", 1, 18],
    ["Li", 2, 1],
    ["B", 2, 13],
    ["Ne", 2, 18],
    ["Al", 3, 13],
    ["K", 4, 1],
    ["Fe", 4, 8],
    ["Kr", 4, 18],
    ["Cs", 6, 1],
    ["Ba", 6, 2],
    ["La", 9, 3],
    ["Lu", 9, 17],
    ["Hf", 6, 4],
    ["Pt", 6, 10],
    ["Rn", 6, 18],
    ["Ac", 10, 3],
    ["U", 10, 6],
    ["Lr", 10, 17],
  ])("%s at row %i, column %i", (symbol, row, col) => {
    const z = ELEMENTS.find((e) => e.symbol === symbol)?.Z as number;
    expect(tablePosition(z)).toEqual([row, col]);
  });

  it("no two elements share a cell", () => {
    const cells = ELEMENTS.filter((e) => e.Z <= 103).map((e) => tablePosition(e.Z).join(","));
    expect(new Set(cells).size).toBe(cells.length);
  });
});
