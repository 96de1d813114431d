#!/usr/bin/env node
// stepwise's MCP App (ui://stepwise/run) in Chromium, inside a host harness
// built on the host side of @modelcontextprotocol/ext-apps (AppBridge) —
// the acceptance test of the run view:
//
//   1. `stepwise serve --http` runs with rollout.yaml in its library; the
//      TypeScript SDK v2 client connects to it as a host would, declaring
//      the io.modelcontextprotocol/ui extension;
//   2. run_start names the view in tools/list (_meta.ui.resourceUri), and
//      resources/read gives its HTML (text/html;profile=mcp-app);
//   3. run_start {workflow: rollout, wait_seconds: 0} returns the run before
//      its question (its agent step comes first); the harness page (page/host.html, page/host.js bundled by
//      esbuild) renders the view through AppBridge in a sandbox proxy
//      (page/sandbox.html, on another origin) and hands it the call's
//      input and result; the view's tools/call go to the Node client
//      (playwright's exposeFunction);
//   4. Chromium (playwright-core, /usr/bin/chromium headless) sees the view
//      wait for the agent, follow the run live to its question once the
//      agent answered (outside the view), refuse an out-of-range answer
//      inline (submitted with Enter), take a valid one, and the run finish —
//      checked on the server too; the host's theme is followed;
//   5. a form of fields (choice, yes/no, multi-choice, text) is answered in
//      the view as one object; a secret question is not: the view offers
//      the one-time secret page through the host (ui/open-link);
//   6. no console errors in any frame.
//
//   node e2e/app/host.mjs /path/to/stepwise [ARTIFACT_DIR]
//
// Prints one line per check passed; exits 1 at the first failed check,
// naming it. Screenshots go to ARTIFACT_DIR (default: a temporary one).
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { build } from "esbuild";
import { chromium } from "playwright-core";

const UI_EXTENSION = "io.modelcontextprotocol/ui";
const APP_MIME = "text/html;profile=mcp-app";
const here = dirname(fileURLToPath(import.meta.url));
const bin = process.argv[2];
if (!bin) {
  console.error("usage: node e2e/app/host.mjs /path/to/stepwise [ARTIFACT_DIR]");
  process.exit(2);
}
const temp = mkdtempSync(join(tmpdir(), "stepwise-e2e-app-"));
const artifacts = resolve(process.argv[3] ?? join(temp, "artifacts"));
mkdirSync(artifacts, { recursive: true });
const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";

function fail(what, detail) {
  console.error(`FAIL [app] ${what}`);
  if (detail !== undefined) console.error(typeof detail === "string" ? detail.slice(0, 4000) : JSON.stringify(detail, null, 2)?.slice(0, 4000));
  throw new Error(`check failed: ${what}`);
}

