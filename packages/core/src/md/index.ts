export * from "./cluster.ts";
export * from "./hbonds.ts";
export * from "./rdf.ts";
export * from "./rmsd.ts";
export * from "./select.ts";
