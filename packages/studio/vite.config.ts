import { defineConfig } from "vite";

// The studio is served by the service (packages/server/src/studio) from dist/; `npm run dev -w
// packages/studio` serves it with hot reload and forwards /api (HTTP and the relay WebSocket)
// to a service on port 8000.
export default defineConfig({
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", chunkSizeWarningLimit: 4096 },
  server: { proxy: { "/api": { target: "http://127.0.0.1:8000", ws: true } } },
});
