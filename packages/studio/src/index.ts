/** atomstudio-studio: what other packages (and the assistant panel) import. */
export { studioApi, whenStudioReady } from "./api.ts";
export type { SelectionResult, StudioApi } from "./studio.ts";
export { buildScene, type Scene, type SceneAtom, type SceneBond, sitesOfAtoms } from "./viewer/adapter.ts";
export { bindViewerTools, type ViewerToolDefinition, viewerToolDefinitions, viewerTools } from "./viewer/tools.ts";
