/**
 * `harness serve` from Node: start it (`startServe`), open a session per test (`openSession`),
 * read what the code under test sent, close the session.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:fs";
import { access, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { HarnessError, invalidArgument } from "./errors.js";
import type { ScriptedReply } from "./generated/scenario.js";

/** How misses are treated: `none` answers 404, the others forward them to the provider and record. */
export type RecordMode = "none" | "once" | "new_episodes" | "all";
/** Whether identical requests share the first recorded answer (`shared`) or each get their own. */
export type IdenticalRequests = "shared" | "separate";
/** How replayed streams are timed: as recorded, N times faster (0.001 to 1000000), or as fast as the client reads. */
export type Pace = "off" | "recorded" | number;

export const RECORD_MODES: readonly RecordMode[] = ["none", "once", "new_episodes", "all"];
const IDENTICAL_REQUESTS: readonly IdenticalRequests[] = ["shared", "separate"];
/** The header a web app's server reads to route a test's model calls to its session. */
export const SESSION_HEADER = "x-harness-session";
const OUTPUT_KEPT = 64 * 1024;
/** How long a stopping server has to save its recordings and exit before it is killed. */
const STOP_SECONDS = 10;
/**
 * How long killed processes have to close the server's output before `stop()` stops waiting: a
 * process that left the server's process group may hold it open for ever.
 */
const KILLED_WAIT_MS = 2_000;
const READY_POLL_MS = 25;
const DEFAULT_READY_TIMEOUT_MS = 60_000;
const WINDOWS = process.platform === "win32";
/** Signals a terminal sends its foreground process group, which a server in its own group misses. */
const PASSED_ON: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

export interface ServeOptions {
  /** The cassettes folder (relative to this process's working directory). */
  cassettes: string;
  /** `none` replays only (a miss is a 404); the others record misses with the server's keys. */
  recordMode: RecordMode;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** 127.0.0.1 by default; another address needs `--control-token` in `args`. */
  host?: string;
  identicalRequests?: IdenticalRequests;
  pace?: Pace;
  /** Set (a string) or remove (undefined) variables of the server's environment, over this process's. */
  env?: Record<string, string | undefined>;
  /** More `harness serve` options, as its command line spells them (`--allow-repeats`). */
  args?: readonly string[];
  /**
   * How long the server may take to be ready, in milliseconds (finite, above 0); 60 s by
   * default (`uvx` may install it first).
   */
  readyTimeoutMs?: number;
}

export interface HarnessServer {
  /** The server's base URL, `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** The last 64 KiB the server printed: its request log and, once stopped, its summary. */
  output(): string;
  /**
   * Stop it as Ctrl-C does (SIGINT to its process group: recordings saved, summary printed) and
   * wait for it to exit; what is still running 10 s later is killed (SIGKILL). Always resolves,
   * at the latest about 12 s after the call; calling it again returns the same promise.
   */
  stop(): Promise<void>;
}

/**
 * Start `harness serve` on a free port and resolve once it accepts connections.
 *
 * The command is `HARNESS_BIN` (from `env`, else this process's environment), else `harness`
 * on the PATH, else `uvx --from completion-harness harness`. It runs with `--port 0
 * --ready-file <temporary file>` (or the port given); the URL it writes there is the server's.
 * It runs in a process group of its own, so that stopping it also stops what it started (a
 * wrapper script's `harness`, without `exec`); this process passes on the SIGINT, SIGTERM or
 * SIGHUP it gets to that group and kills the group when it exits.
 * Rejects with a `HarnessError` holding the last 64 KiB the server printed when it exits first
 * (`serve_exited`) or is not ready within `readyTimeoutMs` (`serve_timeout`; however much it
 * prints), with `harness_not_found` when no command can be started, and with
 * `invalid_argument`, before starting anything, when an option is refused. On every rejection
 * the process group is killed first.
 */
