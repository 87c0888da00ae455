/**
 * Electronic-structure analysis: `/api/bands`, `/api/dos`, `/api/cohp` (decisions "Files for
 * analysis", written up in packages/server/src/analysis/README.md). Files come as JSON
 * `{content, filename?, encoding}` or as multipart uploads; numbers may come as form strings.
 */
import { z } from "zod";
import { AnalysisFile, INSTALL_HINT, runAnalysis, runAnalysisJson } from "../analysis/service.ts";
import { defineOperation, type ErrorRow } from "../registry/operation.ts";
import { StructureJSON } from "../registry/schemas.ts";

const tag = "analysis";
const MAX_GROUPS = 64;
const MAX_INDICES = 10_000;

const energy = (d: number, what: string) => z.coerce.number().finite().default(d).describe(`${what}, eV relative to E_F`);
const flag = z.preprocess((v) => (v === "true" || v === "1" ? true : v === "false" || v === "0" ? false : v), z.boolean());
const Sites = z.array(z.number().int()).max(MAX_INDICES).optional().describe("0-based site indices");
const Elements = z.array(z.string().max(3)).max(120).optional().describe('element symbols, e.g. ["Fe", "O"]');
const Orbitals = z
  .array(z.string().max(8))
  .max(16)
  .optional()
  .describe("orbital families s, p, d, f or single orbitals (px, dxy, dx2_y2 ...); default all");
const Group = z.object({ label: z.string().max(100).optional(), sites: Sites, elements: Elements, orbitals: Orbitals });
const Spins = z.object({ up: z.array(z.unknown()), down: z.array(z.unknown()).optional() }).passthrough();

const common: ErrorRow[] = [
  {
    status: 400,
    code: "INVALID_FILE",
    when: "a file is empty, truncated, not valid base64, or not what its field names (e.g. a non-VASP XML)",
  },
  { status: 413, code: "FILE_TOO_LARGE", when: "a file decompresses to more than ATOMSTUDIO_ANALYSIS_MAX_FILE_MB" },
  { status: 413, code: "PAYLOAD_TOO_LARGE", when: "the body (JSON or the multipart total) is over ATOMSTUDIO_MAX_BODY_MB" },
  { status: 503, code: "ANALYSIS_UNAVAILABLE", when: `pymatgen (or lobsterpy for summary) is missing: ${INSTALL_HINT}` },
  { status: 504, code: "DEADLINE_EXCEEDED", when: "longer than ATOMSTUDIO_ANALYSIS_TIMEOUT_S" },
  { status: 502, code: "WORKER_DIED", when: "the analysis worker died during the request (it is replaced)" },
];
const selection: ErrorRow[] = [
  { status: 400, code: "UNKNOWN_ELEMENT", when: "a projection names an element the structure does not have" },
  { status: 400, code: "UNKNOWN_ORBITAL", when: "a projection names an orbital the file does not have" },
  { status: 400, code: "INVALID_INDEX", when: "a projection's site index is out of range" },
];
const multipartNote =
  " Multipart: one file per field (named as the JSON fields), scalar options as fields, and lists (projections, groups, bonds) in a `params` field holding JSON.";

