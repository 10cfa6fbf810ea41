// Engram web UI: one page, views addressed by the URL fragment (#/search?q=…).
// Everything is built with DOM calls (text is never parsed as HTML); writes
// carry the per-install token the server wrote into the page.
'use strict';

const TOKEN = document.querySelector('meta[name="engram-token"]').content;
const TYPES = ['fact', 'decision', 'preference', 'pattern', 'issue', 'context', 'discovery'];
const SVG = 'http://www.w3.org/2000/svg';

// ---------------------------------------------------------------- helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    // Through the CSSOM: the page's CSP refuses style attributes.
    else if (k === 'style') el.style.cssText = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'style') el.style.cssText = v;
    else el.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

async function api(path, opts = {}) {
  const init = { method: opts.method || 'GET', headers: { Accept: 'application/json' } };
  if (init.method !== 'GET') init.headers['X-Engram-Token'] = TOKEN;
  if (opts.body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opts.body);
  }
  const r = await fetch(path, init);
  let data = null;
  try { data = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok) {
    const e = (data && data.error) || {};
    throw new ApiError(r.status, e.code || 'error', e.message || `${r.status} ${r.statusText}`);
  }
  return data;
}

function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === '') continue;
    if (Array.isArray(v)) v.forEach((x) => p.append(k, x));
    else p.append(k, v);
  }
  const t = p.toString();
  return t ? `?${t}` : '';
}

function bytes(n) {
  if (!n) return '0 B';
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  const i = Math.min(u.length - 1, Math.floor(Math.log(n) / Math.log(1024)));
  return `${(n / 1024 ** i).toFixed(i ? 1 : 0)} ${u[i]}`;
}

function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

function time(iso) {
  return iso ? new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' }) : '';
}

function dayTime(iso) {
  return iso ? new Date(iso).toLocaleString(undefined, { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' }) : '';
}

function ago(iso) {
  if (!iso) return '';
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (s < 90) return 'just now';
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 129600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

function dur(ms) {
  if (ms === null || ms === undefined) return '';
  if (ms < 60000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3600000) return `${Math.round(ms / 60000)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function fmt(x, d = 2) {
  return x === null || x === undefined || Number.isNaN(x) ? '—' : Number(x).toFixed(d);
}

function pct(x) {
  return x === null || x === undefined ? '—' : `${Math.round(x * 100)}%`;
}

function knowledgeType(t) {
  const map = { correction: 'preference', convention: 'pattern', gotcha: 'issue', struggle: 'issue' };
  return TYPES.includes(t) ? t : (map[t] || 'fact');
}

function typeBadge(t) {
  return h('span', { class: `type ${knowledgeType(t)}`, title: t }, t);
}

function helpedBadge(o) {
  if (!o || o.helped === null || o.helped === undefined) return h('span', { class: 'badge', title: 'not judged yet' }, 'not judged');
  const v = o.label !== null && o.label !== undefined ? o.label : o.relevance;
  return o.helped
    ? h('span', { class: 'badge good', title: `judged ${fmt(v)}` }, `helped ${fmt(v)}`)
    : h('span', { class: 'badge bad', title: `judged ${fmt(v)}` }, `did not help ${fmt(v)}`);
}

let toastTimer = 0;
function toast(msg, bad = false) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  t.className = `show${bad ? ' bad' : ''}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.className = ''; }, 3200);
}

function empty(text) { return h('p', { class: 'empty' }, text); }

function failure(e) {
  return h('div', { class: 'card error', role: 'alert' }, h('strong', {}, 'Could not load: '), e.message || String(e));
}

function go(hash) {
  if (location.hash === hash) route(); else location.hash = hash;
}

// ---------------------------------------------------------------- charts

// A line/point chart. opts: {w, h, x: [min, max], y: [min, max], series: [{name, color, points: [[x, y]], dashed, dots}],
// vlines: [{x, color, title}], marks: [{x, y, color, r, hollow, title, cls, data, onclick}], xLabel, xTicks}
function chart(opts) {
  const W = opts.w || 720, H = opts.h || 240, L = 46, R = 12, T = 12, B = 30;
  let [x0, x1] = opts.x; let [y0, y1] = opts.y;
  if (x1 <= x0) { x0 -= 1; x1 += 1; }
  if (y1 <= y0) { y0 -= 1; y1 += 1; }
  // Round y's range out to a "nice" step (1, 2, 2.5 or 5 times a power of ten).
  const raw = (y1 - y0) / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((v) => v >= raw - 1e-12);
  y0 = Math.floor(y0 / step + 1e-9) * step;
  y1 = Math.ceil(y1 / step - 1e-9) * step;
  const sx = (v) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
  const sy = (v) => H - B - ((v - y0) / (y1 - y0)) * (H - T - B);
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': opts.label || 'chart', 'data-chart': opts.id || null });
  const grid = s('g', { class: 'grid' });
  for (let v = y0; v <= y1 + step / 2; v += step) {
    grid.append(s('line', { x1: L, x2: W - R, y1: sy(v), y2: sy(v) }));
    grid.append(s('text', { x: L - 6, y: sy(v) + 4, 'text-anchor': 'end' }, Math.abs(v) >= 10 ? v.toFixed(0) : Number(v.toFixed(3)).toString()));
  }
  svg.append(grid, s('rect', { class: 'frame', x: L, y: T, width: W - L - R, height: H - T - B }));
  for (const t of opts.xTicks || []) {
    svg.append(s('text', { x: sx(t.x), y: H - B + 14, 'text-anchor': 'middle' }, t.label));
  }
  if (opts.xLabel) svg.append(s('text', { x: (L + W - R) / 2, y: H - 3, 'text-anchor': 'middle' }, opts.xLabel));
  for (const v of opts.vlines || []) {
    svg.append(s('line', { x1: sx(v.x), x2: sx(v.x), y1: T, y2: H - B, stroke: v.color, 'stroke-dasharray': '5 4', 'stroke-width': 1.5, class: v.cls || null },
      s('title', {}, v.title || '')));
  }
  for (const se of opts.series || []) {
    if (!se.points.length) continue;
    if (se.points.length > 1) {
      svg.append(s('polyline', {
        points: se.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' '),
        fill: 'none', stroke: se.color, 'stroke-width': 2, 'stroke-dasharray': se.dashed ? '6 4' : null,
        'data-series': se.name,
      }));
    }
    if (se.dots !== false) {
      for (const [x, y] of se.points) {
        svg.append(s('circle', { cx: sx(x), cy: sy(y), r: 3.5, fill: se.dashed ? 'none' : se.color, stroke: se.color, 'stroke-width': 1.5, 'data-series': se.name },
          s('title', {}, `${se.name}: ${fmt(y, 3)}`)));
      }
    }
  }
  for (const m of opts.marks || []) {
    const attrs = { cx: sx(m.x), cy: sy(m.y), r: m.r || 4, fill: m.hollow ? 'none' : m.color, stroke: m.color, 'stroke-width': 1.6, class: m.cls || null };
    for (const [k, v] of Object.entries(m.data || {})) attrs[`data-${k}`] = v;
    if (m.onclick) { attrs.tabindex = 0; attrs.style = 'cursor:pointer'; attrs.role = 'button'; attrs['aria-label'] = m.title; }
    const el = s(m.shape === 'x' ? 'path' : 'circle', m.shape === 'x'
      ? { d: `M${sx(m.x) - 4},${sy(m.y) - 4}l8,8m0,-8l-8,8`, stroke: m.color, 'stroke-width': 2.2, class: m.cls || null }
      : attrs, s('title', {}, m.title || ''));
    if (m.onclick) {
      el.addEventListener('click', m.onclick);
      el.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); m.onclick(); } });
    }
    svg.append(el);
    if (m.label) svg.append(s('text', { x: sx(m.x), y: sy(m.y) - 9, 'text-anchor': 'middle' }, m.label));
  }
  return svg;
}

function legend(items) {
  return h('div', { class: 'legend' }, items.map(([color, name, dot]) => h('span', {}, h('i', { class: dot ? 'dot' : null, style: `background:${color}` }), name)));
}

