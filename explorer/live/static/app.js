// app.js — the live explorer's page: sends the text and the controls to the server (the token
// from this page's URL goes in a header), draws what comes back with view.js (AttentionView).
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const TOKEN = new URLSearchParams(location.search).get("token") || "";
  const state = { info: null, res: null, layer: 0, head: 0, ablate: new Set(), reset: true, generating: false,
    seq: 0, shown: 0, sortKey: null, sortDesc: true, timer: null, att: null };

  async function api(path, body) {
    const r = await fetch(path, { method: body ? "POST" : "GET", headers: { "X-Mhalab-Token": TOKEN, "Content-Type": "application/json" },
      body: body ? JSON.stringify(body) : undefined, cache: "no-store", credentials: "omit" });
    const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
    if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
    return data;
  }

  function request() {
    const ablate = [...state.ablate].map((k) => { const [layer, head] = k.split(".").map(Number); return { layer, head }; });
    const req = { text: $("text").value, ablate, bars: 12 };
    if (state.info.kind === "encoder") { req.text2 = $("text2").value; return req; }
    return Object.assign(req, { temperature: +$("temperature").value, topK: Math.max(0, Math.floor(+$("topk").value || 0)),
      topP: +$("topp").value, seed: Math.max(0, Math.floor(+$("seed").value || 0)) });
  }

  // send runs one request; a later one wins (earlier answers are dropped).
  async function send(path, extra) {
    const seq = ++state.seq;
    document.body.dataset.busy = "1";
    try {
      const res = await api(path, Object.assign(request(), extra || {}));
      if (seq !== state.seq) return;
      $("error").textContent = "";
      render(res);
    } catch (e) {
      if (seq === state.seq) { $("error").textContent = e.message; document.body.dataset.error = e.message; }
    } finally {
      if (seq === state.seq) { document.body.dataset.busy = "0"; document.body.dataset.seq = String(seq); }
    }
  }
  // analyze shows the text, or, while a generation goes on, the generation with the new controls.
  const analyze = () => send("api/analyze", { generation: state.generating && !state.reset });
  const later = () => { clearTimeout(state.timer); state.timer = setTimeout(analyze, 120); };

  // weights decodes the base64 uint16 weights into one Float32Array [layers, heads, L, L].
  function weights(a) {
    const bin = atob(a.data), n = bin.length / 2, out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = (bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8)) / 65535;
    return out;
  }
  // head returns head (l, h) as L row views.
  function head(l, h) {
    const L = state.res.tokens.length, off = (l * state.info.heads + h) * L * L;
    return Array.from({ length: L }, (_, q) => state.att.subarray(off + q * L, off + (q + 1) * L));
  }

  function render(res) {
    state.res = res; state.att = weights(res.attention);
    delete document.body.dataset.error;
    $("status").textContent = `${res.tokens.length} tokens (padded to ${res.bucket}), ${res.millis.toFixed(0)} ms on the server`;
    if (state.info.kind === "decoder") renderDecoder(res); else renderEncoder(res);
    drawGrid(); select(state.layer, state.head);
    document.body.dataset.shown = String(++state.shown);
  }

  function renderEncoder(res) {
    const s = res.similarity || {}, el = $("similarity"), parts = [];
    if (s.cosine != null) parts.push(`cosine similarity of the two sentences ${s.cosine.toFixed(4)}`);
    if (s.intact != null) parts.push(`with every head on ${s.intact.toFixed(4)}`);
    if (s.selfIntact != null) parts.push(`this sentence with the heads off vs on: ${s.selfIntact.toFixed(4)}`);
    el.textContent = parts.length ? parts.join("; ") : "Type a second sentence to compare.";
    el.dataset.cosine = s.cosine != null ? s.cosine : "";
  }

  function renderDecoder(res) {
    const bars = $("bars"); bars.replaceChildren();
    $("nextinfo").textContent = +$("temperature").value === 0
      ? `temperature 0: greedy decoding picks the first; the model's probabilities (softmax of the logits), the ${res.next.length} most likely:`
      : `${res.kept} token(s) kept by the controls; their probabilities after temperature, top-k and top-p, the ${res.next.length} most likely:`;
    for (const t of res.next) {
      const row = document.createElement("div"); row.className = "bar"; row.dataset.id = t.id; row.dataset.p = t.p;
      const label = document.createElement("span"); label.className = "label"; label.textContent = JSON.stringify(t.token);
      const fill = document.createElement("span"); fill.className = "fill"; fill.style.width = `${Math.max(1, Math.round(300 * t.p))}px`;
      const p = document.createElement("span"); p.className = "p"; p.textContent = t.p.toFixed(4);
      row.append(label, fill, p); bars.appendChild(row);
    }
    const gen = $("generated"); gen.replaceChildren();
    const nGen = res.generated ? res.generated.length : 0, nPrompt = res.tokens.length - nGen;
    res.tokens.forEach((t, i) => { const s = document.createElement("span"); s.textContent = t; if (i >= nPrompt) s.className = "new"; gen.appendChild(s); });
    gen.dataset.ids = JSON.stringify(res.generated || []);
    const cache = $("cache"); cache.replaceChildren();
    const c = res.cache;
    if (!c) { $("cacheinfo").textContent = "Press Step to generate a token: the KV cache appears here."; return; }
    $("cacheinfo").textContent = `${c.positions} of ${c.capacity} positions; per layer ${fmt(c.bytesPerLayer)} ` +
      `(keys and values of ${state.info.kvHeads} key/value heads; ${fmt(c.mhaBytesPerLayer)} with one per query head); ` +
      `all ${state.info.layers} layers ${fmt(c.bytesPerLayer * state.info.layers)} used of ${fmt(c.allocatedBytes)} allocated` +
      (res.done ? " — generation stopped" : "");
    cache.dataset.positions = c.positions; cache.dataset.bytesPerLayer = c.bytesPerLayer;
    const full = c.capacity * c.bytesPerLayer / Math.max(1, c.positions);
    for (let l = 0; l < state.info.layers; l++) {
      const d = document.createElement("div"); d.className = "layerbar";
      const track = document.createElement("div"); track.className = "track";
      const used = document.createElement("div"); used.className = "used"; used.style.width = `${(100 * c.bytesPerLayer / full).toFixed(1)}%`;
      track.appendChild(used); d.append(`layer ${l}: ${fmt(c.bytesPerLayer)}`, track); cache.appendChild(d);
    }
  }
  const fmt = (b) => b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(2)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${b} B`;

  function drawGrid() {
    const g = $("grid"), NL = state.info.layers, NH = state.info.heads, L = state.res.tokens.length;
    g.style.gridTemplateColumns = `repeat(${NH}, auto)`;
    if (g.children.length !== NL * NH) {
      g.replaceChildren();
      for (let l = 0; l < NL; l++) for (let h = 0; h < NH; h++) {
        const fig = document.createElement("figure"); fig.dataset.layer = l; fig.dataset.head = h;
        const cap = document.createElement("figcaption"); cap.textContent = `${l}.${h}`;
        fig.append(document.createElement("canvas"), cap);
        fig.addEventListener("click", () => select(l, h));
        g.appendChild(fig);
      }
    }
    for (const fig of g.children) {
      const l = +fig.dataset.layer, h = +fig.dataset.head;
      AttentionView.thumbnail(fig.firstChild, head(l, h), L);
      fig.classList.toggle("off", state.ablate.has(`${l}.${h}`));
    }
  }

  function select(layer, h) {
    state.layer = layer; state.head = h;
    $("layer").value = String(layer); $("head").value = String(h);
    const key = `${layer}.${h}`;
    $("ablate").checked = state.ablate.has(key);
    $("ablated").textContent = state.ablate.size ? `off: ${[...state.ablate].join(", ")}` : "";
    if (!state.res) return;
    const w = head(layer, h), tokens = state.res.tokens.map((t) => t.replace(/\n/g, "⏎"));
    AttentionView.headView($("headview"), tokens, w, AttentionView.color(h, state.info.heads), layer, h);
    AttentionView.heatmap($("heatmap"), tokens, w);
    const s = state.res.summaries[layer * state.info.heads + h];
    const kv = state.info.groups.findIndex((g) => g.includes(h));
    $("headinfo").textContent = `previous ${s.prev.toFixed(2)}, first ${s.first.toFixed(2)}, self ${s.self.toFixed(2)}, ` +
      `induction ${s.induction.toFixed(2)}, entropy ${s.entropy.toFixed(2)} — ${s.kind}` +
      (state.info.kvHeads < state.info.heads ? `; reads key/value head ${kv}` : "");
    for (const f of $("grid").children) f.classList.toggle("selected", +f.dataset.layer === layer && +f.dataset.head === h);
    for (const el of document.querySelectorAll(".qh")) el.classList.toggle("sel", +el.dataset.head === h);
    drawTable();
  }

  const COLS = [["layer", "layer", 0], ["head", "head", 0], ["prev", "previous", 3], ["first", "first/sink", 3], ["self", "self", 3],
    ["induction", "induction", 3], ["entropy", "entropy", 3], ["meanDistance", "mean dist", 2], ["kind", "kind", -1]];
  function drawTable() {
    const thead = $("summaries").tHead, tbody = $("summaries").tBodies[0];
    if (!thead.rows.length) {
      const tr = thead.insertRow();
      for (const [key, label] of COLS) {
        const th = document.createElement("th"); th.textContent = label;
        th.addEventListener("click", () => { state.sortDesc = state.sortKey === key ? !state.sortDesc : true; state.sortKey = key; drawTable(); });
        tr.appendChild(th);
      }
    }
    const rows = state.res.summaries.slice();
    if (state.sortKey) { const k = state.sortKey, s = state.sortDesc ? -1 : 1; rows.sort((a, b) => (a[k] < b[k] ? -1 : a[k] > b[k] ? 1 : 0) * s); }
    tbody.replaceChildren();
    for (const r of rows) {
      const tr = tbody.insertRow();
      if (r.layer === state.layer && r.head === state.head) tr.className = "selected";
      for (const [key, , digits] of COLS) {
        const td = tr.insertCell(); td.textContent = digits > 0 ? r[key].toFixed(digits) : String(r[key]);
        if (key === "kind") td.className = "kind";
      }
      tr.addEventListener("click", () => select(r.layer, r.head));
    }
  }

  function drawGroups() {
    const g = $("groups"); g.replaceChildren();
    state.info.groups.forEach((qs, kv) => {
      const d = document.createElement("div"); d.className = "group"; d.dataset.kv = kv;
      const k = document.createElement("div"); k.className = "kv"; k.textContent = `key/value head ${kv}`;
      d.appendChild(k);
      for (const h of qs) {
        const s = document.createElement("span"); s.className = "qh"; s.dataset.head = h; s.textContent = `q${h}`;
        s.style.background = AttentionView.color(h, state.info.heads);
        s.addEventListener("click", () => select(state.layer, h));
        d.appendChild(s);
      }
      g.appendChild(d);
    });
  }

  async function init() {
    try { state.info = await api("api/info"); } catch (e) { $("error").textContent = e.message; document.body.dataset.ready = "1"; return; }
    const info = state.info;
    document.body.classList.add(info.kind);
    $("model").textContent = info.name;
    $("modelinfo").textContent = `${info.kind}, ${info.layers} layers × ${info.heads} heads` +
      (info.kvHeads < info.heads ? ` (${info.kvHeads} key/value heads)` : "") + `, up to ${info.maxTokens} tokens shown; backend ${info.backend}`;
    for (let l = 0; l < info.layers; l++) $("layer").add(new Option(String(l), String(l)));
    for (let h = 0; h < info.heads; h++) $("head").add(new Option(String(h), String(h)));
    $("layer").addEventListener("change", () => select(+$("layer").value, state.head));
    $("head").addEventListener("change", () => select(state.layer, +$("head").value));
    $("ablate").disabled = !info.ablation;
    if (!info.ablation) $("ablate").parentElement.title = "switching heads off is not available in this build";
    $("ablate").addEventListener("change", () => {
      const key = `${state.layer}.${state.head}`;
      if ($("ablate").checked) state.ablate.add(key); else state.ablate.delete(key);
      state.reset = true; analyze();
    });
    for (const id of ["text", "text2"]) $(id).addEventListener("input", () => { state.reset = true; later(); });
    const showT = () => { const t = +$("temperature").value; $("temperatureOut").textContent = t === 0 ? "0 (greedy)" : t.toFixed(2); };
    const showP = () => { $("toppOut").textContent = (+$("topp").value).toFixed(2); };
    for (const id of ["temperature", "topk", "topp", "seed"]) $(id).addEventListener("input", () => { showT(); showP(); later(); });
    $("step").addEventListener("click", () => { const reset = state.reset; state.reset = false; state.generating = true; send("api/step", { reset }); });
    $("reset").addEventListener("click", () => { state.reset = true; analyze(); });
    if (info.kind === "decoder") { $("text").value = "The capital of France is"; drawGroups(); }
    document.body.dataset.ready = "1";
    analyze();
  }
  init();
})();