export const bandsOp = defineOperation({
  id: "bands",
  method: "POST",
  path: "/api/bands",
  tag,
  summary: "Band structure from vasprun.xml (+ line-mode KPOINTS): eigenvalues, k-path with labels, band gap",
  description:
    "pymatgen Vasprun.get_band_structure and BandStructure.get_band_gap. Energies in eV relative to efermi_ev; band_indices says which bands (0-based) fall in [emin, emax]. efermi `smart` (default) puts E_F mid-gap when VASP's value sits on a band edge, as non-self-consistent runs need." +
    multipartNote,
  input: z.object({
    vasprun: AnalysisFile.describe("vasprun.xml of the band-structure run (gzip/bzip2 allowed)"),
    kpoints: AnalysisFile.optional().describe("the line-mode KPOINTS of the run, for high-symmetry labels"),
    efermi: z
      .union([z.enum(["smart", "vasprun"]), z.coerce.number().finite()])
      .default("smart")
      .describe("smart, vasprun, or a number in eV"),
    emin: energy(-10, "lowest energy of the bands returned"),
    emax: energy(10, "highest energy of the bands returned"),
    projections: z
      .array(Group)
      .max(MAX_GROUPS)
      .optional()
      .describe(
        'fat bands: sums of projected weights per band and k-point, e.g. [{label: "Si p", elements: ["Si"], orbitals: ["p"]}]; a group of one element with all orbitals is pymatgen\'s get_projection_on_elements, with orbital families its get_projections_on_elements_and_orbitals',
      ),
  }),
  output: z
    .object({
      efermi_ev: z.number(),
      is_spin_polarized: z.boolean(),
      is_metal: z.boolean(),
      nbands: z.number().int(),
      nkpts: z.number().int(),
      band_indices: z.array(z.number().int()),
      band_gap: z
        .object({
          energy_ev: z.number(),
          direct: z.boolean(),
          transition: z.string().nullable(),
          vbm: z.unknown(),
          cbm: z.unknown(),
        })
        .passthrough(),
      kpath: z.object({
        distances: z.array(z.number()),
        ticks: z.array(z.object({ distance: z.number(), label: z.string(), index: z.number().int() })),
        branches: z.array(z.unknown()),
      }),
      bands: Spins.describe("energies[band][k] per spin, eV relative to E_F"),
      projections: z
        .array(
          z
            .object({
              label: z.string(),
              sites: z.array(z.number().int()),
              orbitals: z.array(z.string()),
              up: z.array(z.array(z.number())),
              down: z.array(z.array(z.number())).optional(),
            })
            .passthrough(),
        )
        .optional()
        .describe(
          "one per group asked: weights[band][k] per spin for the bands in band_indices (summed over its sites and orbitals)",
        ),
      structure: StructureJSON,
      warnings: z.array(z.string()),
    })
    .passthrough(),
  errors: [
    ...common,
    ...selection,
    { status: 400, code: "NO_KPATH_LABELS", when: "the KPOINTS given is not a line-mode path with labels" },
    { status: 400, code: "STRUCTURE_MISMATCH", when: "the KPOINTS belongs to another run (other points or path)" },
  ],
  handler: ({ vasprun, kpoints, ...params }, ctx) => runAnalysis(ctx, "bands", { vasprun, kpoints }, params),
  httpJson: ({ vasprun, kpoints, ...params }, ctx) => runAnalysisJson(ctx, "bands", { vasprun, kpoints }, params),
  mcp: "svc_bands",
  assistant: { name: "band_structure", replacesStructure: false },
});

export const dosOp = defineOperation({
  id: "dos",
  method: "POST",
  path: "/api/dos",
  tag,
  summary: "Density of states from vasprun.xml: total and projected, smearing, gap, d-band centre family",
  description:
    "pymatgen CompleteDos. Energies in eV relative to efermi_ev, limited to [emin, emax]. mode projected without groups gives one series per element. band_center returns the centre, width, skewness, kurtosis, filling and upper edge of a projected band over erange (eV relative to E_F)." +
    multipartNote,
  input: z.object({
    vasprun: AnalysisFile.describe("vasprun.xml with a DOS (gzip/bzip2 allowed)"),
    mode: z.enum(["total", "projected"]).default("total"),
    groups: z.array(Group).max(MAX_GROUPS).optional().describe("projected series: sums over sites/elements and orbitals"),
    efermi: z.union([z.enum(["vasprun", "smart"]), z.coerce.number().finite()]).default("vasprun"),
    emin: energy(-10, "lowest energy returned"),
    emax: energy(10, "highest energy returned"),
    sigma_ev: z.coerce.number().min(0).max(5).default(0).describe("Gaussian smearing in eV (0: none)"),
    normalize: z.enum(["none", "per_atom"]).default("none"),
    band_center: z
      .object({
        band: z.enum(["s", "p", "d", "f"]).default("d"),
        elements: Elements,
        sites: Sites,
        spin: z.enum(["up", "down"]).optional().describe("default: both spins"),
        erange: z.array(z.number().finite()).length(2).optional().describe("[emin, emax] in eV relative to E_F"),
      })
      .optional(),
  }),
  output: z
    .object({
      efermi_ev: z.number(),
      is_spin_polarized: z.boolean(),
      energies: z.array(z.number()),
      total: Spins,
      series: z.array(z.unknown()),
      gap: z.object({ energy_ev: z.number(), vbm_ev: z.number(), cbm_ev: z.number() }),
      band_center: z.unknown().optional(),
      structure: StructureJSON,
      warnings: z.array(z.string()),
    })
    .passthrough(),
  errors: [
    ...common,
    ...selection,
    { status: 400, code: "NO_PROJECTIONS", when: "projected mode or band_center on a file without a projected DOS (LORBIT)" },
  ],
  handler: ({ vasprun, ...params }, ctx) => runAnalysis(ctx, "dos", { vasprun }, params),
  httpJson: ({ vasprun, ...params }, ctx) => runAnalysisJson(ctx, "dos", { vasprun }, params),
  mcp: "svc_dos",
  assistant: { name: "density_of_states", replacesStructure: false },
});