function cssVar(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

function sparkline(points, color, w = 160, hgt = 32) {
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${w} ${hgt}`, width: w, height: hgt, style: `width:${w}px`, role: 'img', 'aria-label': 'recent latencies' });
  if (points.length < 2) return svg;
  const max = Math.max(...points) || 1;
  const pts = points.map((v, i) => `${((i / (points.length - 1)) * (w - 2) + 1).toFixed(1)},${(hgt - 2 - (v / max) * (hgt - 4)).toFixed(1)}`);
  svg.append(s('polyline', { points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 1.5 }));
  return svg;
}

function histogram(buckets, counts, color) {
  const W = 320, H = 90, B = 18, n = counts.length, bw = W / n;
  const max = Math.max(...counts, 1);
  const svg = s('svg', { class: 'chart hist', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'latency histogram' });
  counts.forEach((c, i) => {
    const bh = ((H - B - 4) * c) / max;
    const label = i < buckets.length ? `≤${buckets[i]}` : `>${buckets[buckets.length - 1]}`;
    svg.append(s('rect', { x: i * bw + 1, y: H - B - bh, width: bw - 2, height: bh, fill: color, rx: 2 }, s('title', {}, `${label} ms: ${c}`)));
    if (i % 2 === 0 || n < 8) svg.append(s('text', { x: i * bw + bw / 2, y: H - 4, 'text-anchor': 'middle' }, label));
  });
  return svg;
}

// ---------------------------------------------------------------- panel

const panel = {
  stack: [],
  el: () => document.getElementById('panel'),
  lastFocus: null,
  async open(entry, push = true) {
    const p = this.el();
    if (!p.classList.contains('open')) this.lastFocus = document.activeElement;
    if (push) this.stack.push(entry); else this.stack = [entry];
    p.classList.add('open');
    p.setAttribute('aria-hidden', 'false');
    p.replaceChildren(this.header(entry.title), h('p', { class: 'muted' }, 'Loading…'));
    try {
      const body = await entry.render();
      p.replaceChildren(this.header(entry.title), body);
    } catch (e) {
      p.replaceChildren(this.header(entry.title), failure(e));
    }
    p.focus();
  },
  header(title) {
    const crumbs = this.stack.length > 1
      ? h('nav', { class: 'crumbs', 'aria-label': 'Path' }, this.stack.map((e, i) => [
        i ? h('span', { class: 'muted' }, '→') : null,
        h('button', { type: 'button', class: 'ghost small', 'data-crumb': e.id || null, title: e.id || null, onclick: () => this.jump(i), 'aria-current': i === this.stack.length - 1 ? 'page' : null }, e.crumb || e.title),
      ]))
      : null;
    return h('div', {},
      h('div', { class: 'ph' },
        this.stack.length > 1 ? h('button', { type: 'button', onclick: () => this.back(), 'aria-label': 'Back' }, '← Back') : null,
        h('h2', {}, title),
        h('button', { type: 'button', class: 'ghost', onclick: () => this.close(), 'aria-label': 'Close panel' }, '✕')),
      crumbs);
  },
  back() {
    if (this.stack.length < 2) return this.close();
    this.stack.pop();
    const e = this.stack.pop();
    return this.open(e, true);
  },
  jump(i) {
    const e = this.stack[i];
    this.stack = this.stack.slice(0, i);
    return this.open(e, true);
  },
  close() {
    const p = this.el();
    p.classList.remove('open');
    p.setAttribute('aria-hidden', 'true');
    this.stack = [];
    if (this.lastFocus && document.body.contains(this.lastFocus)) this.lastFocus.focus();
  },
  isOpen() { return this.el().classList.contains('open'); },
};

// ---------------------------------------------------------------- memory detail (and the graph explorer)

// A crumb names the memory by the start of its text (its id until loaded).
function clip(text, n = 28) {
  const t = (text || '').trim();
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

function memoryEntry(id, text) {
  const entry = { id, title: 'Memory', crumb: clip(text) || id.slice(0, 14) };
  entry.render = () => renderMemory(id, entry);
  return entry;
}

function openMemory(id, push = false, text = '') { return panel.open(memoryEntry(id, text), push); }

async function renderMemory(id, entry) {
  const m = await api(`/api/memories/${encodeURIComponent(id)}`);
  if (entry && m.content) entry.crumb = clip(m.content);
  const box = h('div', {});
  const actions = h('div', { class: 'row' },
    m.is_deleted ? h('span', { class: 'badge bad' }, 'forgotten') : [
      h('button', { type: 'button', onclick: () => pinToggle(m) }, m.pinned ? 'Unpin' : 'Pin'),
      h('button', { type: 'button', onclick: () => rate(m, 1) }, 'Helpful'),
      h('button', { type: 'button', onclick: () => rate(m, 0) }, 'Not helpful'),
      h('span', { class: 'spacer' }),
      h('button', { type: 'button', class: 'danger', onclick: () => forget(m) }, 'Forget'),
    ]);
  box.append(
    h('div', { class: 'focus' },
      h('div', { class: 'row' }, typeBadge(m.type), m.pinned ? h('span', { class: 'badge good' }, 'pinned') : null,
        m.deprecated ? h('span', { class: 'badge warn' }, 'deprecated') : null, h('span', { class: 'mono muted' }, m.id)),
      h('p', { class: 't', style: 'white-space:pre-wrap' }, m.content || '(forgotten)'),
      h('div', { class: 'small muted' }, [`importance ${fmt(m.importance)}`, `injected in ${plural(m.sessions_injected, 'session')}`,
        plural(m.feedback_count, 'rating')].join(' · ')),
      h('div', { class: 'bar', title: `importance ${fmt(m.importance)}` }, h('i', { style: `width:${Math.round((m.importance || 0) * 100)}%` }))),
    actions,
    h('dl', { class: 'kv' },
      h('dt', {}, 'Project'), h('dd', {}, m.project || '—'),
      h('dt', {}, 'Tags'), h('dd', {}, (m.tags || []).length ? m.tags.map((t) => h('a', { class: 'tag', href: `#/knowledge?tag=${encodeURIComponent(t)}` }, t)) : '—'),
      h('dt', {}, 'Source'), h('dd', {}, m.source || '—'),
      h('dt', {}, 'Learned in'), h('dd', {}, m.source_session ? h('a', { href: `#/session/${encodeURIComponent(m.source_session)}` }, m.source_session) : '—'),
      h('dt', {}, 'Created'), h('dd', {}, when(m.created_at)),
      h('dt', {}, 'Updated'), h('dd', {}, when(m.updated_at)),
      m.superseded_by ? [h('dt', {}, 'Superseded by'), h('dd', {}, h('button', { type: 'button', class: 'ghost small', onclick: () => openMemory(m.superseded_by, true) }, m.superseded_by))] : null));
  if (!m.is_deleted) {
    const g = await api(`/api/knowledge/${encodeURIComponent(id)}/graph${qs({ depth: 2 })}`).catch(() => null);
    if (g) box.append(renderGraph(g));
  }
  box.append(h('h3', {}, `Injections (${m.injections.length})`));
  box.append(m.injections.length ? h('table', {}, h('tr', {}, h('th', {}, 'When'), h('th', {}, 'Trigger'), h('th', {}, 'Session'), h('th', {}, 'Rank'), h('th', {}, 'Did it help?')),
    m.injections.map((i) => h('tr', {}, h('td', {}, when(i.at)), h('td', {}, i.trigger),
      h('td', {}, i.session ? h('a', { href: `#/session/${encodeURIComponent(i.session)}` }, i.session.slice(0, 22)) : '—'),
      h('td', { class: 'num' }, i.rank), h('td', {}, helpedBadge(i))))) : empty('Never injected yet.'));
  if ((m.feedback || []).length) {
    box.append(h('h3', {}, 'Feedback'), h('ul', {}, m.feedback.map((f) => h('li', {}, `${fmt(f.relevance)} by ${f.by}`, f.reason ? ` — ${f.reason}` : '', h('span', { class: 'muted small' }, ` ${when(f.created_at)}`)))));
  }
  const related = [...(m.supersedes || []).map((x) => ({ id: x, text: 'superseded by this memory' })), ...(m.same_session || [])];
  if (related.length) {
    box.append(h('h3', {}, 'Related'), h('div', {}, related.map((r) => h('button', { type: 'button', class: 'conn', onclick: () => openMemory(r.id, true, r.text) },
      r.type ? typeBadge(r.type) : null, h('span', { class: 'x' }, r.text || r.id), '→'))));
  }
  return box;
}

function renderGraph(g) {
  const box = h('div', { class: 'graph' });
  const chain = g.reasoning_chain || [];
  if (chain.length) {
    box.append(h('h3', {}, `Reasoning chain (${plural(chain.length, 'step')})`),
      h('div', { class: 'chain' }, chain.map((c) => h('div', { 'data-chain': c.id },
        h('button', { type: 'button', class: 'ghost', onclick: () => openMemory(c.id, true, c.content) }, typeBadge(c.type), ' ', c.content || c.id),
        h('span', { class: 'muted small' }, ` depth ${c.depth} · ${pct(c.strength)}`)))));
    if (g.chain_depth_limited) box.append(h('p', { class: 'muted small' }, 'The chain goes deeper than shown.'));
  }
  const conns = g.connections || [];
  const groups = {};
  for (const c of conns) (groups[c.relation] = groups[c.relation] || []).push(c);
  box.append(h('h3', {}, `Connections (${conns.length})`));
  if (!conns.length) box.append(empty('No connection yet.'));
  for (const [rel, list] of Object.entries(groups)) {
    box.append(h('div', { class: 'small muted rel' }, rel.replace(/_/g, ' ')),
      ...list.map((c) => h('button', { type: 'button', class: 'conn', 'data-edge': c.edge_id, 'data-relation': c.relation, onclick: () => openMemory(c.node.id, true, c.node.content) },
        typeBadge(c.node.type), h('span', { class: 'x' }, c.node.content || c.node.id), h('span', { class: 'muted small' }, pct(c.strength)), '→')));
  }
  const around = (g.nodes || []).length - 1;
  if (around > conns.length) {
    box.append(h('p', { class: 'small' }, h('a', { href: `#/graph${qs({ id: g.root })}` }, `${around} ${around === 1 ? 'memory' : 'memories'} within ${g.max_depth} edges → graph view`)));
  }
  return box;
}

async function pinToggle(m) {
  try {
    await api(`/api/memories/${encodeURIComponent(m.id)}/pin`, { method: m.pinned ? 'DELETE' : 'POST' });
    toast(m.pinned ? 'Unpinned' : 'Pinned');
    panel.open(memoryEntry(m.id), false);
  } catch (e) { toast(e.message, true); }
}

async function rate(m, relevance) {
  try {
    await api(`/api/memories/${encodeURIComponent(m.id)}/feedback`, { method: 'POST', body: { relevance, reason: 'rated in the web UI' } });
    toast('Thanks: feedback recorded (it trains the predictor)');
  } catch (e) { toast(e.message, true); }
}

async function forget(m) {
  if (!confirm('Forget this memory? It is hidden at once and its text is erased from the tapes at the next compaction.')) return;
  try {
    await api(`/api/memories/${encodeURIComponent(m.id)}`, { method: 'DELETE', body: { reason: 'forgotten in the web UI' } });
    toast('Forgotten');
    panel.close();
    route();
  } catch (e) { toast(e.message, true); }
}

