/**
 * The `/api/build` routes computed by the core (strain, doping, substitution, random
 * substitution), as one compute task: plain data in, the route's response out, run in the compute
 * pool's threads so symmetry grouping never blocks the event loop.
 */
import { type BuildList, dope, fromDict, randomSubstitute, type Structure, strain, substitute, toDict } from "atomstudio-core";

type Dict = Record<string, unknown>;

export type CoreBuildArgs =
  | { kind: "strain"; structure: Dict; options: Parameters<typeof strain>[1] }
  | { kind: "doping"; structure: Dict; options: Parameters<typeof dope>[1] }
  | { kind: "substitution"; structure: Dict; groups: Parameters<typeof substitute>[1]; maxStructures: number }
  | { kind: "random-substitution"; structure: Dict; options: Parameters<typeof randomSubstitute>[1] };

const listOut = (r: BuildList) => ({
  structures: r.structures.map(toDict),
  labels: r.labels,
  count: r.structures.length,
  truncated: r.truncated,
});

const input = (d: Dict): Structure => fromDict(d);

export const coreBuildTask = (args: CoreBuildArgs): Dict => {
  switch (args.kind) {
    case "strain": {
      const r = strain(input(args.structure), args.options);
      return { ...listOut(r), strains: r.strains };
    }
    case "doping": {
      const r = dope(input(args.structure), args.options);
      return { ...listOut(r), multiplicities: r.multiplicities, n_configurations: r.n_configurations };
    }
    case "substitution": {
      const r = substitute(input(args.structure), args.groups, args.maxStructures);
      return { ...listOut(r), multiplicities: r.multiplicities, n_configurations: r.n_configurations };
    }
    case "random-substitution": {
      const r = randomSubstitute(input(args.structure), args.options);
      return { ...listOut(r), attempts: r.attempts };
    }
  }
};
