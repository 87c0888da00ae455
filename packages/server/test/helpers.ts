/** Test helpers: a service instance on loopback and sample structures. */
import { fccCell } from "atomstudio-testkit";
import type { FastifyInstance } from "fastify";
import { loadConfig, type ServiceConfig } from "../src/config.ts";
import { buildApp } from "../src/http/app.ts";
import type { Plugin } from "../src/plugins.ts";

export const testConfig = (over: Partial<ServiceConfig> = {}): ServiceConfig =>
  loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent", ...over }, {});

/** A built (not listening) app for `inject`, with no extra plugins unless asked. */
export const makeApp = async (over: Partial<ServiceConfig> = {}, plugins: Plugin[] = []): Promise<FastifyInstance> => {
  const { app } = await buildApp({ config: testConfig(over), plugins });
  await app.ready();
  return app;
};

export const cuCell = fccCell();

export const water = {
  "@module": "pymatgen.core.structure",
  "@class": "Molecule",
  charge: 0,
  spin_multiplicity: 1,
  sites: [
    { species: [{ element: "O", occu: 1 }], xyz: [0, 0, 0.1173], properties: {}, label: "O" },
    { species: [{ element: "H", occu: 1 }], xyz: [0, 0.7572, -0.4692], properties: {}, label: "H" },
    { species: [{ element: "H", occu: 1 }], xyz: [0, -0.7572, -0.4692], properties: {}, label: "H" },
  ],
  properties: {},
};

export const emptyMolecule = { "@class": "Molecule", sites: [] };