async function openEvent(key, lsn) {
  return panel.open({
    title: 'Event', crumb: `#${lsn}`,
    render: async () => {
      const e = await api(`/api/sessions/${encodeURIComponent(key)}/events/${lsn}`);
      return h('div', {},
        h('dl', { class: 'kv' }, h('dt', {}, 'Kind'), h('dd', {}, e.kind), h('dt', {}, 'When'), h('dd', {}, when(e.at)),
          e.origin ? [h('dt', {}, 'Origin'), h('dd', {}, e.origin)] : null, e.tool ? [h('dt', {}, 'Tool'), h('dd', {}, e.tool)] : null,
          e.file ? [h('dt', {}, 'File'), h('dd', { class: 'mono' }, e.file)] : null, e.error ? [h('dt', {}, 'Error'), h('dd', { class: 'error' }, 'yes')] : null,
          h('dt', {}, 'Session'), h('dd', {}, h('a', { href: `#/session/${encodeURIComponent(key)}` }, key)),
          h('dt', {}, 'Log position'), h('dd', { class: 'mono' }, `LSN ${e.lsn}`)),
        e.text ? h('pre', { class: 'text' }, e.text) : empty('No text recorded for this event.'));
    },
  }, false);
}

// ---------------------------------------------------------------- views

const views = {};

views.dashboard = async (params) => {
  const project = params.get('project') || '';
  const [st, pr] = await Promise.all([api(`/api/stats${qs({ project })}`), api('/api/projects')]);
  const m = st.memories, se = st.sessions, inj = st.injections;
  const conflicts = st.pending.conflicts || 0;
  const pending = (st.pending.unscored_sessions || 0) + (st.pending.apply_errors || 0) + conflicts + (st.pending.staged || 0);
  const tile = (n, l, sub, href) => h(href ? 'a' : 'div', { class: 'card tile', href, 'data-tile': l },
    h('div', { class: 'n' }, n), h('div', { class: 'l' }, l), sub ? h('div', { class: 's' }, sub) : null);
  const select = h('select', { 'aria-label': 'Project', onchange: (e) => go(`#/${qs({ project: e.target.value })}`) },
    h('option', { value: '' }, 'All projects'), pr.projects.map((p) => h('option', { value: p.project, selected: p.project === project }, p.project)));
  const pred = st.predictor;
  return h('div', {},
    h('div', { class: 'row' }, h('h1', {}, 'Dashboard'), h('span', { class: 'spacer' }), select),
    h('div', { class: 'grid tiles' },
      tile(m.live, 'Memories', `${m.pinned} pinned · ${m.forgotten} forgotten`, '#/knowledge'),
      tile(se.total, 'Sessions', `${se.active} active · ${se.ended} ended`, '#/sessions'),
      tile(st.projects, 'Projects', pr.projects.slice(0, 2).map((p) => p.project).join(', ')),
      tile(inj.injected, 'Injected', `${inj.helped} helped of ${inj.judged} judged`, '#/sessions'),
      tile(st.rankings.served, 'Rankings', plural(st.fts_hits, 'FTS hit')),
      tile(st.feedback.count, 'Feedback', 'explicit ratings'),
      tile(bytes(st.storage.total), 'Storage', `tapes ${bytes(st.storage.tapes)} · db ${bytes(st.storage.projection)}`),
      tile(pending, 'Pending', [conflicts ? `${plural(conflicts, 'conflict')} · ` : '', `${st.pending.unscored_sessions} unscored`, st.pending.apply_errors ? ` · ${st.pending.apply_errors} errors` : ''].join(''), conflicts ? '#/staging' : null)),
    h('div', { class: 'grid cols2', style: 'margin-top:12px' },
      h('div', { class: 'card' },
        h('div', { class: 'row' }, h('h2', { style: 'margin:0' }, 'Predictor'), h('span', { class: 'spacer' }), h('a', { href: '#/predictor' }, 'Details →')),
        h('p', { class: 'mono' }, pred.status_line),
        alphaSplit(pred.alpha),
        h('p', { class: 'small muted' }, `success rate ${fmt(pred.success_rate)} · ${pred.comparisons} comparisons · ${pred.scored_sessions}/${pred.min_sessions} scored sessions`)),
      h('div', { class: 'card' }, h('h2', { style: 'margin-top:0' }, 'Top tags'),
        st.top_tags.length ? h('div', { class: 'chips' }, st.top_tags.map((t) => h('a', { class: 'chip', href: `#/knowledge?tag=${encodeURIComponent(t.tag)}` }, t.tag, h('span', { class: 'c' }, t.count)))) : empty('No tags yet.'),
        h('h2', {}, 'Memory types'),
        h('div', { class: 'chips' }, Object.entries(m.by_type).map(([t, n]) => h('a', { class: 'chip', href: `#/knowledge?type=${t}` }, typeBadge(t), h('span', { class: 'c' }, n)))))),
    h('h2', {}, 'Recent sessions'),
    st.recent_sessions.length ? h('div', { class: 'list' }, st.recent_sessions.map(sessionItem)) : empty('No session recorded yet. Run engram-ingestor quickstart.'));
};

function alphaSplit(alpha) {
  const a = Math.max(0, Math.min(1, alpha));
  return h('div', { class: 'split', role: 'img', 'aria-label': `baseline ${Math.round(a * 100)}%, predictor ${Math.round((1 - a) * 100)}%`, 'data-alpha': a },
    // A side with no share is left out (its padding would still show a sliver).
    a > 0 ? h('div', { class: 'b', style: `width:${a * 100}%` }, a > 0.12 ? `baseline ${Math.round(a * 100)}%` : '') : null,
    a < 1 ? h('div', { class: 'p', style: `width:${(1 - a) * 100}%` }, 1 - a > 0.12 ? `predictor ${Math.round((1 - a) * 100)}%` : '') : null);
}

function sessionItem(x) {
  return h('a', { class: 'item click', href: `#/session/${encodeURIComponent(x.session)}`, 'data-session': x.session },
    h('div', { class: 'row' }, h('strong', {}, x.project || x.harness), h('span', { class: 'muted small' }, `${when(x.started_at)} · ${dur(x.duration_ms)} · ${x.harness}`),
      h('span', { class: 'spacer' }),
      x.injected ? h('span', { class: `badge ${x.helped ? 'good' : ''}`, title: 'memories injected / judged helpful' }, `${x.injected} injected · ${x.helped} helped`) : null,
      x.memories_learned ? h('span', { class: 'badge' }, `${x.memories_learned} learned`) : null),
    h('div', { class: 't' }, x.summary || h('span', { class: 'muted' }, '(no prompt recorded)')));
}

views.search = async (params) => {
  const q = params.get('q') || '';
  const type = params.get('type') || '';
  const project = params.get('project') || '';
  const pr = await api('/api/projects');
  const input = h('input', { type: 'search', name: 'q', value: q, placeholder: 'Search memories: words, files, concepts…', 'aria-label': 'Search query', id: 'search-q', autocomplete: 'off' });
  const typeSel = h('select', { name: 'type', 'aria-label': 'Type' }, h('option', { value: '' }, 'All types'),
    ['fact', 'decision', 'preference', 'pattern', 'issue', 'context', 'correction', 'convention', 'gotcha', 'struggle'].map((t) => h('option', { value: t, selected: t === type }, t)));
  const projSel = h('select', { name: 'project', 'aria-label': 'Project' }, h('option', { value: '' }, 'All projects'),
    pr.projects.map((p) => h('option', { value: p.project, selected: p.project === project }, p.project)));
  const form = h('form', { class: 'row', role: 'search', onsubmit: (e) => { e.preventDefault(); go(`#/search${qs({ q: input.value.trim(), type: typeSel.value, project: projSel.value })}`); } },
    input, typeSel, projSel, h('button', { class: 'primary', type: 'submit' }, 'Search'));
  const out = h('div', { id: 'results' });
  const root = h('div', {}, h('h1', {}, 'Search'), form, out);
  setTimeout(() => input.focus(), 0);
  if (!q) {
    out.append(empty('Type a query and press Enter. Results show why each memory matched.'));
    return root;
  }
  try {
    const r = await api(`/api/search${qs({ q, type, project, limit: 30 })}`);
    out.append(h('p', { class: 'muted small' }, `${r.results.length} result(s) of ${r.candidates} candidates ranked in ${fmt(r.took_ms, 1)} ms`, r.model_version ? ` · model v${r.model_version}` : ' · baseline only'));
    if (!r.results.length) out.append(empty(`No memory matches “${q}”.`));
    out.append(h('div', { class: 'list' }, r.results.map((x, i) => h('div', { class: 'item click result', tabindex: 0, role: 'button', 'data-id': x.id,
      onclick: () => openMemory(x.id), onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); openMemory(x.id); } } },
    h('div', { class: 'row' }, h('strong', {}, `${i + 1}.`), typeBadge(x.type), x.pinned ? h('span', { class: 'badge good' }, 'pinned') : null,
      h('span', { class: 'muted small' }, x.project || ''), h('span', { class: 'spacer' }), h('span', { class: 'mono muted' }, `score ${fmt(x.score, 3)}`)),
    h('div', { class: 't' }, x.text),
    (x.tags || []).length ? h('div', {}, x.tags.map((t) => h('span', { class: 'tag' }, t))) : null,
    x.reasons.length ? h('ul', { class: 'reasons', 'aria-label': 'Why it matched' }, x.reasons.map((r) => h('li', {}, r))) : null))));
  } catch (e) { out.append(failure(e)); }
  return root;
};

views.timeline = async (params) => {
  const zoom = params.get('zoom') || 'week';
  const project = params.get('project') || '';
  const rail = h('div', { class: 'rail' });
  const more = h('button', { type: 'button', id: 'load-more' }, 'Load more');
  let next = null;
  const load = async () => {
    more.disabled = true;
    const r = await api(`/api/timeline${qs({ zoom, project, before: next, limit: 3 })}`);
    for (const w of r.windows) rail.append(windowEl(w, zoom));
    next = r.next_before;
    more.disabled = false;
    more.hidden = !next;
    if (!rail.children.length) rail.append(empty('No session recorded yet.'));
  };
  more.addEventListener('click', () => load().catch((e) => toast(e.message, true)));
  const seg = h('div', { class: 'seg', role: 'group', 'aria-label': 'Zoom' }, ['day', 'week', 'month'].map((z) =>
    h('button', { type: 'button', 'aria-pressed': z === zoom ? 'true' : 'false', onclick: () => go(`#/timeline${qs({ zoom: z, project })}`) }, z[0].toUpperCase() + z.slice(1))));
  await load();
  return h('div', {}, h('div', { class: 'row' }, h('h1', {}, 'Timeline'), h('span', { class: 'spacer' }), seg), rail, h('div', { style: 'margin-top:10px' }, more));
};

