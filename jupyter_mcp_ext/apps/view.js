// The notebook view: an MCP App (io.modelcontextprotocol/ui) speaking JSON-RPC with its host over
// postMessage. It renders the cells a tool result carries in _meta["jupyter-mcp-ext/view"] as
// JupyterLab would, and again on every later result. Every string from the notebook reaches the page
// as text nodes or through sanitize(), an allow-list of tags and attributes as JupyterLab's.
// view.py runs text.js, markdown.js, sanitize.js and this file as one script, in one scope.
const META_KEY = "jupyter-mcp-ext/view";
const main = document.getElementById("cells");
const title = document.getElementById("title");
const openLink = document.getElementById("open");
const pending = new Map();
let nextId = 1;
let input = null; // the tool's arguments (ui/notifications/tool-input)
let hostCapabilities = {};
let generation = 0; // which result the view follows; a newer one ends the following of an older

// -- the host ------------------------------------------------------------------------------
function send(message) {
  window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
}
function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
function notify(method, params) {
  send({ method, params });
}
function openUrl(url) {
  request("ui/open-link", { url }).catch(() => {});
}

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return; // only the host speaks to the view
  const msg = event.data;
  if (!msg || msg.jsonrpc !== "2.0") return;
  if (msg.method === undefined && pending.has(msg.id)) {
    const waiter = pending.get(msg.id);
    pending.delete(msg.id);
    if ("error" in msg) waiter.reject(msg.error);
    else waiter.resolve(msg.result);
    return;
  }
  const params = msg.params || {};
  switch (msg.method) {
    case "ui/notifications/tool-input":
      input = params.arguments || {};
      showInput(input);
      break;
    case "ui/notifications/tool-result":
      showResult(params);
      break;
    case "ui/notifications/tool-cancelled":
      note("The call was cancelled" + (params.reason ? ": " + params.reason : "."));
      break;
    case "ui/notifications/host-context-changed":
      applyContext(params);
      break;
    default:
      if (msg.id !== undefined && msg.method !== undefined) {
        // ping, ui/resource-teardown: nothing to keep; anything else is not ours to answer
        const known = msg.method === "ping" || msg.method === "ui/resource-teardown";
        send(known ? { id: msg.id, result: {} } : { id: msg.id, error: { code: -32601, message: "Method not found" } });
      }
  }
});

function applyContext(context) {
  if (context.theme === "dark" || context.theme === "light") document.documentElement.dataset.theme = context.theme;
  const variables = (context.styles && context.styles.variables) || {};
  for (const [name, value] of Object.entries(variables)) {
    if (/^--[\w-]+$/.test(name) && typeof value === "string") document.documentElement.style.setProperty(name, value);
  }
}

// -- what the host hands over -----------------------------------------------------------------
function showInput(args) {
  const code = typeof args.source === "string" ? args.source : typeof args.code === "string" ? args.code : null;
  if (typeof args.path === "string") title.textContent = args.path;
  if (code !== null) {
    main.replaceChildren(codeCell({ type: "code", source: code, status: "running", outputs: [] }, ""));
  } else {
    note("Working…");
  }
}

function showResult(result) {
  const view = render(result);
  follow(view, ++generation);
}

// A run that outlived its call: the view asks for its state (get_execution, through the host) and
// shows each answer until the run ends. The answers go to the view, never to the model.
async function follow(view, mine) {
  while (view && view.execution_id && (view.status === "running" || view.status === "queued")) {
    if (!hostCapabilities.serverTools) return;
    let result;
    try {
      result = await request("tools/call", { name: "get_execution", arguments: { execution_id: view.execution_id, wait: 10 } });
    } catch (error) {
      return; // the host refused or the call failed: what is shown stays
    }
    if (mine !== generation || !result || result.isError) return;
    view = render(result);
  }
}

function render(result) {
  const view = result && result._meta && result._meta[META_KEY];
  if (!view || !Array.isArray(view.cells)) {
    const text = ((result && result.content) || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
    const pre = el("pre", result && result.isError ? "error-text" : "");
    pre.textContent = text || "No cells to show.";
    main.replaceChildren(wrapOutput(pre, result && result.isError ? "error" : ""));
    return null;
  }
  title.textContent = view.path || (input && input.path) || "Notebook";
  if (typeof view.lab === "string" && /^https?:\/\//.test(view.lab)) {
    openLink.hidden = false;
    openLink.href = view.lab;
    openLink.dataset.url = view.lab;
  }
  const nodes = view.cells.map((cell) => (cell.type === "markdown" ? markdownCell(cell, view.lab) : cell.type === "raw" ? rawCell(cell) : codeCell(cell, view.lab)));
  if (!nodes.length) nodes.push(textNote("No cells in that range."));
  if (view.omitted) nodes.push(textNote(view.omitted + " outputs are too large for this view: open the notebook to see them."));
  main.replaceChildren(...nodes);
  return view;
}

function note(text) {
  main.replaceChildren(textNote(text));
}
function textNote(text) {
  const p = el("p", "omitted");
  p.textContent = text;
  return p;
}

document.addEventListener("click", (event) => {
  const a = event.target.closest && event.target.closest("a[href]");
  if (!a) return;
  event.preventDefault(); // the sandbox opens nothing itself: the host is asked to
  const url = a.dataset.url || a.getAttribute("href");
  if (/^(https?:|mailto:)/i.test(url)) openUrl(url);
});

// -- cells ----------------------------------------------------------------------------------------
function el(tag, cls) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  return node;
}
function cellLink(lab, id, text) {
  if (!lab || !id) {
    const span = el("span");
    span.textContent = text;
    return span;
  }
  const a = el("a");
  const url = lab + "#cell-id=" + encodeURIComponent(id);
  a.href = url;
  a.dataset.url = url;
  a.title = "Open this cell in JupyterLab";
  a.textContent = text;
  return a;
}

