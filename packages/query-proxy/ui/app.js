// The query proxy's expression browser: instant queries as a table, range queries as a uPlot
// graph, and where the proxy sent each query (X-Cachemon-Route and Server-Timing headers).
// Plain ES module, no build step; uPlot is the global from ui/vendor/uPlot.iife.min.js.

const RANGES = {
  '5m': 300,
  '15m': 900,
  '1h': 3600,
  '6h': 21600,
  '1d': 86400,
  '1w': 604800,
  '2w': 1209600,
  '30d': 2592000,
  '1y': 31536000,
  '2y': 63072000,
};
const DECISIONS = {
  single: 'one group holds every series the query reads',
  several: 'sent to several groups, answers merged',
  none: 'no group holds the selected series',
  spanning: 'the query combines series held by different groups',
};
const GRAPH_HEIGHT = 320;

const $ = (id) => document.getElementById(id);
const els = {
  form: $('query-form'),
  query: $('query'),
  time: $('time'),
  range: $('range'),
  tabs: { table: $('tab-table'), graph: $('tab-graph') },
  panels: { table: $('panel-table'), graph: $('panel-graph') },
  table: $('result-table'),
  graph: $('graph'),
  graphEmpty: $('graph-empty'),
  error: $('error'),
  warnings: $('warnings'),
  route: $('route'),
};

let tab = 'table';
let controller;
let plot;

/** An element with optional class and children (strings become text nodes: never parsed as HTML). */
function h(tag, className, ...children) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  el.append(...children.filter((c) => c !== undefined && c !== null));
  return el;
}

/**
 * Parses a Server-Timing header value: comma-separated entries `name *(; param[=value])`, a value
 * being a token or a quoted string (which may hold commas, semicolons and \-escapes). The first
 * occurrence of a parameter wins; a malformed rest of an entry is skipped up to the next comma.
 */
export function parseServerTiming(header) {
  const entries = [];
  const n = header.length;
  let i = 0;
  const skipSpace = () => {
    while (i < n && (header[i] === ' ' || header[i] === '\t')) i++;
  };
  const token = () => {
    const start = i;
    while (i < n && !' \t,;="'.includes(header[i])) i++;
    return header.slice(start, i);
  };
  const value = () => {
    if (header[i] !== '"') return token();
    let out = '';
    for (i++; i < n && header[i] !== '"'; i++) {
      if (header[i] === '\\' && i + 1 < n) i++;
      out += header[i];
    }
    i++; // the closing quote
    return out;
  };
  while (i < n) {
    skipSpace();
    const name = token();
    const params = {};
    skipSpace();
    while (header[i] === ';') {
      i++;
      skipSpace();
      const key = token().toLowerCase();
      skipSpace();
      let val = '';
      if (header[i] === '=') {
        i++;
        skipSpace();
        val = value();
        skipSpace();
      }
      if (key && !(key in params)) params[key] = val;
    }
    while (i < n && header[i] !== ',') {
      if (header[i] === '"') value();
      else i++;
    }
    i++; // the comma
    if (!name) continue;
    const dur = params.dur === undefined || params.dur === '' ? undefined : Number(params.dur);
    entries.push({ name, desc: params.desc ?? '', dur: Number.isFinite(dur) ? dur : undefined });
  }
  return entries;
}

