export * from "./decode.ts";
export * from "./read.ts";
export * from "./trajectory.ts";