export const cohpOp = defineOperation({
  id: "cohp",
  method: "POST",
  path: "/api/cohp",
  tag,
  summary: "Bonding analysis from LOBSTER: COHP/COOP/COBI per bond, ICOHP, summed bonds, lobsterpy summary",
  description:
    "pymatgen Cohpcar and Icohplist; series are -COHP (bonding positive) for COHP and as written for COOP/COBI (sign_convention says). kind auto reads the file name (COOPCAR, COBICAR). summary needs structure and icohplist (lobsterpy)." +
    multipartNote,
  input: z.object({
    cohpcar: AnalysisFile.describe("COHPCAR.lobster (or COOPCAR/COBICAR)"),
    icohplist: AnalysisFile.optional().describe("ICOHPLIST.lobster of the same run: ICOHP at E_F"),
    structure: AnalysisFile.optional().describe("the run's CONTCAR/POSCAR: elements, and needed for summary"),
    charge: AnalysisFile.optional().describe("CHARGE.lobster (summary: Mulliken charges instead of bond valences)"),
    kind: z.enum(["auto", "cohp", "coop", "cobi"]).default("auto"),
    bonds: z.array(z.string().max(20)).max(5000).optional().describe('bond labels ("1", "2" ...); default all'),
    orbital_resolved: flag.default(false),
    sum_bonds: flag.default(false),
    emin: energy(-10, "lowest energy returned"),
    emax: energy(10, "highest energy returned"),
    summary: flag.default(false).describe("lobsterpy's description: coordination environments, strongest bonds"),
  }),
  output: z
    .object({
      kind: z.string(),
      sign_convention: z.string(),
      efermi_ev: z.number(),
      energies: z.array(z.number()),
      bonds: z.array(
        z
          .object({
            label: z.string(),
            sites: z.array(z.number().int()),
            elements: z.array(z.string()).nullable(),
            distance_ang: z.number(),
            icohp_ev: z.number().optional(),
          })
          .passthrough(),
      ),
      series: z.array(z.unknown()),
      average: Spins,
      summed: z.unknown().optional(),
      summary: z.unknown().optional(),
      warnings: z.array(z.string()),
    })
    .passthrough(),
  errors: [
    ...common,
    { status: 400, code: "UNKNOWN_BOND_LABEL", when: "a bond label is not in the COHPCAR" },
    { status: 400, code: "STRUCTURE_MISMATCH", when: "the structure or ICOHPLIST belongs to another run" },
    { status: 400, code: "MISSING_FILE", when: "summary without the structure and the ICOHPLIST" },
  ],
  handler: ({ cohpcar, icohplist, structure, charge, ...params }, ctx) =>
    runAnalysis(ctx, "cohp", { cohpcar, icohplist, structure, charge }, params),
  httpJson: ({ cohpcar, icohplist, structure, charge, ...params }, ctx) =>
    runAnalysisJson(ctx, "cohp", { cohpcar, icohplist, structure, charge }, params),
  mcp: "svc_cohp",
  assistant: { name: "bonding_analysis", replacesStructure: false },
});

export const analysisOps = [bandsOp, dosOp, cohpOp];