export async function startServe(options: ServeOptions): Promise<HarnessServer> {
  const serveArgs = serveArguments(options);
  const timeout = readyTimeout(options.readyTimeoutMs);
  const env = environment(options.env);
  const command = await harnessCommand(env);
  const folder = await mkdtemp(join(tmpdir(), "harness-serve-"));
  const readyFile = join(folder, "url");
  const child = spawn(command.file, [...command.prefix, "serve", ...serveArgs, "--ready-file", readyFile], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
    // a process group of its own (POSIX), which stop() signals whole; on Windows a new console
    detached: !WINDOWS,
  });
  const output = new OutputTail(OUTPUT_KEPT);
  const keep = (chunk: Buffer) => output.append(chunk);
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let startError: Error | undefined;
  // "close": the command exited and nothing holds its output open any more
  const exited = new Promise<void>((resolve) => {
    child.once("error", (error) => {
      startError = error;
      resolve();
    });
    child.once("close", (code, signal) => {
      exit = { code, signal };
      resolve();
    });
  });
  running.add(child);

  let stopping: Promise<void> | undefined;
  /** Signal the group (SIGINT: save and exit) and wait, then kill what is left; never hangs. */
  const end = (firstSignal: "SIGINT" | "SIGKILL"): Promise<void> => {
    stopping ??= (async () => {
      if (exit === undefined && startError === undefined) {
        signalGroup(child, firstSignal);
        const stopped = firstSignal === "SIGKILL" || (await settlesWithin(exited, STOP_SECONDS * 1000));
        if (!stopped) signalGroup(child, "SIGKILL");
        await settlesWithin(exited, KILLED_WAIT_MS);
      }
      signalGroup(child, "SIGKILL"); // what it started that closed its output, and lives on
      running.delete(child);
      // a process outside the group may still hold the pipes: they must not keep us alive
      child.stdout.destroy();
      child.stderr.destroy();
      child.unref();
      await rm(folder, { recursive: true, force: true });
    })();
    return stopping;
  };

  const deadline = Date.now() + timeout;
  const shown = [command.file, ...command.prefix, "serve", ...serveArgs].join(" ");
  for (;;) {
    const url = await readReadyFile(readyFile);
    if (url) {
      return { url, output: () => output.text(), stop: () => end("SIGINT") };
    }
    if (startError !== undefined) {
      await end("SIGKILL");
      throw new HarnessError(
        "harness_not_found",
        `could not start \`${shown}\` (${startError.message}): set HARNESS_BIN to a harness executable, put \`harness\` on the PATH (pip install completion-harness), or install uv for \`uvx --from completion-harness harness\``,
        { cause: startError },
      );
    }
    if (exit !== undefined) {
      await end("SIGKILL");
      const status = exit.code === null ? `signal ${exit.signal}` : `exit ${exit.code}`;
      throw new HarnessError(
        "serve_exited",
        `\`${shown}\` exited (${status}) before it was ready; it printed:\n${output.text().trim() || "(nothing)"}`,
      );
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      // never ready, so nothing to save: no grace period
      await end("SIGKILL");
      throw new HarnessError(
        "serve_timeout",
        `\`${shown}\` was not ready within ${timeout} ms (readyTimeoutMs); it printed:\n${output.text().trim() || "(nothing)"}`,
      );
    }
    await Promise.race([sleep(Math.min(READY_POLL_MS, left), undefined, { ref: false }), exited]);
  }
}

function readyTimeout(readyTimeoutMs: unknown): number {
  if (readyTimeoutMs === undefined) return DEFAULT_READY_TIMEOUT_MS;
  if (typeof readyTimeoutMs === "number" && Number.isFinite(readyTimeoutMs) && readyTimeoutMs > 0) {
    return readyTimeoutMs;
  }
  throw invalidArgument(
    `a finite number of milliseconds above 0 (${DEFAULT_READY_TIMEOUT_MS} when not given)`,
    "readyTimeoutMs",
    readyTimeoutMs,
  );
}

/** Whether `promise` settled within `ms`; the timer does not keep this process alive. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const patience = new AbortController();
  try {
    return await Promise.race([
      promise.then(() => true),
      sleep(ms, false, { signal: patience.signal, ref: false }),
    ]);
  } finally {
    patience.abort();
  }
}

/**
 * The last `limit` bytes written to it, decoded when asked: appending costs little whatever the
 * chunk (no decoding, a copy now and then), and however much a server prints it holds at most
 * about three times the limit.
 */
class OutputTail {
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(private readonly limit: number) {}

