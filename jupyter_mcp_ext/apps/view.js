// The notebook view: an MCP App (io.modelcontextprotocol/ui) speaking JSON-RPC with its host over
// postMessage. It renders the cells a tool result carries in _meta["jupyter-mcp-ext/view"] as
// JupyterLab would, and again on every later result. Every string from the notebook reaches the page
// as text nodes or through sanitize(), an allow-list of tags and attributes as JupyterLab's.
"use strict";
(function () {
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

  // -- Python, coloured as CodeMirror colours it in JupyterLab ------------------------------------
  const KEYWORDS = new Set(("False None True and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case").split(" "));
  const BUILTINS = new Set(("print len range int float str list dict set tuple bool type isinstance open enumerate zip map " +
    "filter sorted sum min max abs round super object repr any all iter next self").split(" "));
  const TOKEN = /(#[^\n]*)|((?:[rbfuRBFU]{1,2})?(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?))|(@[\w.]+)|(\b(?:0[xXoObB][\da-fA-F_]+|\d[\d_]*\.?[\d_]*(?:[eE][+-]?\d+)?j?)\b)|([A-Za-z_]\w*)|([=+\-*/%<>&|^~!]+)|(\s+|.)/g;

  function highlight(source) {
    const fragment = document.createDocumentFragment();
    let afterDef = false;
    for (const m of source.matchAll(TOKEN)) {
      const [text, comment, string, decorator, number, name, operator] = m;
      let cls = "";
      if (comment) cls = "tok-c";
      else if (string) cls = "tok-s";
      else if (decorator) cls = "tok-d";
      else if (number) cls = "tok-n";
      else if (name) cls = afterDef ? "tok-f" : KEYWORDS.has(name) ? "tok-k" : BUILTINS.has(name) ? "tok-b" : "";
      else if (operator) cls = "tok-o";
      if (name || (text.trim() && !operator)) afterDef = name === "def" || name === "class";
      if (cls) {
        const span = el("span", cls);
        span.textContent = text;
        fragment.append(span);
      } else {
        fragment.append(document.createTextNode(text));
      }
    }
    return fragment;
  }

  // -- terminal text ------------------------------------------------------------------------------
  function overwrite(text) {
    // A line redrawn with carriage returns (a progress bar) shows its last state, as in JupyterLab.
    if (!text.includes("\r")) return text;
    return text.replace(/\r+\n/g, "\n").split("\n").map((line) => line.split("\r").reduce((shown, part) => part + shown.slice(part.length), "")).join("\n");
  }

  function ansi(text) {
    const fragment = document.createDocumentFragment();
    const cleaned = text.replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, "").replace(/\x1b\[[0-?]*[ -/]*[@-ln-~]/g, "").replace(/\x1b[@-Z\\-_]/g, "");
    let fg = null, bg = null, bold = false;
    const parts = cleaned.split(/\x1b\[([\d;]*)m/);
    for (let i = 0; i < parts.length; i++) {
      if (i % 2 === 1) {
        const codes = parts[i] === "" ? [0] : parts[i].split(";").map(Number);
        for (let j = 0; j < codes.length; j++) {
          const c = codes[j];
          if (c === 0) { fg = bg = null; bold = false; }
          else if (c === 1) bold = true;
          else if (c === 22) bold = false;
          else if ((c >= 30 && c <= 37) || (c >= 90 && c <= 97)) fg = c;
          else if (c === 39) fg = null;
          else if (c >= 40 && c <= 47) bg = c;
          else if (c === 49) bg = null;
          else if (c === 38 || c === 48) j += codes[j + 1] === 5 ? 2 : 4; // 256 and true colours: not shown
        }
        continue;
      }
      if (!parts[i]) continue;
      if (fg === null && bg === null && !bold) {
        fragment.append(document.createTextNode(parts[i]));
      } else {
        const span = el("span", [fg !== null ? "ansi-" + fg : "", bg !== null ? "ansi-" + bg : "", bold ? "ansi-bold" : ""].join(" ").trim());
        span.textContent = parts[i];
        fragment.append(span);
      }
    }
    return fragment;
  }

  // -- markdown (what notebooks use of it), to HTML that sanitize() then cleans -------------------
  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  function inline(text) {
    const codes = [];
    let out = text.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (_, __, code) => {
      codes.push("<code>" + escapeHtml(code.trim()) + "</code>");
      return "\u0000" + (codes.length - 1) + "\u0000";
    });
    out = out
      .replace(/!\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g, (_, alt, src) => '<img alt="' + escapeHtml(alt) + '" src="' + escapeHtml(src) + '">')
      .replace(/\[([^\]]+)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g, (_, label, href) => '<a href="' + escapeHtml(href) + '">' + label + "</a>")
      .replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, "<strong>$2</strong>")
      .replace(/(^|[^\w*])([*_])(?=\S)([\s\S]*?\S)\2(?!\w)/g, "$1<em>$3</em>")
      .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
    return out.replace(/\u0000(\d+)\u0000/g, (_, n) => codes[Number(n)]);
  }

  function markdown(source) {
    const lines = source.replace(/\r\n?/g, "\n").split("\n");
    const html = [];
    let i = 0;
    const isBlank = (line) => !line.trim();
    const tableRow = (line) => line.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (isBlank(line)) { i++; continue; }
      if ((m = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/))) {
        const fence = m[1];
        const body = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) body.push(lines[i]);
        i++;
        html.push("<pre><code>" + escapeHtml(body.join("\n")) + "</code></pre>");
        continue;
      }
      if ((m = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/))) {
        html.push("<h" + m[1].length + ">" + inline(m[2]) + "</h" + m[1].length + ">");
        i++;
        continue;
      }
      if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { html.push("<hr>"); i++; continue; }
      if (/^\s*>/.test(line)) {
        const body = [];
        for (; i < lines.length && /^\s*>/.test(lines[i]); i++) body.push(lines[i].replace(/^\s*>\s?/, ""));
        html.push("<blockquote>" + markdown(body.join("\n")) + "</blockquote>");
        continue;
      }
      if (/\|/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/.test(lines[i + 1])) {
        const head = tableRow(line);
        const rows = [];
        for (i += 2; i < lines.length && /\|/.test(lines[i]) && !isBlank(lines[i]); i++) rows.push(tableRow(lines[i]));
        html.push("<table><thead><tr>" + head.map((c) => "<th>" + inline(c) + "</th>").join("") + "</tr></thead><tbody>" +
          rows.map((r) => "<tr>" + r.map((c) => "<td>" + inline(c) + "</td>").join("") + "</tr>").join("") + "</tbody></table>");
        continue;
      }
      if ((m = line.match(/^\s*([-*+]|\d+[.)])\s+/))) {
        const ordered = /\d/.test(m[1]);
        const items = [];
        for (; i < lines.length && !isBlank(lines[i]); i++) {
          const item = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
          if (item) items.push(item[2]);
          else if (items.length) items[items.length - 1] += " " + lines[i].trim();
        }
        const tag = ordered ? "ol" : "ul";
        html.push("<" + tag + ">" + items.map((t) => "<li>" + inline(t) + "</li>").join("") + "</" + tag + ">");
        continue;
      }
      const para = [];
      for (; i < lines.length && !isBlank(lines[i]) && !/^\s*(#{1,6}\s|```|~~~|>)/.test(lines[i]); i++) para.push(lines[i]);
      if (!para.length) { para.push(line); i++; }
      html.push("<p>" + inline(para.join("\n")) + "</p>");
    }
    return html.join("\n");
  }

  // -- the sanitizer: JupyterLab's allow-list idea, built on an inert document ---------------------
  const ALLOWED = new Set(("a abbr b bdi bdo blockquote br caption cite code col colgroup dd del details dfn div dl dt em " +
    "figcaption figure h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q rp rt ruby s samp small span strike strong " +
    "sub summary sup table tbody td tfoot th thead time tr tt u ul var wbr").split(" "));
  // Dropped with everything inside them: what runs, loads, embeds, submits or styles the page.
  const DROPPED = new Set(("script style iframe frame frameset object embed applet template noscript link meta base " +
    "form input button select textarea option svg math audio video source track canvas portal title head").split(" "));
  const ATTRIBUTES = new Set(["title", "lang", "dir", "align", "valign", "colspan", "rowspan", "scope", "headers", "alt",
    "width", "height", "start", "reversed", "type", "open", "datetime", "class", "border", "cellpadding", "cellspacing"]);
  const SAFE_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$/i;
  const SAFE_LINK = /^(https?:|mailto:|#)/i;

  function sanitize(html) {
    const inert = new DOMParser().parseFromString("<!DOCTYPE html><body>" + html, "text/html");
    const fragment = document.createDocumentFragment();
    for (const child of Array.from(inert.body.childNodes)) clean(child, fragment);
    return fragment;
  }

  function clean(node, into) {
    if (node.nodeType === Node.TEXT_NODE) {
      into.append(document.createTextNode(node.data));
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return; // comments, processing instructions
    const tag = node.localName;
    if (DROPPED.has(tag) || node.namespaceURI !== "http://www.w3.org/1999/xhtml") return;
    let target = into;
    if (ALLOWED.has(tag)) {
      target = document.createElement(tag);
      for (const attr of Array.from(node.attributes)) {
        const name = attr.name.toLowerCase();
        const value = attr.value;
        if (ATTRIBUTES.has(name)) target.setAttribute(name, value);
        else if (name === "src" && tag === "img" && SAFE_IMAGE.test(value.trim())) target.setAttribute("src", value.trim());
        else if (name === "href" && tag === "a" && SAFE_LINK.test(value.trim())) target.setAttribute("href", value.trim());
      }
      if (tag === "a") target.setAttribute("rel", "noopener noreferrer");
      if (tag === "img" && !target.hasAttribute("src")) {
        // An image from anywhere but the notebook itself is not loaded: its description stands in.
        into.append(document.createTextNode(target.getAttribute("alt") || ""));
        return;
      }
      into.append(target);
    }
    for (const child of Array.from(node.childNodes)) clean(child, target); // an unknown tag keeps its text
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
})();
