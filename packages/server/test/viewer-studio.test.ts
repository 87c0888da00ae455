/** The studio's static serving when its build is missing: a clear page at /, the API untouched. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "../../studio/test/support.ts";

describe("studio not built", () => {
  let svc: RunningService;
  beforeAll(async () => {
    svc = await startService({ studioDist: "/nonexistent/atomstudio-studio-dist" });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("answers / with a page that says how to build the studio", async () => {
    const r = await fetch(`${svc.url}/`);
    expect(r.status).toBe(503);
    expect(r.headers.get("content-type")).toMatch(/text\/html/);
    expect(await r.text()).toContain("npm run build -w packages/studio");
  });

  it("keeps /api answering, and unknown /api paths as ErrorResponse 404", async () => {
    expect((await fetch(`${svc.url}/api/health`)).status).toBe(200);
    const r = await fetch(`${svc.url}/api/nothing-here`);
    expect(r.status).toBe(404);
    expect((await r.json()).code).toBe("NOT_FOUND");
  });
});
