/**
 * Every error code the service can send, with its HTTP status and meaning: the one place statuses
 * come from (`sendError`, the OpenAPI document, the MCP error results, the worker and studio
 * error mappings all read `statusOf`). `docs/errors.md` shows the same table; a test keeps the two
 * in step and fails when a code thrown anywhere in the sources (TypeScript or the Python worker)
 * is missing here. Codes are UPPER_SNAKE_CASE and stable: clients branch on them.
 */
import { AtomStudioError } from "atomstudio-core";

export interface ErrorCodeInfo {
  status: number;
  meaning: string;
}

export const ERROR_CODES = {
  // Added with hardening, trajectories, analysis and UFF (kept together; see docs/errors.md).
  AGENT_ROOT_UNSAFE: {
    status: 503,
    meaning:
      "the command-line agents' root (ATOMSTUDIO_AGENT_ROOT) is a symlink, not a directory, someone else's, or not mode 0700: agents do not run until it is fixed",
  },
  AMBIGUOUS_INPUT: { status: 400, meaning: "both a trajectory file and frames were given; send one" },
  CLIENT_CLOSED_REQUEST: {
    status: 499,
    meaning: "internal: the client went away and the work was stopped (never seen by a client)",
  },
  COMPUTE_OUT_OF_MEMORY: {
    status: 503,
    meaning: "a compute thread ran out of memory; the thread was replaced, the service kept running",
  },
  CUTOFF_TOO_LARGE: { status: 400, meaning: "a neighbour-search cutoff beyond what the cell's minimum image allows" },
  EMPTY_SELECTION: { status: 400, meaning: "an atom selection matches no atom" },
  FILE_TOO_LARGE: {
    status: 413,
    meaning: "an analysis file is over its size cap once decompressed (ATOMSTUDIO_ANALYSIS_MAX_FILE_MB)",
  },
  INCONSISTENT_FRAMES: { status: 400, meaning: "frames of a trajectory have different atom counts or species" },
  INVALID_CELL: { status: 400, meaning: "a cell with zero volume or non-finite numbers" },
  INVALID_CLUSTER_PARAMETERS: {
    status: 400,
    meaning: "HDBSCAN's min_cluster_size or min_samples above the number of frames (or an invalid distance matrix)",
  },
  INVALID_CUTOFF: { status: 400, meaning: "a neighbour-search cutoff that is not a positive number" },
  INVALID_ENCODING: { status: 400, meaning: "base64 or compressed (gzip, bzip2) data is corrupt" },
  INVALID_FRAME_RANGE: { status: 400, meaning: "the frame range selects no frame" },
  INVALID_N_CLUSTERS: { status: 400, meaning: "n_clusters below 1 or above the number of frames" },
  INVALID_OPTIMIZER_PARAMS: { status: 400, meaning: "an optimizer parameter out of range (delta0 or dx not positive)" },
  INVALID_REFERENCE: { status: 400, meaning: "the reference frame is not among the trajectory's frames" },
  INVALID_R_MAX: { status: 400, meaning: "r_max_ang is not a positive number" },
  INVALID_SELECTION: { status: 400, meaning: "a selection gives both indices and elements, or neither" },
  MISSING_FILE: {
    status: 400,
    meaning: "a file the request needs is missing (e.g. ICOHPLIST or the structure for a LOBSTER summary)",
  },
  MISSING_TRAJECTORY: { status: 400, meaning: "neither a trajectory file nor frames was given" },
  MODEL_PATH_NOT_ALLOWED: {
    status: 400,
    meaning: "calculator_params.model_path: callers never name files on the server; pick a model by id (calculator_params.model)",
  },
  TOO_MANY_BINS: { status: 400, meaning: "n_bins above the cap" },
  TOO_MANY_SYMMETRY_OPERATIONS: { status: 400, meaning: "a CIF lists more than 192 distinct symmetry operations" },
  UFF_FAILED: { status: 400, meaning: "the studio's UFF relaxation failed (the message says why); studio only" },
  UNKNOWN_ELEMENT: { status: 400, meaning: "an element the file does not contain was asked for (projections, groups)" },
  UNKNOWN_ORBITAL: { status: 400, meaning: "an orbital the file does not resolve was asked for" },
  // /api/build (packages/server/src/build/README.md)
  EMPTY_GROUPS: { status: 400, meaning: "a substitution without groups, or a group without sites or elements" },
  HOST_ELEMENT_NOT_FOUND: { status: 400, meaning: "no site of the host element to dope or substitute" },
  INVALID_AXIS: { status: 400, meaning: "a strain axis or shear plane that does not exist" },
  INVALID_CONCENTRATION: { status: 400, meaning: "more dopants than candidate sites, or fewer than 1" },
  INVALID_COUNT: { status: 400, meaning: "a number of guests outside the allowed range" },
  INVALID_DEFECT_TYPE: { status: 400, meaning: "defect_type is not vacancy, substitution or interstitial" },
  INVALID_DISTANCE: { status: 400, meaning: "a minimum distance outside its range" },
  INVALID_NANOPARTICLE: { status: 400, meaning: "nanoparticle parameters out of range, or a cluster ASE cannot build" },
  INVALID_POSITION: { status: 400, meaning: "an intercalation position mode or custom positions that are not usable" },
  INVALID_SHAPE: { status: 400, meaning: "a nanoparticle shape, lattice or rounding that is not offered" },
  INVALID_STRAIN: { status: 400, meaning: "a strain magnitude beyond ±0.5, or a sweep of magnitude 0" },
  INVALID_STRAIN_FRAME: { status: 400, meaning: "a strain frame other than lattice or cartesian" },
  INVALID_STRAIN_SWEEP: { status: 400, meaning: "a sweep other than symmetric or one_sided" },
  INVALID_STRAIN_TYPE: { status: 400, meaning: "a strain type other than uniaxial, biaxial, hydrostatic or shear" },
  MISSING_ELEMENT: { status: 400, meaning: "a substitution or interstitial without the element to put in" },
  MISSING_HOST: { status: 400, meaning: "neither host_element nor target_indices names the candidate sites" },
  NO_DOPANTS: { status: 400, meaning: "no dopant with a count above 0" },
  NO_INTERSTITIAL_SITES: { status: 400, meaning: "no void of the structure keeps the minimum distance from the host atoms" },
  NOT_ENOUGH_SITES: { status: 400, meaning: "fewer voids than guests keep the asked distances" },
  SITE_OVERLAP: { status: 400, meaning: "a given position is closer to a host atom than the minimum distance" },
  TOO_MANY_CONFIGURATIONS: { status: 400, meaning: "an enumeration would visit more configurations than the cap (100000)" },
  TOO_MANY_STRUCTURES: {
    status: 400,
    meaning: "more structures in one request, or in a build's answer, than the cap (ATOMSTUDIO_MAX_STRUCTURES)",
  },
  // Requests of the wrong shape, transport and access.
  MALFORMED_REQUEST: {
    status: 422,
    meaning:
      "the body is not the right shape (not JSON, missing fields, wrong JSON types); `details.fields` lists the offending fields",
  },
  BAD_REQUEST: {
    status: 400,
    meaning: "the HTTP request itself is unusable (a client error of the HTTP layer without a more specific code)",
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    meaning: "the body's content type is not JSON (or multipart where a file upload is accepted)",
  },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: "the body or an uploaded file is over the size cap (ATOMSTUDIO_MAX_BODY_MB)" },
  NOT_FOUND: { status: 404, meaning: "no route or file at this path" },
  METHOD_NOT_ALLOWED: {
    status: 405,
    meaning: "the path exists but not with this HTTP method; the `Allow` header lists the methods",
  },
  UNAUTHORIZED: { status: 401, meaning: "missing or wrong bearer token (the service runs with ATOMSTUDIO_TOKEN)" },
  FORBIDDEN_ORIGIN: { status: 403, meaning: "the `Origin` or `Host` header is not a loopback name or a configured origin" },
  QUEUE_FULL: { status: 429, meaning: "the work queue is at its length cap; try again later" },
  QUEUE_UNAVAILABLE: { status: 503, meaning: "the shared work queue (Redis) cannot be reached" },
  DEADLINE_EXCEEDED: { status: 504, meaning: "the work did not finish within its deadline and was stopped" },
  SHUTTING_DOWN: { status: 503, meaning: "the service (or its calculator worker) is shutting down" },
  SERVICE_UNAVAILABLE: { status: 503, meaning: "the MCP command-line server cannot reach the AtomStudio service at its URL" },
  SERVICE_ERROR: {
    status: 502,
    meaning: "the AtomStudio service behind the MCP command-line server answered without an ErrorResponse",
  },
  INTERNAL_ERROR: {
    status: 500,
    meaning: "a bug: an unexpected failure; `details.request_id` finds it in the log, no stack trace is sent",
  },

  // Structures: reading, editing, building.
  INVALID_STRUCTURE: {
    status: 400,
    meaning:
      "the structure JSON cannot be read (the message and `details.field` name the field), or it has no atoms where some are needed",
  },
  INVALID_ELEMENT: { status: 400, meaning: "not an element symbol" },
  INVALID_INDEX: { status: 400, meaning: "a site index out of bounds" },
  EMPTY_INDICES: { status: 400, meaning: "an empty list of site indices" },
  EMPTY_ATOMS: { status: 400, meaning: "an empty list of atoms to add" },
  EMPTY_STRUCTURES: { status: 400, meaning: "every structure given is empty" },
  MISSING_LATTICE: { status: 400, meaning: "the operation needs a periodic structure and this one is a molecule" },
  INVALID_SCALING: {
    status: 400,
    meaning: "a supercell factor that is not an integer from 1 to 10, or a scaling string that cannot be read",
  },
  TOO_MANY_ATOMS: { status: 400, meaning: "the input or the result would exceed the atom cap (10,000)" },
  INVALID_MODE: { status: 400, meaning: "an unknown merge mode (preserve_lattice or to_molecule)" },
  INVALID_MILLER: { status: 400, meaning: "Miller indices all zero, or beyond the magnitude cap" },
  INVALID_THICKNESS: { status: 400, meaning: "slab thickness of 0 or less, or beyond the cap" },
  INVALID_VACUUM: { status: 400, meaning: "slab vacuum below 0, or beyond the cap" },
  INVALID_MAX_NORMAL_SEARCH: { status: 400, meaning: "max_normal_search below 0 or beyond the cap" },
  INVALID_TERMINATION: { status: 400, meaning: "termination_index out of range (the message gives the range)" },
  INVALID_FORMAT: {
    status: 400,
    meaning:
      "an unknown file or image format, a file that cannot be read as its format, or a format that cannot hold this structure",
  },
  INVALID_FILE: { status: 400, meaning: "an uploaded analysis file cannot be read" },
  TOO_MANY_FRAMES: { status: 400, meaning: "a trajectory with more frames than the cap" },
  STRUCTURE_MISMATCH: { status: 400, meaning: "structures that must have the same sites (frames, endpoints) do not" },
  PERIODIC_NOT_SUPPORTED: { status: 400, meaning: "the operation treats molecules only" },
  UNSUPPORTED_ATOM_TYPES: { status: 400, meaning: "the structure has atom types the operation cannot treat" },

  // Analysis of calculation outputs.
  ANALYSIS_UNAVAILABLE: {
    status: 503,
    meaning: "the analysis worker or its library is not available (the message says how to install it)",
  },
  R_MAX_TOO_LARGE: { status: 400, meaning: "a radial cutoff beyond the cap" },
  NO_PROJECTIONS: { status: 400, meaning: "projected quantities were asked for and the file has none" },
  NO_KPATH_LABELS: { status: 400, meaning: "the band structure has no labelled k-points" },
  UNKNOWN_BOND_LABEL: { status: 400, meaning: "a COHP bond label that the file does not contain" },

  // The studio's viewer, relayed over its WebSocket.
  INVALID_DIMENSIONS: { status: 400, meaning: "screenshot width or height not an integer from 1 to 8192" },
  INVALID_QUALITY: { status: 400, meaning: "screenshot quality outside 0 to 1" },
  INVALID_CAMERA: { status: 400, meaning: "a camera zoom of 0 or less" },
  NO_VIEWER: { status: 503, meaning: "no studio is connected (or it disconnected before answering)" },
  VIEWER_TIMEOUT: { status: 504, meaning: "the studio did not answer in time" },
  VIEWER_ERROR: { status: 502, meaning: "the studio failed to answer (the message carries its reason)" },
  UNKNOWN_TOOL: { status: 502, meaning: "the studio does not know this viewer tool (an older studio)" },
  UNKNOWN_COMMAND: { status: 502, meaning: "the studio does not know this viewer command (an older studio)" },
  NO_STRUCTURE_LOADED: { status: 404, meaning: "the studio has no structure loaded" },

  // Calculators and optimization (the Python worker).
  UNKNOWN_CALCULATOR: { status: 400, meaning: "the calculator id is not known" },
  CALCULATOR_UNAVAILABLE: {
    status: 400,
    meaning: "the calculator's library, model or device is not available (the message says how to install it)",
  },
  UNKNOWN_MODEL: { status: 400, meaning: "a model id that is not on the server's model allowlist" },
  UNSUPPORTED_ELEMENTS: { status: 400, meaning: "the calculator cannot treat these elements or this periodicity" },
  UNKNOWN_OPTIMIZER: { status: 400, meaning: "the optimizer id is not bfgs, tr_min, tr_ts or irc" },
  OPTIMIZER_UNAVAILABLE: {
    status: 400,
    meaning: "a trust-radius optimizer or irc without its library (the message has the install command)",
  },
  UNSUPPORTED_OPTION: {
    status: 400,
    meaning: "an option the chosen optimizer does not support (optimize_cell with anything but bfgs)",
  },
  INVALID_FMAX: { status: 400, meaning: "fmax of 0 or less" },
  INVALID_MAX_STEPS: { status: 400, meaning: "max_steps below 0 or beyond the cap" },
  CALCULATION_FAILED: {
    status: 500,
    meaning: "the calculator raised during the calculation (the message gives its short reason)",
  },
  WORKER_DIED: { status: 502, meaning: "the calculator worker died during the request (it is replaced)" },
  UNKNOWN_METHOD: { status: 500, meaning: "a bug: the service asked the worker for a method it does not have" },
  CANCELLED: { status: 409, meaning: "the optimization was cancelled (client gone, or a cancel message)" },
  ALREADY_RUNNING: { status: 409, meaning: "WebSocket event: an optimization is already running on this socket" },
  NOT_RUNNING: { status: 409, meaning: "WebSocket event: cancel with no optimization running" },

  // Chat providers and command-line agents.
  INVALID_MAX_TOKENS: { status: 400, meaning: "a chat request with max_tokens below 1" },
  EMPTY_MESSAGES: { status: 400, meaning: "a chat request with an empty `messages` list" },
  UNKNOWN_PROVIDER: { status: 400, meaning: "not one of the chat providers (and no `base_url`)" },
  MISSING_API_KEY: {
    status: 401,
    meaning: "the provider's key variable is not set (or `base_url` overridden without `api_key`)",
  },
  INVALID_API_KEY: { status: 401, meaning: "the provider refused the key" },
  UPSTREAM_ERROR: {
    status: 502,
    meaning: "the provider failed or could not be reached (`details.status`: its HTTP status, 429 included)",
  },
  UNKNOWN_AGENT: { status: 400, meaning: "not one of the command-line agents" },
  INVALID_AGENT_OPTION: {
    status: 400,
    meaning: "an agent option value that is refused (starts with `-`, or a tool name outside `svc_*`)",
  },
  INVALID_WORKING_DIRECTORY: { status: 400, meaning: "the agent's working directory is outside the agent root" },
  AGENT_NOT_FOUND: { status: 404, meaning: "the agent's program is not on PATH" },
  AGENT_AUTH: { status: 401, meaning: "the agent is not logged in and has no key" },
  AGENT_BUSY: { status: 429, meaning: "ATOMSTUDIO_MAX_AGENTS agents are already running" },
  AGENT_TIMEOUT: { status: 504, meaning: "the agent sent no event and did not exit within its timeout" },
  AGENT_CRASHED: { status: 500, meaning: "the agent could not start or exited non-zero" },
  AGENT_ERROR: { status: 502, meaning: "stream event: the agent reported an error" },
  AGENT_WARNING: { status: 200, meaning: "stream event: the agent reported a warning; the run goes on" },
  AGENT_BAD_OUTPUT: { status: 502, meaning: "stream event: the agent printed a line that is not one of its JSON events" },
  // Workflows (README "Workflows").
  UNKNOWN_NODE_TYPE: {
    status: 400,
    meaning:
      "a workflow node's type (or a map's params.operation) is not an operation of GET /api/workflow/node-types, map or select",
  },
  CYCLE_DETECTED: { status: 400, meaning: "the workflow's nodes depend on each other in a cycle (details.nodes)" },
  DANGLING_REFERENCE: {
    status: 400,
    meaning: 'a node input refers to a node that is not in the workflow, or is not "node.field" / "$inputs.name"',
  },
  DUPLICATE_NODE_ID: { status: 400, meaning: "two nodes of a workflow have the same id" },
  INVALID_NODE_PARAMS: {
    status: 400,
    meaning: "a map or select node lacks what it needs, or retries / timeout_s exceed their caps",
  },
  INVALID_NODE_INPUT: {
    status: 400,
    meaning: "node error: a referenced output field is missing, or map/select items are not a list of the right values",
  },
  WORKFLOW_TOO_LARGE: {
    status: 400,
    meaning: "too many nodes, too large a definition, or a map fanning out over too many items (caps in details)",
  },
  WORKFLOW_NOT_FOUND: { status: 404, meaning: "no workflow or run with this id" },
  JOB_NOT_FOUND: { status: 404, meaning: "no job with this id (finished jobs are kept for a day)" },
  WORKFLOW_ALREADY_RUNNING: { status: 409, meaning: "the workflow has a run that has not finished (details.run_id)" },
  JOB_FAILED: { status: 500, meaning: "node error: a queued job failed without a coded reason (its message says why)" },
  INVALID_IDEMPOTENCY_KEY: { status: 400, meaning: "the Idempotency-Key is empty or longer than 200 characters" },
  // Heterostructures (/api/heterostructure/*)
  OUT_OF_RANGE: { status: 400, meaning: "a numeric parameter outside its documented range (`details`: field, value, min, max)" },
  AREA_TOO_LARGE: {
    status: 400,
    meaning:
      "a lattice-match search that would walk too many superlattices (max_area over 400 unit cells, max_length over 1000 edges)",
  },
  MATCH_MISMATCH: {
    status: 400,
    meaning:
      "a match whose superlattice vectors are not what its transformations make from the inputs sent (a match of another search)",
  },
  INVALID_TRANSFORM: { status: 400, meaning: "a supercell transformation that is not a non-singular 2x2 integer matrix" },
  TWIST_NOT_COMMENSURATE: {
    status: 400,
    meaning: "a twist angle other than 0: rotating the film inside an unchanged cell breaks periodicity",
  },
  INTERFACE_FAILED: {
    status: 400,
    meaning: "pymatgen refused the heterostructure inputs (a cell it cannot cut, match or stack); the message gives its reason",
  },
  NO_INTERFACE: { status: 400, meaning: "the intermat pipeline finds no interface for these inputs and tolerances" },
  NO_TERMINATIONS: { status: 400, meaning: "pymatgen finds no termination pair for the Miller indices" },
  // Adsorption (`/api/adsorption/*`, packages/server/src/adsorption/README.md).
  INVALID_ADSORPTION_PARAMETER: {
    status: 400,
    meaning: "an adsorption parameter outside its documented range (the message names it and the range)",
  },
  UNSUPPORTED_PARAMETER: {
    status: 400,
    meaning:
      "a parameter of the earlier alpha-shape site finder set to other than its default: pymatgen's AdsorbateSiteFinder has no equivalent",
  },
  NO_SURFACE_SITES: {
    status: 400,
    meaning: "no adsorption sites can be found on this structure (e.g. its surface atoms lie on one line)",
  },
  INVALID_BINDING_INDEX: { status: 400, meaning: "a binding-atom index outside the adsorbate, or an empty list of them" },
  ADSORBATE_OVERLAP: {
    status: 400,
    meaning:
      "the placed adsorbate is closer to the slab (periodic images included) than the clearance, and lifting was refused or did not clear it",
  },
  NO_SITE_PAIR: { status: 400, meaning: "no two sites are target_distance ± distance_tolerance apart (or fewer than two sites)" },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

const TABLE: Readonly<Record<string, ErrorCodeInfo>> = ERROR_CODES;

export const isErrorCode = (code: unknown): code is ErrorCode => typeof code === "string" && Object.hasOwn(TABLE, code);

/**
 * The HTTP status of a code. A code outside the table (one relayed from a newer studio or a
 * remote service) keeps the status its sender gave, else it is the sender's failure (502).
 */
export const statusOf = (code: string, sent?: number): number =>
  isErrorCode(code) ? (TABLE[code] as ErrorCodeInfo).status : typeof sent === "number" && sent >= 400 && sent <= 599 ? sent : 502;

/** The table as Markdown rows, the form docs/errors.md shows. */
export const errorTableMarkdown = (): string =>
  [
    "| code | status | meaning |",
    "|---|---|---|",
    ...Object.entries(TABLE).map(([code, { status, meaning }]) => `| \`${code}\` | ${status} | ${meaning} |`),
  ].join("\n");

/**
 * An AtomStudioError whose status is the table's: the way server code raises errors, so no call
 * site states a status (and the code is checked against the table at compile time).
 */
export const serviceError = (code: ErrorCode, message: string, details?: Record<string, unknown>): AtomStudioError =>
  new AtomStudioError(code, message, details, statusOf(code));
