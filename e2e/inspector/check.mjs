#!/usr/bin/env node
// The MCP Inspector's CLI mode (@modelcontextprotocol/inspector, pinned in
// package-lock.json; it needs Node 22, see run.sh) against `stepwise serve`
// over stdio and streamable HTTP, in both protocol eras it offers (legacy:
// 2025-11-25 with initialize; modern: 2026-07-28, server/discover): tools/list
// (with the Inspector's schema portability check), tool calls, a structured
// error for bad arguments, resources/list and /read, prompts/list.
//
//   node e2e/inspector/check.mjs /path/to/stepwise [stdio|http]...
//
// One Inspector process per request, as a script or a person uses it. Prints
// one line per check passed; exits 1 at the first failed check, naming it.
import { execFile, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const inspector = join(here, "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
const bin = process.argv[2];
const modes = process.argv.slice(3).length ? process.argv.slice(3) : ["stdio", "http"];
if (!bin || modes.some((m) => m !== "stdio" && m !== "http")) {
  console.error("usage: node check.mjs /path/to/stepwise [stdio|http]...");
  process.exit(2);
}
const scratch = mkdtempSync(join(tmpdir(), "stepwise-e2e-inspector-"));
let label = "";

function fail(what, detail) {
  console.error(`FAIL [inspector ${label}] ${what}`);
  if (detail !== undefined) console.error(typeof detail === "string" ? detail.slice(0, 4000) : JSON.stringify(detail, null, 2)?.slice(0, 4000));
  process.exitCode = 1;
  throw new Error(`check failed: ${what}`);
}

function check(ok, what, detail) {
  if (!ok) fail(what, detail);
  console.log(`ok   [inspector ${label}] ${what}`);
}

// run is one Inspector CLI invocation against target (a URL, or the serve
// command's arguments) in an era: its exit code, the JSON it printed and
// its stderr. HOME points into the scratch directory, so the Inspector's
// catalog and client config never touch the user's.
function run(target, era, args) {
  const argv = [inspector, "--cli", "--format", "json", "--protocol-era", era, ...target, ...args];
  return new Promise((res) => {
    execFile(process.execPath, argv, { env: { ...process.env, HOME: join(scratch, "user") }, timeout: 30000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        let out;
        try {
          out = JSON.parse(stdout);
        } catch {
          out = undefined;
        }
        res({ code: err ? (err.killed ? "killed: timed out after 30 s" : err.code ?? 1) : 0, out, stdout, stderr });
      });
  });
}

function newHome() {
  const home = join(scratch, `home-${Math.random().toString(36).slice(2)}`);
  mkdirSync(join(home, "workflows"), { recursive: true });
  copyFileSync(resolve(here, "../../internal/mcpserver/testdata/greet.yaml"), join(home, "workflows", "greet.yaml"));
  return home;
}

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
    proc.on("exit", (code) => rej(new Error(`stepwise serve --http exited (${code}) before serving:\n${log}`)));
  });
  return { proc, url };
}

async function checks(target, era) {
  // tools/list, and the Inspector's schema portability check: no
  // error-severity problem (--strict exits 6 on one), and no warning either
  // (the tool schemas keep to the Inspector's portability rules).
  let r = await run(target, era, ["--method", "tools/list", "--strict"]);
  const names = r.out?.result?.tools?.map((t) => t.name) ?? [];
  const want = ["workflow_list", "workflow_save", "run_start", "run_continue", "run_get", "run_cancel"];
  check(r.code === 0 && want.every((n) => names.includes(n)) && r.out.result.tools.every((t) => t.inputSchema?.type === "object"),
    `tools/list (${names.length} tools, each with an object inputSchema), no schema portability error`, r.code === 6 ? r.stderr : r);
  const portability = r.stderr.match(/(\d+) errors?, (\d+) warnings?/) ?? [];
  const strictWarnings = (r.stderr.match(/warning/gi) ?? []).length;
  console.log(`     [inspector ${label}] schema portability: ${portability[0] ?? `${strictWarnings} warning lines`}`);
  check(strictWarnings === 0 && (portability[2] ?? "0") === "0", "tools/list: no schema portability warning", r.stderr);

  // tool calls: arguments as key=value and as JSON
  r = await run(target, era, ["--method", "tools/call", "--tool-name", "workflow_list"]);
  check(r.code === 0 && r.out?.result?.structuredContent?.workflows?.some((w) => w.name === "greet"),
    `tools/call workflow_list finds greet`, r);
  r = await run(target, era, ["--method", "tools/call", "--tool-name", "run_start", "--tool-args-json", "{\"workflow\":42}"]);
  const err = r.out?.result?.structuredContent;
  check(r.out?.result?.isError === true && err?.error_code === "ARGUMENTS_INVALID" && err.category === "validation",
    `tools/call run_start {workflow: 42}: structured ARGUMENTS_INVALID`, r);

  // resources and prompts
  r = await run(target, era, ["--method", "resources/list"]);
  const uris = r.out?.result?.resources?.map((x) => x.uri) ?? [];
  check(r.code === 0 && uris.includes("stepwise://docs/workflows") && uris.includes("stepwise://workflows"),
    `resources/list has stepwise://docs/workflows and stepwise://workflows`, r);
  r = await run(target, era, ["--method", "prompts/list"]);
  const prompts = r.out?.result?.prompts?.map((p) => p.name) ?? [];
  check(r.code === 0 && prompts.includes("author_workflow"), `prompts/list has author_workflow (${prompts.length} prompts)`, r);

  // a run: started (its question), answered (the agent step), read as a resource
  r = await run(target, era, ["--method", "tools/call", "--tool-name", "run_start", "--tool-arg", "workflow=greet", "--tool-arg", "wait_seconds=5"]);
  const run0 = r.out?.result?.structuredContent;
  check(r.code === 0 && r.out?.result?.isError !== true && run0?.status === "waiting" && run0.pause?.kind === "question" && run0.pause.token,
    `tools/call run_start greet: waiting on its question`, r);
  r = await run(target, era, ["--method", "tools/call", "--tool-name", "run_continue", "--tool-args-json", JSON.stringify({ token: run0.pause.token, value: "Ada" })]);
  check(r.out?.result?.structuredContent?.status === "waiting" && r.out.result.structuredContent.pause?.kind === "agent",
    `tools/call run_continue "Ada": waiting on the agent step`, r);
  r = await run(target, era, ["--method", "resources/read", "--uri", `stepwise://runs/${run0.run_id}`]);
  const text = r.out?.result?.contents?.[0]?.text;
  check(r.code === 0 && JSON.parse(text ?? "{}").run_id === run0.run_id, `resources/read stepwise://runs/{run_id}`, r);
}

// Every transport and era is checked, even after one failed; each stops at
// its first failed check.
async function main() {
  const failed = [];
  for (const mode of modes) {
    for (const era of ["legacy", "modern"]) {
      label = `${mode} ${era}`;
      const server = mode === "http" ? startHTTP(newHome()) : undefined;
      try {
        await checks(server ? [await server.url] : [bin, "--home", newHome(), "serve"], era);
      } catch (err) {
        if (!/^check failed/.test(err.message)) console.error(`FAIL [inspector ${label}] ${err.stack ?? err}`);
        failed.push(label);
      } finally {
        server?.proc.kill("SIGTERM");
      }
    }
  }
  if (failed.length) {
    console.error(`FAIL [inspector] ${failed.join("; ")}`);
    process.exitCode = 1;
    return;
  }
  console.log(`ok   [inspector] all checks passed (${modes.join(", ")}; legacy and modern)`);
}

try {
  await main();
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
