// clrprof's HTML report: draws the JSON document of <script id="data"> (written by
// crates/clrprof-analysis/src/output/html). No library, no request: everything is here.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  };

  // ---------- numbers ----------
  const num = (n) => Math.round(n).toLocaleString("en-US");
  function dur(ns) {
    if (ns == null) return "?";
    if (ns < 1e3) return ns + " ns";
    if (ns < 1e6) return (ns / 1e3).toFixed(2) + " \u00b5s";
    if (ns < 1e9) return (ns / 1e6).toFixed(2) + " ms";
    return (ns / 1e9).toFixed(3) + " s";
  }
  function bytes(n) {
    if (n == null) return "?";
    if (n < 1024) return n + " B";
    if (n < 1048576) return (n / 1024).toFixed(1) + " KiB";
    if (n < 1073741824) return (n / 1048576).toFixed(2) + " MiB";
    return (n / 1073741824).toFixed(2) + " GiB";
  }
  const fmt = (unit, v) => (unit === "ns" ? dur(v) : unit === "bytes" ? bytes(v) : num(v) + (unit === "calls" || unit === "objects" || unit === "samples" ? " " + unit : ""));
  const pct = (a, b) => (b > 0 ? ((100 * a) / b).toFixed(2) + "%" : "-");

  // ---------- tooltip ----------
  const tip = $("tooltip");
  function showTip(ev, html) {
    tip.innerHTML = html;
    tip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const y = ev.clientY + 16 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 8 : ev.clientY + 16;
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  const hideTip = () => (tip.hidden = true);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  // ---------- sortable tables ----------
  // cols: [{key, label, kind: "num"|"ns"|"bytes"|"pct"|"text"|"name", get?, bar?}]
  function table(rows, cols, opts) {
    opts = opts || {};
    const box = el("div", { class: "table-box" });
    const t = el("table");
    box.append(t);
    let sortKey = opts.sort || null;
    let asc = !!opts.asc;
    const limit = opts.limit || 500;
    const val = (r, c) => (c.get ? c.get(r) : r[c.key]);
    function render() {
      t.textContent = "";
      const head = el("tr");
      for (const c of cols) {
        const numeric = c.kind !== "text" && c.kind !== "name";
        const th = el("th", { class: (numeric ? "num " : "") + (c.key === sortKey ? "sorted" + (asc ? " asc" : "") : ""), "data-key": c.key, text: c.label });
        th.addEventListener("click", () => {
          if (sortKey === c.key) asc = !asc;
          else { sortKey = c.key; asc = !numeric; }
          render();
        });
        head.append(th);
      }
      t.append(el("thead", {}, head));
      let sorted = rows.slice();
      const sc = cols.find((c) => c.key === sortKey);
      if (sc) {
        sorted.sort((a, b) => {
          const x = val(a, sc), y = val(b, sc);
          const r = typeof x === "string" || typeof y === "string" ? String(x).localeCompare(String(y)) : (x ?? -1) - (y ?? -1);
          return asc ? r : -r;
        });
      }
      const body = el("tbody");
      const max = {};
      for (const c of cols) if (c.bar) max[c.key] = Math.max(1, ...rows.map((r) => val(r, c) || 0));
      for (const r of sorted.slice(0, limit)) {
        const tr = el("tr");
        for (const c of cols) {
          const v = val(r, c);
          let td;
          switch (c.kind) {
            case "ns": td = el("td", { class: "num", text: dur(v) }); break;
            case "bytes": td = el("td", { class: "num", text: bytes(v) }); break;
            case "num": td = el("td", { class: "num", text: v == null ? "-" : num(v) }); break;
            case "value": td = el("td", { class: "num", text: c.format(v) }); break;
            case "name": td = el("td", { class: "name" }, c.link ? el("a", { text: v, onclick: () => c.link(r) }) : v); break;
            default: td = el("td", { text: v == null ? "" : v });
          }
          if (c.bar) td.prepend(el("span", { class: "bar", style: "width:" + Math.round((40 * (v || 0)) / max[c.key]) + "px" }));
          if (c.extra) { const x = c.extra(r); if (x) td.append(x); }
          tr.append(td);
        }
        body.append(tr);
      }
      t.append(body);
      if (rows.length > limit) box.append(el("p", { class: "hint", text: `${limit} of ${rows.length} rows shown` }));
    }
    render();
    return box;
  }

  // ---------- header ----------
  // The command line with file names for paths (the Summary tab has it whole).
  const shortCommand = (c) => (c || "").split(/\s+/).map((w) => w.replace(/^.*\//, "")).join(" ");
  document.title = D.title;
  $("title").textContent = D.title;
  const S = D.session;
  if (S) {
    const ending = S.detached ? "detached (the program went on)" : S.ended_cleanly ? (S.exit_code != null ? "exit code " + S.exit_code : "ended normally") : null;
    const parts = [
      el("b", { text: shortCommand(S.program) || "?", title: S.program }), ` (pid ${S.pid}) \u00b7 ${S.runtime || "runtime ?"} \u00b7 ${S.mode} mode \u00b7 ${dur(S.duration_ns)} \u00b7 `,
      ending ? ending : el("span", { class: "bad", text: "ended WITHOUT profiler shutdown (crash or kill)" + (S.exit_code != null ? ", exit code " + S.exit_code : "") }),
    ];
    const dropped = S.events_dropped + S.samples_dropped + S.allocations_dropped;
    parts.push(dropped ? el("span", { class: "bad", text: ` \u00b7 dropped: ${num(S.events_dropped)} events, ${num(S.samples_dropped)} samples, ${num(S.allocations_dropped)} allocations` }) : " \u00b7 nothing dropped");
    $("session").append(...parts);
  }

  // ---------- tabs ----------
  const tabs = [
    ["summary", "Summary", true],
    ["profile", "Flame graph", D.flames.length > 0],
    ["timeline", "Timeline", D.timeline && D.timeline.tracks.some((t) => t.cpu.length || t.tid === 0) && (D.timeline.tracks.length > 2 || D.timeline.mark_start.length > 0)],
    ["memory", "Memory", !!(D.gc || D.alloc || D.heap)],
    ["exceptions", "Exceptions", D.exceptions.length > 0],
    ["jit", "JIT", D.jit.length > 0],
    ["native", "Native calls", D.native.length > 0 || D.suspensions.length > 0],
    ["coverage", "Coverage", D.coverage.length > 0],
    ["lines", "Source lines", D.lines.length > 0],
  ].filter((t) => t[2]);
  const drawn = {};
  function show(name) {
    for (const [id] of tabs) {
      $("tab-" + id).classList.toggle("active", id === name);
      $("nav-" + id).classList.toggle("active", id === name);
    }
    if (!drawn[name]) { drawn[name] = true; (builders[name] || (() => {}))(); }
    if (name === "profile") drawFlame();
    if (name === "timeline") drawTimeline();
    history.replaceState(null, "", "#" + name);
  }
  for (const [id, label] of tabs) $("tabs").append(el("button", { id: "nav-" + id, type: "button", text: label, onclick: () => show(id) }));

  const legend = (box, items) => { box.textContent = ""; for (const [name, colour] of items) box.append(el("span", { style: "--c:" + colour, text: name })); };

  // ---------- summary ----------
  function buildSummary() {
    const box = $("tab-summary");
    const cards = el("div", { class: "cards" });
    const card = (v, label) => cards.append(el("div", { class: "card" }, el("b", { text: v }), el("span", { text: label })));
    if (S) card(dur(S.duration_ns), "recorded");
    for (const f of D.flames) {
      // Wall time is each thread's own: the card says how many threads it sums (the
      // runtime's service threads, which wait all along, are not in it).
      const threads = f.p.filter((p) => p === -1).length;
      const label = f.metric === "wall" ? `${f.label}, ${num(threads)} thread${threads === 1 ? "" : "s"} summed (the runtime's service threads left out)` : f.label;
      card(fmt(f.unit, f.v.reduce((a, b) => a + b, 0)), label);
    }
    if (D.gc) card(num(D.gc.gcs.length), "garbage collections");
    if (D.exceptions.length) card(num(D.exceptions.reduce((a, g) => a + g.count, 0)), "exceptions");
    if (D.jit_methods) card(num(D.jit_methods), "methods compiled");
    box.append(cards);
    if (S) {
      const dl = el("dl", { class: "facts" });
      const fact = (k, v) => dl.append(el("dt", { text: k }), el("dd", { text: v }));
      fact("program", S.program);
      fact("runtime", `${S.runtime}, agent ${S.agent_version}`);
      fact("mode", S.mode);
      if (S.start_unix_ns) fact("started", new Date(S.start_unix_ns / 1e6).toISOString().replace("T", " ").replace(/\..*/, " UTC"));
      fact("records", `${num(S.records)} (trace format ${S.format_version})`);
      box.append(el("h2", { text: "Session" }), dl);
    }
    const notes = [...D.messages, ...D.notes];
    if (notes.length) { const ul = el("ul", { class: "notes" }); for (const n of notes) ul.append(el("li", { text: n })); box.append(el("h2", { text: "Notes" }), ul); }
    if (D.limits.length) { const ul = el("ul", { class: "notes" }); for (const n of D.limits) ul.append(el("li", { text: n })); box.append(el("h2", { text: "Summarized for size" }), ul); }
    const ev = Object.entries(D.events).sort((a, b) => b[1] - a[1]).map(([name, count]) => ({ name, count }));
    if (ev.length) box.append(el("h2", { text: "Runtime events" }), table(ev, [{ key: "count", label: "Events", kind: "num", bar: true }, { key: "name", label: "Callback", kind: "text" }], { sort: "count" }));
  }

  // ---------- flame graph ----------
  const F = D.frames;
  const catColour = D.categories.map((c) => c.colour);
  const catName = D.categories.map((c) => c.name);
  function frameColour(i) {
    const base = catColour[F.cat[i]];
    let h = 0x811c9dc5;
    const s = F.name[i];
    for (let k = 0; k < s.length; k++) h = Math.imul(h ^ s.charCodeAt(k), 0x01000193) >>> 0;
    const shift = (h % 41) - 20;
    const c = [1, 3, 5].map((o) => Math.max(0, Math.min(255, parseInt(base.substr(o, 2), 16) + shift)));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }
  const flame = { metric: 0, thread: -1, zoom: 0, search: "", tree: null, rects: [], hover: -1 };
  const ROW = 18;

  // The selected metric and thread as a tree: {f, parent, self, total, kids}; node 0 is the root.
  function buildTree() {
    const g = D.flames[flame.metric];
    const nodes = [{ f: -1, parent: -1, self: 0, total: 0, kids: [] }];
    const map = new Int32Array(g.f.length).fill(-1);
    const index = new Map();
    for (let i = 0; i < g.f.length; i++) {
      const f = g.f[i];
      if (f < 0) { // a thread node
        if (flame.thread === -1 || flame.thread === -1 - f) map[i] = 0;
        continue;
      }
      const pm = map[g.p[i]];
      if (pm < 0) continue;
      const key = pm * 1048576 + f;
      let m = index.get(key);
      if (m === undefined) {
        m = nodes.length;
        nodes.push({ f, parent: pm, self: 0, total: 0, kids: [] });
        nodes[pm].kids.push(m);
        index.set(key, m);
      }
      map[i] = m;
      nodes[m].self += g.v[i];
    }
    for (let i = 0; i < nodes.length; i++) nodes[i].total = nodes[i].self;
    for (let i = nodes.length - 1; i > 0; i--) nodes[nodes[i].parent].total += nodes[i].total;
    for (const n of nodes) n.kids.sort((a, b) => nodes[b].total - nodes[a].total);
    flame.tree = nodes;
    flame.zoom = 0;
  }
  const nodeName = (n) => (n === 0 ? "all" : F.name[flame.tree[n].f]);

  function flameMatches() {
    const q = flame.search.toLowerCase();
    const nodes = flame.tree;
    const hit = new Uint8Array(nodes.length);
    if (!q) return { hit, total: 0 };
    let total = 0;
    for (let i = 1; i < nodes.length; i++) {
      const own = F.name[nodes[i].f].toLowerCase().includes(q);
      const above = hit[nodes[i].parent] === 1 || hit[nodes[i].parent] === 2;
      hit[i] = own ? (above ? 2 : 1) : above ? 2 : 0;
      if (own && !above) total += nodes[i].total;
    }
    return { hit, total };
  }

  function drawFlame() {
    if (!flame.tree) return;
    const canvas = $("flame");
    const nodes = flame.tree;
    const width = canvas.parentElement.clientWidth;
    if (!width) return;
    const path = [];
    for (let n = flame.zoom; n > 0; n = nodes[n].parent) path.unshift(n);
    // Depth of the deepest node drawn.
    const rects = [];
    const { hit, total: matched } = flameMatches();
    const zoomTotal = nodes[flame.zoom].total || 1;
    let depth = path.length;
    const visit = (n, x, w, d) => {
      rects.push([x, d, w, n]);
      if (d + 1 > depth) depth = d + 1;
      let cx = x;
      for (const k of nodes[n].kids) {
        const kw = (w * nodes[k].total) / nodes[n].total;
        if (kw >= 0.4) visit(k, cx, kw, d + 1);
        cx += kw;
      }
    };
    path.forEach((n, d) => { if (n !== flame.zoom) rects.push([0, d, width, n]); });
    if (flame.zoom === 0) {
      let cx = 0;
      for (const k of nodes[0].kids) { const kw = (width * nodes[k].total) / zoomTotal; if (kw >= 0.4) visit(k, cx, kw, 0); cx += kw; }
    } else visit(flame.zoom, 0, width, path.length - 1);
    const height = Math.max(depth, 1) * ROW + 2;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = width * dpr;
    canvas.height = height * dpr;
    canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    ctx.font = '12px "DejaVu Sans", system-ui, sans-serif';
    ctx.textBaseline = "middle";
    const searching = flame.search !== "";
    for (const [x, d, w, n] of rects) {
      const y = d * ROW;
      const f = nodes[n].f;
      let fill = frameColour(f);
      if (searching && !hit[n]) fill = "#e4e7ea";
      else if (searching && hit[n] === 1) fill = "#e0457b";
      ctx.fillStyle = fill;
      ctx.globalAlpha = path.includes(n) && n !== flame.zoom ? 0.55 : 1;
      ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
      if (w > 28) {
        ctx.fillStyle = searching && !hit[n] ? "#8a949e" : "#111";
        let label = F.name[f];
        const room = Math.floor((w - 6) / 7);
        if (label.length > room) label = label.slice(0, Math.max(room - 1, 1)) + "\u2026";
        ctx.fillText(label, x + 3, y + ROW / 2);
      }
    }
    ctx.globalAlpha = 1;
    flame.rects = rects;
    const g = D.flames[flame.metric];
    $("match").textContent = searching ? `matched ${fmt(g.unit, matched)} (${pct(matched, nodes[0].total)} of the total)` : "";
    const crumbs = $("crumbs");
    crumbs.textContent = "";
    crumbs.append(el("a", { text: "all", onclick: () => zoomTo(0) }));
    for (const n of path) crumbs.append(" \u203a ", n === flame.zoom ? nodeName(n) : el("a", { text: nodeName(n), onclick: () => zoomTo(n) }));
  }
  function zoomTo(n) { flame.zoom = n; drawFlame(); }
  function flameAt(ev) {
    const r = $("flame").getBoundingClientRect();
    const x = ev.clientX - r.left, d = Math.floor((ev.clientY - r.top) / ROW);
    for (const [rx, rd, rw, n] of flame.rects) if (rd === d && x >= rx && x < rx + rw) return n;
    return -1;
  }
  function frameText(n) {
    const g = D.flames[flame.metric];
    const node = flame.tree[n];
    const all = flame.tree[0].total;
    return { name: F.name[node.f], module: F.module[node.f], cat: catName[F.cat[node.f]], total: `${fmt(g.unit, node.total)} (${pct(node.total, all)})`, self: `${fmt(g.unit, node.self)} (${pct(node.self, all)})` };
  }
  function setupFlame() {
    const canvas = $("flame");
    canvas.addEventListener("mousemove", (ev) => {
      const n = flameAt(ev);
      if (n < 0) { hideTip(); return; }
      const t = frameText(n);
      showTip(ev, `<b>${esc(t.name)}</b><br><span class=k>${esc(t.module || t.cat)}</span><br>total ${t.total}<br>self ${t.self}`);
      $("flame-detail").textContent = `${t.name}${t.module ? " [" + t.module + "]" : ""} \u2014 total ${t.total}, self ${t.self}`;
    });
    canvas.addEventListener("mouseleave", hideTip);
    canvas.addEventListener("click", (ev) => { const n = flameAt(ev); if (n >= 0) zoomTo(n); });
    $("reset").addEventListener("click", () => zoomTo(0));
    $("search").addEventListener("input", (ev) => { flame.search = ev.target.value; drawFlame(); });
    const metric = $("metric");
    D.flames.forEach((g, i) => metric.append(el("option", { value: i, text: g.label })));
    metric.addEventListener("change", () => { flame.metric = +metric.value; buildTree(); drawFlame(); buildFunctions(); });
    const thread = $("thread");
    thread.append(el("option", { value: -1, text: "all threads" }));
    D.threads.forEach((t, i) => thread.append(el("option", { value: i, text: t.label })));
    thread.addEventListener("change", () => { flame.thread = +thread.value; buildTree(); drawFlame(); buildFunctions(); });
    const used = new Set(F.cat);
    legend($("legend"), D.categories.filter((c, i) => used.has(i)).map((c) => [{ managed: "managed", generated: "generated at run time", native: "native", runtime: "runtime (VM, GC)", jit: "JIT compiler", type: "type allocated", marker: "marker (stack ended early, left out)" }[c.name], c.colour]));
    buildTree();
    buildFunctions();
  }

  // Functions of the selected tree: self, and total counting each frame once per stack.
  function buildFunctions() {
    const nodes = flame.tree;
    const g = D.flames[flame.metric];
    const self = new Map(), total = new Map();
    const onPath = new Map();
    // Iterative for deep stacks.
    const stack = nodes[0].kids.map((k) => [k, false]).reverse();
    while (stack.length) {
      const [n, done] = stack.pop();
      const f = nodes[n].f;
      if (done) { onPath.set(f, onPath.get(f) - 1); continue; }
      self.set(f, (self.get(f) || 0) + nodes[n].self);
      const c = onPath.get(f) || 0;
      if (c === 0) total.set(f, (total.get(f) || 0) + nodes[n].total);
      onPath.set(f, c + 1);
      stack.push([n, true]);
      for (let i = nodes[n].kids.length - 1; i >= 0; i--) stack.push([nodes[n].kids[i], false]);
    }
    const all = nodes[0].total;
    const rows = [...total.keys()].map((f) => ({ name: F.name[f], module: F.module[f], self: self.get(f) || 0, total: total.get(f), selfp: (self.get(f) || 0) / all, totalp: total.get(f) / all }));
    const v = (x) => fmt(g.unit, x);
    const box = $("functions");
    box.textContent = "";
    box.append(table(rows, [
      { key: "self", label: "Self", kind: "value", format: v, bar: true },
      { key: "selfp", label: "Self %", kind: "value", format: (x) => (100 * x).toFixed(2) + "%" },
      { key: "total", label: "Total", kind: "value", format: v },
      { key: "totalp", label: "Total %", kind: "value", format: (x) => (100 * x).toFixed(2) + "%" },
      { key: "name", label: "Function", kind: "name", link: (r) => { $("search").value = r.name; flame.search = r.name; drawFlame(); window.scrollTo({ top: 0 }); } },
      { key: "module", label: "Module", kind: "text" },
    ], { sort: "self" }));
  }

  // ---------- timeline ----------
  const T = D.timeline;
  const markColour = { gc: "#d95c5c", suspension: "#8c5a3c", jit: "#a06cd5", load: "#5cb86a", exception: "#e0457b", native: "#e89a3c", lock: "#6c6cd5" };
  const tl = { rows: [], marks: [], width: 0, label: 190, drawnMarks: {} };
  function trackHeight(t) { return t.tid === 0 ? 16 : 26; }
  function drawTimeline() {
    if (!T) return;
    const canvas = $("timeline");
    const width = canvas.parentElement.clientWidth;
    if (!width) return;
    const usedTracks = new Set(T.mark_track);
    const rows = T.tracks.map((t, i) => ({ t, i })).filter(({ t, i }) => t.tid !== 0 || usedTracks.has(i));
    let y = 22;
    for (const r of rows) { r.y = y; r.h = trackHeight(r.t); y += r.h + 3; }
    const height = y + 4;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = width * dpr; canvas.height = height * dpr; canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    ctx.font = '11px "DejaVu Sans", system-ui, sans-serif';
    ctx.textBaseline = "middle";
    const L = tl.label, W = width - L - 8;
    const xOf = (ns) => L + (W * ns) / T.duration_ns;
    // axis
    ctx.fillStyle = "#5f6b7a"; ctx.strokeStyle = "#d8dde3";
    const step = niceStep(T.duration_ns / 8);
    for (let t = 0; t <= T.duration_ns; t += step) { const x = xOf(t); ctx.beginPath(); ctx.moveTo(x, 16); ctx.lineTo(x, height); ctx.stroke(); ctx.fillText(dur(t), x + 2, 8); }
    const rowOf = new Map();
    for (const r of rows) {
      rowOf.set(r.i, r);
      ctx.fillStyle = "#1d232b";
      let label = r.t.label; if (label.length > 28) label = label.slice(0, 27) + "\u2026";
      ctx.fillText(label, 4, r.y + r.h / 2);
      const t = r.t;
      const bw = W / t.cpu.length || 0;
      for (let b = 0; b < t.wall.length; b++) if (t.wall[b] > 0) { ctx.fillStyle = "#e9edf1"; ctx.fillRect(L + b * bw, r.y, bw + 0.5, r.h); }
      for (let b = 0; b < t.cpu.length; b++) if (t.cpu[b] > 0) {
        const h = Math.max(1, (Math.min(t.cpu[b], 1000) / 1000) * (r.h - 2));
        ctx.fillStyle = "#4f9dd9"; ctx.fillRect(L + b * bw, r.y + r.h - h, bw + 0.5, h);
      }
    }
    const marks = [];
    const counts = {};
    for (let m = 0; m < T.mark_start.length; m++) {
      const r = rowOf.get(T.mark_track[m]);
      if (!r) continue;
      const cat = T.categories[T.mark_cat[m]];
      const x = xOf(T.mark_start[m]), w = Math.max(2, (W * T.mark_dur[m]) / T.duration_ns);
      const h = r.t.tid === 0 ? r.h : 8;
      const my = r.t.tid === 0 ? r.y : r.y;
      ctx.fillStyle = markColour[cat]; ctx.globalAlpha = 0.85;
      ctx.fillRect(x, my, w, h);
      marks.push([x, my, w, h, m]);
      counts[cat] = (counts[cat] || 0) + 1;
    }
    ctx.globalAlpha = 1;
    tl.rows = rows; tl.marks = marks; tl.drawnMarks = counts; tl.W = W;
    legend($("timeline-legend"), [["CPU used", "#4f9dd9"], ["thread seen (wall-clock samples)", "#e9edf1"], ...T.categories.filter((c) => T.mark_counts[c]).map((c) => [`${c} (${num(T.mark_counts[c])})`, markColour[c]])]);
  }
  function niceStep(x) { const p = Math.pow(10, Math.floor(Math.log10(Math.max(x, 1)))); for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p; return 10 * p; }
  function setupTimeline() {
    const canvas = $("timeline");
    canvas.addEventListener("mouseleave", hideTip);
    canvas.addEventListener("mousemove", (ev) => {
      const r = canvas.getBoundingClientRect();
      const x = ev.clientX - r.left, y = ev.clientY - r.top;
      for (let i = tl.marks.length - 1; i >= 0; i--) {
        const [mx, my, mw, mh, m] = tl.marks[i];
        if (x >= mx - 1 && x <= mx + mw + 1 && y >= my && y <= my + mh) {
          const cat = T.categories[T.mark_cat[m]];
          const text = `${cat}: ${T.names[T.mark_name[m]]} \u2014 at ${dur(T.mark_start[m])}, ${dur(T.mark_dur[m])}`;
          showTip(ev, `<b>${esc(T.names[T.mark_name[m]])}</b><br><span class=k>${cat}</span> at ${dur(T.mark_start[m])}, lasting ${dur(T.mark_dur[m])}`);
          $("timeline-detail").textContent = text;
          return;
        }
      }
      const row = tl.rows.find((w) => y >= w.y && y <= w.y + w.h);
      if (row && row.t.cpu.length && x >= tl.label) {
        const b = Math.floor(((x - tl.label) / tl.W) * row.t.cpu.length);
        if (b >= 0 && b < row.t.cpu.length) {
          const top = row.t.top[b];
          const at = dur(b * T.bin_ns);
          showTip(ev, `<b>${esc(row.t.label)}</b><br>${at}: CPU ${(row.t.cpu[b] / 10).toFixed(0)}%${top >= 0 ? "<br>mostly in " + esc(F.name[top]) : ""}`);
          $("timeline-detail").textContent = `${row.t.label} at ${at}: CPU ${(row.t.cpu[b] / 10).toFixed(0)}%${top >= 0 ? ", mostly in " + F.name[top] : ""}`;
          return;
        }
      }
      hideTip();
    });
  }

  // ---------- memory ----------
  function gcChart(gcs) {
    const NS = "http://www.w3.org/2000/svg";
    const s = (tag, attrs) => { const e = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); return e; };
    const pts = [];
    for (const g of gcs) {
      if (g.heap_before) pts.push([g.start_ns, g.heap_before]);
      if (g.heap_after) pts.push([g.start_ns + (g.duration_ns || 0), g.heap_after]);
    }
    if (pts.length < 2) return null;
    const W = 900, H = 220, L = 70, B = 24;
    // From the first collection to the last, with a margin.
    const first = Math.min(...pts.map((p) => p[0])), last = Math.max(...pts.map((p) => p[0]));
    const margin = Math.max((last - first) * 0.05, 1000);
    const t0 = Math.max(0, first - margin), end = last + margin - t0;
    for (const p of pts) p[0] -= t0;
    const top = Math.max(...pts.map((p) => p[1].reduce((a, b) => a + b, 0)), 1);
    const svg = s("svg", { viewBox: `0 0 ${W} ${H + 40}`, width: "100%", style: "max-width: 1000px", role: "img", "aria-label": "heap size by generation over time" });
    const x = (t) => L + ((W - L - 10) * t) / end, y = (v) => H - B - ((H - B - 10) * v) / top;
    const gens = ["gen0", "gen1", "gen2", "LOH", "POH"], colours = ["#4f9dd9", "#5cb86a", "#e89a3c", "#a06cd5", "#a8a8a8"];
    for (let g = gens.length - 1; g >= 0; g--) {
      const upper = pts.map(([t, sz]) => [x(t), y(sz.slice(0, g + 1).reduce((a, b) => a + b, 0))]);
      const d = "M" + x(pts[0][0]) + "," + y(0) + " " + upper.map((p) => "L" + p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ") + " L" + x(pts[pts.length - 1][0]) + "," + y(0) + "Z";
      svg.append(s("path", { d, fill: colours[g], opacity: 0.8 }));
    }
    for (const g of gcs) if (g.pause_ns != null) svg.append(s("rect", { x: x(g.start_ns - t0), y: H - B + 4, width: Math.max(1.5, x(g.start_ns - t0 + g.pause_ns) - x(g.start_ns - t0)), height: 10, fill: "#d95c5c" }));
    for (let i = 0; i <= 4; i++) { const t = s("text", { x: 2, y: y((top * i) / 4) + 4 }); t.textContent = bytes(Math.round((top * i) / 4)); svg.append(t); }
    for (let i = 0; i <= 5; i++) { const t = s("text", { x: x((end * i) / 5) - 10, y: H + 6 }); t.textContent = dur(Math.round(t0 + (end * i) / 5)); svg.append(t); }
    let lx = L;
    gens.forEach((g, i) => { svg.append(s("rect", { x: lx, y: H + 18, width: 10, height: 10, fill: colours[i] })); const t = s("text", { x: lx + 14, y: H + 27 }); t.textContent = g; svg.append(t); lx += 70; });
    svg.append(s("rect", { x: lx, y: H + 18, width: 10, height: 10, fill: "#d95c5c" })); const pt = s("text", { x: lx + 14, y: H + 27 }); pt.textContent = "GC pauses"; svg.append(pt);
    return svg;
  }
  function buildMemory() {
    const box = $("tab-memory");
    if (D.gc) {
      const g = D.gc;
      box.append(el("h2", { text: `Garbage collections: ${g.gcs.length} (gen0 ${g.count_by_generation[0]}, gen1 ${g.count_by_generation[1]}, gen2 ${g.count_by_generation[2]})` }));
      if (g.pauses_known) box.append(el("p", { text: `Pauses: p50 ${dur(g.pause_p50_ns)}, p90 ${dur(g.pause_p90_ns)}, p99 ${dur(g.pause_p99_ns)}, max ${dur(g.pause_max_ns)}; ${dur(g.pause_total_ns)} in total, ${g.time_in_gc_percent.toFixed(2)}% of the recording.` }));
      else box.append(el("p", { class: "hint", text: "Pauses unknown: record with --events gc,suspension to measure them." }));
      const chart = gcChart(g.gcs);
      if (chart) box.append(el("h3", { text: "Heap by generation over time" }), chart);
      const gen = (r, i, which) => (r[which] ? r[which][i] : null);
      box.append(table(g.gcs, [
        { key: "index", label: "#", kind: "num" },
        { key: "generation", label: "Gen", kind: "num" },
        { key: "reason", label: "Reason", kind: "text" },
        { key: "start_ns", label: "Start", kind: "ns" },
        { key: "pause_ns", label: "Pause", kind: "ns", bar: true },
        { key: "duration_ns", label: "Duration", kind: "ns" },
        { key: "before", label: "Heap before", kind: "bytes", get: (r) => (r.heap_before ? r.heap_before.reduce((a, b) => a + b, 0) : null) },
        { key: "after", label: "Heap after", kind: "bytes", get: (r) => (r.heap_after ? r.heap_after.reduce((a, b) => a + b, 0) : null) },
        { key: "gen2", label: "Gen2 after", kind: "bytes", get: (r) => gen(r, 2, "heap_after") },
        { key: "loh", label: "LOH after", kind: "bytes", get: (r) => gen(r, 3, "heap_after") },
      ], { sort: "index", asc: true }));
    }
    if (D.alloc) {
      const a = D.alloc;
      const ticks = a.allocation_mode === "ticks";
      box.append(el("h2", { text: `Allocations: ${bytes(a.allocated_bytes)}${ticks ? "" : ", " + num(a.allocated_objects) + " objects"}` }));
      box.append(el("p", { class: "hint", text: a.allocation_mode === "all" ? "Every allocation recorded: exact." : ticks ? "The runtime's allocation ticks: bytes estimated with a bias, objects not counted." : `Sampled every ${bytes(a.allocation_interval_bytes)} on average: totals are estimates. The flame graph tab shows allocated bytes by stack.` }));
      box.append(el("h3", { text: "By type" }), table(a.allocations, [
        { key: "bytes", label: "Bytes", kind: "bytes", bar: true },
        // Ticks count no objects: "-" as in the text report, not 0.
        { key: "count", label: "Objects", kind: "num", get: (r) => (ticks ? null : r.count) },
        { key: "type", label: "Type", kind: "name" },
        { key: "by", label: "Allocated mostly by", kind: "text", get: (r) => (r.allocated_by[0] ? r.allocated_by[0].function : "") },
      ], { sort: "bytes" }));
      const stacks = el("div");
      a.allocation_stacks.slice(0, 30).forEach((st, i) => stacks.append(el("details", {}, el("summary", { text: `#${i + 1}: ${bytes(st.bytes)}${ticks ? "" : ", " + num(st.count) + " objects"} \u2014 ${st.frames[0] || "[no managed frame]"}` }), el("pre", { text: st.frames.join("\n") }))));
      box.append(el("h3", { text: "By stack" }), stacks);
    }
    if (D.heap) {
      const h = D.heap;
      box.append(el("h2", { text: `Heap snapshot ${h.snapshot} (GC #${h.gc}): ${num(h.objects)} objects, ${bytes(h.total_bytes)}` }));
      box.append(table(h.types, [
        { key: "retained_bytes", label: "Retained", kind: "bytes", bar: true },
        { key: "shallow_bytes", label: "Shallow", kind: "bytes" },
        { key: "count", label: "Objects", kind: "num" },
        { key: "type", label: "Type", kind: "name" },
      ], { sort: "retained_bytes" }));
      box.append(el("h3", { text: "Top retainers, with a path from a root" }));
      const ul = el("div");
      for (const r of h.top_retainers) ul.append(el("details", {}, el("summary", { text: `${r.static ? r.static + ": " : ""}${r.type} retains ${bytes(r.retained_bytes)} (itself ${bytes(r.shallow_bytes)})` }), el("pre", { text: r.path.join("\n  \u2192 ") })));
      box.append(ul);
    }
  }

  // ---------- exceptions, JIT, native, coverage ----------
  function buildExceptions() {
    $("tab-exceptions").append(el("h2", { text: "Exceptions by type, throw site and catcher" }), table(D.exceptions, [
      { key: "count", label: "Count", kind: "num", bar: true },
      { key: "type", label: "Type", kind: "name" },
      { key: "throw_function", label: "Thrown by", kind: "name" },
      { key: "catch_function", label: "Caught by", kind: "name", get: (r) => r.catch_function || "(not caught)" },
      { key: "rethrows", label: "Rethrows", kind: "num" },
      { key: "throw_to_catch_ns", label: "Throw to catch", kind: "ns" },
      { key: "message", label: "Message, stack", kind: "text", extra: (r) => el("details", {}, el("summary", { text: "stack" }), el("pre", { text: r.throw_stack.join("\n") })) },
    ], { sort: "count" }));
  }
  function buildJit() {
    const box = $("tab-jit");
    const s = D.startup;
    if (s) box.append(el("h2", { text: "Startup" }), el("p", { text: `${s.main} started at ${dur(s.main_ns)}: ${num(s.assemblies.length)} assemblies, ${num(s.modules_loaded)} modules and ${num(s.classes_loaded)} classes loaded and ${num(s.methods_compiled)} methods compiled (${dur(s.jit_ns)} of JIT) before it.` }));
    box.append(el("h2", { text: "Modules" }), table(D.jit_modules, [
      { key: "jit_ns", label: "JIT time", kind: "ns", bar: true },
      { key: "methods", label: "Methods", kind: "num" },
      { key: "compilations", label: "Compilations", kind: "num" },
      { key: "il_bytes", label: "IL bytes", kind: "num" },
      { key: "precompiled", label: "Precompiled", kind: "num" },
      { key: "module", label: "Module", kind: "name" },
    ], { sort: "jit_ns" }));
    box.append(el("h2", { text: `Methods (${num(D.jit_methods)})` }), table(D.jit, [
      { key: "jit_ns", label: "JIT time", kind: "ns", bar: true },
      { key: "count", label: "Compilations", kind: "num" },
      { key: "il_bytes", label: "IL bytes", kind: "num" },
      { key: "kind", label: "Kind", kind: "text" },
      { key: "method", label: "Method", kind: "name" },
      { key: "module", label: "Module", kind: "text" },
    ], { sort: "jit_ns" }));
  }
  function buildNative() {
    const box = $("tab-native");
    if (D.native.length) box.append(el("h2", { text: "Native calls (P/Invoke)" }), table(D.native, [
      { key: "total_ns", label: "Time", kind: "ns", bar: true },
      { key: "calls", label: "Calls", kind: "num" },
      { key: "max_ns", label: "Longest", kind: "ns" },
      { key: "target", label: "Target", kind: "name" },
      { key: "function", label: "Declared by", kind: "name" },
      { key: "direction", label: "Direction", kind: "text" },
    ], { sort: "total_ns" }));
    if (D.suspensions.length) box.append(el("h2", { text: "Runtime suspensions" }), table(D.suspensions, [
      { key: "total_ns", label: "Time", kind: "ns", bar: true },
      { key: "count", label: "Count", kind: "num" },
      { key: "max_ns", label: "Longest", kind: "ns" },
      { key: "suspending_ns", label: "Suspending", kind: "ns" },
      { key: "reason", label: "Reason", kind: "text" },
    ], { sort: "total_ns" }));
  }
  function buildCoverage() {
    const rows = D.coverage.map((c) => ({ ...c, blockp: c.blocks ? c.blocks_covered / c.blocks : 0, linep: c.lines ? c.lines_covered / c.lines : null }));
    const p = (x) => (x == null ? "-" : (100 * x).toFixed(1) + "%");
    $("tab-coverage").append(el("h2", { text: "Coverage per file" }), table(rows, [
      { key: "linep", label: "Lines", kind: "value", format: p, bar: true },
      { key: "lines_covered", label: "Lines hit", kind: "num" },
      { key: "lines", label: "Lines", kind: "num" },
      { key: "blockp", label: "Blocks", kind: "value", format: p },
      { key: "blocks_covered", label: "Blocks hit", kind: "num" },
      { key: "methods", label: "Methods", kind: "num" },
      { key: "file", label: "File", kind: "name" },
    ], { sort: "file", asc: true }));
  }

  // ---------- source lines ----------
  function buildLines() {
    const box = $("tab-lines");
    const controls = el("div", { class: "controls" });
    const pick = el("select", { id: "lines-measure" });
    D.lines.forEach((L, i) => pick.append(el("option", { value: String(i), text: L.what })));
    controls.append(el("label", {}, "Weigh lines by ", pick));
    const body = el("div");
    box.append(controls, body);
    pick.addEventListener("change", () => draw(D.lines[Number(pick.value)]));
    draw(D.lines[0]);

    function draw(L) {
      body.textContent = "";
      const pct = (v) => (L.total && v ? ((100 * v) / L.total).toFixed(1) + "%" : "");
      const value = (v) => (L.unit === "bytes" ? bytes(v) : L.unit === "count" ? num(v) : dur(v));
      const place = (p) => (p.kind === "line" ? p.file.replace(/^.*[\\/]/, "") + ":" + p.line : p.kind === "il_offset" ? "IL_" + p.offset.toString(16).padStart(4, "0") : "?");
      const view = el("div", { id: "source-view" });
      function openSource(method) {
        view.textContent = "";
        const s = L.sources.find((x) => x.method === method);
        if (!s) {
          view.append(el("p", { class: "hint", text: `No source for ${method}: its module has no symbols, or it is not among the ${L.sources.length} methods with the most ${L.what} on their own lines.` }));
          return;
        }
        view.append(el("p", {}, el("b", { text: s.method }), ` \u00b7 self ${pct(s.self) || "0%"}, total ${pct(s.total) || "0%"} \u00b7 ${s.file}` + (s.readable ? "" : " (cannot be read here: the lines have no text)")));
        const max = Math.max(1, ...s.lines.map((l) => l.self));
        const t = el("table", { class: "source" });
        for (const l of s.lines) {
          const heat = el("span", { class: "heat", style: "width:" + Math.round((80 * l.self) / max) + "px" });
          t.append(el("tr", { class: l.self ? "hot" : "" },
            el("td", { class: "heatcell" }, heat),
            el("td", { class: "num", text: pct(l.self) }),
            el("td", { class: "num", text: pct(l.total) }),
            el("td", { class: "num lineno", text: String(l.line) }),
            el("td", { class: "code" }, el("code", { text: l.text }))));
        }
        view.append(t);
        if (s.elsewhere) view.append(el("p", { class: "hint", text: `${pct(s.elsewhere)} of the ${L.what} is in this method at no line (code of no IL, or an unknown place).` }));
      }
      body.append(el("h2", { text: `Hottest lines (${L.what}: ${value(L.total)} in stacks with managed code)` }),
        el("p", { class: "hint", text: "Self: with the line innermost of the managed frames. Total: in stacks through it. Code the JIT inlined counts for the line of the call. Click a method for its source." }));
      for (const n of L.without_lines) body.append(el("p", { class: "hint", text: n + "; its frames show IL offsets instead of lines" }));
      body.append(table(L.rows, [
        { key: "self", label: "Self", kind: "value", format: pct, bar: true },
        { key: "total", label: "Total", kind: "value", format: pct },
        { key: "where", label: "Line", kind: "text", get: (r) => place(r.place) },
        { key: "text", label: "Source", kind: "text", get: (r) => r.text || "" },
        { key: "method", label: "Method", kind: "name", link: (r) => { openSource(r.method); view.scrollIntoView(); } },
      ], { sort: "self" }));
      if (L.rows_left_out) body.append(el("p", { class: "hint", text: `${num(L.rows_left_out)} more lines left out` }));
      body.append(el("h2", { text: "Source" }), view);
      if (L.sources.length) openSource(L.sources[0].method);
    }
  }

  const builders = { summary: buildSummary, profile: () => {}, timeline: () => {}, memory: buildMemory, exceptions: buildExceptions, jit: buildJit, native: buildNative, coverage: buildCoverage, lines: buildLines };
  if (D.flames.length) setupFlame();
  if (T) setupTimeline();
  window.addEventListener("resize", () => { drawFlame(); drawTimeline(); });

  // For tests and for links: where a frame is drawn, what the timeline drew.
  window.clrprofReport = {
    show,
    frameRects(name) {
      const r = $("flame").getBoundingClientRect();
      return flame.rects.filter(([, , , n]) => n > 0 && F.name[flame.tree[n].f] === name).map(([x, d, w]) => ({ x: r.left + x, y: r.top + d * ROW, width: w, height: ROW - 1 }));
    },
    zoomed: () => (flame.zoom ? nodeName(flame.zoom) : null),
    timelineMarks: () => ({ ...tl.drawnMarks }),
  };
  const first = (location.hash || "").slice(1);
  show(tabs.some((t) => t[0] === first) ? first : tabs.some((t) => t[0] === "profile") ? "profile" : "summary");
  document.body.dataset.ready = "1";
})();
