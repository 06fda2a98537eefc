// weir console: polls the admin API about once a second and updates the
// page in place. Hand-written, no dependencies; see package console.
"use strict";

const POLL_MS = 1000;
const NODE_W = 172, NODE_H = 86, COL_W = 212, ROW_H = 100, PAD = 12;
const $ = (sel) => document.querySelector(sel);

let token = sessionStorage.getItem("weir-token") || "";
let pipeline = null;
let graphKey = "";
let nodeEls = new Map();
// How many views were rendered and how long the slowest took, for the
// tests that measure the page on a large pipeline.
window.weirConsole = { renders: 0, lastRenderMs: 0, maxRenderMs: 0 };

// setText changes a node's text only when it differs, so that an update
// that changes nothing touches nothing.
function setText(el, s) {
  s = String(s);
  if (el.textContent !== s) el.textContent = s;
}

function setAttr(el, name, value) {
  value = String(value);
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

function el(tag, attrs, text) {
  const svg = ["svg", "g", "rect", "text", "path", "title"].includes(tag);
  const e = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function rate(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(0) + "k";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return n >= 10 ? n.toFixed(0) : n.toFixed(1);
}

function secs(s) {
  if (s === null || s === undefined) return "–";
  if (s < 1e-3) return (s * 1e6).toFixed(0) + "µs";
  if (s < 1) return (s * 1e3).toFixed(s < 0.01 ? 2 : 0) + "ms";
  return s.toFixed(s < 10 ? 2 : 0) + "s";
}

function clock(ms) {
  if (ms === null || ms === undefined) return "–";
  const d = new Date(ms);
  return d.toISOString().replace("T", " ").replace("Z", "").slice(0, 23);
}

async function api(method, path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const resp = await fetch(path, { method, headers, cache: "no-store" });
  if (resp.status === 401) {
    $("#token-form").hidden = false;
    throw new Error("the admin server wants its token");
  }
  const body = await resp.json().catch(() => ({ error: resp.statusText }));
  return { status: resp.status, body };
}

// ---- the graph ----

// buildGraph lays the nodes out in their layers, once per topology.
function buildGraph(view) {
  const svg = $("#graph");
  svg.replaceChildren();
  nodeEls = new Map();
  const rows = new Map();
  const pos = new Map();
  for (const n of view.nodes) {
    const row = rows.get(n.layer) || 0;
    rows.set(n.layer, row + 1);
    pos.set(n.id, { x: PAD + n.layer * COL_W, y: PAD + row * ROW_H });
  }
  const width = PAD * 2 + (Math.max(...view.nodes.map((n) => n.layer)) + 1) * COL_W;
  const height = PAD * 2 + Math.max(...rows.values()) * ROW_H;
  setAttr(svg, "width", width);
  setAttr(svg, "height", height);
  setAttr(svg, "viewBox", `0 0 ${width} ${height}`);
  const edges = el("g", { class: "edges" });
  for (const e of view.edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const x2 = b.x, y2 = b.y + NODE_H / 2;
    let d;
    if (e.dead) { // from the node's bottom, under the main flow
      const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H;
      d = `M${x1},${y1} C${x1},${y2} ${x1},${y2} ${x2},${y2}`;
    } else {
      const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, mx = (x1 + x2) / 2;
      d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
    }
    edges.append(el("path", { class: e.dead ? "edge dead" : "edge", "data-from": e.from, "data-to": e.to, d }));
  }
  svg.append(edges);
  for (const n of view.nodes) svg.append(buildNode(n, pos.get(n.id)));
}

function buildNode(n, p) {
  const g = el("g", { class: "node " + n.stage, "data-id": n.id, "data-stage": n.stage, transform: `translate(${p.x},${p.y})` });
  g.append(el("rect", { class: "box", width: NODE_W, height: NODE_H, rx: 5 }));
  const t = (cls, y) => { const e = el("text", { class: cls, x: 8, y }); g.append(e); return e; };
  const refs = { g };
  refs.title = t("title", 16);
  refs.kind = t("sub kind", 30);
  refs.rates = t("rates", 45);
  refs.errs = t("errs", 58);
  refs.lat = t("sub lat", 71);
  g.append(el("rect", { class: "bp-track", x: 8, y: 77, width: NODE_W - 16, height: 5, rx: 2 }));
  refs.bp = el("rect", { class: "bp-bar", x: 8, y: 77, width: 0, height: 5, rx: 2 });
  refs.tip = el("title");
  g.append(refs.bp, refs.tip);
  setText(refs.title, n.name.length > 24 ? n.name.slice(0, 23) + "…" : n.name);
  nodeEls.set(n.id, refs);
  return g;
}

function updateNode(n) {
  const r = nodeEls.get(n.id);
  if (!r) return;
  let kind = n.type;
  if (n.plugin) kind += " · " + n.plugin.split("/").pop() + (n.version ? " v" + n.version : "");
  setText(r.kind, kind.length > 30 ? kind.slice(0, 29) + "…" : kind);
  setAttr(r.g, "data-version", n.version || 0);
  setAttr(r.g, "data-in-rate", n.in_per_second);
  setAttr(r.g, "data-out-rate", n.out_per_second);
  if (n.stage === "source") setText(r.rates, `out ${rate(n.out_per_second)}/s`);
  else if (n.stage === "dead_letter") setText(r.rates, `in ${rate(n.in_per_second)}/s · total ${n.in}`);
  else setText(r.rates, `in ${rate(n.in_per_second)}/s → out ${rate(n.out_per_second)}/s`);
  const bp = n.backpressure || 0;
  let errs = n.stage === "dead_letter" ? "" : `err ${rate(n.dead_per_second)}/s`;
  if (n.backpressure !== null) errs += ` · backpressure ${(bp * 100).toFixed(0)}%`;
  setText(r.errs, errs);
  setText(r.lat, n.batch_p99_seconds === null ? "" : `batch p50 ${secs(n.batch_p50_seconds)} · p99 ${secs(n.batch_p99_seconds)}`);
  r.errs.classList.toggle("err", n.dead_per_second > 0);
  setAttr(r.bp, "width", ((NODE_W - 16) * bp).toFixed(1));
  setAttr(r.bp, "class", "bp-bar" + (bp > 0.5 ? " high" : bp > 0.1 ? " mid" : ""));
  setAttr(r.g, "data-backpressure", bp.toFixed(3));
  setText(r.tip, `${n.name}: in ${n.in}, out ${n.out}, dead ${n.dead}` +
    (n.backpressure === null ? "" : `, backpressure ${(bp * 100).toFixed(0)}%`));
}

// ---- tables, updated row by row in place ----

// syncRows makes tbody hold one row per item, reusing rows by key, and
// fills each with cells(item): an array of strings (or [text, class]).
function syncRows(tbody, items, key, cells, decorate) {
  const old = new Map();
  for (const tr of tbody.children) old.set(tr.dataset.key, tr);
  let i = 0;
  for (const it of items) {
    const k = String(key(it));
    let tr = old.get(k);
    const vals = cells(it);
    if (!tr) {
      tr = document.createElement("tr");
      tr.dataset.key = k;
      for (let c = 0; c < vals.length; c++) tr.append(document.createElement("td"));
      if (decorate) decorate(tr, it);
    }
    old.delete(k);
    vals.forEach((v, c) => {
      const [text, cls] = Array.isArray(v) ? v : [v, ""];
      setText(tr.children[c], text);
      if (tr.children[c].className !== cls) tr.children[c].className = cls;
    });
    if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
    i++;
  }
  for (const tr of old.values()) tr.remove();
}

function updatePartitions(view) {
  const p = view.partitions;
  let s = `${p.total} partitions, ${p.idle} idle`;
  if (p.total > p.rows.length) s += `, the ${p.rows.length} furthest behind shown`;
  if (p.min_watermark_ms !== null) s += ` · least watermark ${clock(p.min_watermark_ms)}`;
  setText($("#partitions-summary"), s);
  syncRows($("#partitions tbody"), p.rows, (r) => r.source + "/" + r.topic + "/" + r.partition, (r) => {
    const behind = r.watermark_ms === null ? null : (view.now_ms - r.watermark_ms) / 1000;
    return [r.source, r.partition < 0 ? "–" : (r.topic ? r.topic + "/" : "") + r.partition, String(r.offset),
      r.lag === null || r.lag === undefined ? "–" : String(r.lag), clock(r.watermark_ms),
      [secs(behind), behind !== null && behind > 10 && !r.idle ? "behind" : ""], [r.idle ? "idle" : "", r.idle ? "idle" : ""]];
  });
}

// size renders a byte count: 812 B, 4.1 KiB, 12.0 MiB.
function size(n) {
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}

function updateCheckpoints(view) {
  const cps = view.checkpoints.slice().reverse();
  syncRows($("#checkpoints tbody"), cps, (c) => c.epoch + c.outcome, (c) => [String(c.epoch), clock(Date.parse(c.at)),
    secs(c.pause_seconds), String(c.records), `${c.state_writes} · ${size(c.state_bytes)}`, String(c.changelog_records),
    [c.outcome + (c.error ? ": " + c.error : ""), c.outcome === "completed" ? "ok" : "failed"]]);
  const rs = view.restore;
  let text = view.state === "standby" ? "standby: waiting for the other instance to leave its consumer group" : "none";
  const phase = view.state === "restoring" ? "restoring" : rs && rs.left > 0 ? "catching up with tasks given to this instance, beside its own" : "last restore";
  if (rs) text = `${phase}: ${rs.replayed} replayed, ${rs.left} left, ` +
    `${secs(rs.seconds)} so far` + (rs.left > 0 ? `, about ${secs(rs.eta_seconds)} to go` : "");
  if (view.tasks) text += ` · tasks owned: ${view.tasks.join(", ") || "none"}`;
  setText($("#restore"), text);
  syncRows($("#restore-tasks tbody"), rs ? rs.tasks : [], (t) => t.task, (t) => [String(t.task), String(t.replayed), String(t.left),
    (t.replayed + t.left ? (100 * t.replayed / (t.replayed + t.left)).toFixed(0) : "100") + "%"]);
}

function updatePlugins(view) {
  syncRows($("#plugins tbody"), view.plugins, (p) => p.operator, (p) => {
    const pr = p.probation ? `${p.probation.batches}/${p.probation.of} batches, ${p.probation.failed}/${p.probation.records} failed` : "passed";
    const sh = p.shadow ? `${p.shadow.diverged} of ${p.shadow.records} diverged` : "";
    return [p.operator, ["v" + p.version, "version"], [p.sha256.slice(0, 12), "hash"], clock(Date.parse(p.loaded_at)), pr, sh];
  }, (tr, p) => {
    tr.dataset.operator = p.operator;
    const td = document.createElement("td");
    const reload = el("button", { class: "reload", type: "button" }, "Reload");
    reload.onclick = () => pluginAction(reload, "reload", p.operator);
    const promote = el("button", { class: "promote", type: "button" }, "Promote shadow");
    promote.onclick = () => pluginAction(promote, "promote", p.operator);
    td.append(reload, " ", promote);
    tr.append(td);
  });
  for (const tr of $("#plugins tbody").children) {
    const p = view.plugins.find((q) => q.operator === tr.dataset.operator);
    tr.querySelector(".promote").hidden = !(p && p.shadow);
  }
  const div = $("#divergences");
  const parts = [];
  for (const p of view.plugins) {
    if (!p.shadow || !p.shadow.samples) continue;
    for (const s of p.shadow.samples.slice(-5)) parts.push(`${p.operator}: input ${s.input || "–"} · live ${s.live} · shadow ${s.candidate}`);
  }
  const sig = parts.join("\n");
  if (div.dataset.sig !== sig) {
    div.dataset.sig = sig;
    div.replaceChildren(...parts.map((t) => el("pre", { class: "divergence" }, t)));
  }
}

async function pluginAction(button, action, operator) {
  button.disabled = true;
  setText($("#plugin-msg"), `${action} ${operator}…`);
  const q = new URLSearchParams({ pipeline, operator });
  if (action === "reload") q.set("wait", "30s");
  try {
    const { status, body } = await api("POST", `/api/v1/plugins/${action}?${q}`);
    let msg = body.error || "";
    if (body.results) msg = body.results.map((r) => `${r.operator}: ${r.outcome}, version ${r.live_version}` + (r.reason ? ` (${r.reason})` : "")).join("; ") + (body.error ? " · " + body.error : "");
    else if (body.promoted) msg = `${operator}: shadow promoted`;
    setText($("#plugin-msg"), `${status === 200 ? "" : status + ": "}${msg}`);
  } catch (e) {
    setText($("#plugin-msg"), String(e.message || e));
  } finally {
    button.disabled = false;
  }
}

function updateDeadLetters(view) {
  const ol = $("#dead-letters");
  const items = view.dead_letters.slice().reverse();
  const sig = items.map((d) => d.at + d.stage).join("|");
  if (ol.dataset.sig === sig) return;
  ol.dataset.sig = sig;
  ol.replaceChildren(...items.map((d) => {
    const li = el("li");
    li.append(el("span", { class: "reason" }, d.reason), " ", el("span", { class: "stage" }, `at ${d.stage}`), el("br"),
      el("span", { class: "prov" }, `${d.origin} · ${clock(Date.parse(d.at))}${d.key ? " · key " + d.key : ""}`), el("pre", {}, d.value));
    return li;
  }));
}

function updateSinks(view) {
  const box = $("#sinks");
  for (const [name, recs] of Object.entries(view.sink_samples || {})) {
    let div = box.querySelector(`[data-sink="${CSS.escape(name)}"]`);
    if (!div) {
      div = el("div", { class: "sink", "data-sink": name });
      div.append(el("h3", {}, name), el("ol"));
      box.append(div);
    }
    const ol = div.querySelector("ol");
    const sig = recs.length + ":" + (recs.length ? recs[recs.length - 1].value : "");
    if (ol.dataset.sig === sig) continue;
    ol.dataset.sig = sig;
    ol.replaceChildren(...recs.map((r) => el("li", { title: r.value }, (r.key ? r.key + " → " : "") + r.value)));
  }
}

function updateSummary(view) {
  setText($("#title"), view.pipeline);
  const st = $("#state");
  setText(st, view.state);
  st.className = "badge " + view.state;
  const wm = $("#watermark");
  setText(wm, clock(view.watermark_ms));
  setAttr(wm, "data-ms", view.watermark_ms === null ? "" : view.watermark_ms);
  setText($("#watermark-lag"), secs(view.watermark_lag_seconds));
  setText($("#consumer-lag"), view.consumer_lag === null ? "–" : String(view.consumer_lag));
  setText($("#dead-total"), String(view.dead_letters_total));
  setText($("#checkpoints-total"), String(view.checkpoints_total));
  const sel = $("#state-operator");
  const ops = view.nodes.filter((n) => n.stage === "operator").map((n) => n.name);
  if (sel.options.length !== ops.length) sel.replaceChildren(...ops.map((o) => el("option", { value: o }, o)));
}

function render(view) {
  const t0 = performance.now();
  renderView(view);
  const stats = window.weirConsole, ms = performance.now() - t0;
  stats.renders++;
  stats.lastRenderMs = ms;
  stats.maxRenderMs = Math.max(stats.maxRenderMs, ms);
}

function renderView(view) {
  const key = view.nodes.map((n) => n.id).join("|") + "#" + view.edges.map((e) => e.from + ">" + e.to).join("|");
  if (key !== graphKey) {
    graphKey = key;
    buildGraph(view);
  }
  for (const n of view.nodes) updateNode(n);
  updateSummary(view);
  updatePartitions(view);
  updateCheckpoints(view);
  updatePlugins(view);
  updateDeadLetters(view);
  updateSinks(view);
}

// ---- polling ----

async function poll() {
  if (!document.hidden) {
    try {
      const { status, body } = await api("GET", `/api/v1/pipelines/${encodeURIComponent(pipeline)}/console`);
      if (status !== 200) throw new Error(body.error || "HTTP " + status);
      render(body);
      setText($("#conn"), "live · " + new Date().toLocaleTimeString());
      $("#conn").classList.remove("down");
    } catch (e) {
      setText($("#conn"), "no answer: " + (e.message || e));
      $("#conn").classList.add("down");
    }
  }
  setTimeout(poll, POLL_MS);
}

async function start() {
  $("#token-form").onsubmit = (ev) => {
    ev.preventDefault();
    token = $("#token").value;
    sessionStorage.setItem("weir-token", token);
    $("#token-form").hidden = true;
    start();
  };
  $("#state-form").onsubmit = async (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams({ pipeline, operator: $("#state-operator").value, key: $("#state-key").value });
    try {
      const { status, body } = await api("GET", `/api/v1/state?${q}`);
      setText($("#state-result"), (status === 200 ? "" : status + ": ") + JSON.stringify(body.entries || body, null, 2));
    } catch (e) {
      setText($("#state-result"), String(e.message || e));
    }
  };
  let names;
  try {
    const { body } = await api("GET", "/api/v1/pipelines");
    names = body.map((p) => p.name);
  } catch (e) {
    setText($("#conn"), String(e.message || e));
    return;
  }
  const m = location.pathname.match(/^\/pipelines\/([^/]+)/);
  pipeline = m ? decodeURIComponent(m[1]) : names.length === 1 ? names[0] : null;
  $("#pipelines").replaceChildren(...names.map((n) => el("a", { href: "/pipelines/" + encodeURIComponent(n), class: n === pipeline ? "current" : "" }, n)));
  if (pipeline === null) {
    $("#index").hidden = false;
    $("#index-list").replaceChildren(...names.map((n) => { const li = el("li"); li.append(el("a", { href: "/pipelines/" + encodeURIComponent(n) }, n)); return li; }));
    setText($("#conn"), "");
    return;
  }
  document.title = pipeline + " · weir console";
  $("#main").hidden = false;
  poll();
}

start();
