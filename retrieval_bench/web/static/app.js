// rbench web UI, plain browser JavaScript, no build step.
// Every page: textareas marked "autosize" grow to fit their text; a <select
// data-autosubmit> submits its form when changed (the run page's stage choice).
(function () {
  "use strict";
  function fit(el) {
    el.style.height = "auto";
    el.style.height = (el.scrollHeight + 2) + "px";
  }
  document.querySelectorAll("textarea.autosize").forEach(function (el) {
    fit(el);
    el.addEventListener("input", function () { fit(el); });
  });
  document.querySelectorAll("select[data-autosubmit]").forEach(function (el) {
    el.addEventListener("change", function () { if (el.form) el.form.submit(); });
  });
})();

// Prompt lab: save rows/prompts as JSON, start runs and poll them, import files.
// Does nothing on pages without #lab. Every POST carries the server's token in the
// X-RBench-Token header, read from the cookie "rbench-token-PORT" that opening the
// address `rbench serve` printed (…/?token=…) set (docs/architecture.md#web-ui-security).
(function () {
  "use strict";
  const lab = document.getElementById("lab");
  if (!lab) return;
  const api = "/api/prompts/" + encodeURIComponent(lab.dataset.useCase);
  const msg = document.getElementById("msg");

  function say(text, ok) {
    msg.textContent = text;
    msg.className = ok ? "ok" : "error";
  }

  function token() {
    const name = "rbench-token-" + (location.port || "80") + "=";
    const hit = document.cookie.split("; ").find(function (c) { return c.indexOf(name) === 0; });
    return hit ? hit.slice(name.length) : "";
  }

  async function send(url, body) {
    const resp = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-RBench-Token": token() },
      body: body,
    });
    let data = {};
    try { data = await resp.json(); } catch (e) { data = { error: resp.statusText }; }
    if (!resp.ok) throw new Error((resp.status === 409 ? "Not saved (someone else edited it): " : "")
      + (data.error || resp.statusText));
    return data;
  }

  function value(tr, sel) { const el = tr.querySelector(sel); return el ? el.value : ""; }

  document.querySelectorAll("#rows button.save-row").forEach(function (btn) {
    btn.addEventListener("click", async function () {
      const tr = btn.closest("tr");
      const row = { id: value(tr, "[data-col=id]"), version: Number(tr.dataset.version),
        variables: {}, expected: {} };
      tr.querySelectorAll("[data-var]").forEach(function (el) { row.variables[el.dataset.var] = el.value; });
      tr.querySelectorAll("[data-field]").forEach(function (el) { row.expected[el.dataset.field] = el.value; });
      try {
        const saved = await send(api + "/rows", JSON.stringify(row));
        say("Saved row " + saved.id + " (v" + saved.version + ")", true);
        setTimeout(function () { location.reload(); }, 400);
      } catch (e) { say(e.message, false); }
    });
  });

  document.querySelectorAll("#prompts button.save-prompt").forEach(function (btn) {
    btn.addEventListener("click", async function () {
      const tr = btn.closest("tr");
      const p = { version: Number(tr.dataset.version) };
      tr.querySelectorAll("[data-col]").forEach(function (el) { p[el.dataset.col] = el.value; });
      try {
        const saved = await send(api + "/prompts", JSON.stringify(p));
        say("Saved prompt " + saved.name + " (v" + saved.version + ")", true);
        setTimeout(function () { location.reload(); }, 400);
      } catch (e) { say(e.message, false); }
    });
  });

  const jobEl = document.getElementById("job");
  async function poll(id) {
    const resp = await fetch("/api/jobs/" + id);
    const job = await resp.json();
    if (job.status === "running") {
      jobEl.textContent = "running… " + Math.round(100 * job.progress) + "% " + (job.message || "");
      setTimeout(function () { poll(id); }, 700);
    } else if (job.status === "done") {
      jobEl.textContent = "done";
      location.reload();
    } else {
      jobEl.textContent = "";
      say("Run failed: " + job.message, false);
    }
  }
  async function run(prompt) {
    try {
      const job = await send(api + "/run", JSON.stringify(prompt ? { prompt: prompt } : {}));
      jobEl.textContent = "started…";
      poll(job.id);
    } catch (e) { say(e.message, false); }
  }
  document.getElementById("run-all").addEventListener("click", function () { run(null); });
  document.querySelectorAll("button.run-one").forEach(function (btn) {
    btn.addEventListener("click", function () { run(btn.dataset.prompt); });
  });

  document.getElementById("import").addEventListener("click", async function () {
    const file = document.getElementById("import-file").files[0];
    if (!file) { say("Choose a file to import first.", false); return; }
    const kind = document.getElementById("import-kind").value;
    const replace = document.getElementById("import-replace").checked;
    const url = api + "/import?kind=" + kind + "&filename=" + encodeURIComponent(file.name)
      + (replace ? "&replace=true" : "");
    try {
      const data = await send(url, JSON.stringify({ content: await file.text() }));
      say("Imported " + kind + ": " + data.imported, true);
      setTimeout(function () { location.reload(); }, 600);
    } catch (e) { say("Import refused, nothing stored: " + e.message, false); }
  });
})();
