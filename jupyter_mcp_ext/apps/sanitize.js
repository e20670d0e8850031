// The sanitizer: JupyterLab's allow-list idea (tags, attributes, URL schemes), built on an inert
// document (DOMParser runs no script and loads nothing); only allowed nodes are re-created in the page.
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