function windowEl(w, zoom) {
  return h('section', { class: 'win' }, h('h3', {}, w.label, h('span', { class: 'muted small' }, ` · ${w.sessions.length} session(s)`)),
    w.sessions.map((x) => blockEl(x, zoom)));
}

function blockEl(x, zoom) {
  const mini = h('div', { class: 'mini', hidden: true });
  const toggle = h('button', { type: 'button', 'aria-expanded': 'false', class: 'small' }, 'Expand');
  toggle.addEventListener('click', async () => {
    const open = toggle.getAttribute('aria-expanded') === 'true';
    toggle.setAttribute('aria-expanded', open ? 'false' : 'true');
    toggle.textContent = open ? 'Expand' : 'Collapse';
    mini.hidden = open;
    if (!open && !mini.children.length) {
      mini.append(h('span', { class: 'muted small' }, 'Loading…'));
      try {
        const d = await api(`/api/sessions/${encodeURIComponent(x.session)}?events=200`);
        mini.replaceChildren(...d.events_list.map((e) => eventButton(x.session, e)));
        if (!d.events_list.length) mini.append(empty('No event recorded.'));
        if (d.events > d.events_shown) mini.append(h('a', { href: `#/session/${encodeURIComponent(x.session)}`, class: 'small' }, `All ${d.events} events →`));
      } catch (e) { mini.replaceChildren(failure(e)); }
    }
  });
  return h('article', { class: 'block card', 'data-session': x.session },
    h('div', { class: 'head' }, h('strong', {}, zoom === 'day' ? time(x.started_at) : dayTime(x.started_at)), h('span', { class: 'muted small' }, dur(x.duration_ms)),
      h('a', { href: `#/session/${encodeURIComponent(x.session)}` }, x.project || x.harness), h('span', { class: 'spacer' }),
      h('span', { class: 'badge', title: 'events recorded' }, `${x.events} events`),
      x.injected ? h('span', { class: `badge ${x.helped ? 'good' : ''}` }, `${x.injected} injected · ${x.helped} helped`) : null,
      x.memories_learned ? h('span', { class: 'badge' }, `${x.memories_learned} learned`) : null, toggle),
    h('div', { class: 't' }, x.summary || h('span', { class: 'muted' }, '(no prompt recorded)')),
    x.files.length ? h('div', { class: 'small muted mono' }, x.files.slice(0, 4).join('  ·  '), x.files.length > 4 ? ` +${x.files.length - 4}` : '') : null,
    mini);
}

function eventButton(key, e) {
  return h('button', { type: 'button', class: `ev${e.error ? ' err' : ''}`, onclick: () => openEvent(key, e.lsn), 'data-lsn': e.lsn },
    h('span', { class: 'k' }, `${time(e.at)} ${e.kind}`), h('span', { class: 'x' }, e.tool && !(e.text || '').startsWith(e.tool) ? `${e.tool} ` : '', e.file || e.text || ''));
}

views.knowledge = async (params) => {
  const type = params.get('type') || '';
  const tag = params.get('tag') || '';
  const q = params.get('q') || '';
  const project = params.get('project') || '';
  const grid = h('div', { class: 'kgrid' });
  const more = h('button', { type: 'button' }, 'Load more');
  let offset = 0;
  let counts = {};
  const fetchPage = () => api(`/api/knowledge${qs({ type, project, tag, q, limit: 60, offset })}`);
  const load = async () => {
    more.disabled = true;
    const r = await fetchPage();
    const items = r.knowledge;
    counts = r.by_type || counts;
    for (const k of items) grid.append(kcard(k));
    offset += items.length;
    more.hidden = offset >= r.total;
    more.disabled = false;
    if (!grid.children.length) grid.append(empty('No memory matches these filters.'));
    return r;
  };
  const first = await load();
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const chipTypes = TYPES;
  const chips = h('div', { class: 'chips', role: 'group', 'aria-label': 'Type filter' },
    h('button', { type: 'button', class: 'chip', 'aria-pressed': !type ? 'true' : 'false', onclick: () => go(`#/knowledge${qs({ tag, q, project })}`) }, 'All', h('span', { class: 'c' }, total)),
    chipTypes.map((t) => h('button', { type: 'button', class: 'chip', 'data-type': t, 'aria-pressed': t === type ? 'true' : 'false', onclick: () => go(`#/knowledge${qs({ type: t, tag, q, project })}`) },
      t[0].toUpperCase() + t.slice(1), h('span', { class: 'c' }, counts[t] || 0))));
  const input = h('input', { type: 'search', value: q, placeholder: 'Filter by words…', 'aria-label': 'Filter by words' });
  const form = h('form', { class: 'row', onsubmit: (e) => { e.preventDefault(); go(`#/knowledge${qs({ type, tag, q: input.value.trim(), project })}`); } },
    input, h('button', { type: 'submit' }, 'Filter'), tag ? h('a', { class: 'chip', href: `#/knowledge${qs({ type, q, project })}`, 'aria-pressed': 'true' }, `tag: ${tag} ✕`) : null,
    h('span', { class: 'spacer' }), h('button', { type: 'button', class: 'primary', onclick: () => newMemory() }, '+ New memory'));
  more.addEventListener('click', () => load().catch((e) => toast(e.message, true)));
  return h('div', {}, h('h1', {}, 'Knowledge'), h('p', { class: 'muted small' }, `${first.total} item(s)`), chips, h('div', { style: 'margin:10px 0' }, form), grid, h('div', { style: 'margin-top:12px' }, more));
};

function kcard(k, onclick) {
  const kt = k.knowledge_type || knowledgeType(k.type);
  const conf = k.confidence !== undefined ? k.confidence : k.importance;
  return h('button', { type: 'button', class: `kcard ${kt}`, 'data-id': k.id, onclick: onclick || (() => openMemory(k.id)) },
    h('div', { class: 'row' }, typeBadge(k.type), k.pinned ? h('span', { class: 'badge good' }, 'pinned') : null,
      k.deprecated ? h('span', { class: 'badge warn' }, 'deprecated') : null, k.forgotten ? h('span', { class: 'badge bad' }, 'forgotten') : null,
      h('span', { class: 'spacer' }), k.edges ? h('span', { class: 'muted small' }, plural(k.edges, 'edge')) : null),
    h('div', { class: 't' }, k.text || k.content),
    h('div', { class: 'bar', title: `${k.confidence !== undefined ? 'confidence' : 'importance'} ${pct(conf)}` }, h('i', { style: `width:${Math.round((conf || 0) * 100)}%` })),
    h('div', { class: 'small muted' }, [`${k.confidence !== undefined ? 'confidence' : 'importance'} ${pct(conf)}`,
      k.sessions_injected ? `injected ${k.sessions_injected}×` : null, k.project].filter(Boolean).join(' · ')));
}

function newMemory() {
  panel.open({
    title: 'New memory',
    render: async () => {
      const text = h('textarea', { 'aria-label': 'Text', required: true, placeholder: 'A durable fact, convention or decision, self-contained.' });
      const type = h('select', { 'aria-label': 'Type' }, ['fact', 'decision', 'preference', 'pattern', 'issue', 'context', 'convention', 'correction', 'gotcha'].map((t) => h('option', { value: t }, t)));
      const tags = h('input', { placeholder: 'tags, comma separated', 'aria-label': 'Tags', class: 'wide' });
      const project = h('input', { placeholder: 'project (optional)', 'aria-label': 'Project', class: 'wide' });
      const err = h('p', { class: 'error', role: 'alert' });
      const form = h('form', { onsubmit: async (e) => {
        e.preventDefault();
        try {
          const r = await api('/api/memories', { method: 'POST', body: {
            text: text.value, type: type.value, project: project.value.trim() || null,
            tags: tags.value.split(',').map((t) => t.trim()).filter(Boolean),
          } });
          toast('Saved to memory');
          openMemory(r.id);
          if (currentView === 'knowledge') route();
        } catch (x) { err.textContent = x.message; }
      } }, h('div', { class: 'list' }, text, h('div', { class: 'row' }, type, tags), project, err, h('div', {}, h('button', { class: 'primary', type: 'submit' }, 'Save'))));
      setTimeout(() => text.focus(), 0);
      return form;
    },
  }, false);
}

views.sessions = async (params) => {
  const project = params.get('project') || '';
  const list = h('div', { class: 'list' });
  const more = h('button', { type: 'button' }, 'Load more');
  let before = null;
  const load = async () => {
    const r = await api(`/api/sessions${qs({ project, before, limit: 30 })}`);
    r.sessions.forEach((x) => list.append(sessionItem(x)));
    before = r.next_before;
    more.hidden = !before;
    if (!list.children.length) list.append(empty('No session recorded yet.'));
  };
  more.addEventListener('click', () => load().catch((e) => toast(e.message, true)));
  const [pr] = await Promise.all([api('/api/projects'), load()]);
  const select = h('select', { 'aria-label': 'Project', onchange: (e) => go(`#/sessions${qs({ project: e.target.value })}`) },
    h('option', { value: '' }, 'All projects'), pr.projects.map((p) => h('option', { value: p.project, selected: p.project === project }, p.project)));
  return h('div', {}, h('div', { class: 'row' }, h('h1', {}, 'Sessions'), h('span', { class: 'spacer' }), select),
    h('p', { class: 'muted small' }, 'What was injected into each session, and whether it helped.'), list, h('div', { style: 'margin-top:10px' }, more));
};

