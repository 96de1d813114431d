#!/usr/bin/env node
// A scripted MCP session against `stepwise serve`, from the TypeScript SDK v2
// client (@modelcontextprotocol/client, pinned in package-lock.json) pinned to
// protocol 2026-07-28: no initialize, server/discover, per-request _meta,
// questions through multi round-trip requests (the client's elicitation
// handler, fulfilled from `inputRequests` and retried with `inputResponses`),
// and subscriptions/listen. The same session runs over stdio and over
// streamable HTTP.
//
//   node e2e/ts2/session.mjs /path/to/stepwise [stdio|http]...
//
// Prints one line per check passed; exits 1 at the first failed check, naming it.
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const PROTOCOL = "2026-07-28";
const bin = process.argv[2];
const modes = process.argv.slice(3).length ? process.argv.slice(3) : ["stdio", "http"];
if (!bin || modes.some((m) => m !== "stdio" && m !== "http")) {
  console.error("usage: node session.mjs /path/to/stepwise [stdio|http]...");
  process.exit(2);
}
const testdata = resolve(dirname(fileURLToPath(import.meta.url)), "../../internal/mcpserver/testdata");
const homes = [];
let label = "";

function fail(what, detail) {
  console.error(`FAIL [ts2 ${label}] ${what}`);
  if (detail !== undefined) console.error(JSON.stringify(detail, null, 2)?.slice(0, 4000));
  process.exitCode = 1;
  throw new Error(`check failed: ${what}`);
}

function check(ok, what, detail) {
  if (!ok) fail(what, detail);
  console.log(`ok   [ts2 ${label}] ${what}`);
}

// withTimeout rejects when promise takes longer than ms.
function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// newHome makes a stepwise home whose library holds greet.yaml.
function newHome() {
  const home = mkdtempSync(join(tmpdir(), "stepwise-e2e-ts2-"));
  homes.push(home);
  mkdirSync(join(home, "workflows"));
  copyFileSync(join(testdata, "greet.yaml"), join(home, "workflows", "greet.yaml"));
  return home;
}

// startHTTP runs `stepwise serve --http 127.0.0.1:0` and returns the URL it
// prints on stderr (…serving MCP at URL) and the process.
function startHTTP(home) {
  const proc = spawn(bin, ["--home", home, "serve", "--http", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const url = new Promise((res, rej) => {
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (chunk) => {
      log += chunk;
      const m = log.match(/stepwise: serving MCP at (\S+)/);
      if (m) res(m[1]);
    });
    proc.on("error", rej);
    proc.on("exit", (code) => rej(new Error(`stepwise serve --http exited (${code}) before serving:\n${log}`)));
  });
  return { proc, log: () => log, url: withTimeout(url, 30000, "stepwise serve --http to print its URL") };
}

async function stop(proc) {
  if (proc.exitCode === null && proc.signalCode === null) {
    const exited = new Promise((res) => proc.once("exit", res));
    proc.kill("SIGTERM");
    await withTimeout(exited, 10000, "stepwise serve to exit on SIGTERM").catch(() => proc.kill("SIGKILL"));
  }
}

// wire records the JSON-RPC messages a transport carries, both ways, from
// connect on: the checks below read the protocol off the wire, not only
// what the client makes of it.
function wire(transport) {
  const seen = { sent: [], received: [] };
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    seen.sent.push(msg);
    return send(msg, opts);
  };
  // The client sets onmessage when it connects: wrap whatever is set.
  let handler;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler && ((msg, extra) => {
      seen.received.push(msg);
      return handler(msg, extra);
    }),
    set: (h) => { handler = h; },
  });
  return seen;
}

// The saved workflow: one question, then a step that uses the answer.
const askCity = [
  "version: 1",
  "name: ask-city",
  "description: Asks for a city and says where someone lives.",
  "inputs:",
  "  who: {type: string, default: Ada}",
  "steps:",
  "  - id: city",
  "    ask: {prompt: 'Which city?', type: string, pattern: '^[A-Z][a-z]+$'}",
  "  - id: say",
  "    uses: log",
  "    with: {message: '${{ inputs.who }} lives in ${{ steps.city.answer }}'}",
  "outputs:",
  "  city: ${{ steps.city.answer }}",
  "  said: ${{ steps.say.output.message }}",
  "",
].join("\n");

