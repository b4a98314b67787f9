// Tests of the client's retries, run with node --test against dist/.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createValidmailClient, delay, retrying } from "../dist/client.js";

/** answers returns a send that answers the given statuses in turn and records the bodies it was sent. */
function answers(...statuses) {
  const bodies = [];
  const send = async (request) => {
    bodies.push(await request.text());
    const status = statuses[Math.min(bodies.length - 1, statuses.length - 1)];
    return new Response(status === 200 ? "{}" : "", { status, headers: { "Retry-After": "0" } });
  };
  return { send, bodies };
}

test("429 and 503 are sent again with the same body, then answered", async () => {
  const { send, bodies } = answers(429, 503, 200);
  const response = await retrying(send, 4, 1000)(new Request("http://api.test/x", { method: "POST", body: "email\na@b.org\n" }));
  assert.equal(response.status, 200);
  assert.deepEqual(bodies, ["email\na@b.org\n", "email\na@b.org\n", "email\na@b.org\n"]);
});

test("past the retries the last answer is returned", async () => {
  const { send, bodies } = answers(503);
  const response = await retrying(send, 2, 1000)(new Request("http://api.test/x"));
  assert.equal(response.status, 503);
  assert.equal(bodies.length, 3);
});

test("other errors are not sent again", async () => {
  for (const status of [400, 402, 422, 500]) {
    const { send, bodies } = answers(status);
    const response = await retrying(send, 4, 1000)(new Request("http://api.test/x"));
    assert.equal(response.status, status);
    assert.equal(bodies.length, 1, `status ${status}`);
  }
});

test("delay honours Retry-After, backs off without it, and is capped", () => {
  const d = delay("2", 0, 60_000);
  assert.ok(d >= 1600 && d <= 2400, `Retry-After 2: ${d}`);
  const b = delay(null, 3, 60_000);
  assert.ok(b >= 1600 && b <= 2400, `fourth attempt: ${b}`);
  assert.equal(delay("3600", 0, 5000), 5000);
});

test("the client sends the key and the typed route", async () => {
  let seen;
  const client = createValidmailClient({
    baseUrl: "http://api.test/prefix/",
    apiKey: "vm_live_x",
    fetch: async (request) => {
      seen = request;
      return new Response(JSON.stringify({ email: "a@b.org" }), { status: 200, headers: { "Content-Type": "application/json" } });
    },
  });
  const { data } = await client.GET("/validate", { params: { query: { email: "a@b.org" } } });
  assert.equal(data.email, "a@b.org");
  assert.equal(seen.url, "http://api.test/prefix/validate?email=a%40b.org");
  assert.equal(seen.headers.get("x-api-key"), "vm_live_x");
});
