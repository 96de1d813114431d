#!/usr/bin/env node
// A scripted MCP session against `stepwise serve`, from the TypeScript SDK:
// the same session over stdio and over streamable HTTP, ending with the
// README's main example (examples/team-onboarding.yaml) run to completion.
//
//   node e2e/ts/session.mjs /path/to/stepwise
//
// Prints one line per check passed; exits 1 at the first failed check.
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const bin = process.argv[2];
if (!bin) {
  console.error("usage: node session.mjs /path/to/stepwise");
  process.exit(2);
}
const testdata = resolve(dirname(fileURLToPath(import.meta.url)), "../../internal/mcpserver/testdata");
const examples = resolve(dirname(fileURLToPath(import.meta.url)), "../../examples");
const homes = [];
// team-onboarding declares DIRECTORY_TOKEN (an optional input read from the
// environment): a server runs it only when allowed to read that variable.
const serveFlags = ["--allow-env", "DIRECTORY_TOKEN"];
let label = "";

function fail(what, detail) {
  console.error(`FAIL [${label}] ${what}`);
  if (detail !== undefined) console.error(JSON.stringify(detail, null, 2));
  process.exitCode = 1;
  throw new Error(`check failed: ${what}`);
}

function check(ok, what, detail) {
  if (!ok) fail(what, detail);
  console.log(`ok   [${label}] ${what}`);
}

// withTimeout rejects when promise takes longer than ms.
function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// newHome makes a stepwise home whose library holds greet.yaml and the
// README's example, team-onboarding.yaml.
function newHome() {
  const home = mkdtempSync(join(tmpdir(), "stepwise-e2e-"));
  homes.push(home);
  mkdirSync(join(home, "workflows"));
  copyFileSync(join(testdata, "greet.yaml"), join(home, "workflows", "greet.yaml"));
  copyFileSync(join(examples, "team-onboarding.yaml"), join(home, "workflows", "team-onboarding.yaml"));
  return home;
}

// startHTTP runs `stepwise serve --http 127.0.0.1:0` and returns the URL it
// prints on stderr (…serving MCP at URL) and the process.
function startHTTP(home) {
  const proc = spawn(bin, ["--home", home, "serve", "--http", "127.0.0.1:0", ...serveFlags], { stdio: ["ignore", "ignore", "pipe"] });
  const url = new Promise((res, rej) => {
    let buf = "";
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (chunk) => {
      buf += chunk;
      const m = buf.match(/stepwise: serving MCP at (\S+)/);
      if (m) res(m[1]);
    });
    proc.on("error", rej);
    proc.on("exit", (code) => rej(new Error(`stepwise serve --http exited (${code}) before serving:\n${buf}`)));
  });
  return { proc, url: withTimeout(url, 15000, "stepwise serve --http to print its URL") };
}

