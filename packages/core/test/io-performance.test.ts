/** Parsing a real AIMD trajectory (example_XDATCAR: 140 frames x 416 atoms) stays well under a second. */
import { readTestdata } from "atomstudio-testkit";
import { expect, it } from "vitest";
import { parseStructureFile } from "../src/index.ts";

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

it("parses example_XDATCAR quickly", () => {
  const content = readTestdata("md/example_XDATCAR.gz");
  parseStructureFile(content, { filename: "XDATCAR" }); // warm-up (JIT)
  const wall: number[] = [];
  const cpu: number[] = [];
  let frames = 0;
  for (let k = 0; k < 5; k++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    frames = parseStructureFile(content, { filename: "XDATCAR" }).frames?.length ?? 1;
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  // CPU time too: on a shared, busy machine the wall clock mostly measures waiting for a core.
  console.log(
    `example_XDATCAR: ${frames} frames x 416 atoms, median parse ${median(wall).toFixed(1)} ms wall, ${median(cpu).toFixed(1)} ms CPU (wall runs: ${wall.map((t) => t.toFixed(1)).join(", ")})`,
  );
  expect(frames).toBe(140);
  // Generous bound so a busy CI machine does not flake; typical is far lower.
  expect(median(wall)).toBeLessThan(1000);
});

it("expands symmetry of large CIF cells in linear time", async () => {
  const { initSymmetry } = await import("../src/index.ts");
  await initSymmetry();
  let seed = 7;
  const rnd = () => {
    seed = (seed * 16807) % 2147483647;
    return (seed / 2147483647).toFixed(5);
  };
  const rows = Array.from({ length: 60 }, (_, i) => `C${i} C ${rnd()} ${rnd()} ${rnd()}`);
  const cif = [
    "data_big",
    ...["a", "b", "c"].map((k) => `_cell_length_${k} 60`),
    ...["alpha", "beta", "gamma"].map((k) => `_cell_angle_${k} 90`),
    "_space_group_IT_number 225",
    "loop_",
    "_atom_site_label",
    "_atom_site_type_symbol",
    "_atom_site_fract_x",
    "_atom_site_fract_y",
    "_atom_site_fract_z",
    ...rows,
    "",
  ].join("\n");
  const t0 = performance.now();
  const s = parseStructureFile(cif).structure;
  const ms = performance.now() - t0;
  console.log(`Fm-3m CIF, 60 general positions: ${s.length} sites in ${ms.toFixed(0)} ms`);
  expect(s.length).toBeGreaterThan(10_000); // up to 60 x 192; random rows may sit on special positions
  expect(ms).toBeLessThan(3000);
});
