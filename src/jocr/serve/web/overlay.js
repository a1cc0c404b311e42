// The page's document tree drawn over its image: one box per block in its type's colour (the palette
// `jocr parse --draw` uses, served as /static/palette.json), numbered in reading order from 1. The
// Markdown pane is built block by block, so hovering a box highlights its Markdown and hovering the
// Markdown highlights its box (class "hl" on both).
(function (global) {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const $ = function (id) { return document.getElementById(id); };
  let palette = {};
  const ready = fetch("/static/palette.json").then(function (r) { return r.ok ? r.json() : {}; })
    .then(function (p) { palette = p; }, function () { palette = {}; });

  function colour(type) { return palette[type] || palette[""] || "#000000"; }

  function svgNode(name, attrs) {
    const node = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }

  function clear() {
    $("boxes").replaceChildren();
    $("boxes").removeAttribute("viewBox");
  }

  // Boxes in the tree's own unit: the SVG's viewBox is the page's size, so the browser scales them to the
  // image however large it is shown.
  function drawBoxes(tree) {
    const svg = $("boxes");
    clear();
    if (!(tree.width > 0 && tree.height > 0)) return;
    svg.setAttribute("viewBox", "0 0 " + tree.width + " " + tree.height);
    const label = Math.max(tree.height / 70, 1); // the number tabs' height
    tree.blocks.forEach(function (block, i) {
      if (!block.bbox) return;
      const [x0, y0, x1, y1] = block.bbox;
      const g = svgNode("g", { "class": "box", "data-block": String(block.order), "data-type": block.type });
      const c = colour(block.type);
      g.appendChild(svgNode("rect", { x: x0, y: y0, width: Math.max(x1 - x0, 0), height: Math.max(y1 - y0, 0),
        stroke: c, fill: c }));
      // The number on a filled tab above the box's top-left corner, as `--draw` puts it.
      const number = String(i + 1);
      const top = Math.max(y0 - label, 0);
      g.appendChild(svgNode("rect", { "class": "tab", x: x0, y: top, width: label * (0.65 * number.length + 0.4),
        height: label, fill: c }));
      const text = svgNode("text", { x: x0 + label * 0.2, y: top + label * 0.82, "font-size": label * 0.9 });
      text.textContent = number;
      g.appendChild(text);
      const title = svgNode("title", {});
      title.textContent = (i + 1) + ". " + block.type;
      g.appendChild(title);
      svg.appendChild(g);
    });
  }

  function escapeHtml(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  // The body blocks with Markdown, and the separators `jocr.layout.render.page_markdown` puts between
  // them (list items the line rules found sit on consecutive lines).
  function bodyParts(tree) {
    const parts = [];
    let previous = null;
    tree.blocks.forEach(function (block) {
      const md = (block.markdown || "").replace(/^\n+|\n+$/g, "");
      if (block.furniture || !md.trim()) return;
      const tight = tree.source === "lines" && previous && previous.type === "list_item" &&
        block.type === "list_item";
      parts.push({ block: block, md: md, sep: parts.length ? (tight ? "\n" : "\n\n") : "" });
      previous = block;
    });
    return parts;
  }

  // Markdown panes block by block; false (nothing changed) where the blocks do not make up `content`.
  function fillPanes(tree, content) {
    const parts = bodyParts(tree);
    const joined = parts.map(function (p) { return p.sep + p.md; }).join("");
    if (!parts.length || joined.trim() !== content.trim()) return false;
    $("rendered").innerHTML = parts.map(function (p) {
      return '<div class="md-block" data-block="' + p.block.order + '">' + global.renderMarkdown(p.md) + "</div>";
    }).join("\n");
    $("source").innerHTML = parts.map(function (p) {
      return escapeHtml(p.sep) + '<span class="md-block" data-block="' + p.block.order + '">' + escapeHtml(p.md) +
        "</span>";
    }).join("") + escapeHtml(content.slice(content.trimEnd().length));
    return true;
  }

  function highlight(order, on, scroll) {
    document.querySelectorAll('[data-block="' + order + '"]').forEach(function (node) {
      node.classList.toggle("hl", on);
      if (on && scroll && node.classList.contains("md-block") && node.offsetParent) {
        node.scrollIntoView({ block: "nearest" });
      }
    });
  }

  function hover(container, scroll) {
    container.addEventListener("mouseover", function (event) {
      const node = event.target.closest && event.target.closest("[data-block]");
      if (node && container.contains(node)) highlight(node.dataset.block, true, scroll);
    });
    container.addEventListener("mouseout", function (event) {
      const node = event.target.closest && event.target.closest("[data-block]");
      if (node && container.contains(node)) highlight(node.dataset.block, false, false);
    });
  }

  hover($("boxes"), true);
  hover($("rendered"), false);
  hover($("source"), false);
  $("show-boxes").addEventListener("change", function () {
    $("boxes").style.display = $("show-boxes").checked ? "" : "none";
  });

  // Draw `tree` (a `PageTree.to_dict()`, or null) and fill the Markdown panes; true when the panes were
  // built from the tree's blocks (else the caller shows `content` as a whole).
  async function show(tree, content) {
    await ready;
    clear();
    global.pageOverlay.tree = tree;
    if (!tree) return false;
    drawBoxes(tree);
    return fillPanes(tree, content);
  }

  global.pageOverlay = { show: show, clear: clear, tree: null };
})(window);
