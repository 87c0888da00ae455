/**
 * The one error type every layer throws. `code` is the stable, machine-readable ErrorResponse
 * code (decisions §3); `status` is the HTTP status the service answers with.
 */
export class AtomStudioError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: string, message: string, details?: Record<string, unknown>, status = 400) {
    super(message);
    this.name = "AtomStudioError";
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

export const isAtomStudioError = (e: unknown): e is AtomStudioError =>
  e instanceof AtomStudioError || (typeof e === "object" && e !== null && (e as { name?: unknown }).name === "AtomStudioError");

/** Shorthand for the common 400 with a code. */
export const fail = (code: string, message: string, details?: Record<string, unknown>): never => {
  throw new AtomStudioError(code, message, details);
};