async function session(client) {
  const call = async (name, args, options) => {
    const res = await client.callTool({ name, arguments: args }, undefined, options);
    return { isError: res.isError === true, out: res.structuredContent ?? {} };
  };

  // tools/list
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  const want = ["workflow_list", "workflow_validate", "run_start", "run_continue", "run_get", "run_list", "run_cancel"];
  check(want.every((n) => names.includes(n)), `tools/list has ${want.join(", ")}`, names);

  // workflow_list
  let r = await call("workflow_list", {});
  check(!r.isError && r.out.workflows?.some((w) => w.name === "greet"), "workflow_list finds greet", r);

  // workflow_validate: invalid content, then a library name
  const invalid = "version: 1\nname: x\nsteps:\n  - id: a\n    uses: log\n    with: {message: '${{ inputs.nope }}'}\n";
  r = await call("workflow_validate", { content: invalid });
  check(!r.isError && r.out.valid === false && r.out.violations?.length > 0 && r.out.violations.every((v) => v.line > 0),
    "workflow_validate of invalid content: valid false, violations with line numbers", r);
  r = await call("workflow_validate", { name: "greet" });
  check(!r.isError && r.out.valid === true, "workflow_validate greet: valid", r);

  // run_start: pauses on the question
  r = await call("run_start", { workflow: "greet" });
  const run = r.out;
  check(!r.isError && run.status === "waiting" && run.pause?.kind === "question" && run.pause.token,
    "run_start greet: waiting on a question with a token", r);
  const token = run.pause.token;

  // an invalid answer is refused and changes nothing
  r = await call("run_continue", { token, value: "lowercase" });
  check(r.isError && r.out.error_code === "ANSWER_INVALID" && r.out.violations?.length > 0,
    "run_continue \"lowercase\": error ANSWER_INVALID with violations", r);
  r = await call("run_get", { run_id: run.run_id });
  check(!r.isError && r.out.status === "waiting" && r.out.pause?.token === token, "run_get: run unchanged, same token", r);

  // a valid answer: the agent step pauses
  r = await call("run_continue", { token, value: "Ada" });
  check(!r.isError && r.out.status === "waiting" && r.out.pause?.kind === "agent" && r.out.pause.output_schema,
    "run_continue \"Ada\": agent pause with output_schema", r);
  const agentToken = r.out.pause.token;
  r = await call("run_continue", { token: agentToken, value: { line: 3 } });
  check(r.isError && r.out.error_code === "ANSWER_INVALID", "run_continue {line: 3}: error ANSWER_INVALID", r);
  r = await call("run_continue", { token: agentToken, value: { line: "Hi Ada!" } });
  check(!r.isError && r.out.status === "succeeded" && r.out.outputs?.line === "Hi Ada!" && r.out.outputs?.name === "Ada",
    "run_continue {line: \"Hi Ada!\"}: succeeded with outputs {line, name}", r);

  // resources
  const read = async (uri) => (await client.readResource({ uri })).contents[0];
  let c = await read("stepwise://docs/workflows");
  check(c?.mimeType === "text/markdown" && c.text.length > 1000, "resources/read stepwise://docs/workflows", c?.mimeType);
  c = await read("stepwise://schema/workflow");
  check(JSON.parse(c.text).type === "object", "resources/read stepwise://schema/workflow: a JSON Schema");
  c = await read("stepwise://workflows");
  check(JSON.parse(c.text).workflows?.some((w) => w.name === "greet"), "resources/read stepwise://workflows lists greet", c);
  c = await read(`stepwise://runs/${run.run_id}`);
  const runRes = JSON.parse(c.text);
  check(runRes.run_id === run.run_id && runRes.status === "succeeded", `resources/read stepwise://runs/{run_id}: succeeded`, runRes);

  // subscribe to a new run, continue it: resources/updated for its URI
  r = await call("run_start", { workflow: "greet" });
  const uri = `stepwise://runs/${r.out.run_id}`;
  const updated = new Promise((res) => {
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      if (n.params.uri === uri) res(n);
    });
  });
  await client.subscribeResource({ uri });
  r = await call("run_continue", { token: r.out.pause.token, value: "Ada" });
  check(!r.isError && r.out.status === "waiting", "run_continue of a subscribed run", r);
  await withTimeout(updated, 10000, `notifications/resources/updated for ${uri}`);
  check(true, "notifications/resources/updated arrived for the subscribed run");
  await client.unsubscribeResource({ uri });

  // progress: steps complete while run_continue waits. The TypeScript SDK
  // hands notifications to their handlers a microtask later but settles a
  // response at once (dropping its progress handler), so notifications that
  // reach it in the same read as the response are reported to onerror as
  // "unknown token" instead of to onprogress. Both are counted: the test is
  // about what the server sent, in order, before its answer.
  r = await call("run_start", { workflow: "greet" });
  const progress = [];
  const late = [];
  const onerror = client.onerror;
  client.onerror = (err) => {
    const m = /progress notification for an unknown token: (.*)$/s.exec(err?.message ?? "");
    if (m) late.push(JSON.parse(m[1]).params);
    else onerror?.(err);
  };
  r = await call("run_continue", { token: r.out.pause.token, value: "Ada" }, { onprogress: (p) => progress.push(p) });
  await new Promise((res) => setTimeout(res, 50)); // let late notifications' microtasks run
  client.onerror = onerror;
  progress.push(...late.map(({ progressToken, ...p }) => p));
  check(!r.isError && r.out.status === "waiting" && r.out.pause?.kind === "agent", "run_continue with a progress token", r);
  check(progress.length >= 2 && progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress),
    `progress notifications arrived, increasing (${progress.map((p) => p.message).join("; ")})`, progress);
}

