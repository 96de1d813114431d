// The host side of the harness, in the browser: the ext-apps SDK's
// AppBridge renders a view in a sandbox proxy iframe (page/sandbox.html, on
// another origin) and proxies its tools/call to the MCP client, which runs
// in Node (window.mcpCallTool, bound by playwright's exposeFunction):
// stepwise's HTTP endpoint takes no cross-origin browser requests.
//
// Bundled by esbuild at test time (host.mjs); never committed bundled.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const HOST_INFO = { name: "stepwise-e2e-host", version: "1.0.0" };

// The calls the view made through the host, and what it reported.
window.hostLog = { calls: [], sizes: [], initialized: false, openedLinks: [], logs: [] };

// mount renders the view for one tool call: html and meta are the ui://
// resource's (resources/read), input and result the call's.
window.mount = async ({ html, meta, input, result, sandboxUrl, hostContext }) => {
  const frame = document.createElement("iframe");
  frame.id = "sandbox";
  frame.title = "stepwise run";
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  frame.src = sandboxUrl;
  document.getElementById("frame").replaceChildren(frame);

  const bridge = new AppBridge(null, HOST_INFO, { serverTools: {}, openLinks: {}, logging: {} }, { hostContext });
  bridge.oncalltool = async (params) => {
    const res = await window.mcpCallTool(params);
    window.hostLog.calls.push({ name: params.name, arguments: params.arguments, isError: !!res.isError, status: res.structuredContent?.status, pause: res.structuredContent?.pause?.kind });
    return res;
  };
  bridge.onopenlink = async ({ url }) => {
    window.hostLog.openedLinks.push(url);
    return {};
  };
  bridge.onloggingmessage = (p) => window.hostLog.logs.push(p);
  bridge.onsizechange = ({ height }) => {
    window.hostLog.sizes.push(height);
    if (height > 0) frame.style.height = `${height}px`;
  };
  bridge.onsandboxready = () => {
    bridge.sendSandboxResourceReady({ html, csp: meta?.ui?.csp, permissions: meta?.ui?.permissions });
  };
  bridge.oninitialized = () => {
    window.hostLog.initialized = true;
    bridge.sendToolInput({ arguments: input });
    bridge.sendToolResult(result);
  };
  window.bridge = bridge;
  window.hostContext = hostContext;
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
};

// setTheme changes the host's theme, as a host does when the person
// switches it (ui/notifications/host-context-changed).
window.setTheme = (theme) => {
  window.hostContext = { ...window.hostContext, theme };
  window.bridge.setHostContext(window.hostContext);
};
