/**
 * A long-lived reference process for the benchmarks: a Python script that answers one JSON line
 * per JSON line on stdin (timing its own work with perf_counter, import not timed), kept running
 * between calls as the service's analysis worker is. Benchmarks alternate one reference call with
 * one service request, so both meet the same load on a shared machine and both run after the same
 * short idle; a reference timed in a tight loop of repeats (caches hot) against a service request
 * made after the reference process ran for seconds (the worker's caches cold) measured the machine,
 * not the service (packages/server/src/analysis/README.md, "Cost of a request").
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { requirePython } from "atomstudio-testkit";

export interface Reference {
  call: <T>(input: unknown) => Promise<T>;
  close: () => Promise<void>;
}

export const startReference = (script: string): Reference => {
  const child = spawn(requirePython(), [script], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, PYTHONWARNINGS: "ignore", OMP_NUM_THREADS: "1" },
  });
  const waiting: Array<(line: string) => void> = [];
  createInterface({ input: child.stdout }).on("line", (line) => waiting.shift()?.(line));
  const exited = new Promise<void>((res) => child.on("exit", () => res()));
  return {
    call: <T>(input: unknown) =>
      new Promise<T>((res) => {
        waiting.push((line) => res(JSON.parse(line) as T));
        child.stdin.write(`${JSON.stringify(input)}\n`);
      }),
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
};