views.session = async (params, key) => {
  const d = await api(`/api/sessions/${encodeURIComponent(key)}?events=400`);
  const sc = d.score;
  const cmp = d.comparison;
  return h('div', {},
    h('p', {}, h('a', { href: '#/sessions' }, '← Sessions')),
    h('h1', {}, d.project || d.harness, h('span', { class: 'muted small' }, `  ${d.session}`)),
    h('p', { class: 'muted' }, `${when(d.started_at)} · ${dur(d.duration_ms)} · ${d.prompts} prompts · ${d.tool_calls} tool calls · ${d.edits} edits`,
      d.branch ? ` · branch ${d.branch}` : '', d.ended_at ? ` · ended (${d.end_reason || 'ended'})` : ' · not ended'),
    d.summary ? h('p', { class: 'card' }, d.summary) : null,
    h('div', { class: 'grid cols2' },
      h('div', { class: 'card' }, h('h2', { style: 'margin-top:0' }, 'Outcome'),
        sc ? h('dl', { class: 'kv' }, h('dt', {}, 'Continuity score'), h('dd', {}, fmt(sc.score)), h('dt', {}, 'Confidence'), h('dd', {}, fmt(sc.confidence)),
          h('dt', {}, 'Memories used'), h('dd', {}, `${sc.memories_used ?? '—'} of ${sc.memories_recalled ?? '—'} injected`),
          h('dt', {}, 'Re-explained'), h('dd', {}, sc.novel_context ?? '—'), h('dt', {}, 'Judge'), h('dd', {}, sc.scorer || '—'))
          : empty('Not scored yet (sessions are scored once they end, by engram-trainer run).'),
        sc && (sc.continuity_reasoning || sc.reasoning) ? h('details', {}, h('summary', {}, 'Judge reasoning'), h('pre', { class: 'text' }, sc.continuity_reasoning || sc.reasoning)) : null),
      h('div', { class: 'card' }, h('h2', { style: 'margin-top:0' }, 'Predictor vs baseline'),
        cmp ? h('dl', { class: 'kv' }, h('dt', {}, 'Winner'), h('dd', {}, cmp.margin > 1e-6 ? 'predictor' : cmp.margin < -1e-6 ? 'baseline' : 'tie'),
          h('dt', {}, 'NDCG@10'), h('dd', {}, `predictor ${fmt(cmp.predictor_ndcg, 3)} · baseline ${fmt(cmp.baseline_ndcg, 3)}`),
          h('dt', {}, 'Counted'), h('dd', {}, cmp.ema_updated ? 'updated the success rate' : 'excluded (low confidence)'),
          h('dt', {}, 'Audit'), h('dd', {}, h('a', { href: `#/predictor?audit=${encodeURIComponent(d.session)}` }, 'Comparison inspector →')))
          : empty('No comparison for this session.'))),
    h('h2', {}, `Injections (${d.rankings.length} rankings, ${d.injected} memories, ${d.helped} helped)`),
    d.rankings.length ? h('div', { class: 'list' }, d.rankings.map((r) => h('div', { class: 'item', 'data-ranking': r.ranking_id },
      h('div', { class: 'row' }, h('strong', {}, r.trigger), h('span', { class: 'muted small' }, `${when(r.at)} · α ${fmt(r.alpha)} · ${r.candidates} candidates`, r.model_version ? ` · v${r.model_version}` : '', r.cold_start ? ' · cold start' : '')),
      h('div', { class: 'small muted t' }, r.query),
      r.injected.length ? h('table', {}, r.injected.map((m) => h('tr', {},
        h('td', { class: 'num' }, `#${m.rank}`), h('td', {}, m.type ? typeBadge(m.type) : ''),
        h('td', {}, m.forgotten ? h('span', { class: 'muted' }, '(forgotten)') : h('button', { type: 'button', class: 'ghost small', style: 'font-size:13px;text-align:left', onclick: () => openMemory(m.memory_id) }, m.text)),
        h('td', {}, helpedBadge(m.outcome)), h('td', { class: 'small muted' }, m.outcome && m.outcome.fts_hits ? plural(m.outcome.fts_hits, 'FTS hit') : ''))))
        : h('p', { class: 'muted small' }, 'Nothing injected (no memory cleared the bar).')))) : empty('Nothing was served in this session.'),
    h('h2', {}, `Learned in this session (${d.learned.length})`),
    d.learned.length ? h('div', { class: 'list' }, d.learned.map((m) => h('button', { type: 'button', class: 'conn item', onclick: () => openMemory(m.id) }, typeBadge(m.type), h('span', { class: 'x' }, m.text)))) : empty('No memory learned here.'),
    h('h2', {}, `Events (${d.events_shown} of ${d.events})`),
    h('div', { class: 'mini' }, d.events_list.map((e) => eventButton(d.session, e))));
};

views.graph = async (params) => {
  const id = params.get('id');
  if (id) return graphAround(id, params.get('depth') || '');
  const r = await api(`/api/knowledge${qs({ connected: true, order: 'edges', limit: 24 })}`);
  return h('div', {}, h('h1', {}, 'Graph explorer'),
    h('p', { class: 'muted' }, 'Pick a memory to explore its connections: derivations, support, refinements, contradictions, replacements.'),
    h('div', { class: 'chips' }, Object.entries(r.edge_counts || {}).map(([k, n]) => h('span', { class: 'chip', 'data-relation': k }, k.replace(/_/g, ' '), h('span', { class: 'c' }, n)))),
    h('h2', {}, 'Most connected'),
    r.knowledge.length ? h('div', { class: 'kgrid' }, r.knowledge.map((k) => kcard(k, () => go(`#/graph${qs({ id: k.id })}`)))) : empty('No edge yet: memories get connected as they are saved (derived from, supports, refines…).'));
};

async function graphAround(id, depth) {
  const g = await api(`/api/knowledge/${encodeURIComponent(id)}/graph${qs({ depth })}`);
  const byId = Object.fromEntries(g.nodes.map((n) => [n.id, n]));
  const root = byId[g.root];
  const levels = [];
  for (const n of g.nodes) (levels[n.depth] = levels[n.depth] || []).push(n);
  const nodeBtn = (n) => h('button', { type: 'button', class: `kcard ${n.knowledge_type}${n.id === g.root ? ' focus' : ''}`, 'data-node': n.id,
    onclick: () => (n.id === g.root ? openMemory(n.id) : go(`#/graph${qs({ id: n.id, depth })}`)) },
    h('div', { class: 'row' }, typeBadge(n.type), n.deprecated ? h('span', { class: 'badge warn' }, 'deprecated') : null, h('span', { class: 'spacer' }), n.depth ? h('span', { class: 'muted small' }, `depth ${n.depth}`) : null),
    h('div', { class: 't' }, n.content));
  const edgeRow = (e) => h('tr', { 'data-edge': e.id },
    h('td', {}, h('a', { href: `#/graph${qs({ id: e.from, depth })}` }, (byId[e.from] || {}).content || e.from)),
    h('td', {}, h('span', { class: 'badge' }, e.relation.replace(/_/g, ' '))),
    h('td', {}, h('a', { href: `#/graph${qs({ id: e.to, depth })}` }, (byId[e.to] || {}).content || e.to)),
    h('td', { class: 'num' }, pct(e.strength)), h('td', { class: 'small muted' }, e.origin));
  const depthSel = h('select', { 'aria-label': 'Depth', onchange: (ev) => go(`#/graph${qs({ id, depth: ev.target.value })}`) },
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((d) => h('option', { value: d, selected: d === g.max_depth }, `depth ${d}`)));
  return h('div', {},
    h('p', {}, h('a', { href: '#/graph' }, '← Graph explorer')),
    h('div', { class: 'row' }, h('h1', {}, 'Around a memory'), h('span', { class: 'spacer' }), depthSel),
    h('p', { class: 'muted small' }, `${g.nodes.length} ${g.nodes.length === 1 ? 'memory' : 'memories'} · ${plural(g.edges.length, 'edge')}`,
      g.depth_limited ? ' · more beyond this depth' : '', g.truncated ? ' · cut at the width limit' : ''),
    root ? nodeBtn(root) : null,
    renderGraph(g),
    levels.slice(1).map((lv, i) => lv ? [h('h2', {}, `${i + 1} ${i ? 'edges' : 'edge'} away (${lv.length})`), h('div', { class: 'kgrid' }, lv.map(nodeBtn))] : null),
    g.edges.length ? [h('h2', {}, `Edges (${g.edges.length})`), h('table', { class: 'edges' }, h('tr', {}, h('th', {}, 'From'), h('th', {}, 'Relation'), h('th', {}, 'To'), h('th', {}, 'Strength'), h('th', {}, 'Origin')), g.edges.map(edgeRow))] : null);
}

views.staging = async () => {
  const [r, cv] = await Promise.all([api('/api/staging'), api('/api/conversations')]);
  const conflicts = r.staged.filter((e) => e.status === 'needs_clarification');
  const others = r.staged.filter((e) => e.status !== 'needs_clarification');
  return h('div', {}, h('h1', {}, 'Staging & conflicts'),
    h('div', { class: 'chips' }, Object.entries(r.counts || {}).map(([k, n]) => h('span', { class: 'chip' }, k.replace(/_/g, ' '), h('span', { class: 'c' }, n)))),
    h('h2', {}, `Conflicts (${conflicts.length})`),
    conflicts.length ? h('div', { class: 'list' }, conflicts.map(conflictEl)) : empty('No conflict waits for you.'),
    h('h2', {}, `Staged and resolved (${others.length})`),
    others.length ? h('div', { class: 'list' }, others.map(stagedEl)) : empty('The observation buffer is empty.'),
    h('h2', {}, `Stashed conversations (${cv.count})`),
    cv.conversations.length ? h('div', { class: 'list' }, cv.conversations.map(stashEl)) : empty('No stashed conversation.'),
    cv.checkpoints.length ? [h('h2', {}, `Checkpoints (${cv.checkpoints.length})`), h('div', { class: 'list' }, cv.checkpoints.map(checkpointEl))] : null);
};

