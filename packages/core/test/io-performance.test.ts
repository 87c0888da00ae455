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
