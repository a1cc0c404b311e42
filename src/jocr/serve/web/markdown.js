// A small Markdown renderer for model output: headings, paragraphs, lists, quotes, code, pipe tables,
// HTML tables (only table tags and colspan/rowspan pass; everything else is escaped) and formulas
// ($..$, $$..$$, \(..\), \[..\]) rendered by KaTeX when it loaded (MathML output needs no fonts or CSS),
// else shown as LaTeX source.
(function (global) {
  "use strict";
  const ALLOWED = new Set(["table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption", "br", "sup", "sub",
    "b", "i", "strong", "em", "u", "s", "colgroup", "col"]);

  function escapeHtml(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  function renderMath(tex, display) {
    if (global.katex && !global.katexMissing) {
      try {
        const html = global.katex.renderToString(tex, { displayMode: display, output: "mathml", throwOnError: false });
        return display ? '<span class="math-display">' + html + "</span>" : html;
      } catch (e) { /* fall through to source */ }
    }
    const code = '<code class="math">' + escapeHtml(tex) + "</code>";
    return display ? '<span class="math-display">' + code + "</span>" : code;
  }

  // Formulas are cut out first (their backslashes and underscores are not Markdown) and put back last.
  function extractMath(text, store) {
    const re = /\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\]|\\\(([\s\S]+?)\\\)|\$([^\s$](?:[^$\n]*?[^\s$])?)\$/g;
    return text.replace(re, function (m, a, b, c, d) {
      const display = a !== undefined || b !== undefined;
      const tex = a !== undefined ? a : b !== undefined ? b : c !== undefined ? c : d;
      store.push(renderMath(tex.trim(), display));
      return "\u0000" + (store.length - 1) + "\u0000";
    });
  }

  function sanitizeTag(tag) {
    const m = /^<(\/?)([a-zA-Z][a-zA-Z0-9]*)([^<>]*)>$/.exec(tag);
    if (!m || !ALLOWED.has(m[2].toLowerCase())) return escapeHtml(tag);
    const name = m[2].toLowerCase();
    if (m[1]) return "</" + name + ">";
    let attrs = "";
    const attrRe = /\b(colspan|rowspan)\s*=\s*["']?(\d{1,3})["']?/gi;
    let a;
    while ((a = attrRe.exec(m[3])) !== null) attrs += " " + a[1].toLowerCase() + '="' + a[2] + '"';
    return "<" + name + attrs + ">";
  }

  function inline(text) {
    // Split into allowed tags and text; only text gets Markdown inline rules.
    const parts = text.split(/(<\/?[a-zA-Z][^<>]*>)/);
    return parts.map(function (part, i) {
      if (i % 2 === 1) return sanitizeTag(part);
      let s = escapeHtml(part);
      s = s.replace(/`([^`]+)`/g, "<code>$1</code>");
      s = s.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>").replace(/__([^_]+)__/g, "<strong>$1</strong>");
      s = s.replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
      s = s.replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, '<a href="$2" rel="noopener noreferrer">$1</a>');
      return s;
    }).join("");
  }

  function splitRow(line) {
    let s = line.trim();
    if (s.startsWith("|")) s = s.slice(1);
    if (s.endsWith("|")) s = s.slice(0, -1);
    return s.split("|").map(function (c) { return c.trim(); });
  }

  function render(markdown) {
    const math = [];
    const lines = extractMath(String(markdown || ""), math).replace(/\r\n?/g, "\n").split("\n");
    const out = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (!line.trim()) { i++; continue; }
      if (/^```/.test(line)) {
        const body = [];
        i++;
        while (i < lines.length && !/^```/.test(lines[i])) body.push(lines[i++]);
        i++;
        out.push("<pre><code>" + escapeHtml(body.join("\n")) + "</code></pre>");
      } else if ((m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
        out.push("<h" + m[1].length + ">" + inline(m[2]) + "</h" + m[1].length + ">");
        i++;
      } else if (/^\s*<table\b/i.test(line)) {
        const body = [];
        while (i < lines.length) {
          body.push(lines[i]);
          if (/<\/table>/i.test(lines[i++])) break;
        }
        out.push(inline(body.join("\n")));
      } else if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
        const head = splitRow(line);
        i += 2;
        let html = "<table><thead><tr>" + head.map(function (c) { return "<th>" + inline(c) + "</th>"; }).join("") +
          "</tr></thead><tbody>";
        while (i < lines.length && /^\s*\|/.test(lines[i])) {
          html += "<tr>" + splitRow(lines[i++]).map(function (c) { return "<td>" + inline(c) + "</td>"; }).join("") + "</tr>";
        }
        out.push(html + "</tbody></table>");
      } else if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
        const ordered = /^\s*\d/.test(line);
        const items = [];
        while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
          items.push("<li>" + inline(lines[i++].replace(/^\s*([-*+]|\d+[.)])\s+/, "")) + "</li>");
        }
        out.push((ordered ? "<ol>" : "<ul>") + items.join("") + (ordered ? "</ol>" : "</ul>"));
      } else if (/^\s*>/.test(line)) {
        const body = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ""));
        out.push("<blockquote>" + inline(body.join(" ")) + "</blockquote>");
      } else if (/^\s*([-*_])\s*\1\s*\1[\s\-*_]*$/.test(line)) {
        out.push("<hr>");
        i++;
      } else {
        const body = [];
        while (i < lines.length && lines[i].trim() && !/^(#{1,6}\s|```|\s*<table\b|\s*>)/i.test(lines[i])) {
          body.push(lines[i++]);
        }
        out.push("<p>" + inline(body.join("\n")) + "</p>");
      }
    }
    return out.join("\n").replace(/\u0000(\d+)\u0000/g, function (_, k) { return math[Number(k)]; });
  }

  global.renderMarkdown = render;
})(window);