function conflictEl(e) {
  const act = async (action) => {
    try {
      const r = await api(`/api/staging/${encodeURIComponent(e.id)}/resolve`, { method: 'POST', body: { action } });
      toast(`Resolved: ${action.replace('_', ' ')}${r.conflicts_left ? ` · ${r.conflicts_left} left` : ''}`);
      route();
    } catch (x) { toast(x.message, true); }
  };
  return h('div', { class: 'item conflict', 'data-stage': e.id },
    h('div', { class: 'row' }, h('strong', {}, 'Similar to an existing memory'), h('span', { class: 'badge warn' }, `${pct(e.similarity)} alike`),
      typeBadge(e.type), h('span', { class: 'muted small' }, `${e.source} · ${when(e.created_at)}`)),
    h('div', { class: 'side' },
      h('div', {}, h('div', { class: 'small muted' }, 'New'), h('div', { class: 't' }, e.content)),
      h('div', {}, h('div', { class: 'small muted' }, 'Existing'), e.conflict_with
        ? h('button', { type: 'button', class: 'ghost existing', style: 'text-align:left;font-size:inherit;padding:0', onclick: () => openMemory(e.conflict_with) }, e.conflict_content || e.conflict_with) : '—')),
    h('div', { class: 'row actions' },
      h('button', { type: 'button', 'data-action': 'merge', onclick: () => act('merge'), title: 'Same thing: the existing memory absorbs it' }, 'Same thing → merge'),
      h('button', { type: 'button', 'data-action': 'keep_both', onclick: () => act('keep_both'), title: 'A different thing: save it too' }, 'Keep both'),
      h('button', { type: 'button', 'data-action': 'replace', onclick: () => act('replace'), title: 'The new one replaces the old one, which is never injected again' }, 'Replace old'),
      h('button', { type: 'button', class: 'danger', 'data-action': 'skip', onclick: () => act('skip'), title: 'Do not save the new one' }, "Don't save")));
}

function stashEl(c) {
  return h('div', { class: 'item', 'data-conversation': c.id },
    h('div', { class: 'row' }, h('strong', {}, c.label), c.auto ? h('span', { class: 'badge' }, 'topic shift') : null,
      h('span', { class: 'muted small' }, `${c.project || ''} · stashed ${when(c.stashed_at)}`), h('span', { class: 'spacer' }), h('span', { class: 'mono muted small' }, c.id)),
    c.summary ? h('div', { class: 'small t' }, c.summary) : null,
    c.files.length ? h('div', { class: 'small muted mono' }, c.files.slice(0, 6).join(' · ')) : null,
    h('div', { class: 'small muted' }, `Resume with memory_resume("${c.id}")`, c.resume_command ? ` or ${c.resume_command}` : '',
      ' · ', h('a', { href: `#/session/${encodeURIComponent(c.session)}` }, 'session')));
}

function checkpointEl(c) {
  return h('div', { class: 'item', 'data-checkpoint': c.id },
    h('div', { class: 'row' }, h('strong', {}, c.label), c.auto ? h('span', { class: 'badge warn' }, c.trigger || 'auto') : null,
      h('span', { class: 'muted small' }, when(c.created_at)), h('span', { class: 'spacer' }), h('span', { class: 'mono muted small' }, c.id)));
}

function stagedEl(e) {
  return h('div', { class: 'item', 'data-stage': e.id },
    h('div', { class: 'row' }, h('span', { class: 'badge' }, (e.resolution || e.status).replace(/_/g, ' ')), typeBadge(e.type),
      h('span', { class: 'muted small' }, `${e.resolved_by ? `by ${e.resolved_by} · ` : ''}${when(e.updated_at)}`),
      e.result_id ? h('button', { type: 'button', class: 'ghost small', onclick: () => openMemory(e.result_id) }, 'open memory →') : null),
    h('div', { class: 't' }, e.content));
}