/** `name{label="value", ...}` as Prometheus prints a series. */
function seriesName(metric = {}) {
  const { __name__: name = '', ...labels } = metric;
  const pairs = Object.entries(labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return pairs.length || !name ? `${name}{${pairs.join(', ')}}` : name;
}

function formatMs(ms) {
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  return `${ms.toFixed(ms < 10 ? 2 : 1)} ms`;
}

function sampleText([, value]) {
  return typeof value === 'object' ? `histogram count=${value.count} sum=${value.sum}` : value;
}

function renderTable(data) {
  const rows = [];
  const result = data.result ?? [];
  if (data.resultType === 'scalar' || data.resultType === 'string') {
    rows.push([data.resultType, String(result[1])]);
  } else if (data.resultType === 'matrix') {
    for (const s of result) {
      const points = [...(s.values ?? []), ...(s.histograms ?? [])].sort((a, b) => a[0] - b[0]);
      rows.push([seriesName(s.metric), points.map((p) => `${sampleText(p)} @${p[0]}`).join('\n')]);
    }
  } else {
    for (const s of result) rows.push([seriesName(s.metric), sampleText(s.value ?? s.histogram ?? [])]);
  }
  const body = els.table.tBodies[0];
  if (rows.length === 0) {
    const cell = h('td', 'empty', 'No data');
    cell.colSpan = 2;
    body.replaceChildren(h('tr', null, cell));
  } else {
    body.replaceChildren(
      ...rows.map(([name, value]) => h('tr', null, h('td', 'series', name), h('td', 'value', value))),
    );
  }
}

function clearGraph() {
  plot?.destroy();
  plot = undefined;
  els.graph.replaceChildren();
  els.graphEmpty.hidden = true;
}

function renderGraph(data) {
  clearGraph();
  const series = data.resultType === 'matrix' ? data.result : [];
  if (series.length === 0) {
    els.graphEmpty.hidden = false;
    return;
  }
  // uPlot wants one shared x array: the union of every series' timestamps, null where one has none.
  const times = [...new Set(series.flatMap((s) => (s.values ?? []).map((p) => p[0])))].sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const columns = series.map((s) => {
    const column = new Array(times.length).fill(null);
    for (const [t, v] of s.values ?? []) {
      const x = Number(v);
      column[index.get(t)] = Number.isFinite(x) ? x : null;
    }
    return column;
  });
  const options = {
    width: els.graph.clientWidth,
    height: GRAPH_HEIGHT,
    scales: { x: { time: true } },
    axes: [{}, { size: 70 }],
    series: [
      { label: 'time' },
      ...series.map((s, i) => ({
        label: seriesName(s.metric),
        stroke: `hsl(${(i * 137.5) % 360}, 65%, 42%)`,
        width: 1.5,
      })),
    ],
  };
  plot = new globalThis.uPlot(options, [times, ...columns], els.graph);
}

function renderRoute(response, elapsedMs, data) {
  const decision = response?.headers.get('X-Cachemon-Route') ?? '';
  const timings = parseServerTiming(response?.headers.get('Server-Timing') ?? '');
  const count =
    data === undefined
      ? undefined
      : Array.isArray(data.result) && /^(vector|matrix)$/.test(data.resultType)
        ? data.result.length
        : 1;
  const summary = h(
    'p',
    'summary',
    h('span', 'label', 'decision '),
    h('strong', `decision ${decision}`, decision || '—'),
    DECISIONS[decision] ? h('span', 'hint', ` (${DECISIONS[decision]})`) : undefined,
    h('span', 'label', ' · round trip '),
    formatMs(elapsedMs),
    count === undefined ? undefined : h('span', 'label', ' · result '),
    count === undefined ? undefined : `${count} series`,
  );
  const groups = h('ul', 'groups');
  for (const { name, desc, dur } of timings) {
    const failedAt = desc.indexOf(' failed: ');
    const label = failedAt < 0 ? desc || name : desc.slice(0, failedAt);
    groups.append(
      h(
        'li',
        failedAt < 0 ? 'group' : 'group failed',
        h('span', 'name', label),
        h('span', 'dur', dur === undefined ? '' : formatMs(dur)),
        failedAt < 0 ? undefined : h('span', 'reason', `failed: ${desc.slice(failedAt + ' failed: '.length)}`),
      ),
    );
  }
  if (timings.length === 0)
    groups.append(h('li', 'group none', response ? 'no group was queried' : 'no answer from the proxy'));
  els.route.replaceChildren(h('h2', null, 'Route'), summary, groups);
  els.route.hidden = false;
}

function showError(title, message) {
  els.error.replaceChildren(h('strong', null, title), ' ', message);
  els.error.hidden = false;
}

function showWarnings(warnings) {
  const list = Array.isArray(warnings) ? warnings : [];
  els.warnings.replaceChildren(
    h('strong', null, list.length === 1 ? 'Warning' : 'Warnings'),
    h('ul', null, ...list.map((w) => h('li', null, String(w)))),
  );
  els.warnings.hidden = list.length === 0;
}

function evaluationTime() {
  const at = els.time.value ? new Date(els.time.value).getTime() : NaN;
  return Number.isFinite(at) ? at / 1000 : undefined;
}

function saveUrl() {
  const params = new URLSearchParams();
  if (els.query.value) params.set('q', els.query.value);
  params.set('tab', tab);
  params.set('range', els.range.value);
  if (els.time.value) params.set('time', els.time.value);
  history.replaceState(null, '', `${location.pathname}?${params}`);
}

// Callers need not wait or catch: a failed request is shown in the page.
async function run() {
  saveUrl();
  const query = els.query.value;
  if (!query.trim()) return;
  controller?.abort();
  const ctl = (controller = new AbortController());
  const params = new URLSearchParams({ query });
  let path = 'api/v1/query';
  if (tab === 'graph') {
    const range = RANGES[els.range.value] ?? 3600;
    const end = Math.floor(Date.now() / 1000);
    params.set('start', String(end - range));
    params.set('end', String(end));
    params.set('step', String(Math.max(Math.ceil(range / 250), 1)));
    path = 'api/v1/query_range';
  } else {
    const time = evaluationTime();
    if (time !== undefined) params.set('time', String(time));
  }
  document.body.classList.add('loading');
  els.form.setAttribute('aria-busy', 'true');
  const started = performance.now();
  let response;
  let body;
  let failure;
  try {
    response = await fetch(path, { method: 'POST', body: params, signal: ctl.signal });
    const text = await response.text();
    try {
      body = JSON.parse(text);
    } catch {
      failure = [`HTTP ${response.status}`, text.trim().slice(0, 500) || response.statusText];
    }
  } catch (err) {
    if (ctl.signal.aborted) return; // a newer run replaced this one
    failure = ['Network error', String(err?.message ?? err)];
  }
  const elapsed = performance.now() - started;
  if (!failure && body?.status !== 'success') {
    failure = [`HTTP ${response.status} · ${body?.errorType ?? 'error'}`, String(body?.error ?? JSON.stringify(body))];
  }
  els.error.hidden = true;
  showWarnings(body?.warnings);
  if (tab === 'graph') clearGraph();
  else els.table.tBodies[0].replaceChildren();
  if (failure) showError(...failure);
  else if (tab === 'graph') renderGraph(body.data);
  else renderTable(body.data);
  renderRoute(response, elapsed, failure ? undefined : body.data);
  controller = undefined;
  document.body.classList.remove('loading');
  els.form.removeAttribute('aria-busy');
  document.body.dataset.runs = String(Number(document.body.dataset.runs ?? 0) + 1);
}

function selectTab(name, runNow = true) {
  tab = name;
  for (const [key, button] of Object.entries(els.tabs)) {
    const selected = key === name;
    button.setAttribute('aria-selected', String(selected));
    button.tabIndex = selected ? 0 : -1;
    els.panels[key].hidden = !selected;
  }
  saveUrl();
  if (runNow && els.query.value.trim()) void run();
}

els.form.addEventListener('submit', (event) => {
  event.preventDefault();
  void run();
});
els.query.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    void run();
  }
});
for (const [name, button] of Object.entries(els.tabs)) {
  button.addEventListener('click', () => name !== tab && selectTab(name));
  button.addEventListener('keydown', (event) => {
    if (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight') return;
    const other = name === 'table' ? 'graph' : 'table';
    els.tabs[other].focus();
    selectTab(other);
  });
}
els.range.addEventListener('change', () => (tab === 'graph' ? void run() : saveUrl()));
els.time.addEventListener('change', () => (tab === 'table' ? void run() : saveUrl()));

let resizeFrame = 0;
window.addEventListener('resize', () => {
  cancelAnimationFrame(resizeFrame);
  resizeFrame = requestAnimationFrame(() => plot?.setSize({ width: els.graph.clientWidth, height: GRAPH_HEIGHT }));
});

const initial = new URLSearchParams(location.search);
els.query.value = initial.get('q') ?? '';
if (initial.get('range') in RANGES) els.range.value = initial.get('range');
if (initial.get('time')) els.time.value = initial.get('time');
selectTab(initial.get('tab') === 'graph' ? 'graph' : 'table', false);
if (els.query.value.trim()) void run();
