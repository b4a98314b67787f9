// A typed client of the validmail API: openapi-fetch over the types that
// openapi-typescript generates from the served OpenAPI document
// (src/schema.d.ts, `npm run generate`), with the API key on every request
// and retries of 429 and 503 that honour Retry-After, as the Go client
// (httpapi/client) does.
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths };
export type Schemas = components["schemas"];
export type ValidationResponse = Schemas["ValidationResponse"];
export type JobResponse = Schemas["JobResponse"];
export type ListResponse = Schemas["ListResponse"];
export type Problem = Schemas["Problem"];

/** Options of {@link createValidmailClient}. */
export interface Options {
  /** The API's base URL: the servers entry of its /openapi.json. */
  baseUrl: string;
  /** An API key (vm_live_…), sent as x-api-key. */
  apiKey: string;
  /** How many times a 429 or 503 answer is retried; default 4. */
  retries?: number;
  /** The longest wait between attempts, in milliseconds; default 30,000. */
  maxDelayMs?: number;
  /** The fetch to send requests with; default globalThis.fetch. */
  fetch?: (request: Request) => Promise<Response>;
}

/** Creates a client of every documented route. */
export function createValidmailClient(opts: Options): Client<paths> {
  return createClient<paths>({
    baseUrl: opts.baseUrl.replace(/\/+$/, ""),
    headers: { "x-api-key": opts.apiKey },
    fetch: retrying(opts.fetch ?? ((r) => globalThis.fetch(r)), opts.retries ?? 4, opts.maxDelayMs ?? 30_000),
  });
}

/** The answers worth sending again: rate limited, or unavailable a while. */
const retryable = new Set([429, 503]);

/**
 * retrying wraps send so that a 429 or 503 is sent again, after its
 * Retry-After (seconds) or an exponential backoff with jitter, at most
 * retries times. A request's body is kept by cloning it before each send.
 */
export function retrying(
  send: (request: Request) => Promise<Response>,
  retries: number,
  maxDelayMs: number,
): (request: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const response = await send(attempt < retries ? request.clone() : request);
      if (!retryable.has(response.status) || attempt >= retries) {
        return response;
      }
      await response.body?.cancel();
      await sleep(delay(response.headers.get("Retry-After"), attempt, maxDelayMs), request.signal);
    }
  };
}

/** delay is Retry-After in milliseconds, else 250 ms doubling, jittered. */
export function delay(retryAfter: string | null, attempt: number, maxDelayMs: number): number {
  const seconds = retryAfter === null ? NaN : Number(retryAfter);
  const base = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 250 * 2 ** attempt;
  return Math.min(base * (0.8 + 0.4 * Math.random()), maxDelayMs);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
