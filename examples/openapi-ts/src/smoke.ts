// smoke drives a live validmaild through the typed client: the four
// endpoints of the contract, then a list uploaded twice under one
// Idempotency-Key and its results as CSV. It exits non-zero at the first
// answer that is not the documented one.
//
//   VALIDMAIL_URL=http://localhost:8080 VALIDMAIL_KEY=vm_live_… npm run smoke
import { createValidmailClient, type ListResponse } from "./client.js";

// Node's process, the little of it used here (no @types/node needed).
declare const process: { env: Record<string, string | undefined> };

const traceId = "6f1c2a9e-3b7d-4c2e-9a51-0d2f8e4b7c13";
const baseUrl = process.env.VALIDMAIL_URL ?? "http://localhost:8080";
const apiKey = process.env.VALIDMAIL_KEY ?? "";
const client = createValidmailClient({ baseUrl, apiKey });
const deadline = Date.now() + 120_000;

function fail(what: string, response: Response, body?: unknown): never {
  throw new Error(`${what}: ${response.status} ${JSON.stringify(body)}`);
}

async function poll(what: string, done: () => Promise<boolean>): Promise<void> {
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not done in time`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function balance(): Promise<number> {
  const { data, error, response } = await client.GET("/api/v1/account");
  if (!data) fail("GET /api/v1/account", response, error);
  console.log(`account ${data.email}: ${data.balance} credits, plan ${data.plan}`);
  return data.balance;
}

async function validate(): Promise<void> {
  const { data, error, response } = await client.GET("/validate", {
    params: { query: { email: "jane.doe@example.com" } },
    headers: { "X-Request-Id": traceId },
  });
  if (!data) fail("GET /validate", response, error);
  if (data.requestId !== traceId) throw new Error(`GET /validate: requestId ${data.requestId}, want ${traceId}`);
  console.log(`validate ${data.email}: ${data.confidence.status} (${data.reason})`);
}

async function batch(): Promise<void> {
  const { data, error, response } = await client.POST("/validate/async", {
    body: { emails: ["a@example.org", "b@example.org"] },
  });
  if (!data) fail("POST /validate/async", response, error);
  for (const id of data.job_ids) {
    await poll(`job ${id}`, async () => {
      const job = await client.GET("/validate/status/{job_id}", { params: { path: { job_id: id } } });
      if (!job.data) fail(`GET /validate/status/${id}`, job.response, job.error);
      return job.data.state === "completed" && job.data.result !== null;
    });
  }
  console.log(`batch ${data.batch_id}: ${data.job_count} jobs completed`);
}

async function list(): Promise<void> {
  const file = "email,name\nann@example.org,Ann\nbob@example.org,Bob\nANN@example.org,Ann again\ncid@example.org,Cid\n";
  const key = `openapi-ts-${Date.now()}`;
  let first: ListResponse | undefined;
  for (let i = 0; i < 2; i++) {
    const { data, error, response } = await client.POST("/api/v1/lists", {
      params: { header: { "Idempotency-Key": key } },
      body: file,
      bodySerializer: (body) => body as string,
      headers: { "Content-Type": "text/csv" },
    });
    if (!data) fail("POST /api/v1/lists", response, error);
    if (first && (data.batch_id !== first.batch_id || data.charged !== first.charged)) {
      throw new Error(`the upload repeated under its key answered batch ${data.batch_id}, want ${first.batch_id}`);
    }
    first ??= data;
  }
  if (!first || first.rows !== 4 || first.addresses !== 3 || first.charged !== 3) {
    throw new Error(`list: ${JSON.stringify(first)}`);
  }
  const id = first.batch_id;
  await poll(`list ${id}`, async () => {
    const b = await client.GET("/api/v1/batches/{batch_id}", { params: { path: { batch_id: id } } });
    if (!b.data) fail(`GET /api/v1/batches/${id}`, b.response, b.error);
    return b.data.state === "completed";
  });
  const csv = await client.GET("/api/v1/batches/{batch_id}/results", {
    params: { path: { batch_id: id }, query: { format: "csv" } },
    parseAs: "text",
  });
  if (csv.data === undefined || !csv.response.headers.get("Content-Type")?.startsWith("text/csv")) {
    fail("GET results as CSV", csv.response, csv.error);
  }
  const lines = csv.data.trim().split("\n");
  if (lines.length !== 5 || !lines[0]?.startsWith("email,name,")) throw new Error(`results CSV: ${csv.data}`);
  console.log(`list ${id}: ${first.rows} rows, ${first.addresses} addresses, ${first.charged} credits; results: ${lines.length} CSV lines`);
}

const before = await balance();
await validate();
await batch();
await list();
const spent = before - (await balance());
if (spent !== 6) throw new Error(`${spent} credits spent, want 6`);
console.log("openapi-ts: every answer as documented");
