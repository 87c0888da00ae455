// Entry of a compute thread (see README.md here). The service runs its TypeScript sources
// through tsx (bin/atomstudio.js); a worker thread starts with a fresh module loader, so it
// registers tsx itself before loading the task table.
import { register } from "tsx/esm/api";

register();
const { runTask } = await import("./tasks.ts");

export default runTask;
