// Code and terminal text as JupyterLab shows them: Python coloured as CodeMirror colours it, ANSI
// colours as classes, carriage returns applied. Everything becomes text nodes: nothing is parsed as HTML.
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