function codeCell(cell, lab) {
  const box = el("div", "cell code-cell");
  if (cell.id) box.dataset.cellId = cell.id;
  const prompt = el("div", "prompt");
  const count = cell.status === "running" || cell.status === "queued" ? "*" : cell.execution_count == null ? " " : String(cell.execution_count);
  prompt.append(cellLink(lab, cell.id, "[" + count + "]:"));
  const inputArea = el("div", "input");
  const pre = el("pre");
  const code = el("code", "language-python");
  code.append(highlight(cell.source || ""));
  pre.append(code);
  inputArea.append(pre);
  box.append(prompt, inputArea);
  if (cell.status && !["ok", "idle"].includes(cell.status)) {
    const status = el("div", "status" + (cell.status === "error" ? " error" : ""));
    status.textContent = cell.status;
    box.append(el("div"), status);
  }
  const outputs = el("div", "outputs");
  for (const output of cell.outputs || []) {
    const shown = renderOutput(output);
    if (!shown) continue;
    const outPrompt = el("div", "prompt out");
    if (output.output_type === "execute_result" && cell.execution_count != null) outPrompt.textContent = "[" + cell.execution_count + "]:";
    outputs.append(outPrompt, shown);
  }
  box.append(outputs);
  return box;
}

function markdownCell(cell, lab) {
  const box = el("div", "cell markdown-cell");
  if (cell.id) box.dataset.cellId = cell.id;
  const prompt = el("div", "prompt");
  if (lab && cell.id) prompt.append(cellLink(lab, cell.id, "¶"));
  const body = el("div", "markdown rendered");
  body.append(sanitize(markdown(cell.source || "")));
  box.append(prompt, body);
  return box;
}

function rawCell(cell) {
  const box = el("div", "cell raw-cell");
  const pre = el("pre");
  pre.textContent = cell.source || "";
  box.append(el("div", "prompt"), pre);
  return box;
}

function wrapOutput(node, kind) {
  const box = el("div", "output" + (kind ? " " + kind : ""));
  box.append(node);
  return box;
}

// JupyterLab's order of preference among an output's MIME types.
const IMAGES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
function renderOutput(output) {
  const kind = output.output_type;
  if (kind === "omitted") return wrapOutput(textNote("Output too large for this view."), "");
  if (kind === "stream") {
    const pre = el("pre");
    pre.append(ansi(overwrite(output.text || "")));
    return wrapOutput(pre, output.name === "stderr" ? "stderr" : "stdout");
  }
  if (kind === "error") {
    const pre = el("pre");
    const trace = (output.traceback || []).join("\n") || (output.ename || "") + ": " + (output.evalue || "");
    pre.append(ansi(trace));
    return wrapOutput(pre, "error");
  }
  const data = output.data || {};
  if (typeof data["text/html"] === "string") {
    const div = el("div", "rendered");
    div.append(sanitize(data["text/html"]));
    return wrapOutput(div, "html");
  }
  if (typeof data["text/markdown"] === "string") {
    const div = el("div", "markdown rendered");
    div.append(sanitize(markdown(data["text/markdown"])));
    return wrapOutput(div, "");
  }
  if (typeof data["text/latex"] === "string") {
    const pre = el("pre");
    pre.textContent = data["text/latex"];
    return wrapOutput(pre, "");
  }
  if (typeof data["image/svg+xml"] === "string") {
    // As an image, SVG cannot run script nor load anything.
    return wrapOutput(image("data:image/svg+xml;base64," + btoa(unescape(encodeURIComponent(data["image/svg+xml"])))), "image");
  }
  for (const mime of IMAGES) {
    if (typeof data[mime] === "string" && /^[A-Za-z0-9+/=\s]*$/.test(data[mime])) {
      return wrapOutput(image("data:" + mime + ";base64," + data[mime].replace(/\s/g, "")), "image");
    }
  }
  if (typeof data["application/json"] === "string") {
    const pre = el("pre");
    pre.textContent = data["application/json"];
    return wrapOutput(pre, "");
  }
  if (typeof data["text/plain"] === "string") {
    const pre = el("pre");
    pre.append(ansi(data["text/plain"]));
    return wrapOutput(pre, "");
  }
  return null;
}

function image(src) {
  const img = el("img");
  img.alt = "output image";
  img.src = src;
  return img;
}

// -- start ------------------------------------------------------------------------------------------
// The content's own size (not the frame's): the host fits the frame to it, larger or smaller.
new ResizeObserver(() => {
  const box = document.body.getBoundingClientRect();
  notify("ui/notifications/size-changed", { width: Math.ceil(box.width), height: Math.ceil(box.height) });
}).observe(document.body);

request("ui/initialize", {
  appInfo: { name: "jupyter-mcp-ext notebook view", version: "1" },
  appCapabilities: { availableDisplayModes: ["inline"] },
  protocolVersion: "2026-01-26",
}).then((result) => {
  hostCapabilities = (result && result.hostCapabilities) || {};
  applyContext((result && result.hostContext) || {});
  notify("ui/notifications/initialized", {});
}, () => note("The host did not answer ui/initialize."));
