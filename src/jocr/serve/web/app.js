// Demo page: pick a file or paste a URL, choose a page, see the page image with its blocks drawn on it
// (overlay.js) and its Markdown.
(function () {
  "use strict";
  const $ = function (id) { return document.getElementById(id); };
  let fileField = null; // {key: "pdf" | "image", data: base64}

  function setStatus(text, isError) {
    $("status").textContent = text;
    $("status").className = isError ? "error" : "";
  }

  function source() {
    if (fileField) return { [fileField.key]: fileField.data, filename: fileField.name };
    const url = $("url").value.trim();
    return url ? { url: url } : null;
  }

  function headers(extra) {
    const h = Object.assign({ "Content-Type": "application/json" }, extra || {});
    const key = $("key").value.trim();
    if (key) h["Authorization"] = "Bearer " + key;
    return h;
  }

  async function post(path, body, extra) {
    const res = await fetch(path, { method: "POST", headers: headers(extra), body: JSON.stringify(body) });
    let data;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const msg = data && data.error ? data.error.message : "HTTP " + res.status;
      throw new Error(msg);
    }
    return data;
  }

  function show(markdown) {
    $("source").textContent = markdown;
    $("rendered").innerHTML = window.renderMarkdown(markdown);
  }

  $("file").addEventListener("change", function () {
    const file = $("file").files[0];
    fileField = null;
    if (!file) return;
    const reader = new FileReader();
    reader.onload = function () {
      const data = String(reader.result).split(",", 2)[1] || "";
      const isPdf = file.type === "application/pdf" || /\.pdf$/i.test(file.name);
      fileField = { key: isPdf ? "pdf" : "image", data: data, name: file.name };
      $("url").value = "";
      setStatus("Loaded " + file.name + "; choose a page and press Transcribe.");
    };
    reader.onerror = function () { setStatus("Cannot read " + file.name, true); };
    reader.readAsDataURL(file);
  });

  $("url").addEventListener("input", function () {
    if ($("url").value.trim()) { fileField = null; $("file").value = ""; }
  });

  $("tab-rendered").addEventListener("click", function () {
    $("rendered").hidden = false; $("source").hidden = true;
    $("tab-rendered").className = "active"; $("tab-source").className = "";
  });
  $("tab-source").addEventListener("click", function () {
    $("rendered").hidden = true; $("source").hidden = false;
    $("tab-rendered").className = ""; $("tab-source").className = "active";
  });

  $("form").addEventListener("submit", async function (event) {
    event.preventDefault();
    const src = source();
    if (!src) { setStatus("Choose a file or enter a URL.", true); return; }
    const page = Math.max(1, parseInt($("page").value, 10) || 1);
    $("go").disabled = true;
    try {
      setStatus("Rendering page " + page + "...");
      window.pageOverlay.clear();
      const rendered = await post("/v1/pages", Object.assign({ page: page }, src));
      $("page-image").src = rendered.image;
      $("page").max = rendered.num_pages;
      $("pages").textContent = "of " + rendered.num_pages;
      setStatus("Transcribing page " + page + " of " + rendered.num_pages + "...");
      const t0 = performance.now();
      const result = await post("/v1/pages", Object.assign({ page: page, read: true }, src));
      show(result.content);
      await window.pageOverlay.show(result.tree, result.content);
      const secs = ((performance.now() - t0) / 1000).toFixed(1);
      const blocks = result.tree ? result.tree.blocks.length + " blocks, " : "";
      setStatus("Done: " + blocks + result.usage.completion_tokens + " tokens in " + secs + " s.");
    } catch (err) {
      setStatus(err.message, true);
    } finally {
      $("go").disabled = false;
    }
  });
})();