function check(ok, what, detail) {
  if (!ok) fail(what, detail);
  console.log(`ok   [app] ${what}`);
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// startServer runs `stepwise serve --http 127.0.0.1:0` on a home whose
// library holds rollout.yaml and returns the URL it prints.
function startServer() {
  const home = join(temp, "home");
  mkdirSync(join(home, "workflows"), { recursive: true });
  copyFileSync(join(here, "rollout.yaml"), join(home, "workflows", "rollout.yaml"));
  copyFileSync(join(here, "release-form.yaml"), join(home, "workflows", "release-form.yaml"));
  copyFileSync(join(here, "../../internal/mcpserver/testdata/vault.yaml"), join(home, "workflows", "vault.yaml"));
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

async function stopServer(proc) {
  if (proc.exitCode === null && proc.signalCode === null) {
    const exited = new Promise((res) => proc.once("exit", res));
    proc.kill("SIGTERM");
    await withTimeout(exited, 10000, "stepwise serve to exit").catch(() => proc.kill("SIGKILL"));
  }
}

// serveHarness serves the host page and its bundle on 127.0.0.1 and the
// sandbox proxy on localhost: one port, two origins.
async function serveHarness() {
  const bundle = await build({
    entryPoints: [join(here, "page", "host.js")],
    bundle: true, format: "iife", platform: "browser", target: "chrome120", write: false, logLevel: "warning",
  });
  const files = {
    "/": { type: "text/html", body: readFileSync(join(here, "page", "host.html")) },
    "/host.js": { type: "text/javascript", body: bundle.outputFiles[0].contents },
    "/sandbox.html": { type: "text/html", body: readFileSync(join(here, "page", "sandbox.html")) },
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    const f = files[path];
    if (!f) { res.writeHead(404).end(); return; }
    res.writeHead(200, { "Content-Type": f.type, "Cache-Control": "no-store" }).end(f.body);
  });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  return { server, port: server.address().port };
}

// text is a tool result's structured content.
function structured(res) {
  return res.structuredContent ?? JSON.parse(res.content[0].text.slice(res.content[0].text.indexOf("\n") + 1));
}

async function session(client, port, browser) {
  // tools/list and resources/read, as a host does before showing a view.
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const uri = byName.run_start?._meta?.ui?.resourceUri;
  check(uri === "ui://stepwise/run", "run_start's _meta.ui.resourceUri names ui://stepwise/run", byName.run_start?._meta);
  check(["run_get", "run_continue"].every((n) => byName[n]?._meta?.ui?.resourceUri === uri), "run_get and run_continue name the same view");
  const { resources } = await client.listResources();
  const listed = resources.find((r) => r.uri === uri);
  check(listed?.mimeType === APP_MIME, `resources/list has ${uri} as ${APP_MIME}`, listed);
  const read = await client.readResource({ uri });
  const content = read.contents[0];
  check(content?.mimeType === APP_MIME && /^<!DOCTYPE html>/.test(content.text), "resources/read gives the view's HTML", content?.mimeType);

  // The tool call whose result the view shows: the run is still working.
  const input = { workflow: "rollout", inputs: { service: "billing" }, wait_seconds: 0 };
  const started = await client.callTool({ name: "run_start", arguments: input });
  const run = structured(started);
  check(!started.isError && ["pending", "running", "waiting"].includes(run.status) && run.pause?.kind !== "question",
    `run_start returns the run before its question (${run.status}${run.pause ? `, ${run.pause.kind} pause` : ""})`, run);

  const consoleErrors = [];
  const { page, view } = await mount(browser, client, port, consoleErrors, content, input, started);

  // The run first waits for the agent (its task in the conversation): the
  // view says so. The agent's answer, given here as the conversation would,
  // moves the run on to the question, and the view follows it there without
  // any reload: only its run_get calls through the host can tell it.
  await view.getByText("Waiting for the agent").waitFor({ timeout: 30000 });
  check((await page.evaluate(() => window.hostLog)).initialized, "the view completed ui/initialize and sent ui/notifications/initialized");
  await page.locator("#frame").screenshot({ path: join(artifacts, "app-agent.png") });
  const atAgent = structured(await client.callTool({ name: "run_get", arguments: { run_id: run.run_id } }));
  check(atAgent.status === "waiting" && atAgent.pause?.kind === "agent", "the run waits for the agent, and the view says so", atAgent);
  const byAgent = await client.callTool({ name: "run_continue", arguments: { token: atAgent.pause.token, value: { line: "Invoices render twice as fast." }, wait_seconds: 10 } });
  check(structured(byAgent).pause?.kind === "question", "the agent's run_continue (outside the view) moves the run to its question", structured(byAgent));
  const label = view.getByLabel("Release to what percentage of users?");
  await label.waitFor({ timeout: 30000 });
  const log1 = await page.evaluate(() => window.hostLog);
  const gets = log1.calls.filter((c) => c.name === "run_get");
  check(gets.length >= 2 && gets.every((c) => c.arguments.run_id === run.run_id) && gets.some((c) => c.pause === "agent") && gets.at(-1).pause === "question",
    `the view followed the run live through the host (${gets.length} run_get calls: ${gets.map((c) => c.status + (c.pause ? `/${c.pause}` : "")).join(" → ")})`, log1.calls);
  check(log1.sizes.some((h) => h > 200), `the view reported its size (ui/notifications/size-changed, last ${log1.sizes.at(-1)}px)`, log1.sizes);
  const steps = await view.locator("li.step").evaluateAll((lis) => lis.map((li) => [li.dataset.step, li.dataset.status]));
  check(steps.some(([id, st]) => id === "prepare" && st === "succeeded") && steps.some(([id, st]) => id === "notes" && st === "succeeded") &&
    steps.some(([id, st]) => id === "percent" && st === "waiting"),
    `the view lists the steps with their statuses (${steps.map((s) => s.join(":")).join(", ")})`, steps);
  check(await label.count() === 1, "the question is a labelled form field");

  // Theme: the host's dark theme, then light when the host switches.
  const dark = await view.locator("html").evaluate((h) => [h.dataset.theme, getComputedStyle(document.body).backgroundColor]);
  check(dark[0] === "dark" && luminance(dark[1]) < 0.3, `the view follows the host's dark theme (background ${dark[1]})`, dark);
  await page.screenshot({ path: join(artifacts, "app-question-dark.png"), fullPage: true });
  await page.evaluate(() => window.setTheme("light"));
  await view.locator("html[data-theme=light]").waitFor({ timeout: 10000 });
  const light = await view.locator("body").evaluate((b) => getComputedStyle(b).backgroundColor);
  check(luminance(light) > 0.7, `the view follows the host's switch to light (ui/notifications/host-context-changed, background ${light})`, light);
  await page.screenshot({ path: join(artifacts, "app-question.png"), fullPage: true });
  await page.locator("#frame").screenshot({ path: join(artifacts, "app-view-question.png") });

  // An out-of-range answer is refused inline; the form stays.
  await label.fill("150");
  await label.press("Enter");
  const problem = view.locator("#answer-error");
  await problem.waitFor({ state: "visible", timeout: 30000 });
  const said = await problem.innerText();
  check(/100/.test(said), `an out-of-range answer is refused inline: "${said.replace(/\s+/g, " ").slice(0, 120)}"`, said);
  await page.screenshot({ path: join(artifacts, "app-invalid.png"), fullPage: true });
  const still = await client.callTool({ name: "run_get", arguments: { run_id: run.run_id } });
  check(structured(still).status === "waiting", "the refused answer changed nothing on the server");

  // A valid answer: the run goes on, followed live, and finishes.
  await label.fill("25");
  await view.getByRole("button", { name: "Answer" }).click();
  await view.locator("#status").filter({ hasText: "succeeded" }).waitFor({ timeout: 60000 });
  const outputs = JSON.parse(await view.locator("#outputs-json").innerText());
  check(outputs.percent === 25 && outputs.service === "billing" && outputs.notes === "Invoices render twice as fast.", `the view shows the finished run's outputs ${JSON.stringify(outputs)}`, outputs);
  const log2 = await page.evaluate(() => window.hostLog);
  const answers = log2.calls.filter((c) => c.name === "run_continue");
  check(answers.length === 2 && answers[0].isError && !answers[1].isError && answers[1].arguments.value === 25,
    `the view answered with run_continue {token, value} through the host (refused once, then taken: ${answers[1]?.status}; then ${log2.calls.filter((c) => c.name === "run_get").at(-1)?.status})`, answers);
  await page.screenshot({ path: join(artifacts, "app-succeeded.png"), fullPage: true });
  await view.locator("#root").screenshot({ path: join(artifacts, "app-view.png") });

  const done = structured(await client.callTool({ name: "run_get", arguments: { run_id: run.run_id } }));
  const asked = done.steps?.recent?.find((s) => s.id === "percent");
  check(done.status === "succeeded" && done.outputs?.percent === 25 && asked?.answer === 25,
    "the server has the run succeeded with the answer given in the view", done);
  await page.close();

  // A form of fields (choice, yes/no, multi-choice, text) is answered in
  // the view as one object.
  const formInput = { workflow: "release-form", wait_seconds: 10 };
  const formStarted = await client.callTool({ name: "run_start", arguments: formInput });
  const formRun = structured(formStarted);
  check(formRun.status === "waiting" && formRun.pause?.fields?.length === 4, "run_start of release-form waits on a form of 4 fields", formRun);
  const form = await mount(browser, client, port, consoleErrors, content, formInput, formStarted);
  await form.view.getByRole("radio", { name: "beta" }).check({ timeout: 30000 });
  check(await form.view.getByRole("checkbox", { name: "Notify subscribers" }).isChecked(), "a yes/no field shows its default");
  await form.view.getByRole("checkbox", { name: "eu" }).check();
  await form.view.getByRole("checkbox", { name: "asia" }).check();
  await form.view.getByLabel("Note for the changelog").fill("Faster invoices");
  await form.view.getByRole("button", { name: "Answer" }).click();
  await form.view.locator("#status").filter({ hasText: "succeeded" }).waitFor({ timeout: 30000 });
  const formDone = structured(await client.callTool({ name: "run_get", arguments: { run_id: formRun.run_id } }));
  const want = { channel: "beta", notify: true, regions: ["eu", "asia"], note: "Faster invoices" };
  check(formDone.status === "succeeded" && isDeepStrictEqual(formDone.outputs?.details, want),
    `the form's answer reached the run: ${JSON.stringify(formDone.outputs?.details)}`, formDone);
  await form.page.close();

  // A secret question is not answered in the view: it offers the one-time
  // secret page, opened through the host (ui/open-link).
  const vaultInput = { workflow: "vault", wait_seconds: 10 };
  const vaultStarted = await client.callTool({ name: "run_start", arguments: vaultInput });
  const vault = structured(vaultStarted);
  check(vault.status === "waiting" && vault.pause?.secret && vault.pause.secret_url, "run_start of vault waits on a secret question with a secret_url", vault);
  const secret = await mount(browser, client, port, consoleErrors, content, vaultInput, vaultStarted);
  const open = secret.view.getByRole("button", { name: "Open the secret page" });
  await open.waitFor({ timeout: 30000 });
  check(await secret.view.locator("#question input").count() === 0, "the secret question has no field in the view");
  await open.click();
  await secret.page.waitForFunction(() => window.hostLog.openedLinks.length > 0, null, { timeout: 10000 });
  const opened = await secret.page.evaluate(() => window.hostLog.openedLinks);
  check(opened.length === 1 && opened[0] === vault.pause.secret_url, "the view asks the host to open the secret page (ui/open-link)", opened);
  await secret.page.screenshot({ path: join(artifacts, "app-secret.png"), fullPage: true });
  await secret.page.close();
  await client.callTool({ name: "run_cancel", arguments: { run_id: vault.run_id } });

  check(consoleErrors.length === 0, "no console errors", consoleErrors.join("\n"));
}

// mount opens the harness page and renders the view for one tool call
// (its input and result) through AppBridge; the view's tools/call go to
// client.
async function mount(browser, client, port, consoleErrors, content, input, result) {
  const page = await browser.newPage({ viewport: { width: 700, height: 900 }, deviceScaleFactor: 1 });
  page.on("console", (msg) => { if (msg.type() === "error") consoleErrors.push(`${msg.location()?.url ?? ""}: ${msg.text()}`); });
  page.on("pageerror", (err) => consoleErrors.push(`pageerror: ${err.message}`));
  await page.exposeFunction("mcpCallTool", async (params) => {
    try {
      return await client.callTool(params);
    } catch (err) {
      return { isError: true, content: [{ type: "text", text: String(err.message ?? err) }] };
    }
  });
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.evaluate((args) => window.mount(args), {
    html: content.text, meta: content._meta, input, result,
    sandboxUrl: `http://localhost:${port}/sandbox.html?host=${encodeURIComponent(`http://127.0.0.1:${port}`)}`,
    hostContext: { theme: "dark", platform: "web", displayMode: "inline", availableDisplayModes: ["inline"], locale: "en-US" },
  });
  return { page, view: page.frameLocator("#sandbox").frameLocator("iframe") };
}

// luminance of a CSS rgb() color, 0 (black) to 1 (white).
function luminance(css) {
  const [r, g, b] = (css.match(/\d+(\.\d+)?/g) ?? []).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}

async function main() {
  const server = startServer();
  let harness;
  let browser;
  try {
    const url = await server.url;
    harness = await serveHarness();
    browser = await chromium.launch({
      executablePath: chromiumPath, headless: true,
      args: ["--no-sandbox", "--disable-background-networking", "--disable-dev-shm-usage"],
    });
    const client = new Client(
      { name: "stepwise-e2e-app-host", version: "1.0.0" },
      { capabilities: { extensions: { [UI_EXTENSION]: { mimeTypes: [APP_MIME] } } } },
    );
    await withTimeout(client.connect(new StreamableHTTPClientTransport(new URL(url))), 30000, "connect");
    try {
      await withTimeout(session(client, harness.port, browser), 180000, "the session");
    } finally {
      await client.close();
    }
    console.log(`ok   [app] all checks passed; screenshots in ${artifacts}`);
  } catch (err) {
    if (!/^check failed/.test(err.message)) console.error(`FAIL [app] ${err.stack ?? err}`);
    console.error(`serve log (last 4 KB):\n${server.log().slice(-4000)}`);
    process.exitCode = 1;
  } finally {
    await browser?.close();
    harness?.server.close();
    await stopServer(server.proc);
  }
}

try {
  await main();
} finally {
  rmSync(join(temp, "home"), { recursive: true, force: true });
}
