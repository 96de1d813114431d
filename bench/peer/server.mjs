#!/usr/bin/env node
// The peer of stepwise's tool-call figures: a minimal MCP server from the
// TypeScript SDK with one trivial tool, named and shaped like stepwise's
// run_get (a run_id argument, validated by its schema) so that the same Go
// driver sends both servers the same calls. What it answers costs nothing:
// the difference is the SDK, the runtime and the transport.
//
//   node server.mjs          serve over stdio
//   node server.mjs --http   serve streamable HTTP on 127.0.0.1 (a free port);
//                            prints "serving MCP at URL" on stderr, like stepwise
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function newServer() {
  const server = new McpServer({ name: "stepwise-bench-peer", version: "1" });
  server.registerTool(
    "run_get",
    {
      description: "Returns the run id it is given.",
      inputSchema: { run_id: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ run_id }) => ({ content: [{ type: "text", text: `run ${run_id}` }] }),
  );
  return server;
}

if (!process.argv.includes("--http")) {
  await newServer().connect(new StdioServerTransport());
} else {
  // One transport and server per session, as the go-sdk's streamable
  // handler keeps them (stateful sessions, responses as SSE streams).
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    if (!req.url.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const id = req.headers["mcp-session-id"];
    let transport = id && sessions.get(id);
    if (!transport) {
      if (id) {
        res.writeHead(404).end();
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => sessions.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  http.listen(0, "127.0.0.1", () => {
    console.error(`serving MCP at http://127.0.0.1:${http.address().port}/mcp`);
  });
}
