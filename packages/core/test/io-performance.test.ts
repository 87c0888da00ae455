/** Parsing a real AIMD trajectory (example_XDATCAR: 140 frames x 416 atoms) stays well under a second. */
import { readTestdata } from "atomstudio-testkit";
import { expect, it } from "vitest";
import { parseStructureFile } from "../src/index.ts";

it("parses example_XDATCAR quickly", () => {
  const content = readTestdata("md/example_XDATCAR.gz");
  parseStructureFile(content, { filename: "XDATCAR" }); // warm-up (JIT)
  const times: number[] = [];
  let frames = 0;
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    frames = parseStructureFile(content, { filename: "XDATCAR" }).frames?.length ?? 1;
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const median = times[2]!;
  console.log(
    `example_XDATCAR: ${frames} frames x 416 atoms, median parse ${median.toFixed(1)} ms (runs: ${times.map((t) => t.toFixed(1)).join(", ")})`,
  );
  expect(frames).toBe(140);
  // Generous bound so a busy CI machine does not flake; typical is far lower.
  expect(median).toBeLessThan(1000);
});