async function session(client, seen, elicited) {
  const call = async (name, args) => {
    const res = await client.callTool({ name, arguments: args });
    return { isError: res.isError === true, out: res.structuredContent ?? {} };
  };

  // The negotiated protocol: pinned, no fallback to 2025-11-25.
  check(client.getNegotiatedProtocolVersion() === PROTOCOL && client.getProtocolEra() === "modern",
    `negotiated ${PROTOCOL} (era modern), no fallback`, { version: client.getNegotiatedProtocolVersion(), era: client.getProtocolEra() });
  check(!seen.sent.some((m) => m.method === "initialize"), "no initialize request was sent", seen.sent.map((m) => m.method));

  // server/discover
  const d = await client.discover();
  check(d.supportedVersions?.includes(PROTOCOL) && d.capabilities?.tools && d.capabilities?.resources,
    `server/discover: supports ${PROTOCOL}, offers tools and resources`, d);

  // tools/list, and the per-request _meta the client sent with it
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  const want = ["workflow_save", "workflow_list", "run_start", "run_continue", "run_get", "run_list", "run_cancel"];
  check(want.every((n) => names.includes(n)), `tools/list has ${want.join(", ")}`, names);
  const listReq = seen.sent.findLast((m) => m.method === "tools/list");
  check(listReq?.params?._meta?.["io.modelcontextprotocol/protocolVersion"] === PROTOCOL,
    "tools/list carried the protocol version in _meta", listReq);

  // a workflow saved, then run to its question: the question comes back as an
  // input request, the client's elicitation handler answers it, the client
  // retries the call with the answer and the run goes on.
  let r = await call("workflow_save", { content: askCity });
  check(!r.isError && r.out.valid === true && r.out.name === "ask-city", "workflow_save ask-city: saved", r);
  elicited.length = 0;
  r = await call("run_start", { workflow: "ask-city", inputs: { who: "Grace" } });
  check(!r.isError && r.out.status === "succeeded" && r.out.outputs?.city === "Paris" && r.out.outputs?.said === "Grace lives in Paris",
    "run_start ask-city: the question answered through MRTR, run succeeded with city Paris", r);
  check(elicited.length === 1 && /Which city\?/.test(elicited[0].message) && elicited[0].requestedSchema?.properties?.value,
    "the elicitation handler was asked \"Which city?\" with a form schema", elicited);
  const inputRequired = seen.received.find((m) => m.result?.resultType === "input_required" && m.result?.inputRequests);
  check(inputRequired && Object.values(inputRequired.result.inputRequests).some((q) => q.method === "elicitation/create"),
    "the server answered with resultType input_required carrying an elicitation/create input request", inputRequired);
  const retried = seen.sent.find((m) => m.method === "tools/call" && m.params?.inputResponses && m.params?.requestState === inputRequired.result.requestState);
  check(retried, "the client retried tools/call with inputResponses and the requestState echoed", seen.sent.filter((m) => m.method === "tools/call"));
  check(!seen.received.some((m) => m.method === "elicitation/create"), "no server-initiated elicitation/create request was sent");
  const cityRun = r.out.run_id;

  // run_get
  r = await call("run_get", { run_id: cityRun });
  check(!r.isError && r.out.run_id === cityRun && r.out.status === "succeeded" && r.out.outputs?.city === "Paris",
    "run_get: the run succeeded with its outputs", r);

  // greet: the name question through MRTR, then the agent step pauses and
  // comes back to the agent (run_continue answers it).
  elicited.length = 0;
  r = await call("run_start", { workflow: "greet" });
  check(!r.isError && r.out.status === "waiting" && r.out.pause?.kind === "agent" && r.out.pause.token && r.out.pause.output_schema,
    "run_start greet: name answered through MRTR, waiting on the agent step with its output_schema", r);
  check(elicited.length === 1 && /Your name\?/.test(elicited[0].message), "the elicitation handler was asked \"Your name?\"", elicited);
  const greet = r.out;

  // resources
  const read = async (uri) => (await client.readResource({ uri })).contents[0];
  let c = await read("stepwise://workflows");
  check(["greet", "ask-city"].every((n) => JSON.parse(c.text).workflows?.some((w) => w.name === n)),
    "resources/read stepwise://workflows lists greet and ask-city", c);
  c = await read(`stepwise://runs/${greet.run_id}`);
  const runRes = JSON.parse(c.text);
  check(runRes.run_id === greet.run_id && runRes.status === "waiting", "resources/read stepwise://runs/{run_id}: waiting", runRes);
  const { resources } = await client.listResources();
  check(resources.some((x) => x.uri === "stepwise://docs/workflows"), "resources/list has stepwise://docs/workflows", resources.map((x) => x.uri));

  // subscriptions/listen on the run's resource, then answer the agent step:
  // notifications/resources/updated for it arrives on the listen stream.
  const uri = `stepwise://runs/${greet.run_id}`;
  const updates = [];
  let gotUpdate;
  const updated = new Promise((res) => { gotUpdate = res; });
  client.setNotificationHandler("notifications/resources/updated", (n) => {
    updates.push(n.params.uri);
    if (n.params.uri === uri) gotUpdate(n);
  });
  const sub = await withTimeout(client.listen({ resourceSubscriptions: [uri] }), 15000, "subscriptions/listen to be acknowledged");
  check(sub.honoredFilter?.resourceSubscriptions?.includes(uri), "subscriptions/listen acknowledged the run's resource", sub.honoredFilter);
  r = await call("run_continue", { token: greet.pause.token, value: { line: "Hi Ada!" } });
  check(!r.isError && r.out.status === "succeeded" && r.out.outputs?.line === "Hi Ada!" && r.out.outputs?.name === "Ada",
    "run_continue {line: \"Hi Ada!\"}: succeeded with outputs {line, name}", r);
  await withTimeout(updated, 15000, `notifications/resources/updated for ${uri} on the listen stream`);
  check(true, "notifications/resources/updated arrived on the subscriptions/listen stream for the run");
  await sub.close();

  // errors for bad arguments: structured tool errors
  r = await call("run_start", { workflow: 42 });
  check(r.isError && r.out.error_code === "ARGUMENTS_INVALID" && r.out.category === "validation" && r.out.correlation_id,
    "run_start {workflow: 42}: structured ARGUMENTS_INVALID", r);
  r = await call("run_get", { run_id: "no-such-run" });
  check(r.isError && r.out.error_code && r.out.suggested_action, `run_get of an unknown run: structured ${r.out.error_code}`, r);
  r = await call("run_continue", { token: greet.pause.token, value: { line: "again" } });
  check(r.isError && typeof r.out.error_code === "string" && r.out.message, `run_continue with a used token: structured ${r.out.error_code}`, r);
  let threw;
  try {
    await client.callTool({ name: "no_such_tool", arguments: {} });
  } catch (err) {
    threw = err;
  }
  check(threw === undefined ? false : /no_such_tool|not found|unknown/i.test(String(threw.message)),
    "tools/call of an unknown tool: a JSON-RPC error naming it", String(threw));
}