  append(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    if (this.#size > 2 * this.limit) {
      const kept = Buffer.from(this.#last()); // a copy, so that the rest is freed
      this.#chunks = [kept];
      this.#size = kept.length;
    }
  }

  text(): string {
    const bytes = this.#last();
    let start = 0;
    // the cut may fall inside a character: drop its continuation bytes
    while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start += 1;
    return bytes.subarray(start).toString("utf8");
  }

  #last(): Buffer {
    const all = Buffer.concat(this.#chunks, this.#size);
    return all.subarray(Math.max(0, all.length - this.limit));
  }
}

// -- the process groups of running servers ------------------------------------------------------

/** Send `signal` to the child's process group (Windows has none: the child alone). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return; // never started
  try {
    if (WINDOWS) child.kill(signal);
    else process.kill(-child.pid, signal);
  } catch {
    // the group is gone already
  }
}

/**
 * The servers started and not yet stopped. While there is one, this process listens for its
 * exit and for the signals in PASSED_ON; the listeners go with the last server.
 */
class RunningServers {
  readonly #children = new Set<ChildProcess>();

  add(child: ChildProcess): void {
    if (child.pid === undefined) return;
    if (this.#children.size === 0) {
      process.on("exit", this.#killAll);
      for (const signal of PASSED_ON) process.on(signal, this.#passOn);
    }
    this.#children.add(child);
  }

  delete(child: ChildProcess): void {
    if (this.#children.delete(child) && this.#children.size === 0) {
      process.removeListener("exit", this.#killAll);
      for (const signal of PASSED_ON) process.removeListener(signal, this.#passOn);
    }
  }

  // A server left running when this process exits would hold its port: end it with us.
  readonly #killAll = (): void => {
    for (const child of this.#children) signalGroup(child, "SIGKILL");
  };

  readonly #passOn = (signal: NodeJS.Signals): void => {
    for (const child of this.#children) signalGroup(child, signal);
    // Listening replaced Node's default, dying by the signal; when no one else listens, die by it.
    if (process.listenerCount(signal) === 1) {
      for (const passed of PASSED_ON) process.removeListener(passed, this.#passOn);
      process.kill(process.pid, signal);
    }
  };
}

const running = new RunningServers();

function serveArguments(options: ServeOptions): string[] {
  if (typeof options !== "object" || options === null) {
    throw invalidArgument("an options object", "options", options);
  }
  const { cassettes, recordMode, port = 0, host, identicalRequests, pace, args = [] } = options;
  if (typeof cassettes !== "string" || cassettes === "") {
    throw invalidArgument("the cassettes folder (a non-empty string)", "cassettes", cassettes);
  }
  if (!RECORD_MODES.includes(recordMode)) {
    throw invalidArgument(`one of ${RECORD_MODES.join(", ")}`, "recordMode", recordMode);
  }
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw invalidArgument("an integer from 0 to 65535", "port", port);
  }
  const serveArgs = ["--cassettes", cassettes, "--record-mode", recordMode, "--port", String(port)];
  if (host !== undefined) {
    if (typeof host !== "string" || host === "") throw invalidArgument("a host address", "host", host);
    serveArgs.push("--host", host);
  }
  if (identicalRequests !== undefined) {
    if (!IDENTICAL_REQUESTS.includes(identicalRequests)) {
      throw invalidArgument(`one of ${IDENTICAL_REQUESTS.join(", ")}`, "identicalRequests", identicalRequests);
    }
    serveArgs.push("--identical-requests", identicalRequests);
  }
  if (pace !== undefined) serveArgs.push("--pace", String(checkedPace(pace)));
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string")) {
    throw invalidArgument("an array of strings", "args", args);
  }
  return [...serveArgs, ...args];
}

/** The speeds harness serve takes: a thousand times slower to a million times faster. */
const MIN_SPEED = 0.001;
const MAX_SPEED = 1_000_000;

function checkedPace(pace: unknown): Pace {
  if (pace === "off" || pace === "recorded") return pace;
  if (typeof pace === "number" && pace >= MIN_SPEED && pace <= MAX_SPEED) return pace; // NaN fails
  throw invalidArgument("'off', 'recorded' or a number of times faster from 0.001 to 1000000", "pace", pace);
}

function environment(overrides: ServeOptions["env"]): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(overrides ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

async function harnessCommand(env: NodeJS.ProcessEnv): Promise<{ file: string; prefix: string[] }> {
  if (env.HARNESS_BIN) return { file: env.HARNESS_BIN, prefix: [] };
  for (const folder of (env.PATH ?? "").split(delimiter)) {
    if (folder === "") continue;
    const candidate = join(folder, "harness");
    try {
      await access(candidate, constants.X_OK);
      return { file: candidate, prefix: [] };
    } catch {
      // not here; the next folder
    }
  }
  return { file: "uvx", prefix: ["--from", "completion-harness", "harness"] };
}

async function readReadyFile(path: string): Promise<string | undefined> {
  try {
    // written atomically by the server, with a final newline
    const text = await readFile(path, "utf8");
    return text.endsWith("\n") ? text.trim() : undefined;
  } catch {
    return undefined;
  }
}

// -- sessions -------------------------------------------------------------------------------------

export interface SessionOptions {
  /** Replay (and in a record mode, record) this cassette, named inside the server's cassettes folder. */
  cassette?: string;
  /** Or answer each request with the script's next reply, in the wire of the route it came to. */
  script?: ScriptedReply[];
  /** The provider a script speaks (`openai`, `anthropic`, `gemini`); else the one whose route is asked first. */
  provider?: string;
  /** At most the server's own `--record-mode` (unless it runs with `--allow-session-record`). */
  recordMode?: RecordMode;
  identicalRequests?: IdenticalRequests;
  pace?: Pace;
  /** The tool whose forcing makes a request `forced` in the report; `__finish__` by default. */
  outputTool?: string;
  /** The server's `--control-token`, when it has one. */
  controlToken?: string;
}

/**
 * The base URL of each provider's official SDK, one per provider the server speaks: `openai` is
 * the session's URL plus `/v1` (`new OpenAI({ baseURL })`), `anthropic` the session's URL alone
 * (`new Anthropic({ baseURL })`, which adds `/v1` itself), `gemini` the session's URL alone
 * (`new GoogleGenAI({ httpOptions: { baseUrl } })`, which adds its version itself). The server
 * answers every endpoint with and without its version, so these also work in the AI SDK
 * (`createOpenAI`, `createAnthropic`, `createGoogleGenerativeAI`) and LangChain (`ChatOpenAI`'s
 * `configuration.baseURL`, `ChatAnthropic`'s `anthropicApiUrl`); `${session.url}/v1` is the AI
 * SDK's own spelling for Anthropic and `${session.url}/v1beta` for Google. Never give an SDK that
 * adds `/v1` itself a URL ending in `/v1`.
 */
export interface BaseUrls {
  readonly openai: string;
  readonly anthropic: string;
  readonly gemini: string;
  readonly [provider: string]: string;
}

/** One message of a neutral request, as the session report gives it. */
export type NeutralMessage =
  | { kind: "user"; content: string; metadata: Record<string, unknown> }
  | {
      kind: "assistant";
      text: string | null;
      tool_calls: { id: string; name: string; arguments: string }[];
      reasoning_blocks: Record<string, unknown>[];
      metadata: Record<string, unknown>;
    }
  | {
      kind: "tool_result";
      tool_call_id: string;
      name: string;
      content: string;
      is_error: boolean;
      metadata: Record<string, unknown>;
    };

/** What one model call sent, provider-neutral (the harness's own request model). */
export interface NeutralRequest {
  model: string;
  /** The system prompt as named fragments (`base`, `skills_catalog`, `workspace`, ...). */
  system: { name: string; text: string }[];
  messages: NeutralMessage[];
  tools: { name: string; description: string; parameters: Record<string, unknown> }[];
  tool_choice: "auto" | "none" | "required" | { kind: "tool"; name: string };
  max_tokens: number | null;
  temperature: number | null;
  top_p: number | null;
  stop_sequences: string[];
  reasoning: { kind: "disabled" } | { kind: "effort"; effort: string; budget_tokens: number | null } | null;
  response_format: { name: string; schema: Record<string, unknown>; strict: boolean } | null;
  stream: boolean;
}

/**
 * One request the session received, in order. `kind` says whether it forced the output tool
 * (`forced`) or not (`work`); a request the harness could not read has `error` instead of
 * `kind` and `request`. A request the session answered 404 is listed too; its diagnosis is in
 * the report's `misses`.
 */
export interface SessionRequest {
  index: number;
  endpoint: string;
  provider: string;
  kind?: "work" | "forced";
  request?: NeutralRequest;
  error?: string;
}

/** `GET /_harness/sessions/<id>`. */
export interface SessionReport {
  id: string;
  output_tool: string;
  requests: SessionRequest[];
  /**
   * What the session answered 404 to, each with the server's diagnosis: a cassette miss (the
   * nearest recorded request and the difference) or a script used up. The first 20.
   */
  misses: string[];
  /** Requests received beyond what the server keeps per session (10,000), counted only. */
  requests_not_kept?: number;
}

export interface HarnessSession {
  readonly id: string;
  /** The session's URL, `<server>/s/<id>`: the `<url>` of docs/serve.md's table of each SDK's setting. */
  readonly url: string;
  /** Give these to the SDKs as their base URL (any API key, retries off); see `BaseUrls`. */
  readonly baseUrls: BaseUrls;
  /** `{ "x-harness-session": id }`: send it to a web app's server, which routes its model calls by it. */
  readonly headers: Readonly<Record<typeof SESSION_HEADER, string>>;
  /** Every request the session received so far, in order. */
  requests(): Promise<SessionRequest[]>;
  /** What the session answered 404 to so far (a miss, a script used up), with the diagnosis. */
  misses(): Promise<string[]>;
  /** The whole report: the requests, the misses, and how many requests were not kept. */
  report(): Promise<SessionReport>;
  /** Close the session (a recording session saves its cassette). Calling it again does nothing. */
  close(): Promise<void>;
}

/**
 * Open a session on the `harness serve` at `url`: a cassette replayed from its start for this
 * session alone, or a script. Rejects with a `HarnessError`: `control_failed` with the server's
 * own message when it refuses (an unknown cassette in record mode none, a record mode above the
 * server's: 403), `server_unreachable` when nothing answers at `url`.
 */
export async function openSession(url: string, options: SessionOptions = {}): Promise<HarnessSession> {
  const server = serverUrl(url);
  const body: Record<string, unknown> = {};
  if (options.cassette !== undefined) body.cassette = options.cassette;
  if (options.script !== undefined) body.script = options.script;
  if (options.provider !== undefined) body.provider = options.provider;
  if (options.recordMode !== undefined) {
    if (!RECORD_MODES.includes(options.recordMode)) {
      throw invalidArgument(`one of ${RECORD_MODES.join(", ")}`, "recordMode", options.recordMode);
    }
    body.record_mode = options.recordMode;
  }
  if (options.identicalRequests !== undefined) body.identical_requests = options.identicalRequests;
  if (options.pace !== undefined) body.pace = checkedPace(options.pace);
  if (options.outputTool !== undefined) body.output_tool = options.outputTool;
  const call = controlCaller(server, options.controlToken);
  const opened = (await call("POST", "/sessions", body)) as { id: string; url: string; base_urls: BaseUrls };
  const path = `/sessions/${encodeURIComponent(opened.id)}`;
  let closing: Promise<void> | undefined;
  const report = async () => (await call("GET", path)) as SessionReport;
  return {
    id: opened.id,
    url: opened.url,
    baseUrls: opened.base_urls,
    headers: { [SESSION_HEADER]: opened.id },
    report,
    requests: async () => (await report()).requests,
    misses: async () => (await report()).misses,
    close: () => {
      closing ??= call("DELETE", path).then(() => undefined);
      return closing;
    },
  };
}

function serverUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidArgument("the server's URL (http://HOST:PORT)", "url", url);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw invalidArgument("the server's URL (http://HOST:PORT)", "url", url);
  }
  return url.replace(/\/+$/, "");
}

type ControlCall = (method: string, path: string, body?: object) => Promise<unknown>;

function controlCaller(server: string, token: string | undefined): ControlCall {
  return async (method, path, body) => {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (token !== undefined) headers["x-harness-token"] = token;
    const route = `${method} /_harness${path}`;
    let response: Response;
    try {
      response = await fetch(`${server}/_harness${path}`, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
      });
    } catch (error) {
      const reason = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
      throw new HarnessError(
        "server_unreachable",
        `${route}: no harness serve answered at ${server} (${reason}); is it running?`,
        { cause: error },
      );
    }
    const text = await response.text();
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      payload = undefined;
    }
    if (!response.ok) {
      const message = (payload as { error?: { message?: unknown } } | undefined)?.error?.message;
      throw new HarnessError(
        "control_failed",
        `${route} answered ${response.status}: ${typeof message === "string" ? message : text.slice(0, 500)}`,
        { status: response.status },
      );
    }
    return payload;
  };
}