// library: author (draft with violations) → fix → save → plan (missing
// input, then ready) → run → rename → delete (confirmed).
async function library(client) {
  const call = async (name, args) => {
    const res = await client.callTool({ name, arguments: args });
    return { isError: res.isError === true, out: res.structuredContent ?? {} };
  };
  const draft = [
    "version: 1",
    "name: hello",
    "tags: [demo]",
    "inputs:",
    "  who: {type: string}",
    "steps:",
    "  - id: say",
    "    uses: log",
    "    with: {message: 'hi ${{ inputs.whom }}'}",
    "outputs:",
    "  said: ${{ steps.say.output.message }}",
    "",
  ].join("\n");
  let r = await call("workflow_save", { content: draft, draft: true });
  check(!r.isError && r.out.draft === true && r.out.valid === false && r.out.violations.length > 0,
    "workflow_save draft: kept with its violations", r);
  r = await call("workflow_save", { content: draft });
  check(r.isError && r.out.error_code === "WORKFLOW_INVALID", "workflow_save of the invalid workflow is refused", r);
  const fixed = draft.replace("inputs.whom", "inputs.who");
  r = await call("workflow_save", { content: fixed });
  check(!r.isError && r.out.valid === true && r.out.draft_removed === true, "workflow_save of the fixed workflow: saved, draft removed", r);
  const version = r.out.version;
  r = await call("workflow_save", { content: fixed.replace("tags: [demo]", "tags: [demo, new]") });
  check(r.isError && r.out.error_code === "VERSION_CONFLICT" && r.out.context?.current_version === version,
    "workflow_save without expected_version: VERSION_CONFLICT carrying the current version", r);
  r = await call("workflow_plan", { name: "hello" });
  check(!r.isError && r.out.ready === false && r.out.missing?.includes("who"), "workflow_plan without inputs: not ready, names who", r);
  r = await call("workflow_plan", { name: "hello", inputs: { who: "Ada" } });
  const say = r.out.steps?.find((st) => st.id === "say");
  check(!r.isError && r.out.ready === true && say?.with?.message === "hi Ada", "workflow_plan with who: ready, with rendered", r);
  r = await call("run_start", { workflow: "hello", inputs: { who: "Ada" } });
  check(!r.isError && r.out.status === "succeeded" && r.out.outputs?.said === "hi Ada", "run_start hello: succeeded", r);
  r = await call("workflow_rename", { name: "hello", new_name: "greeting" });
  check(!r.isError && r.out.name === "greeting", "workflow_rename hello → greeting", r);
  r = await call("workflow_delete", { name: "greeting" });
  check(r.isError && r.out.error_code === "CONFIRMATION_REQUIRED", "workflow_delete unconfirmed: CONFIRMATION_REQUIRED", r);
  r = await call("workflow_delete", { name: "greeting", confirm: true });
  check(!r.isError && r.out.name === "greeting", "workflow_delete confirmed", r);
  r = await call("workflow_get", { name: "../etc/passwd" });
  check(r.isError && r.out.category === "security", "workflow_get ../etc/passwd: security error", r);
}

// onboarding runs the README's main example to completion, answering
// every pause as an agent would: the form with start_week as a JSON
// number, the agent step with its output object.
async function onboarding(client) {
  const call = async (name, args) => {
    const res = await client.callTool({ name, arguments: args });
    return { isError: res.isError === true, out: res.structuredContent ?? {} };
  };
  const answers = {
    username: "ada",
    role: "engineer",
    tools: ["git", "chat"],
    details: { email: "ada@example.com", start_week: 12 },
    seat: 7,
    confirm: true,
    welcome: { note: "Welcome aboard, Ada! Glad to have you.", buddy: "grace" },
    review: true,
  };
  let r = await call("run_start", { workflow: "team-onboarding" });
  check(!r.isError && r.out.status === "waiting" && r.out.pause?.step_id === "username",
    "run_start team-onboarding: waiting on username", r);
  const asked = [];
  for (let i = 0; i < 20 && !r.isError && r.out.status === "waiting"; i++) {
    const step = r.out.pause?.step_id;
    if (!(step in answers)) fail(`team-onboarding paused on an unexpected step ${step}`, r);
    asked.push(step);
    r = await call("run_continue", { token: r.out.pause.token, value: answers[step] });
    if (step === "details") {
      check(!r.isError, "run_continue details {email, start_week: 12}: the number is accepted", r);
    }
  }
  const summary = r.out.outputs?.summary;
  check(!r.isError && r.out.status === "succeeded" && summary?.email === "ada@example.com" && summary?.desk === 7 &&
    summary?.buddy === "grace" && r.out.outputs?.note === answers.welcome.note,
    `team-onboarding succeeded over MCP (answered ${asked.join(", ")})`, r);
}

