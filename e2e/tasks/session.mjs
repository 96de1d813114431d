#!/usr/bin/env node
// A Tasks session (the MCP Tasks extension, io.modelcontextprotocol/tasks,
// specification/draft/tasks.md of modelcontextprotocol/ext-tasks) against
// `stepwise serve`, in raw JSON-RPC at protocol 2026-07-28 over stdio and
// over streamable HTTP — no SDK, so that what is checked is the wire:
//
//   - server/discover advertises the extension;
//   - a client that does not declare it never gets a task, and tasks/* and a
//     listen for task ids answer it -32021 naming the extension;
//   - run_start greet → CreateTaskResult (resultType "task") → tasks/get
//     input_required with the question as an elicitation request →
//     tasks/update with an answer the question refuses (the task stays
//     input_required, re-asked under a new key) → the server restarted on
//     the same home → tasks/get: the same task, the same request →
//     tasks/update with a good answer → the agent step, input_required →
//     tasks/update with its output → completed with the tool result;
//   - a second task cancelled with tasks/cancel → cancelled;
//   - subscriptions/listen for a task's id: notifications/tasks until it
//     completes;
//   - unknown task ids: -32602.
//
//   node e2e/tasks/session.mjs /path/to/stepwise [stdio|http]...
//
// Prints one line per check passed; exits 1 at the first failed check, naming it.
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const PROTOCOL = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";
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
  console.error(`FAIL [tasks ${label}] ${what}`);
  if (detail !== undefined) console.error(JSON.stringify(detail, null, 2)?.slice(0, 4000));
  process.exitCode = 1;
  throw new Error(`check failed: ${what}`);
}

function check(ok, what, detail) {
  if (!ok) fail(what, detail);
  console.log(`ok   [tasks ${label}] ${what}`);
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

function newHome() {
  const home = mkdtempSync(join(tmpdir(), "stepwise-e2e-tasks-"));
  homes.push(home);
  mkdirSync(join(home, "workflows"));
  copyFileSync(join(testdata, "greet.yaml"), join(home, "workflows", "greet.yaml"));
  return home;
}

// meta is the per-request _meta of protocol 2026-07-28: the client declares
// the Tasks extension (and form elicitation) when tasks is true.
function meta(tasks) {
  const caps = { elicitation: { form: {} } };
  if (tasks) caps.extensions = { [TASKS]: {} };
  return {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": { name: "stepwise-e2e-tasks", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": caps,
  };
}

// A server: `stepwise serve` (stdio) or `serve --http` on a home, with
// request(method, params) → the JSON-RPC response (result or error), and
// listen(params, onMessage) → a function that ends the stream.
class Server {
  static async start(mode, home) {
    const s = new Server();
    s.mode = mode;
    s.nextID = 1;
    s.log = "";
    if (mode === "stdio") {
      s.proc = spawn(bin, ["--home", home, "serve"], { stdio: ["pipe", "pipe", "pipe"] });
      s.pending = new Map();
      s.listeners = new Map();
      s.proc.stderr.setEncoding("utf8");
      s.proc.stderr.on("data", (c) => { s.log += c; });
      createInterface({ input: s.proc.stdout }).on("line", (line) => {
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          s.bad = line;
          return;
        }
        if (msg.id !== undefined && !msg.method && s.pending.has(msg.id)) {
          s.pending.get(msg.id)(msg);
          s.pending.delete(msg.id);
        }
        if (msg.method) for (const l of s.listeners.values()) l(msg);
        if (msg.id !== undefined && s.listeners.has(msg.id)) s.listeners.get(msg.id)(msg);
      });
      return s;
    }
    s.proc = spawn(bin, ["--home", home, "serve", "--http", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
    s.url = await withTimeout(new Promise((res, rej) => {
      s.proc.stderr.setEncoding("utf8");
      s.proc.stderr.on("data", (c) => {
        s.log += c;
        const m = s.log.match(/stepwise: serving MCP at (\S+)/);
        if (m) res(m[1]);
      });
      s.proc.on("exit", (code) => rej(new Error(`serve --http exited (${code}):\n${s.log}`)));
    }), 30000, "serve --http to print its URL");
    return s;
  }

  headers(method, params) {
    const h = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": PROTOCOL,
      "Mcp-Method": method,
    };
    // The spec's routing header for tasks/*: the task id.
    if (method.startsWith("tasks/") && params?.taskId) h["Mcp-Name"] = params.taskId;
    else if (method === "tools/call") h["Mcp-Name"] = params.name;
    return h;
  }

  async request(method, params) {
    const id = this.nextID++;
    const msg = { jsonrpc: "2.0", id, method, params };
    if (this.mode === "stdio") {
      const res = new Promise((r) => this.pending.set(id, r));
      this.proc.stdin.write(JSON.stringify(msg) + "\n");
      return withTimeout(res, 60000, `${method} to be answered`);
    }
    const res = await fetch(this.url, { method: "POST", headers: this.headers(method, params), body: JSON.stringify(msg) });
    const type = res.headers.get("content-type") ?? "";
    const text = await res.text();
    if (type.includes("text/event-stream")) {
      for (const m of sseMessages(text)) if (m.id === id) return m;
      throw new Error(`${method}: no response for id ${id} in the event stream (HTTP ${res.status}):\n${text}`);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`${method}: HTTP ${res.status}, not JSON-RPC: ${text.slice(0, 500)}`);
    }
  }

  // listen opens subscriptions/listen; every message on its stream goes to
  // onMessage. It returns a function that ends the stream.
  async listen(params, onMessage) {
    const id = `listen-${this.nextID++}`;
    const msg = { jsonrpc: "2.0", id, method: "subscriptions/listen", params };
    if (this.mode === "stdio") {
      this.listeners.set(id, onMessage);
      this.proc.stdin.write(JSON.stringify(msg) + "\n");
      return () => {
        this.listeners.delete(id);
        this.proc.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } }) + "\n");
      };
    }
    const abort = new AbortController();
    const res = await fetch(this.url, { method: "POST", headers: this.headers("subscriptions/listen", params), body: JSON.stringify(msg), signal: abort.signal });
    const type = res.headers.get("content-type") ?? "";
    if (!type.includes("text/event-stream")) {
      onMessage(JSON.parse(await res.text()));
      return () => {};
    }
    (async () => {
      const decoder = new TextDecoder();
      let buf = "";
      try {
        for await (const chunk of res.body) {
          buf += decoder.decode(chunk, { stream: true });
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            for (const m of sseMessages(buf.slice(0, i + 2))) onMessage(m);
            buf = buf.slice(i + 2);
          }
        }
      } catch {
        // aborted
      }
    })();
    return () => abort.abort();
  }

  async stop() {
    const p = this.proc;
    if (p.exitCode !== null || p.signalCode !== null) return p.exitCode;
    const exited = new Promise((res) => p.once("exit", (code) => res(code)));
    if (this.mode === "stdio") p.stdin.end();
    else p.kill("SIGTERM");
    return withTimeout(exited, 15000, "stepwise serve to exit").catch(() => {
      p.kill("SIGKILL");
      return -1;
    });
  }
}

