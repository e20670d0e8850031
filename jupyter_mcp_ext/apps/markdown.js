// Markdown as notebooks use it, to HTML that sanitize() cleans before it reaches the page.
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