// elicitation: a client that declares form elicitation gets the question
// as a server-initiated elicitation/create request (protocol 2025-11-25)
// inside run_start; an answer the question refuses is asked again, saying
// why; the agent step after it comes back to the agent as a pause.
async function elicitation(client, asked) {
  const call = async (name, args) => {
    const res = await client.callTool({ name, arguments: args });
    return { isError: res.isError === true, out: res.structuredContent ?? {} };
  };
  check(client.getServerCapabilities()?.tools && asked.length === 0, "a client declaring elicitation connected");
  const r = await call("run_start", { workflow: "greet" });
  check(!r.isError && r.out.status === "waiting" && r.out.pause?.kind === "agent" && r.out.pause.token,
    "run_start greet: the name asked through elicitation, then waiting on the agent step", r);
  check(asked.length === 2 && asked.every((p) => /Your name\?/.test(p.message) && p.requestedSchema?.properties?.value),
    "elicitation/create asked \"Your name?\" twice with a form schema", asked);
  check(/not accepted/.test(asked[1].message) && !/not accepted/.test(asked[0].message),
    "the second elicitation says why the first answer (\"ada\") was not accepted", asked.map((p) => p.message));
  const got = await call("run_get", { run_id: r.out.run_id });
  check(!got.isError && got.out.status === "waiting" && got.out.pause?.kind === "agent" && got.out.pause.token === r.out.pause.token,
    "run_get: the run waits on the agent step after the elicited answer", got);
  const done = await call("run_continue", { token: r.out.pause.token, value: { line: "Hi Ada!" } });
  check(!done.isError && done.out.status === "succeeded" && done.out.outputs?.name === "Ada",
    "run_continue of the agent step: succeeded with name Ada (the elicited answer)", done);
}

async function withClient(transport, body, options) {
  const client = new Client({ name: "stepwise-e2e-ts", version: "1.0.0" }, options);
  const asked = [];
  if (options?.capabilities?.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      // The first answer breaks the question's pattern ^[A-Z][a-z]+$.
      return { action: "accept", content: { value: asked.length === 1 ? "ada" : "Ada" } };
    });
  }
  // The initialize result, read off the wire: the version the server chose.
  let negotiated;
  let onmessage;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => onmessage && ((msg, extra) => {
      negotiated ??= msg.result?.protocolVersion;
      return onmessage(msg, extra);
    }),
    set: (h) => { onmessage = h; },
  });
  await withTimeout(client.connect(transport), 15000, "connect");
  check(negotiated === "2025-11-25", `initialize negotiated protocol ${negotiated} (want 2025-11-25)`);
  try {
    await withTimeout(body(client, asked), 60000, "the session");
  } finally {
    await client.close();
  }
}

const elicitOptions = { capabilities: { elicitation: { form: {} } } };

async function main() {
  label = "stdio";
  await withClient(new StdioClientTransport({ command: bin, args: ["--home", newHome(), "serve", ...serveFlags], stderr: "ignore" }), async (c) => {
    await session(c);
    await library(c);
    await onboarding(c);
  });
  await withClient(new StdioClientTransport({ command: bin, args: ["--home", newHome(), "serve", ...serveFlags], stderr: "ignore" }),
    elicitation, elicitOptions);

  label = "http";
  const server = startHTTP(newHome());
  try {
    const url = await server.url;
    check(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/.test(url), `serve --http 127.0.0.1:0 printed its URL ${url}`);
    await withClient(new StreamableHTTPClientTransport(new URL(url)), async (c) => {
      await session(c);
      await library(c);
      await onboarding(c);
    });
    await withClient(new StreamableHTTPClientTransport(new URL(url)), elicitation, elicitOptions);
  } finally {
    const p = server.proc;
    if (p.exitCode === null && p.signalCode === null) {
      const exited = new Promise((res) => p.once("exit", res));
      p.kill("SIGTERM");
      await withTimeout(exited, 10000, "stepwise serve to exit on SIGTERM").catch(() => p.kill("SIGKILL"));
    }
  }
  console.log("ok   all checks passed");
}

try {
  await main();
} catch (err) {
  if (!process.exitCode) console.error(`FAIL [${label}] ${err.stack ?? err}`);
  process.exitCode = 1;
} finally {
  for (const h of homes) rmSync(h, { recursive: true, force: true });
}