// sseMessages are the JSON-RPC messages of server-sent events' data lines.
function sseMessages(text) {
  const out = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
    if (!data) continue;
    try {
      out.push(JSON.parse(data));
    } catch {
      // not JSON: a priming event
    }
  }
  return out;
}

// callTool is tools/call with the per-request _meta; tasks says whether the
// client declares the extension.
function callTool(server, name, args, tasks = true) {
  return server.request("tools/call", { name, arguments: args, _meta: meta(tasks) });
}

function tasksCall(server, method, params, tasks = true) {
  return server.request(method, { ...params, _meta: meta(tasks) });
}

// poll calls tasks/get until the task's status is one of want (or a
// terminal one), and returns the last task.
async function poll(server, taskId, want) {
  const terminal = ["completed", "failed", "cancelled"];
  for (let i = 0; i < 300; i++) {
    const r = await tasksCall(server, "tasks/get", { taskId });
    if (r.error) fail(`tasks/get ${taskId}: JSON-RPC error`, r);
    if (want.includes(r.result.status) || terminal.includes(r.result.status)) return r.result;
    await sleep(Math.min(r.result.pollIntervalMs ?? 100, 100));
  }
  fail(`tasks/get ${taskId}: never reached ${want.join(" or ")}`);
}

// theRequest is the one outstanding input request of an input_required task.
function theRequest(task) {
  const entries = Object.entries(task.inputRequests ?? {});
  if (entries.length !== 1) fail("input_required task: want exactly one input request", task);
  const [key, req] = entries[0];
  return { key, req };
}

// answer is an elicitation's accepted content for value: the form's "value"
// property when it has one (a question), else value itself (a form of fields,
// an agent step's output).
function answer(req, value) {
  const props = req.params?.requestedSchema?.properties ?? {};
  return { action: "accept", content: "value" in props && Object.keys(props).length === 1 ? { value } : value };
}