async function withClient(transport, body) {
  const elicited = [];
  const client = new Client(
    { name: "stepwise-e2e-ts2", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: PROTOCOL } } },
  );
  client.setRequestHandler("elicitation/create", async (req) => {
    elicited.push(req.params);
    if (/Which city\?/.test(req.params.message)) return { action: "accept", content: { value: "Paris" } };
    if (/Your name\?/.test(req.params.message)) return { action: "accept", content: { value: "Ada" } };
    return { action: "decline" };
  });
  const seen = wire(transport);
  try {
    await withTimeout(client.connect(transport), 30000, `connect pinned to ${PROTOCOL}`);
  } catch (err) {
    fail(`connect pinned to ${PROTOCOL} (server/discover): ${err.message}`);
  }
  try {
    await withTimeout(body(client, seen, elicited), 90000, "the session");
  } finally {
    await client.close();
  }
}

// Every transport is checked, even after one failed; each stops at its
// first failed check.
async function main() {
  const failed = [];
  for (const mode of modes) {
    label = mode;
    const server = mode === "http" ? startHTTP(newHome()) : undefined;
    try {
      if (server) {
        const url = await server.url;
        check(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/.test(url), `serve --http 127.0.0.1:0 printed its URL ${url}`);
        await withClient(new StreamableHTTPClientTransport(new URL(url)), session);
      } else {
        await withClient(new StdioClientTransport({ command: bin, args: ["--home", newHome(), "serve"], stderr: "ignore" }), session);
      }
    } catch (err) {
      if (!/^check failed/.test(err.message)) console.error(`FAIL [ts2 ${label}] ${err.stack ?? err}`);
      if (server) console.error(`serve log (last 4 KB):\n${server.log().slice(-4000)}`);
      failed.push(mode);
    } finally {
      if (server) await stop(server.proc);
    }
  }
  if (failed.length) {
    console.error(`FAIL [ts2] ${failed.join(", ")}`);
    process.exitCode = 1;
    return;
  }
  console.log(`ok   [ts2] all checks passed (${modes.join(", ")})`);
}

try {
  await main();
} finally {
  for (const h of homes) rmSync(h, { recursive: true, force: true });
}
