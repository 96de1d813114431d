#!/usr/bin/env node
// Reads Mermaid flowcharts with Mermaid's own parser and flowchart database,
// in Node: jsdom stands in for the browser, which Mermaid needs only to
// sanitize labels.
//
//   node e2e/mermaid/check.mjs FILE.mmd...
//
// For each file: Mermaid parses it as a flowchart; every node Mermaid knows
// was declared with a label (a node that only an edge names would be created
// silently, with its id as its text); every edge joins known nodes or
// subgraphs; every subgraph line became a subgraph; and the entity codes in
// the labels decode cleanly (no stray markers of Mermaid's entity encoding).
// Prints one line per file and "N passed, N failed"; exits 1 on any failure.
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";

const { window } = new JSDOM("");
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import("mermaid");

// Mermaid writes #name; and #NNN; as these markers while it parses and
// turns them into HTML entities when it renders.
const decode = (s) => s.replace(/ﬂ°°/g, "&#").replace(/ﬂ°/g, "&").replace(/¶ß/g, ";");

async function check(text) {
  const parsed = await mermaid.parse(text);
  if (parsed.diagramType !== "flowchart-v2") {
    throw new Error(`read as ${parsed.diagramType}, not a flowchart`);
  }
  const { db } = await mermaid.mermaidAPI.getDiagramFromText(text);
  const vertices = db.getVertices();
  const subgraphs = db.getSubGraphs();
  const groups = new Set(subgraphs.map((g) => g.id));
  for (const [id, v] of vertices) {
    if (v.text === undefined || v.text === id) {
      throw new Error(`node ${id} has no label of its own: named by an edge but never declared`);
    }
    const label = decode(v.text);
    if (/[ﬂ¶]/.test(label)) {
      throw new Error(`node ${id}: label ${JSON.stringify(label)} keeps entity markers`);
    }
  }
  for (const e of db.getEdges()) {
    for (const end of [e.start, e.end]) {
      if (!vertices.has(end) && !groups.has(end)) {
        throw new Error(`edge ${e.start} → ${e.end}: ${end} is unknown`);
      }
    }
    if (/[ﬂ¶]/.test(decode(e.text ?? ""))) {
      throw new Error(`edge ${e.start} → ${e.end} keeps entity markers`);
    }
  }
  const declared = (text.match(/^\s*subgraph /gm) ?? []).length;
  if (subgraphs.length !== declared) {
    throw new Error(`${declared} subgraph lines, Mermaid read ${subgraphs.length} subgraphs`);
  }
  return `${vertices.size} nodes, ${db.getEdges().length} edges, ${subgraphs.length} subgraphs`;
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node check.mjs FILE.mmd...");
  process.exit(2);
}
let passed = 0;
let failed = 0;
for (const f of files) {
  try {
    console.log(`ok   ${f}: ${await check(readFileSync(f, "utf8"))}`);
    passed++;
  } catch (e) {
    console.log(`FAIL ${f}: ${e.message.split("\n").slice(0, 3).join(" / ")}`);
    failed++;
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
