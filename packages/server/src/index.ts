export { loadConfig, type ServiceConfig } from "./config.ts";
export { buildApp } from "./http/app.ts";
export { operations } from "./operations/index.ts";
export { openApiDocument } from "./registry/openapi.ts";
export { defineOperation, type Operation } from "./registry/operation.ts";
export { assistantTools, mcpTools } from "./registry/tools.ts";
