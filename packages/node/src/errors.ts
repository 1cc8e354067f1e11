/**
 * Every failure this package reports is a `HarnessError` with a stable `code`, so a caller can
 * tell them apart without matching messages. Messages say what to change.
 */
export type HarnessErrorCode =
  /** An argument the caller gave is refused; the message names it, with what is allowed. */
  | "invalid_argument"
  /** No `harness` command could be started (HARNESS_BIN, `harness` on the PATH, `uvx`). */
  | "harness_not_found"
  /** `harness serve` exited before it was ready; the message holds its output. */
  | "serve_exited"
  /** `harness serve` did not write its ready file in time; the message holds its output. */
  | "serve_timeout"
  /** The server could not be reached at the URL given. */
  | "server_unreachable"
  /** A control call (`/_harness/...`) was refused; `status` is the HTTP status it answered. */
  | "control_failed";

export class HarnessError extends Error {
  override name = "HarnessError";
  readonly code: HarnessErrorCode;
  /** The HTTP status of a refused control call (`control_failed`), else undefined. */
  readonly status: number | undefined;

  constructor(code: HarnessErrorCode, message: string, options?: { status?: number; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options?.status;
  }
}

/** `expected X but got name=value (type=T)`, the shape of every argument error. */
export function invalidArgument(expected: string, name: string, value: unknown): HarnessError {
  const type = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
  let shown: string;
  try {
    // JSON would show NaN and Infinity as null
    shown = typeof value === "number" ? String(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    shown = String(value);
  }
  return new HarnessError("invalid_argument", `expected ${expected} but got ${name}=${shown} (type=${type})`);
}