views.predictor = async (params) => {
  const [st, tr, cmps, lat, errs, drift] = await Promise.all([
    api('/api/predictor/status'), api('/api/predictor/training'), api('/api/predictor/comparisons?limit=500'),
    api('/api/analytics/latency'), api('/api/analytics/errors?limit=30'), api('/api/predictor/drift')]);
  const hl = st.health;
  const root = h('div', {},
    h('div', { class: 'row' }, h('h1', {}, 'Predictor'), h('span', { class: `health ${hl.status}`, 'data-health': hl.status }, `${hl.status.replace('_', ' ')} · ${fmt(hl.score)}`)),
    h('p', { class: 'mono' }, st.status_line));
  if (st.mode === 'collecting' || st.mode === 'warming' || st.mode === 'disabled') {
    const need = st.min_training_sessions, have = Math.min(st.scored_sessions, need);
    root.append(h('div', { class: 'card' }, h('h2', { style: 'margin-top:0' }, st.mode === 'collecting' ? 'Collecting training data' : st.mode === 'warming' ? 'Warming up (trained, not yet earning influence)' : 'Disabled'),
      h('p', {}, `${have}/${need} scored sessions`),
      h('div', { class: 'progress', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': need, 'aria-valuenow': have }, h('i', { style: `width:${(100 * have) / Math.max(need, 1)}%` })),
      h('p', { class: 'muted small' }, st.mode === 'collecting' ? `The first model trains after ${need} confidently scored sessions; until then the baseline ranks alone.`
        : st.mode === 'warming' ? 'The predictor earns influence once its success rate beats the baseline (> 0.4) over enough sessions.' : 'Turn predictor.enabled on in Settings.')));
  }
  root.append(h('div', { class: 'grid tiles', style: 'margin-top:12px' },
    statTile(fmt(st.success_rate), 'Success rate', 'EMA of wins over the baseline'),
    statTile(fmt(st.alpha), 'Alpha: baseline weight', st.cold_start ? 'cold start: baseline only' : 'earned influence'),
    statTile(st.model_version ? `v${st.model_version}` : 'none', 'Model', st.parameters ? `${st.parameters.toLocaleString()} parameters` : ''),
    statTile(st.comparisons, 'Comparisons', `${st.scored_sessions_any_confidence} sessions scored`),
    statTile(st.training_runs, 'Training runs', `${st.models_promoted} promoted`),
    statTile(st.drift_resets, 'Drift resets', `signal ${fmt(hl.scorer_drift_signal, 3)}`),
    statTile(hl.p95_score_latency_ms !== null ? `${fmt(hl.p95_score_latency_ms, 1)} ms` : '—', 'Scoring p95', `budget ${hl.score_budget_ms} ms`),
    statTile(st.last_run ? ago(st.last_run.at) : 'never', 'Last trained', st.last_run ? `loss ${fmt(st.last_run.loss, 3)}` : '')));
  if (hl.warnings.length) root.append(h('div', { class: 'card', role: 'alert', style: 'margin-top:12px' }, hl.warnings.map((w) => h('div', { class: 'badge warn' }, w))));
  root.append(h('h2', {}, 'Influence split'), alphaSplit(st.alpha));
  root.append(h('h2', {}, 'Win/loss, session by session'), winLoss(cmps.comparisons, tr.drift_resets));
  root.append(h('h2', {}, 'Training curve'), trainingCurve(tr));
  root.append(h('h2', {}, 'Canary NDCG@10'), canaryChart(tr.runs));
  root.append(h('h2', {}, 'Latency'), latencyEl(lat));
  root.append(h('div', { class: 'grid cols2' },
    h('div', {}, h('h2', {}, 'Per project'), projectsTable(st.projects)),
    h('div', {}, h('h2', {}, 'Calibration drift'), driftEl(drift))));
  root.append(h('h2', {}, 'Recent errors'), errorFeed(errs.errors));
  const audit = params.get('audit');
  if (audit) setTimeout(() => openAudit(audit), 0);
  return root;
};

function statTile(n, l, sub) {
  return h('div', { class: 'card tile' }, h('div', { class: 'n' }, n), h('div', { class: 'l' }, l), sub ? h('div', { class: 's' }, sub) : null);
}

function winLoss(list, drifts) {
  if (!list.length) return empty('No comparison yet: sessions are compared once they end and are scored.');
  const good = cssVar('--good'), bad = cssVar('--bad'), tie = cssVar('--tie'), acc = cssVar('--accent'), warn = cssVar('--warn');
  const marks = list.map((c, i) => {
    const color = c.winner === 'predictor' ? good : c.winner === 'baseline' ? bad : tie;
    return {
      x: i + 1, y: c.ema_updated ? Math.max(0, Math.min(1, (c.margin + 1) / 2)) : 0.5, color, hollow: !c.ema_updated, r: 4.5,
      cls: `cmp ${c.ema_updated ? c.winner : 'excluded'}`, data: { id: c.id, margin: c.margin.toFixed(4) },
      title: `${c.session}: predictor ${fmt(c.predictor_ndcg, 3)}, baseline ${fmt(c.baseline_ndcg, 3)}, margin ${c.margin >= 0 ? '+' : ''}${fmt(c.margin, 3)}${c.ema_updated ? '' : ' (excluded: low confidence)'}`,
      onclick: () => openComparison(c.id),
    };
  });
  const vlines = (drifts || []).map((d) => {
    const i = list.findIndex((c) => c.at_ms > d.at_ms);
    return { x: i < 0 ? list.length + 0.5 : i + 0.5, color: warn, title: `drift reset (success ${fmt(d.success_rate)})`, cls: 'drift' };
  });
  return h('div', { class: 'card' }, chart({
    id: 'winloss', label: 'win/loss timeline with success rate and alpha', x: [0.5, list.length + 0.5], y: [0, 1], marks, vlines,
    series: [
      { name: 'success rate', color: acc, points: list.map((c, i) => [i + 1, c.success_rate]), dots: false },
      { name: 'α', color: warn, points: list.map((c, i) => [i + 1, c.alpha]), dashed: true, dots: false },
    ],
    xLabel: 'scored session (dot height: (margin + 1) / 2; click a dot to inspect)',
  }), legend([[good, 'predictor won', true], [bad, 'baseline won', true], [tie, 'tie', true], ['transparent', '○ excluded (low confidence)'], [acc, 'success rate'], [warn, 'α (dashed) · drift reset']]));
}

function trainingCurve(tr) {
  const runs = tr.runs;
  if (!runs.length) return empty('No training run yet.');
  const acc = cssVar('--accent'), muted = cssVar('--tie'), good = cssVar('--good'), bad = cssVar('--bad'), warn = cssVar('--warn');
  const losses = runs.flatMap((r) => [r.loss, r.valid_loss]).filter((x) => x !== null && x !== undefined && Number.isFinite(x));
  const max = Math.max(...losses, 1e-3) * 1.15;
  const marks = runs.map((r, i) => ({
    x: i + 1, y: r.loss ?? 0, color: r.gates_passed ? good : bad, r: 5.5, shape: r.gates_passed ? 'circle' : 'x',
    cls: `run ${r.gates_passed ? 'promoted' : 'failed'}`, label: r.promoted ? `v${r.model_version}` : null,
    title: r.gates_passed ? `v${r.model_version} promoted: loss ${fmt(r.loss, 4)}, ${r.samples} lists, ${r.epochs} epochs, ${r.steps} steps`
      : `run for v${r.model_version} not promoted: ${r.failure || 'gates failed'}`,
  }));
  const vlines = tr.drift_resets.map((d) => {
    const i = runs.findIndex((r) => r.at_ms > d.at_ms);
    return { x: i < 0 ? runs.length + 0.5 : i + 0.5, color: warn, title: `drift reset (success ${fmt(d.success_rate)})`, cls: 'drift' };
  });
  return h('div', { class: 'card' }, chart({
    id: 'training', label: 'training and validation loss per run', x: [0.5, runs.length + 0.5], y: [0, max], vlines, marks,
    series: [
      { name: 'training loss', color: acc, points: runs.filter((r) => r.loss !== null).map((r) => [runs.indexOf(r) + 1, r.loss]), dots: false },
      { name: 'validation loss', color: muted, points: runs.filter((r) => r.valid_loss !== null).map((r) => [runs.indexOf(r) + 1, r.valid_loss]), dashed: true },
    ],
    xTicks: runs.length <= 20 ? runs.map((r, i) => ({ x: i + 1, label: when(r.at).split(',')[0] })) : [],
    xLabel: 'training run',
  }), legend([[acc, 'training loss'], [muted, 'validation loss (dashed)'], [good, 'promoted (version)', true], [bad, '✕ gates failed'], [warn, 'drift reset']]));
}

function canaryChart(runs) {
  const withCanary = runs.filter((r) => r.canary.candidate !== null || r.canary.serving !== null || r.canary.baseline !== null);
  if (!withCanary.length) return empty('No canary evaluation yet.');
  const acc = cssVar('--accent'), good = cssVar('--good'), muted = cssVar('--tie');
  const pts = (k) => runs.map((r, i) => [i + 1, r.canary[k]]).filter((p) => p[1] !== null && p[1] !== undefined);
  return h('div', { class: 'card' }, chart({
    id: 'canary', label: 'canary NDCG per run', x: [0.5, runs.length + 0.5], y: [0, 1],
    series: [{ name: 'candidate', color: acc, points: pts('candidate') }, { name: 'serving model', color: good, points: pts('serving') },
      { name: 'baseline', color: muted, points: pts('baseline'), dashed: true }],
    xLabel: 'training run',
  }), legend([[acc, 'candidate'], [good, 'serving model'], [muted, 'baseline (dashed)']]));
}

function latencyEl(lat) {
  if (!lat.operations.length) return empty('No latency recorded yet: hooks record theirs in logs/latency.jsonl as they run.');
  const acc = cssVar('--accent'), warn = cssVar('--warn'), bad = cssVar('--bad');
  return h('div', { class: 'grid cols2' }, lat.operations.map((o) => {
    const isScore = o.op.startsWith('score.');
    const color = isScore && o.p95_ms > lat.score_budget_ms ? bad : isScore && o.p95_ms > 0.8 * lat.score_budget_ms ? warn : acc;
    return h('div', { class: 'card', 'data-op': o.op },
      h('div', { class: 'row', style: 'flex-wrap:nowrap' }, h('strong', { class: 'mono' }, o.op), h('span', { class: 'spacer' }), sparkline(o.recent.map((r) => r[1]), color)),
      h('div', { class: 'small muted' }, `${o.count} sample${o.count === 1 ? '' : 's'} · p50 ${fmt(o.p50_ms, 1)} ms · p95 ${fmt(o.p95_ms, 1)} ms · p99 ${fmt(o.p99_ms, 1)} ms · max ${fmt(o.max_ms, 1)} ms`, o.failures ? ` · ${o.failures} failed` : ''),
      histogram(lat.buckets_ms, o.histogram, color));
  }));
}

function projectsTable(list) {
  if (!list.length) return empty('No comparison yet.');
  return h('table', {}, h('tr', {}, h('th', {}, 'Project'), h('th', { class: 'num' }, 'Compared'), h('th', { class: 'num' }, 'W/L/T'), h('th', { class: 'num' }, 'Win rate')),
    list.map((p) => h('tr', {}, h('td', {}, p.project), h('td', { class: 'num' }, `${p.compared}/${p.sessions}`), h('td', { class: 'num' }, `${p.wins}/${p.losses}/${p.ties}`), h('td', { class: 'num' }, fmt(p.win_rate)))));
}

function driftEl(d) {
  const pts = d.history.map((x, i) => [i + 1, x.signal]).filter((p) => p[1] !== null);
  return h('div', { class: 'card' }, h('p', { class: 'small muted' }, d.definition), h('p', {}, `Current signal: ${fmt(d.signal, 3)} · ${d.resets.length} reset(s)`),
    pts.length ? chart({ id: 'drift', w: 420, h: 160, label: 'drift signal per week', x: [0.5, 12.5], y: [Math.min(-0.5, ...pts.map((p) => p[1])), Math.max(0.5, ...pts.map((p) => p[1]))],
      series: [{ name: 'drift signal', color: cssVar('--warn'), points: pts }], xLabel: 'last 12 weeks' }) : empty('Not enough judged memories of both ages yet.'));
}

function errorFeed(list) {
  if (!list.length) return empty('No error recorded.');
  return h('table', { 'data-feed': 'errors' }, h('tr', {}, h('th', {}, 'When'), h('th', {}, 'Level'), h('th', {}, 'Stage'), h('th', {}, 'Message')),
    list.map((e) => h('tr', {}, h('td', { class: 'small' }, e.at ? when(e.at) : '—'), h('td', {}, h('span', { class: `badge ${e.level === 'ERROR' ? 'bad' : 'warn'}` }, e.level)),
      h('td', {}, e.stage), h('td', { class: 'small mono' }, e.message))));
}

function rankedList(title, list) {
  return h('div', {}, h('h3', {}, title), list.length ? h('ol', { style: 'padding-left:20px;margin:0' }, list.map((m) => h('li', { style: 'margin:4px 0' },
    m.type ? typeBadge(m.type) : null, ' ', m.forgotten ? h('span', { class: 'muted' }, '(forgotten)') : h('button', { type: 'button', class: 'ghost small', style: 'font-size:13px;text-align:left;padding:0', onclick: () => openMemory(m.id, true) }, m.text),
    h('div', { class: 'small muted' }, `label ${fmt(m.label)}`, m.injected ? ' · injected' : '', m.fts_hits ? ` · ${plural(m.fts_hits, 'FTS hit')}` : '')))) : empty('None.'));
}

function comparisonBody(c) {
  return h('div', {},
    h('dl', { class: 'kv' }, h('dt', {}, 'Session'), h('dd', {}, h('a', { href: `#/session/${encodeURIComponent(c.session)}` }, c.session)),
      h('dt', {}, 'Winner'), h('dd', {}, `${c.winner} (margin ${fmt(c.margin, 3)})`),
      h('dt', {}, 'NDCG@10'), h('dd', {}, `predictor ${fmt(c.predictor_ndcg, 3)} · baseline ${fmt(c.baseline_ndcg, 3)}`),
      h('dt', {}, 'Confidence gate'), h('dd', {}, c.confidence_gate.passed ? `passed (${fmt(c.confidence)} ≥ ${c.confidence_gate.min_confidence})` : `not passed: ${c.confidence_gate.why_not} (${fmt(c.confidence)})`),
      h('dt', {}, 'Success rate'), h('dd', {}, c.ema_updated ? `updated to ${fmt(c.success_rate)}` : `unchanged (${fmt(c.success_rate)})`),
      h('dt', {}, 'FTS overlap'), h('dd', {}, `${c.injected_matched_by_fts} of ${c.injected_total} injected also matched by FTS`)),
    h('div', { class: 'side' }, rankedList('Predictor ranked', c.predictor_top), rankedList('Baseline ranked', c.baseline_top)),
    c.fts_not_injected.length ? [h('h3', {}, 'Searched for but not injected'), h('ul', {}, c.fts_not_injected.map((m) => h('li', {}, m.text || m.id)))] : null,
    c.judge ? [h('h3', {}, 'Judge reasoning'), h('pre', { class: 'text' }, c.judge.continuity_reasoning || c.judge.reasoning || '(none recorded)')] : null);
}

function openComparison(id) {
  return panel.open({ title: 'Comparison inspector', render: async () => comparisonBody(await api(`/api/predictor/comparisons/${encodeURIComponent(id)}`)) }, false);
}

function openAudit(key) {
  return panel.open({ title: 'Session audit', render: async () => {
    const a = await api(`/api/predictor/audit/${encodeURIComponent(key)}`);
    return h('div', {}, a.comparison ? comparisonBody(a.comparison) : empty('This session has no comparison yet.'),
      h('h3', {}, `Candidates (${a.candidates.length})`),
      h('table', {}, h('tr', {}, h('th', {}, 'Rank'), h('th', {}, 'Pred.'), h('th', {}, 'Base.'), h('th', {}, 'Memory'), h('th', {}, 'Label')),
        a.candidates.slice(0, 40).map((c) => h('tr', {}, h('td', { class: 'num' }, c.rank), h('td', { class: 'num' }, c.predictor_rank ?? '—'), h('td', { class: 'num' }, c.baseline_rank ?? '—'),
          h('td', { class: 'mono small' }, c.memory_id, c.injected ? ' ●' : ''), h('td', {}, helpedBadge(c))))));
  } }, false);
}

views.settings = async () => {
  const d = await api('/api/config');
  const root = h('div', {}, h('h1', {}, 'Settings'),
    h('p', { class: 'muted small' }, `Written to ${d.file}${d.exists ? '' : ' (not created yet: every value is the default)'}. Your own comments in the file are kept.`));
  if (!d.valid) root.append(h('div', { class: 'card error', role: 'alert' }, `config.toml is not valid: ${d.error}. The defaults are shown; saving fixes the keys you change.`));
  const changed = new Map();
  const errors = new Map();
  const save = h('button', { type: 'button', class: 'primary', disabled: true, id: 'save-settings' }, 'Save changes');
  const status = h('span', { class: 'muted small', role: 'status' });
  const bar = h('div', { class: 'row card', style: 'position:sticky;top:58px;z-index:5;margin-bottom:12px' }, save, status, h('span', { class: 'spacer' }),
    h('a', { class: 'btn', href: '/api/export', download: 'engram-export.json' }, 'Export all data'));
  const mark = () => { save.disabled = changed.size === 0; status.textContent = changed.size ? `${changed.size} unsaved change(s)` : ''; };
  root.append(bar);
  for (const sec of d.sections) {
    const box = h('section', { class: 'card', style: 'margin-bottom:12px', 'data-section': sec.section }, h('h2', { style: 'margin-top:0' }, sec.title), sec.description ? h('p', { class: 'muted small' }, sec.description) : null);
    for (const f of sec.fields) box.append(fieldEl(f, changed, errors, mark));
    root.append(box);
  }
  root.append(h('section', { class: 'card', style: 'border-color:var(--bad)' }, h('h2', { style: 'margin-top:0;color:var(--bad)' }, 'Danger zone'),
    h('p', { class: 'muted small' }, 'Forgetting hides memories at once and erases their text from the tapes at the next compaction. Sessions stay: they are the tape log itself.'),
    h('button', { type: 'button', class: 'danger', onclick: async () => {
      if (!confirm('Forget EVERY memory? This cannot be undone.')) return;
      try { const r = await api('/api/data/knowledge?confirm=true', { method: 'DELETE' }); toast(`${r.forgotten} memories forgotten`); } catch (e) { toast(e.message, true); }
    } }, 'Forget all memories')));
  save.addEventListener('click', async () => {
    const body = Object.fromEntries(changed);
    save.disabled = true;
    try {
      await api('/api/config', { method: 'PUT', body });
      toast('Settings saved to config.toml');
      route();
    } catch (e) {
      status.textContent = '';
      toast(e.message, true);
      const key = Object.keys(body).find((k) => e.message.includes(k));
      const slot = key && errors.get(key);
      if (slot) slot.textContent = e.message;
      save.disabled = false;
    }
  });
  return root;
};

function fieldEl(f, changed, errors, mark) {
  const id = `f-${f.key.replace(/\./g, '-')}`;
  if (f.locked) {
    // Programs to run, endpoints and remote access: config.toml or the command line only.
    const shown = f.value === null || (Array.isArray(f.value) && f.value.length === 0) ? '(not set)' : JSON.stringify(f.value);
    return h('div', { class: 'field locked', 'data-key': f.key, 'data-locked': 'true' },
      h('label', { for: id }, f.key),
      h('div', { class: 'ctl' }, h('input', { id, class: 'wide mono', value: shown, readonly: true, 'aria-readonly': 'true' })),
      h('div', { class: 'd' }, f.description || '', h('span', { class: 'muted' }, `  ${f.locked_reason}`)));
  }
  const err = h('div', { class: 'e', role: 'alert' });
  errors.set(f.key, err);
  const row = h('div', { class: 'field', 'data-key': f.key });
  const set = (v) => {
    err.textContent = '';
    if (JSON.stringify(v) === JSON.stringify(f.value)) changed.delete(f.key); else changed.set(f.key, v);
    row.classList.toggle('changed', changed.has(f.key));
    mark();
  };
  let ctl;
  if (f.type === 'bool') {
    ctl = h('input', { type: 'checkbox', id, checked: !!f.value, onchange: (e) => set(e.target.checked) });
  } else if (f.type === 'integer' || f.type === 'float') {
    const step = f.type === 'integer' ? 1 : (f.max !== null && f.max <= 1 ? 0.01 : 0.1);
    const num = h('input', { type: 'number', id, value: f.value, step, min: f.min ?? null, max: f.max ?? null });
    const parse = (v) => (f.type === 'integer' ? parseInt(v, 10) : parseFloat(v));
    const parts = [num];
    if (f.min !== null && f.max !== null && f.max - f.min <= 1000 && f.type === 'float') {
      const range = h('input', { type: 'range', min: f.min, max: f.max, step, value: f.value, 'aria-label': `${f.key} slider`, tabindex: -1 });
      range.addEventListener('input', () => { num.value = range.value; set(parse(range.value)); });
      num.addEventListener('input', () => { range.value = num.value; });
      parts.unshift(range);
    }
    num.addEventListener('input', () => {
      const v = parse(num.value);
      if (Number.isNaN(v)) { err.textContent = 'a number is needed'; return; }
      if ((f.min !== null && v < f.min) || (f.max !== null && v > f.max)) { err.textContent = `must be from ${f.min} to ${f.max}`; changed.delete(f.key); mark(); return; }
      set(v);
    });
    ctl = h('div', { class: 'ctl' }, parts);
  } else if (f.type === 'list') {
    const ta = h('textarea', { id, rows: 2, placeholder: 'one per line' });
    ta.value = (f.value || []).join('\n');
    ta.addEventListener('input', () => set(ta.value.split('\n').map((x) => x.trim()).filter(Boolean)));
    ctl = ta;
  } else {
    const input = h('input', { id, class: 'wide', value: f.value ?? '', placeholder: f.value === null ? '(default)' : '' });
    input.addEventListener('input', () => set(input.value === '' && (f.type === 'path' || f.type === 'string?') ? null : input.value));
    ctl = input;
  }
  if (f.editable === false) {
    // A program or server a model runs on: config.toml or the CLI only.
    for (const el of [ctl, ...ctl.querySelectorAll('input, textarea')]) el.disabled = true;
    row.append(h('label', { for: id }, f.key), h('div', { class: 'ctl' }, ctl),
      h('div', { class: 'd' }, f.description || '', h('span', { class: 'muted' }, '  set in config.toml')), err);
    return row;
  }
  const reset = JSON.stringify(f.value) !== JSON.stringify(f.default)
    ? h('button', { type: 'button', class: 'small', onclick: () => { set(null); changed.set(f.key, null); row.classList.add('changed'); mark(); toast(`${f.key} will go back to its default (${JSON.stringify(f.default)})`); } }, 'Default')
    : null;
  row.append(h('label', { for: id }, f.key), h('div', { class: 'ctl' }, ctl, reset),
    h('div', { class: 'd' }, f.description || '', h('span', { class: 'muted' }, `  default ${JSON.stringify(f.default)}`)), err);
  return row;
}

// ---------------------------------------------------------------- router, theme, keys

let currentView = null;
let lastView = null;
let routeSeq = 0;

async function route() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [pathPart, query] = hash.split('?');
  const parts = pathPart.split('/').filter(Boolean).map(decodeURIComponent);
  let view = parts[0] || 'dashboard';
  const arg = parts.slice(1).join('/');
  if (!views[view]) view = 'dashboard';
  const params = new URLSearchParams(query || '');
  currentView = view;
  const navName = view === 'session' ? 'sessions' : view;
  document.querySelectorAll('#nav a').forEach((a) => a.setAttribute('aria-current', a.dataset.view === navName ? 'page' : 'false'));
  document.title = `Engram · ${navName[0].toUpperCase()}${navName.slice(1)}`;
  const main = document.getElementById('main');
  const seq = ++routeSeq;
  main.setAttribute('aria-busy', 'true');
  try {
    const el = await views[view](params, arg);
    if (seq !== routeSeq) return;
    el.dataset.view = view;
    main.replaceChildren(el);
    // A new view starts at its top (a filter of the same view keeps the place).
    if (view !== lastView) window.scrollTo(0, 0);
    lastView = view;
  } catch (e) {
    if (seq !== routeSeq) return;
    main.replaceChildren(failure(e));
  }
  main.removeAttribute('aria-busy');
  document.body.dataset.ready = view;
  firstView();
}

// The first view's data is in the DOM (`engram:ready`) and, a frame later,
// painted (`engram:painted`): what benches/benches/web_page.rs measures from
// navigation start.
function firstView() {
  if (performance.getEntriesByName('engram:ready').length) return;
  performance.mark('engram:ready');
  requestAnimationFrame(() => setTimeout(() => performance.mark('engram:painted'), 0));
}

function theme(next) {
  const t = next || localStorage.getItem('engram-theme') || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  document.documentElement.dataset.theme = t;
  localStorage.setItem('engram-theme', t);
  const b = document.getElementById('theme');
  if (b) b.setAttribute('aria-pressed', t === 'dark' ? 'true' : 'false');
}

function toggleTheme() {
  theme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark');
  if (['predictor'].includes(currentView)) route();
}

theme();
window.addEventListener('hashchange', () => { panel.close(); route().then(() => document.getElementById('main').focus({ preventScroll: true })); });
document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('theme').addEventListener('click', toggleTheme);
  route();
});
document.addEventListener('keydown', (e) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  if (e.key === 'Escape') {
    if (panel.isOpen()) { e.preventDefault(); panel.close(); }
    return;
  }
  // Backspace steps back along the panel's path (a chain walked step by step).
  if (e.key === 'Backspace' && !typing && panel.isOpen() && panel.stack.length > 1) {
    e.preventDefault();
    panel.back();
    return;
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === '/') { e.preventDefault(); const q = document.getElementById('search-q'); if (q) q.focus(); else go('#/search'); }
  if (e.key === 't') toggleTheme();
  // 1…9 open the views in the nav's order.
  if (/^[1-9]$/.test(e.key)) {
    const link = document.querySelectorAll('#nav a')[Number(e.key) - 1];
    if (link) { e.preventDefault(); go(link.getAttribute('href')); }
  }
});