function isTask(result) {
  return result?.resultType === "task" && typeof result.taskId === "string" && result.taskId.length >= 16 &&
    typeof result.createdAt === "string" && typeof result.lastUpdatedAt === "string" && "ttlMs" in result;
}

async function session(mode) {
  const home = newHome();
  let server = await Server.start(mode, home);
  try {
    // server/discover advertises the extension
    let r = await server.request("server/discover", { _meta: meta(true) });
    check(r.result?.capabilities?.extensions?.[TASKS] !== undefined && r.result.supportedVersions?.includes(PROTOCOL),
      `server/discover advertises ${TASKS}`, r);

    // a client that does not declare the extension: no task, and -32021
    r = await callTool(server, "run_start", { workflow: "greet", wait_seconds: 0 }, false);
    check(r.result && r.result.resultType !== "task" && !("taskId" in r.result) && r.result.structuredContent?.run_id,
      "run_start without the extension declared: a plain CallToolResult, never a task", r);
    r = await tasksCall(server, "tasks/get", { taskId: "swt_nope" }, false);
    check(r.error?.code === -32021 && r.error.data?.requiredCapabilities?.extensions?.[TASKS] !== undefined,
      "tasks/get without the extension declared: -32021 naming the extension", r);

    // unknown task ids
    r = await tasksCall(server, "tasks/get", { taskId: "no-such-task-0000000000" });
    check(r.error?.code === -32602, "tasks/get of an unknown task id: -32602", r);

    // start → input_required
    r = await callTool(server, "run_start", { workflow: "greet" });
    check(isTask(r.result) && ["working", "input_required"].includes(r.result.status),
      `run_start greet with the extension: CreateTaskResult (resultType task, status ${r.result?.status})`, r);
    const taskId = r.result.taskId;
    let task = await poll(server, taskId, ["input_required"]);
    check(task.status === "input_required" && task.resultType === "complete" && task.taskId === taskId,
      "tasks/get: input_required (resultType complete)", task);
    let { key, req } = theRequest(task);
    check(req.method === "elicitation/create" && /Your name\?/.test(req.params?.message ?? "") && req.params?.requestedSchema?.type === "object",
      "the question is an elicitation/create input request with a form schema", task.inputRequests);

    // a refused answer: acknowledged, the task stays input_required, asked
    // again under a new key
    r = await tasksCall(server, "tasks/update", { taskId, inputResponses: { [key]: answer(req, "lowercase") } });
    check(r.result && !r.error && (r.result.resultType ?? "complete") === "complete", "tasks/update with a refused answer: acknowledged", r);
    task = await poll(server, taskId, ["input_required"]);
    const again = task.status === "input_required" ? theRequest(task) : {};
    check(task.status === "input_required" && again.key !== key && /Your name\?/.test(again.req?.params?.message ?? ""),
      "after the refused answer: still input_required, the question re-asked under a new key", task);
    check(/not accepted|pattern|match|invalid/i.test(`${task.statusMessage ?? ""} ${again.req.params.message}`),
      "the refusal is told (status message or the re-asked question)", task);
    ({ key, req } = again);

    // restart on the same home: the same task, the same request
    const code = await server.stop();
    check(code === 0, `stepwise serve (${mode}) stopped cleanly (exit ${code})`);
    server = await Server.start(mode, home);
    task = await poll(server, taskId, ["input_required"]);
    check(task.status === "input_required" && task.taskId === taskId && theRequest(task).key === key,
      "after a restart: tasks/get gives the same task, input_required, the same request key", task);

    // the good answer → the agent step → its output → completed
    r = await tasksCall(server, "tasks/update", { taskId, inputResponses: { [key]: answer(req, "Ada") } });
    check(r.result && !r.error, "tasks/update \"Ada\": acknowledged", r);
    task = await poll(server, taskId, ["input_required"]);
    const agent = task.status === "input_required" ? theRequest(task) : {};
    check(task.status === "input_required" && agent.key !== key && /greeting|Ada/i.test(agent.req?.params?.message ?? "") &&
      agent.req.params.requestedSchema?.properties?.line,
      "the agent step: input_required with its instructions and its output schema", task);
    r = await tasksCall(server, "tasks/update", { taskId, inputResponses: { [agent.key]: answer(agent.req, { line: "Hi Ada!" }) } });
    check(r.result && !r.error, "tasks/update with the agent step's output: acknowledged", r);
    task = await poll(server, taskId, ["completed"]);
    const out = task.result?.structuredContent;
    check(task.status === "completed" && task.result?.isError !== true && out?.status === "succeeded" &&
      out.outputs?.line === "Hi Ada!" && out.outputs?.name === "Ada",
      "completed, the result the run's tool result (succeeded, outputs line and name)", task);
    // a response for a key already answered is ignored
    r = await tasksCall(server, "tasks/update", { taskId, inputResponses: { [agent.key]: answer(agent.req, { line: "Late!" }) } });
    task = await poll(server, taskId, ["completed"]);
    check(task.status === "completed" && task.result?.structuredContent?.outputs?.line === "Hi Ada!",
      "a late tasks/update for an answered key changes nothing", { update: r, task });

    // cancel
    r = await callTool(server, "run_start", { workflow: "greet" });
    check(isTask(r.result), "a second run_start: a task", r);
    const second = r.result.taskId;
    check(second !== taskId, "each run its own task id");
    await poll(server, second, ["input_required"]);
    r = await tasksCall(server, "tasks/cancel", { taskId: second });
    check(r.result && !r.error, "tasks/cancel: acknowledged", r);
    task = await poll(server, second, ["cancelled"]);
    check(task.status === "cancelled" && !("result" in task), "the cancelled task: status cancelled", task);

    // notifications/tasks on subscriptions/listen
    r = await callTool(server, "run_start", { workflow: "greet" });
    check(isTask(r.result), "a third run_start: a task", r);
    const third = r.result.taskId;
    task = await poll(server, third, ["input_required"]);
    ({ key, req } = theRequest(task));
    const denied = [];
    const closeDenied = await server.listen({ notifications: { taskIds: [third] }, _meta: meta(false) }, (m) => denied.push(m));
    await withTimeout((async () => { while (!denied.some((m) => m.error || m.id)) await sleep(20); })(), 15000,
      "subscriptions/listen for task ids without the extension to be refused").catch(() => {});
    closeDenied();
    const refusal = denied.find((m) => m.error);
    check(refusal?.error?.code === -32021, "subscriptions/listen for task ids without the extension: -32021", denied);
    const seen = [];
    const close = await server.listen({ notifications: { taskIds: [third] }, _meta: meta(true) }, (m) => seen.push(m));
    await withTimeout((async () => {
      while (!seen.some((m) => m.method === "notifications/subscriptions/acknowledged")) await sleep(20);
    })(), 15000, "the listen stream to be acknowledged");
    const ack = seen.find((m) => m.method === "notifications/subscriptions/acknowledged");
    check(ack.params?.notifications?.taskIds?.includes(third), "subscriptions/listen acknowledged the task id", ack);
    r = await tasksCall(server, "tasks/update", { taskId: third, inputResponses: { [key]: answer(req, "Ada") } });
    await withTimeout((async () => {
      while (!seen.some((m) => m.method === "notifications/tasks" && m.params?.taskId === third && m.params.status === "input_required" &&
        Object.keys(m.params.inputRequests ?? {}).some((k) => k !== key))) await sleep(20);
    })(), 15000, "notifications/tasks for the agent step").catch(() => {});
    const note = seen.find((m) => m.method === "notifications/tasks" && m.params?.taskId === third && m.params.status === "input_required" &&
      Object.keys(m.params.inputRequests ?? {}).some((k) => k !== key));
    check(note, "notifications/tasks: the task input_required on the agent step, as tasks/get would give it",
      seen.map((m) => m.method ?? m));
    close();
  } catch (err) {
    if (process.exitCode !== 1) console.error(`serve log:\n${server.log.slice(-4000)}`);
    throw err;
  } finally {
    await server.stop();
  }
}

// Every transport is checked, even after one failed; each stops at its
// first failed check.
async function main() {
  const failed = [];
  for (const mode of modes) {
    label = mode;
    try {
      await session(mode);
    } catch (err) {
      if (!/^check failed/.test(err.message)) console.error(`FAIL [tasks ${label}] ${err.stack ?? err}`);
      failed.push(mode);
    }
  }
  if (failed.length) {
    console.error(`FAIL [tasks] ${failed.join(", ")}`);
    process.exitCode = 1;
    return;
  }
  console.log(`ok   [tasks] all checks passed (${modes.join(", ")})`);
}

try {
  await main();
} finally {
  for (const h of homes) rmSync(h, { recursive: true, force: true });
}
