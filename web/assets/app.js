/* tftap serve: the pages. Plain JavaScript, no framework, no network but
 * this server. Every view has its own URL (client-side routing); lists are
 * paged from the JSON API (docs/web.md); values are parsed keeping numbers
 * as their exact text. */
'use strict';

const PAGE = 200;
const main = document.getElementById('main');
let view = null; /* the current view: {live()} called when the database changed */

/* ---- small helpers ---------------------------------------------------- */

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}

/* The token: given once in the URL `tftap serve` printed, kept in this
 * origin's storage (no cookie: cookies are not scoped by port, so every
 * other service on this host would be sent it, and could plant one), sent
 * as a header. Removed from the address bar and from history at once. */
const TOKEN_KEY = 'tftap_token';
let token = null;
(function takeToken() {
  const u = new URL(location.href);
  const t = u.searchParams.get('token');
  if (t) {
    try { sessionStorage.setItem(TOKEN_KEY, t); localStorage.setItem(TOKEN_KEY, t); } catch (e) { /* storage off: this tab only */ }
    token = t;
    u.searchParams.delete('token');
    history.replaceState(history.state, '', u.pathname + u.search + u.hash);
  } else {
    try { token = sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY); } catch (e) { token = null; }
  }
})();

class AuthError extends Error {}

async function apiText(path) {
  const r = await fetch('/api' + path, { credentials: 'omit', headers: { Accept: 'application/json', 'X-Tftap-Token': token || '' } });
  const text = await r.text();
  if (r.status === 401) throw new AuthError('this page needs the token: open the URL `tftap serve` printed (it carries it)');
  if (!r.ok) {
    let msg = 'HTTP ' + r.status;
    try { msg = JSON.parse(text).error || msg; } catch (e) { /* not JSON */ }
    throw new Error(msg);
  }
  return text;
}

async function api(path) {
  return parseJSON(await apiText(path));
}

function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}

function fmtTime(us) {
  if (!us) return '-';
  const d = new Date(us / 1000);
  const p = n => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' +
    p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
}

function fmtDur(a, b) {
  if (!a || !b || b < a) return '-';
  const d = b - a;
  if (d < 1000) return d + 'us';
  if (d < 1e6) return (d / 1000).toFixed(1) + 'ms';
  return (d / 1e6).toFixed(2) + 's';
}

function fmtBytes(n) {
  if (n < 1024) return n + ' B';
  if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
  return (n / 1048576).toFixed(1) + ' MiB';
}

function methodClass(rpc) {
  rpc = rpc || '';
  if (/^Plan/.test(rpc)) return 'm-plan';
  if (/^Apply/.test(rpc)) return 'm-apply';
  if (/^Read|^ImportResourceState|^MoveResourceState|^UpgradeResourceState/.test(rpc)) return 'm-read';
  if (/Schema|Metadata/.test(rpc)) return 'm-schema';
  if (/^Validate|^Configure|^PrepareProviderConfig/.test(rpc)) return 'm-config';
  return 'm-other';
}

/* What v_calls says: failed (error diagnostics, a failing status, never
 * answered), not recorded (no end, and the record has a gap), an expected close (go-plugin's teardown closing as a provider
 * exits, UNIMPLEMENTED from a method a provider may lack), in flight, ok.
 * Statuses by name. */
function statusOf(c, rej) {
  if (rej) return { cls: 's-err', short: 'rejected', text: 'core rejected its answer: ' + rej.rule + ' at ' + (rej.path || '(the object)') + ': ' + rej.message };
  const name = c.status_name || (c.status_code === null ? '' : 'status ' + c.status_code);
  const msg = c.status_message ? ': ' + c.status_message : '';
  if (c.failed) {
    if (c.status_code) return { cls: 's-err', short: name, text: 'failed: ' + name + msg };
    if (c.error_count) return { cls: 's-err', short: c.error_count + ' error' + (c.error_count === 1 ? '' : 's'), text: 'failed: ' + c.error_count + ' error diagnostic' + (c.error_count === 1 ? '' : 's') };
    return { cls: 's-err', short: 'no answer', text: 'failed: never answered' };
  }
  if (c.not_recorded) return { cls: 's-inflight', short: 'not recorded', text: 'not recorded: its answer was lost with what the record\'s gap counts (no failure of the provider\'s)' };
  if (c.teardown) return { cls: 's-closed', short: 'closed', text: 'closed as the provider exited' + (c.status_code ? ' (' + name + ')' : '') };
  if (c.expected_close) return { cls: 's-closed', short: 'closed', text: 'expected close: ' + name + ', a method this provider lacks and core does without' };
  if (c.ended_us === null || c.status_code === null) return { cls: 's-inflight', short: 'in flight', text: 'in flight' };
  if (c.status_code === 0) return { cls: 's-ok', short: 'ok', text: 'ok' + (c.warning_count ? ' (' + c.warning_count + ' warning' + (c.warning_count === 1 ? '' : 's') + ')' : '') };
  return { cls: 's-err', short: name, text: name + msg };
}

function runLink(id) { return '/runs/' + id; }
function callLink(run, id) { return '/runs/' + run + '/calls/' + id; }
function resourceLink(run, addr) { return '/runs/' + run + '/resources/' + encodeURIComponent(addr); }
function historyLink(addr) { return '/history/' + encodeURIComponent(addr); }

function showError(where, err) {
  where.append(el('p', { class: 'error-box', role: 'alert', text: String(err.message || err) }));
}

/* ---- exact JSON: numbers stay text ------------------------------------ */

/* A number the API sent that a double would change (beyond 2^53, more
 * digits than a double holds, -1e+400): kept as its source text. Numbers a
 * double holds exactly (ids, counts, times) stay numbers. */
class Exact {
  constructor(s) { this.s = s; }
  toString() { return this.s; }
  toJSON() { return JSON.rawJSON ? JSON.rawJSON(this.s) : this.s; }
}

const sourceTextReviver = (() => {
  try { let ok = false; JSON.parse('1', (k, v, ctx) => { ok = !!(ctx && ctx.source === '1'); return v; }); return ok; } catch (e) { return false; }
})();

/* API answers parsed with every number exact: with the browser's own
 * parser where it hands a reviver the source text, else with parseExact. */
function parseJSON(text) {
  if (sourceTextReviver)
    return JSON.parse(text, (k, v, ctx) => (typeof v === 'number' && ctx && ctx.source !== undefined && String(v) !== ctx.source ? new Exact(ctx.source) : v));
  return toJS(parseExact(text));
}

function toJS(n) {
  switch (n.t) {
    case 'obj': { const o = {}; for (const [k, v] of n.m) o[k] = toJS(v); return o; }
    case 'arr': return n.v.map(toJS);
    case 'num': { const x = Number(n.s); return String(x) === n.s ? x : new Exact(n.s); }
    case 'str': case 'bool': return n.v;
    default: return null;
  }
}

/* A decoded value as one line for a person: exact numbers, markers as
 * words ("(sensitive value)", "(known after apply)"). */
function showValue(v) {
  if (v === undefined) return '-';
  if (v === null) return 'null';
  if (v instanceof Exact) return v.s;
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v !== 'object') return String(v);
  if (Array.isArray(v)) return '[' + v.map(showValue).join(', ') + ']';
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === '$sensitive') return '(sensitive value)';
  if (keys.length === 1 && keys[0] === '$unknown') return '(known after apply)';
  return '{' + keys.map(k => JSON.stringify(k) + ': ' + showValue(v[k])).join(', ') + '}';
}


function parseExact(text) {
  let i = 0;
  const MAX_DEPTH = 512;
  const fail = msg => { throw new Error('malformed JSON at ' + i + ': ' + msg); };
  const ws = () => { while (i < text.length && ' \t\r\n'.includes(text[i])) i++; };
  function str() {
    let out = '';
    i++;
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const ch = text[i++];
      if (ch === '"') return out;
      if (ch !== '\\') { out += ch; continue; }
      const e = text[i++];
      if (e === 'u') {
        const h = text.substr(i, 4);
        if (!/^[0-9a-fA-F]{4}$/.test(h)) fail('bad escape');
        out += String.fromCharCode(parseInt(h, 16));
        i += 4;
      } else {
        const m = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }[e];
        if (m === undefined) fail('bad escape');
        out += m;
      }
    }
  }
  function value(depth) {
    if (depth > MAX_DEPTH) fail('nested too deeply');
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      const m = [];
      ws();
      if (text[i] === '}') { i++; return { t: 'obj', m }; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a member name');
        const k = str();
        ws();
        if (text[i++] !== ':') fail('expected :');
        m.push([k, value(depth + 1)]);
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return { t: 'obj', m }; }
        fail('expected , or }');
      }
    }
    if (ch === '[') {
      i++;
      const v = [];
      ws();
      if (text[i] === ']') { i++; return { t: 'arr', v }; }
      for (;;) {
        v.push(value(depth + 1));
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return { t: 'arr', v }; }
        fail('expected , or ]');
      }
    }
    if (ch === '"') return { t: 'str', v: str() };
    const num = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 4096));
    if (num && num[0]) { i += num[0].length; return { t: 'num', s: num[0] }; }
    for (const [w, node] of [['true', { t: 'bool', v: true }], ['false', { t: 'bool', v: false }], ['null', { t: 'null' }]]) {
      if (text.startsWith(w, i)) { i += w.length; return node; }
    }
    fail('unexpected character');
  }
  const v = value(0);
  ws();
  if (i !== text.length) fail('trailing characters');
  return v;
}

function toText(n, ind) {
  ind = ind || '';
  const next = ind + '  ';
  switch (n.t) {
    case 'obj':
      if (!n.m.length) return '{}';
      return '{\n' + n.m.map(([k, v]) => next + JSON.stringify(k) + ': ' + toText(v, next)).join(',\n') + '\n' + ind + '}';
    case 'arr':
      if (!n.v.length) return '[]';
      return '[\n' + n.v.map(v => next + toText(v, next)).join(',\n') + '\n' + ind + ']';
    case 'num': return n.s;
    case 'str': return JSON.stringify(n.v);
    case 'bool': return n.v ? 'true' : 'false';
    default: return 'null';
  }
}

function member(n, key) {
  if (!n || n.t !== 'obj') return null;
  const m = n.m.find(([k]) => k === key);
  return m ? m[1] : null;
}

/* {"$unknown": {...}} with refinements, {"$sensitive": "hmac-sha256:..."} */
function marker(n) {
  if (!n || n.t !== 'obj' || n.m.length !== 1) return null;
  const [k, v] = n.m[0];
  if (k === '$unknown') {
    const parts = [];
    if (v.t === 'obj') {
      for (const [rk, rv] of v.m) {
        if (rk === 'null') parts.push(rv.t === 'bool' && !rv.v ? 'not null' : 'may be null');
        else if (rk === 'prefix') parts.push('prefix ' + JSON.stringify(rv.v));
        else if ((rk === 'lower' || rk === 'upper') && rv.t === 'arr' && rv.v.length === 2)
          parts.push((rk === 'lower' ? '>' : '<') + (rv.v[1].v ? '= ' : ' ') + toText(rv.v[0]));
        else if (rk === 'min_len' || rk === 'max_len') parts.push(rk.replace('_len', ' length') + ' ' + toText(rv));
      }
    }
    return el('span', { class: 'unknown', title: 'unknown value' },
      '(known after apply' + (parts.length ? ': ' + parts.join(', ') : '') + ')');
  }
  if (k === '$sensitive') {
    return el('span', { class: 'sensitive', title: 'redacted: ' + String(v.v || '') }, '(sensitive value)');
  }
  return null;
}

function scalar(n) {
  switch (n.t) {
    case 'num': return el('span', { class: 'j-num' }, n.s);
    case 'str': return el('span', { class: 'j-str' }, JSON.stringify(n.v));
    case 'bool': return el('span', { class: 'j-bool' }, n.v ? 'true' : 'false');
    default: return el('span', { class: 'j-null' }, 'null');
  }
}

function tree(n, key, depth) {
  const label = key !== null ? [el('span', { class: 'key' }, key), ': '] : [];
  const mk = marker(n);
  if (mk) return el('div', { class: 'kv' }, label, mk);
  if (n.t !== 'obj' && n.t !== 'arr') return el('div', { class: 'kv' }, label, scalar(n));
  const kids = n.t === 'obj' ? n.m : n.v.map((v, i) => ['[' + i + ']', v]);
  const open = n.t === 'obj' ? '{' : '[';
  const close = n.t === 'obj' ? '}' : ']';
  if (!kids.length) return el('div', { class: 'kv' }, label, open + close);
  const d = el('details', depth < 3 ? { open: true } : {},
    el('summary', {}, label, open, el('span', { class: 'muted' }, ' ' + kids.length + (n.t === 'obj' ? ' keys' : ' items') + ' '), close));
  /* Children render when opened: a state of thousands of values stays cheap. */
  let filled = false;
  const fill = () => {
    if (filled) return;
    filled = true;
    for (const [k, v] of kids) d.append(tree(v, n.t === 'obj' ? JSON.stringify(k) : k, depth + 1));
  };
  if (d.open) fill();
  d.addEventListener('toggle', fill);
  return d;
}

function valueBlock(title, text) {
  const box = el('section', { class: 'value' }, el('h2', {}, title));
  if (text === null || text === undefined) {
    box.append(el('p', { class: 'muted' }, 'not recorded'));
    return box;
  }
  let node;
  try { node = parseExact(text); } catch (e) {
    box.append(el('p', { class: 'error-box', text: String(e.message) }), el('pre', {}, text));
    return box;
  }
  const pretty = () => toText(node);
  const status = el('span', { class: 'muted', role: 'status' });
  box.append(el('div', { class: 'toolbar' },
    el('button', {
      type: 'button', onclick: async () => {
        try { await navigator.clipboard.writeText(pretty()); status.textContent = 'copied'; } catch (e) { status.textContent = 'copy failed: ' + e.message; }
      }
    }, 'Copy as JSON'), status));
  box.append(el('div', { class: 'tree mono' }, tree(node, null, 0)));
  box.tftapNode = node;
  return box;
}

/* ---- views ------------------------------------------------------------ */

function setView(v, title) {
  view = v;
  document.title = title ? title + ' · tftap' : 'tftap';
}

function moreButton(label, fn) {
  const b = el('button', { type: 'button', class: 'more' }, label);
  b.addEventListener('click', fn);
  return b;
}

/* One argument as a POSIX shell reads it back: bare when it has nothing
 * the shell would treat specially, else in single quotes. */
function shellQuote(a) {
  a = typeof a === 'string' ? a : showValue(a);
  if (a !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(a)) return a;
  return "'" + a.replace(/'/g, "'\\''") + "'";
}

/* The command as it can be pasted into a shell. */
function commandLine(r) {
  const args = Array.isArray(r.args) ? r.args : [];
  const words = (r.command ? [r.command] : []).concat(args);
  return words.map(shellQuote).join(' ');
}

/* The runs list's verdict: ok or FAILED and why, counted (the verdict is
 * the API's, analysis_run_verdict: the same the CLI prints). */
/* Answers core rejects: the list may be cut short (rejected_count says). */
function rejectedCount(v) { return v.rejected_count !== undefined ? v.rejected_count : v.rejected.length; }

function verdictReasons(v) {
  const out = [];
  if (v.exit_code !== null && v.exit_code !== 0) out.push('exit ' + v.exit_code);
  if (rejectedCount(v)) out.push(rejectedCount(v) + ' rejected');
  if (v.failed_calls) out.push(v.failed_calls + ' failed call' + (v.failed_calls === 1 ? '' : 's'));
  if (v.records_lost) out.push(v.records_lost + ' lost');
  return out;
}

function verdictCell(r) {
  const v = r.verdict;
  if (!r.ended_us) return el('span', { class: 'status-inflight' }, 'recording');
  if (!v) return '-';
  if (v.running) return el('span', { class: 'status-inflight' }, 'running');
  if (v.failed) return el('span', { class: 'status-err', title: verdictReasons(v).join('; ') }, 'FAILED', el('span', { class: 'reasons' }, ' ' + verdictReasons(v).join(', ')));
  const notes = [];
  if (v.failed_calls) notes.push(v.failed_calls + ' failed, carried on');
  if (v.records_lost) notes.push(v.records_lost + ' lost');
  return el('span', { class: 'status-ok' }, 'ok', notes.length ? el('span', { class: 'reasons muted' }, ' ' + notes.join(', ')) : '');
}

function findingsText(v) {
  if (!v) return 'check';
  if (!v.checked) return 'check';
  const n = rejectedCount(v) + v.tolerated + v.unconfirmed;
  return n ? n + ' finding' + (n === 1 ? '' : 's') : 'none';
}

async function runsView() {
  setView(null, 'Runs');
  const filter = el('input', { type: 'search', id: 'runs-filter', placeholder: 'command, version, id…', 'aria-label': 'filter runs' });
  const tbody = el('tbody');
  const table = el('table', { class: 'runs' },
    el('thead', {}, el('tr', {}, ['Run', 'Verdict', 'Command', 'Directory', 'CLI', 'Started', 'Duration', 'Exit', 'Calls', 'Lost', 'Findings'].map(h => el('th', {}, h)))),
    tbody);
  const more = el('div');
  main.replaceChildren(el('h1', {}, 'Runs'), el('div', { class: 'filters' }, el('label', {}, 'Filter', filter)), table, more);
  const rows = new Map();
  let next = null;
  const apply = () => {
    const q = filter.value.trim().toLowerCase();
    for (const tr of tbody.children) tr.hidden = q && !tr.dataset.text.includes(q);
  };
  filter.addEventListener('input', apply);
  const rowOf = r => {
    /* An acceptance test's step run reads TEST / step N / COMMAND first. */
    const step = r.parent_id || r.test ? (r.test || '(test not known)') + ' / step ' + (r.step || '?') + ' / ' +
      (subcommand(r) || '-') + (r.parent_id ? ' (run #' + r.parent_id + ')' : '') + ': ' : '';
    const cmd = commandLine(r);
    const v = r.verdict || null;
    const tr = el('tr', { class: (r.ended_us ? '' : 'running') + (v && v.failed ? ' failed' : ''), 'data-run': r.id },
      el('td', {}, el('a', { href: runLink(r.id) }, '#' + r.id)),
      el('td', { class: 'verdict-cell' }, verdictCell(r)),
      el('td', { class: 'mono cmd', title: cmd }, step ? el('span', { class: 'step' }, step) : '', cmd || el('span', { class: 'muted' }, '(wrapped provider)')),
      el('td', { class: 'mono cwd', title: r.cwd || '' }, r.cwd || '-'),
      el('td', {}, [r.cli_name, r.cli_version].filter(Boolean).join(' ') || '-'),
      el('td', {}, fmtTime(r.started_us)),
      el('td', {}, r.ended_us ? fmtDur(r.started_us, r.ended_us) : 'running'),
      el('td', { class: r.exit_code ? 'status-err' : '' }, exitText(r)),
      el('td', {}, String(r.calls)),
      el('td', { class: r.dropped ? 'status-err' : '' }, String(r.dropped)),
      el('td', {}, el('a', { href: '/check/' + r.id, title: 'tftap check ' + r.id }, findingsText(v))));
    tr.dataset.text = ('#' + r.id + ' ' + step + cmd + ' ' + (r.cwd || '') + ' ' + (r.cli_name || '') + ' ' + (r.cli_version || '')).toLowerCase();
    tr.dataset.key = [r.ended_us, r.exit_code, r.calls, r.dropped, r.processes].join(',');
    tr.tftapRun = r;
    return tr;
  };
  const put = (list, atTop) => {
    for (const r of list) {
      const tr = rowOf(r);
      const old = rows.get(r.id);
      if (old && old.outerHTML === tr.outerHTML) continue; /* keep focus and pointer targets */
      if (old) old.replaceWith(tr);
      else if (atTop) tbody.prepend(tr);
      else tbody.append(tr);
      rows.set(r.id, tr);
    }
    apply();
  };
  const load = async () => {
    const d = await api('/runs' + qs({ before: next, limit: 50, verdict: 1 }));
    put(d.runs, false);
    next = d.next;
    more.replaceChildren(next ? moreButton('Load older runs', load) : '');
    if (!rows.size) more.replaceChildren(el('p', { class: 'muted' }, 'No runs recorded yet: record one with tftap run -- tofu plan. It appears here as it runs.'));
  };
  try { await load(); } catch (e) { showError(main, e); }
  setView({
    live: async () => {
      /* New runs and the newest ones' counts: the first page again, and
       * the verdicts of those that are new or changed only (a verdict is
       * an analysis: not one per row per change). */
      const d = await api('/runs' + qs({ limit: 20 }));
      const key = r => [r.ended_us, r.exit_code, r.calls, r.dropped, r.processes].join(',');
      for (const r of d.runs) {
        const old = rows.get(r.id);
        if (!r.ended_us) continue; /* still recording: no verdict yet */
        if (old && old.dataset.key === key(r) && old.tftapRun && old.tftapRun.verdict) { r.verdict = old.tftapRun.verdict; continue; }
        r.verdict = (await api('/runs/' + r.id + '/verdict?lazy=1')).verdict;
      }
      const fresh = d.runs.filter(r => !rows.has(r.id)).reverse();
      put(d.runs.filter(r => rows.has(r.id)), false);
      put(fresh, true);
      if (rows.size) more.querySelector('p') && more.replaceChildren(next ? moreButton('Load older runs', load) : '');
    }
  }, 'Runs');
}

function runHeader(d) {
  const r = d.run;
  return el('dl', { class: 'facts' },
    el('dt', {}, 'Command'), el('dd', { class: 'mono', id: 'run-command' }, commandLine(r) || '(wrapped provider)'),
    el('dt', {}, 'Directory'), el('dd', { class: 'mono', id: 'run-cwd' }, r.cwd || '-'),
    el('dt', {}, 'CLI'), el('dd', {}, [r.cli_name, r.cli_version].filter(Boolean).join(' ') || '-'),
    r.parent_id ? el('dt', {}, 'Test') : null,
    r.parent_id ? el('dd', {}, (r.test || '(test not known)') + ' / step ' + (r.step || '?') + ' of ',
      el('a', { href: runLink(r.parent_id) }, '#' + r.parent_id)) : null,
    el('dt', {}, 'Started'), el('dd', {}, fmtTime(r.started_us)),
    el('dt', {}, 'Duration'), el('dd', {}, r.ended_us ? fmtDur(r.started_us, r.ended_us) : 'running'),
    el('dt', {}, 'Exit code'), el('dd', { class: r.exit_code ? 'status-err' : '' }, exitText(r)),
    el('dt', {}, 'Calls'), el('dd', {}, String(r.calls) + ' in ' + r.processes + ' provider process' + (r.processes === 1 ? '' : 'es') +
      (r.dropped ? ', ' + r.dropped + ' records lost' : '')));
}

/* A change's text coloured as tofu prints it: + green, - red, ~ yellow,
 * -/+ and +/- both. */
function planText(text) {
  const pre = el('pre', { class: 'plan' });
  for (const line of text.split('\n')) {
    const m = /^(\s*)(-\/\+|\+\/-|[+~-])( .*)$/.exec(line);
    if (m) {
      const cls = m[2] === '+' ? 'p-add' : m[2] === '-' ? 'p-del' : m[2] === '~' ? 'p-upd' : 'p-rep';
      pre.append(m[1], el('span', { class: cls }, m[2]), m[3], '\n');
    } else {
      pre.append(line + '\n');
    }
  }
  return pre;
}

/* Plan-like changes, collapsible per address, paged. */
function changesSection(run, filter) {
  const box = el('section', { class: 'changes' });
  const list = el('div');
  const summary = el('p', { class: 'muted' });
  const more = el('div');
  const all = el('input', { type: 'checkbox', id: 'changes-all' });
  box.append(el('h2', {}, 'Resource changes'),
    el('div', { class: 'toolbar' }, el('label', {}, all, ' also no-op changes, applied plans and reads')), summary, list, more);
  let offset = 0;
  const load = async reset => {
    if (reset) { offset = 0; list.replaceChildren(); }
    const d = await api('/runs/' + run + '/changes' + qs({ offset, limit: 20, filter, all: all.checked ? 1 : '' }));
    for (const c of d.changes) {
      const act = c.action;
      const what = c.address || (c.type_name + ' (address unknown)');
      list.append(el('details', { class: 'change', open: true, 'data-address': c.address || '', 'data-call': c.call_id },
        el('summary', {}, el('strong', { class: 'act-' + act }, act), ' ',
          c.address ? el('a', { href: resourceLink(run, c.address) }, what) : what,
          ' ', el('a', { class: 'muted', href: callLink(run, c.call_id) }, c.rpc + ' #' + c.call_id),
          c.status_code ? el('span', { class: 'status-err' }, ' ' + (c.status_name || 'status ' + c.status_code)) : ''),
        planText(c.text)));
    }
    if (box.rejected) box.mark(box.rejected);
    offset = d.next || offset;
    const k = d.counts;
    summary.textContent = d.total ? d.total + ' change' + (d.total === 1 ? '' : 's') + ': ' + k.create + ' to create, ' + k.update + ' to update, ' +
      k.replace + ' to replace, ' + k.delete + ' to destroy' + (k.read ? ', ' + k.read + ' read' : '') + (k.noop ? ', ' + k.noop + ' no-op' : '') +
      (d.skipped ? ' (' + d.skipped + ' no-op, read or applied plan not shown)' : '')
      : 'No resource changes' + (d.skipped ? ' (' + d.skipped + ' no-op, read or applied plan not shown)' : '') + '.';
    more.replaceChildren(d.next ? moreButton('More changes', () => load(false)) : '');
  };
  all.addEventListener('change', () => load(true).catch(e => showError(box, e)));
  box.reload = () => load(true);
  /* Changes whose answer core rejected: said on the change, in red. */
  box.mark = rejected => {
    for (const d of list.querySelectorAll('details.change')) {
      const f = rejected.get(Number(d.dataset.call));
      if (!f || d.querySelector('.rejected-note')) continue;
      d.classList.add('rejected');
      d.querySelector('summary').append(el('span', { class: 'status-err rejected-note' }, ' core rejected this answer: ' + f.rule + ' at ' + (f.path || '(the object)')));
    }
  };
  load(true).catch(e => showError(box, e));
  return box;
}

function callRow(run, c, view, rejected) {
  const st = statusOf(c, rejected && rejected.get(c.id));
  const what = c.address || c.type_name || '';
  const a = el('a', { class: 'row ' + methodClass(c.rpc) + ' ' + st.cls, href: callLink(run, c.id), 'data-call': c.id },
    el('span', { class: 'c-seq muted' }, '#' + c.call_seq),
    el('span', { class: 'c-rpc', title: c.method }, c.rpc),
    el('span', { class: 'c-what', title: what }, what),
    el('span', { class: 'c-status' }, st.short),
    el('span', { class: 'c-bar', title: st.text + ', ' + fmtDur(c.started_us, c.ended_us) }, el('span', { class: 'bar' }),
      el('span', { class: 'dur' }, c.ended_us ? fmtDur(c.started_us, c.ended_us) : '')));
  a.tftapCall = c;
  placeBar(a, view);
  return a;
}

/* A row's bar on the time axis shown: view is the window of the run's
 * time the waterfall is zoomed to (the whole run by default); a bar
 * outside it is hidden, one across its edge cut at the edge. */
function placeBar(row, view) {
  const c = row.tftapCall;
  const total = Math.max(view.last - view.first, 1);
  const end = c.ended_us || view.end || view.last;
  const bar = row.querySelector('.bar');
  const from = (c.started_us - view.first) / total * 100, to = (end - view.first) / total * 100;
  const outside = to < 0 || from > 100;
  const left = Math.min(Math.max(from, 0), 100);
  const width = Math.max(Math.min(to, 100) - left, 0.15);
  bar.hidden = outside;
  bar.style.left = left.toFixed(3) + '%';
  bar.style.width = width.toFixed(3) + '%';
  /* The duration beside its bar: after it, or before it near the end. */
  const dur = row.querySelector('.dur');
  if (dur) {
    dur.hidden = outside;
    const after = left + width < 85;
    dur.style.left = after ? (left + width).toFixed(3) + '%' : '';
    dur.style.right = after ? '' : (100 - left).toFixed(3) + '%';
  }
}

function fmtSpan(us) {
  if (us < 1000) return Math.round(us) + 'us';
  if (us < 1e6) return (us / 1000).toFixed(1) + 'ms';
  return (us / 1e6).toFixed(2) + 's';
}

/* The time axis, laid out on the rows' grid so its ticks sit over the bars:
 * times since the run's first call (span.first), over the window shown. */
function axis(span, view) {
  const total = view.last - view.first, from = view.first - span.first;
  const ticks = el('span', { class: 'c-bar ticks' });
  for (let i = 0; i <= 4; i++) {
    const t = from + total * i / 4;
    const s = el('span', {}, t <= 0 ? '0' : fmtSpan(t));
    s.style.left = (i * 25) + '%';
    ticks.append(s);
  }
  return el('div', { class: 'row axis', 'aria-hidden': 'true' }, el('span'), el('span'), el('span'), el('span'), ticks);
}

/* The minimap: every loaded call as a line on the whole run's time axis
 * (one pixel row per call, lanes one after the other, coloured by method
 * and status as the bars are), the window shown framed on it. Drag across
 * it to zoom to a stretch of time, click to move the window there; the
 * buttons zoom in and out around the window's middle. onView(first, last)
 * is told of each new window. */
function minimap(span, rowsOf, onView) {
  const canvas = el('canvas', { class: 'minimap-canvas', height: 48, 'aria-hidden': 'true' });
  const frame = el('div', { class: 'minimap-window' });
  const pick = el('div', { class: 'minimap-pick', hidden: true });
  const map = el('div', { class: 'minimap', title: 'Drag to zoom to a stretch of time; click to move there' }, canvas, frame, pick);
  const label = el('span', { class: 'muted zoom-label', role: 'status' });
  const button = (text, cls, fn) => el('button', { type: 'button', class: cls, onclick: fn }, text);
  let view = { first: span.first, last: span.last };
  const total = () => Math.max(span.last - span.first, 1);
  const zoomed = () => view.first > span.first || view.last < span.last;
  const set = (first, last) => {
    const width = Math.min(Math.max(last - first, 1), total());
    /* Whole microseconds, as the address keeps them: a reload shows the
     * same window, its label and the axis to the last digit. */
    first = Math.round(Math.min(Math.max(first, span.first), span.last - width));
    view = { first, last: Math.round(first + width) };
    show();
    onView(view.first, view.last);
  };
  const around = factor => {
    const mid = (view.first + view.last) / 2, half = (view.last - view.first) * factor / 2;
    set(mid - half, mid + half);
  };
  const controls = el('div', { class: 'zoom' },
    button('Zoom in', 'zoom-in', () => around(0.5)), button('Zoom out', 'zoom-out', () => around(2)),
    button('Whole run', 'zoom-reset', () => set(span.first, span.last)), label);
  const show = () => {
    frame.style.left = ((view.first - span.first) / total() * 100).toFixed(3) + '%';
    frame.style.width = ((view.last - view.first) / total() * 100).toFixed(3) + '%';
    label.textContent = zoomed()
      ? 'showing ' + fmtSpan(view.first - span.first) + ' to ' + fmtSpan(view.last - span.first) + ' of ' + fmtSpan(total())
      : 'the whole run, ' + fmtSpan(total());
  };
  const colours = {};
  const colour = row => {
    const cls = row.classList.contains('s-err') ? 'err' : row.className.split(' ')[1].slice(2);
    if (!(cls in colours)) colours[cls] = getComputedStyle(document.documentElement).getPropertyValue('--' + cls).trim() || '#adb5bd';
    return colours[cls];
  };
  let queued = false;
  const draw = () => {
    queued = false;
    const w = Math.max(canvas.clientWidth, 1);
    if (canvas.width !== w) canvas.width = w;
    const ctx = canvas.getContext('2d');
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    const rows = rowsOf();
    const h = canvas.height / Math.max(rows.length, 1);
    rows.forEach((row, i) => {
      const c = row.tftapCall;
      const x = (c.started_us - span.first) / total() * w;
      const end = ((c.ended_us || span.last) - span.first) / total() * w;
      ctx.fillStyle = colour(row);
      ctx.fillRect(x, Math.floor(i * h), Math.max(end - x, 1), Math.max(h, 1));
    });
  };
  /* Pointer: where on the whole run, in microseconds. */
  const at = e => { const r = map.getBoundingClientRect(); return span.first + Math.min(Math.max((e.clientX - r.left) / r.width, 0), 1) * total(); };
  let start = null;
  map.addEventListener('pointerdown', e => { start = { x: e.clientX, t: at(e) }; map.setPointerCapture(e.pointerId); e.preventDefault(); });
  map.addEventListener('pointermove', e => {
    if (!start) return;
    const a = Math.min(start.t, at(e)), b = Math.max(start.t, at(e));
    pick.hidden = Math.abs(e.clientX - start.x) < 4;
    pick.style.left = ((a - span.first) / total() * 100).toFixed(3) + '%';
    pick.style.width = ((b - a) / total() * 100).toFixed(3) + '%';
  });
  map.addEventListener('pointerup', e => {
    if (!start) return;
    const t = at(e), dragged = Math.abs(e.clientX - start.x) >= 4;
    pick.hidden = true;
    if (dragged) set(Math.min(start.t, t), Math.max(start.t, t));
    else set(t - (view.last - view.first) / 2, t + (view.last - view.first) / 2);
    start = null;
  });
  window.addEventListener('resize', () => { if (!queued) { queued = true; requestAnimationFrame(draw); } });
  const box = el('div', { class: 'minimap-box' }, controls, map);
  /* New rows to draw (at most once a frame). */
  box.redraw = () => { if (!queued) { queued = true; requestAnimationFrame(draw); } };
  /* The run grew: a window of the whole run follows it, a zoomed one stays. */
  box.grew = wasWhole => { if (wasWhole) view = { first: span.first, last: span.last }; show(); box.redraw(); return view; };
  box.view = () => view;
  box.whole = () => !zoomed();
  /* Show first..last (microseconds, on the run's clock). */
  box.set = set;
  show();
  return box;
}

/* The calls of a run: one lane per provider process, rows on a time axis.
 * One row per call id, whatever the order pages and live updates arrive
 * in; loads and live updates take turns (one request at a time). */
function waterfall(run, d, filters, zoom) {
  const box = el('section', { class: 'waterfall' });
  const span = { first: d.span.first_us || d.run.started_us, last: Math.max(d.span.last_us, d.span.first_us + 1) };
  const lanes = new Map();
  const byId = new Map();
  let rejected = new Map();
  const laneBox = el('div', { class: 'lanes' });
  for (const p of d.processes) {
    const rows = el('div', { class: 'rows' });
    const head = el('h3', { class: 'lane-head' }, (p.provider || 'provider') + (p.version ? ' ' + p.version : '') +
      ' · pid ' + p.pid + ' · protocol ' + p.protocol + ' · ' + p.calls + ' calls' + (p.dropped ? ' · ' + p.dropped + ' lost' : ''));
    const lane = el('section', { class: 'lane', 'data-process': p.id }, head, rows);
    lanes.set(p.id, rows);
    laneBox.append(lane);
  }
  const legend = el('div', { class: 'legend' }, ['m-plan plan', 'm-apply apply', 'm-read read/import/upgrade', 'm-config validate/configure', 'm-schema schema', 'm-other other', 's-err failed or rejected', 's-closed closed (expected)', 's-inflight in flight']
    .map(x => { const i = x.indexOf(' '); return el('span', { class: x.slice(0, i) }, el('i'), x.slice(i + 1)); }));
  /* The window of time shown (the minimap zooms it); bars are placed on it. */
  const view = { first: span.first, last: span.last, end: span.last };
  const axisBox = el('div', { class: 'axis-box' }, axis(span, view));
  const replace = () => {
    axisBox.replaceChildren(axis(span, view));
    for (const r of byId.values()) placeBar(r, view);
  };
  /* The stretch shown is part of the address (?zoom=FROM-TO, microseconds
   * since the run's first call), so that a zoomed view can be linked to. */
  const mini = minimap(span, () => [...laneBox.querySelectorAll('a.row')], (first, last) => {
    view.first = first; /* whole microseconds (the minimap's set) */
    view.last = last;
    replace();
    const u = new URL(location.href);
    if (mini.whole()) u.searchParams.delete('zoom');
    else u.searchParams.set('zoom', (first - span.first) + '-' + (last - span.first));
    if (u.search !== location.search) history.replaceState(history.state, '', u.pathname + u.search);
  });
  const zm = /^(\d+)-(\d+)$/.exec(zoom || '');
  if (zm && Number(zm[2]) > Number(zm[1])) mini.set(span.first + Number(zm[1]), span.first + Number(zm[2]));
  const more = el('div');
  const count = el('p', { class: 'muted', role: 'status' });
  box.append(el('h2', {}, 'Calls'), legend, count, mini, axisBox, laneBox, more);
  let after = null, last = 0, done = false, addressRounds = 0;
  let turn = Promise.resolve();
  const serial = fn => (turn = turn.then(fn, fn));
  const put = c => {
    const old = byId.get(c.id);
    const row = callRow(run, c, view, rejected);
    if (old) {
      if (old.outerHTML !== row.outerHTML) old.replaceWith(row);
      else return;
    } else {
      let rows = lanes.get(c.process_id);
      if (!rows) { /* a process that started since the page loaded */
        rows = el('div', { class: 'rows' });
        laneBox.append(el('section', { class: 'lane', 'data-process': c.process_id }, el('h3', { class: 'lane-head' }, (c.provider || 'provider') + ' · process ' + c.process_id), rows));
        lanes.set(c.process_id, rows);
      }
      rows.append(row);
    }
    byId.set(c.id, row);
    mini.redraw();
  };
  const say = () => {
    const shown = byId.size;
    count.textContent = shown ? shown + ' call' + (shown === 1 ? '' : 's') + ' shown' + (done ? '' : ' (more below)')
      : 'No calls' + (Object.values(filters).some(Boolean) ? ' match these filters.' : ' recorded.');
    more.replaceChildren(done ? '' : moreButton('Load more calls', () => load().catch(e => showError(box, e))));
  };
  const load = () => serial(async () => {
    if (done && byId.size) return;
    const d2 = await api('/runs/' + run + '/calls' + qs(Object.assign({ after, limit: PAGE }, filters)));
    d2.calls.forEach(put);
    last = Math.max(last, d2.last || 0);
    after = d2.next;
    done = !d2.next;
    say();
  });
  /* Scrolling to the end loads the next page. */
  const sentinel = el('div');
  box.append(sentinel);
  new IntersectionObserver(es => { if (es.some(e => e.isIntersecting) && !done && after) load().catch(e => showError(box, e)); }).observe(sentinel);
  box.start = () => load();
  /* Rows whose answer core rejected (the verdict's): red, saying why. */
  box.mark = m => {
    rejected = m;
    for (const id of m.keys()) { const r = byId.get(id); if (r) put(r.tftapCall); }
  };
  box.live = fresh => serial(async () => {
    if (fresh) {
      const grew = fresh.span.last_us > span.last || (fresh.span.first_us && fresh.span.first_us < span.first);
      const whole = mini.whole();
      if (fresh.span.first_us) span.first = Math.min(span.first, fresh.span.first_us);
      span.last = Math.max(span.last, fresh.span.last_us);
      if (grew) {
        const v = mini.grew(whole);
        view.first = v.first;
        view.last = v.last;
        view.end = span.last;
        replace();
      }
    }
    if (!done) return;
    /* At the end of the list: follow the run. Rows still in flight, and
     * once the run ended rows without their address yet (addresses are
     * matched when the run ends), are read again. */
    const addressing = fresh && fresh.run.ended_us && addressRounds < 3;
    if (addressing) addressRounds++;
    const stale = [...byId.values()].map(r => r.tftapCall)
      .filter(c => c.ended_us === null || c.status_code === null || (addressing && c.type_name && !c.address));
    if (stale.length) {
      const from = Math.min(...stale.map(c => c.id)) - 1;
      let cur = from;
      for (;;) {
        const d3 = await api('/runs/' + run + '/calls' + qs(Object.assign({ after: cur, limit: 1000 }, filters)));
        d3.calls.forEach(c => { if (byId.has(c.id) || c.id > last) put(c); });
        last = Math.max(last, d3.last || 0);
        if (!d3.next || d3.next > last) break;
        cur = d3.next;
      }
    }
    const d2 = await api('/runs/' + run + '/calls' + qs(Object.assign({ after: last, limit: PAGE }, filters)));
    d2.calls.forEach(put);
    last = Math.max(last, d2.last || 0);
    if (d2.next) { after = d2.next; done = false; }
    say();
  });
  return box;
}

function filterForm(values, onApply) {
  const f = {};
  const input = (name, label, ph) => { f[name] = el('input', { name, value: values[name] || '', placeholder: ph, 'aria-label': label }); return el('label', {}, label, f[name]); };
  f.status = el('select', { name: 'status', 'aria-label': 'status' },
    [['', 'any'], ['ok', 'ok'], ['error', 'failed'], ['inflight', 'in flight']].map(([v, t]) => el('option', { value: v, selected: values.status === v }, t)));
  const form = el('form', { class: 'filters', role: 'search' },
    input('method', 'Method', 'plan, apply…'), input('type', 'Type', 'tftest6_thing'), input('address', 'Address', 'tftest6_thing.a'),
    el('label', {}, 'Status', f.status), el('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', e => {
    e.preventDefault();
    const v = {};
    for (const k of ['method', 'type', 'address', 'status']) v[k] = f[k].value.trim();
    onApply(v);
  });
  return form;
}

/* Check this run; diff it with another (the previous one by default). */
/* The diff base by default: the previous run of the same command (the CLI
 * and its subcommand) in the same directory, else the run before. */
/* A run's CLI subcommand: its first argument that is no option. */
function subcommand(r) {
  return (Array.isArray(r.args) ? r.args : []).find(a => typeof a === 'string' && !a.startsWith('-')) || null;
}

async function previousLike(r) {
  const sub = subcommand(r);
  let before = r.id;
  for (let pages = 0; pages < 5 && before; pages++) {
    const d = await api('/runs' + qs({ before, limit: 200 }));
    const hit = d.runs.find(x => x.cwd === r.cwd && x.command === r.command && subcommand(x) === sub);
    if (hit) return hit.id;
    before = d.next;
  }
  return null;
}

function runLinks(id, run) {
  const other = el('input', { type: 'number', min: 1, name: 'other', value: id > 1 ? id - 1 : id, 'aria-label': 'run to diff with', class: 'run-number' });
  if (run) previousLike(run).then(p => { if (p && !other.dataset.touched) { other.value = p; other.title = 'the previous run of ' + commandLine({ command: run.command, args: [subcommand(run) || ''] }) + ' in ' + run.cwd; } }).catch(() => {});
  other.addEventListener('input', () => { other.dataset.touched = '1'; });
  const form = el('form', { class: 'inline' }, el('a', { href: '/check/' + id, id: 'check-link' }, 'Check this run'), ' · ',
    el('label', {}, 'diff with run ', other), ' ', el('button', { type: 'submit' }, 'Diff'));
  form.addEventListener('submit', ev => { ev.preventDefault(); if (other.value) navigate('/diff/' + Number(other.value) + '/' + id); });
  return form;
}

/* A run's exit code; ended without one, a tftap wrap run: no tftap
 * process sees its CLI exit (docs/running.md). */
function exitText(r) {
  if (r.exit_code !== null) return String(r.exit_code);
  return r.ended_us ? 'unknown' : '-';
}

/* The verdict line, in the CLI's words (cli/verdict.c), from the API's
 * facts (analysis_run_verdict: the same rule). */
function verdictLine(id, v) {
  const reasons = [];
  if (v.exit_code !== null && v.exit_code !== 0) reasons.push('the command exited ' + v.exit_code);
  const nrej = rejectedCount(v);
  if (nrej) reasons.push(nrej + ' answer' + (nrej === 1 ? '' : 's') + ' core rejects');
  if (v.failed_calls) reasons.push(v.failed_calls + ' call' + (v.failed_calls === 1 ? '' : 's') + ' failed');
  if (v.records_lost) reasons.push(v.records_lost + ' record' + (v.records_lost === 1 ? '' : 's') + ' lost');
  if (v.running) return 'Run ' + id + ' is still running' + (v.failed ? '; so far: ' + reasons.join('; ') : '');
  if (v.failed) return 'Run ' + id + ' failed: ' + reasons.join('; ');
  if (v.exit_code !== null) {
    let t = 'Run ' + id + ' succeeded: the command exited ' + v.exit_code;
    if (v.failed_calls) t += '; ' + v.failed_calls + ' call' + (v.failed_calls === 1 ? '' : 's') + ' failed and core carried on';
    else if (!v.unconfirmed && !v.records_lost && !v.not_recorded) t += ', every call was answered as core expects';
    if (v.records_lost) t += '; ' + v.records_lost + ' record' + (v.records_lost === 1 ? '' : 's') + ' lost';
    return t;
  }
  return 'Run ' + id + ': the command\'s exit code is unknown (a tftap wrap run)' + (reasons.length ? '; ' + reasons.join('; ') : '');
}

/* Why the run failed, first and without a click: the exit code, the
 * answers core rejected (rule, path, both values exact), the failed calls,
 * the gaps, each linking to its call. */
function verdictSection(run) {
  const box = el('section', { class: 'verdict', id: 'verdict', 'aria-live': 'polite' }, el('p', { class: 'muted' }, 'Reading the verdict (tftap check)…'));
  box.load = async () => {
    const d = await api('/runs/' + run + '/verdict');
    const v = d.verdict;
    const parts = [el('p', { id: 'verdict-line', class: 'verdict-line ' + (v.failed ? 'status-err' : v.running ? 'status-inflight' : 'status-ok') }, verdictLine(run, v) + '.')];
    if (v.rejected.length) {
      const tbody = el('tbody');
      const SHOWN = 20;
      for (const f of v.rejected.slice(0, SHOWN))
        tbody.append(el('tr', { class: 'rejected', 'data-call': f.call_id },
          el('td', {}, el('a', { href: callLink(run, f.call_id) }, f.method + ' #' + f.call_id)),
          el('td', {}, f.address || f.type_name || '-'),
          el('td', { class: 'rule' }, f.rule),
          el('td', { class: 'mono' }, f.path || '(the object)'),
          el('td', { class: 'mono expected' }, valueText(f.expected)),
          el('td', { class: 'mono actual' }, valueText(f.actual)),
          el('td', {}, f.message)));
      parts.push(el('h3', {}, 'Answers core rejected'),
        el('table', { class: 'findings rejected-answers' }, el('thead', {}, el('tr', {}, ['Call', 'Address', 'Rule', 'Path', 'Expected (planned)', 'Actual (returned)', 'Why'].map(h => el('th', {}, h)))), tbody));
      if (rejectedCount(v) > SHOWN)
        parts.push(el('p', { class: 'muted' }, (rejectedCount(v) - SHOWN) + ' more (red in the calls below): ', el('a', { href: '/check/' + run }, 'every finding')));
    }
    if (d.failed.length) {
      const ul = el('ul', { class: 'failed-calls' });
      for (const c of d.failed) {
        const st = statusOf(c);
        ul.append(el('li', { 'data-call': c.id }, el('a', { href: callLink(run, c.id) }, c.rpc + ' #' + c.id), ' ',
          c.address || c.type_name || '', ' ', el('span', { class: 'status-err' }, st.text)));
      }
      parts.push(el('h3', {}, 'Failed calls' + (v.failed_calls > d.failed.length ? ' (the first ' + d.failed.length + ' of ' + v.failed_calls + ')' : '')), ul);
    }
    if (v.records_lost || v.not_recorded) {
      parts.push(el('h3', {}, 'Gaps in the record'), el('p', { id: 'verdict-gaps' },
        v.records_lost + ' record' + (v.records_lost === 1 ? '' : 's') + ' lost' + (d.gap_reason ? ' (' + d.gap_reason + ')' : '') +
        (d.gap_providers.length ? ', from ' + d.gap_providers.join(', ') : '') +
        (v.not_recorded ? '; ' + v.not_recorded + ' call' + (v.not_recorded === 1 ? '' : 's') + ' not recorded (their answer was lost, not failed)' : '')));
    }
    const notes = [];
    if (v.tolerated) notes.push(v.tolerated + ' tolerated legacy finding' + (v.tolerated === 1 ? '' : 's') + ' (core accepts ' + (v.tolerated === 1 ? 'it' : 'them') + ')');
    if (v.unconfirmed) notes.push('tftap check names ' + v.unconfirmed + ' answer' + (v.unconfirmed === 1 ? '' : 's') + ' core would reject, but the command succeeded');
    if (notes.length) parts.push(el('p', { class: 'muted' }, notes.join('; ') + ': ', el('a', { href: '/check/' + run }, 'see the check')));
    box.replaceChildren(...parts);
    box.classList.toggle('failed', !!v.failed);
    box.rejected = new Map(v.rejected.map(f => [f.call_id, f]));
    return box.rejected;
  };
  return box;
}

async function runView(run, params) {
  setView(null, 'Run ' + run);
  const filters = { method: params.get('method') || '', type: params.get('type') || '', address: params.get('address') || '', status: params.get('status') || '' };
  let d;
  try { d = await api('/runs/' + run); } catch (e) { main.replaceChildren(el('h1', {}, 'Run ' + run)); showError(main, e); return; }
  /* /runs/last is the run it was when the page opened: one run, not
   * whichever starts next (the address says which). */
  if (String(run) !== String(d.run.id)) {
    run = d.run.id;
    history.replaceState(history.state, '', runLink(run) + location.search);
  }
  const header = el('div', {}, runHeader(d));
  const verdict = verdictSection(run);
  const wf = waterfall(run, d, filters, params.get('zoom'));
  const form = filterForm(filters, v => navigate(runLink(run) + qs(v)));
  const changes = changesSection(run, null);
  main.replaceChildren(el('h1', {}, 'Run #' + d.run.id, d.run.ended_us ? '' : el('span', { class: 'status-inflight' }, ' (recording)')),
    verdict, header, runLinks(d.run.id, d.run),
    changes, form, wf);
  const marks = () => verdict.load().then(m => { wf.mark(m); changes.rejected = m; changes.mark(m); }).catch(e => { verdict.replaceChildren(); showError(verdict, e); });
  const first = marks();
  await wf.start().catch(e => showError(main, e));
  await first;
  let wasRunning = !d.run.ended_us, afterEnd = wasRunning ? 0 : 3, lastAnalysis = Date.now();
  setView({
    live: async () => {
      const fresh = await api('/runs/' + run);
      header.replaceChildren(runHeader(fresh));
      await wf.live(fresh);
      /* While it records, and for the changes that follow its end (the
       * addresses are matched then), the changes and the verdict again. */
      /* Both are analyses of the whole run: while it records, at most
       * every ten seconds. */
      const ended = !!fresh.run.ended_us;
      if ((wasRunning && (ended || Date.now() - lastAnalysis >= 10000)) || (!wasRunning && afterEnd < 3)) {
        if (!wasRunning) afterEnd++;
        lastAnalysis = Date.now();
        await changes.reload().catch(() => {});
        await marks();
      }
      wasRunning = !fresh.run.ended_us;
      if (!wasRunning) main.querySelector('h1 .status-inflight')?.remove();
    }
  }, 'Run ' + run);
}

/* ---- planned versus new: what the provider was asked for and answered -- */

/* Which two values of a call to compare: the plan it was to apply and the
 * state it returned (apply), the proposal and the plan (plan), the state
 * before and after (read). */
const COMPARE = {
  ApplyResourceChange: [['request', 'planned_state', 'Planned'], ['response', 'new_state', 'New state']],
  PlanResourceChange: [['request', 'proposed_new_state', 'Proposed'], ['response', 'planned_state', 'Planned']],
  ReadResource: [['request', 'current_state', 'Current'], ['response', 'new_state', 'Read']],
};

function pathKey(k) { return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(k) ? '.' + k : '[' + JSON.stringify(k) + ']'; }

/* Every leaf of a value (markers and empty collections are leaves) by its
 * path in tftap check's form (.tags["x"][2]), with its text. */
function leaves(n, path, out) {
  if (!n) return out;
  const mk = marker(n);
  if (mk) { out.set(path, mk.textContent); return out; }
  if (n.t === 'obj' && n.m.length) { for (const [k, v] of n.m) leaves(v, path + pathKey(k), out); return out; }
  if (n.t === 'arr' && n.v.length) { n.v.forEach((v, i) => leaves(v, path + '[' + i + ']', out)); return out; }
  out.set(path, n.t === 'obj' ? '{}' : n.t === 'arr' ? '[]' : toText(n));
  return out;
}

function compareSection(c, rejs) {
  const spec = COMPARE[c.rpc];
  if (!spec) return null;
  const pick = ([side, key]) => {
    try { return member(parseExact(c[side] || 'null'), key); } catch (e) { return null; }
  };
  const a = pick(spec[0]), b = pick(spec[1]);
  if (!a && !b) return null;
  const la = leaves(a, '', new Map()), lb = leaves(b, '', new Map());
  const paths = [...new Set([...la.keys(), ...lb.keys()])];
  const flagged = new Set(rejs.map(f => f.path));
  const tbody = el('tbody');
  let same = 0;
  for (const p of paths) {
    const x = la.has(p) ? la.get(p) : '(absent)', y = lb.has(p) ? lb.get(p) : '(absent)';
    const hit = flagged.has(p) || [...flagged].some(f => f && (p.startsWith(f + '.') || p.startsWith(f + '[')));
    if (x === y && !hit) { same++; continue; }
    tbody.append(el('tr', { class: hit ? 'rejected' : '', 'data-path': p }, el('td', { class: 'mono' }, p || '(the object)'),
      el('td', { class: 'mono' }, x), el('td', { class: 'mono' + (hit ? ' status-err' : '') }, y)));
  }
  const box = el('section', { class: 'compare', id: 'compare' }, el('h2', {}, spec[0][2] + ' versus ' + spec[1][2].toLowerCase()));
  if (tbody.children.length)
    box.append(el('table', { class: 'findings' }, el('thead', {}, el('tr', {}, ['Path', spec[0][2], spec[1][2]].map(h => el('th', {}, h)))), tbody));
  box.append(el('p', { class: 'muted' }, tbody.children.length ? same + ' other value' + (same === 1 ? '' : 's') + ' equal.' : 'Every value equal (' + same + ').'));
  return box;
}

async function callView(run, id) {
  setView(null, 'Call ' + id);
  let c, verdict = null;
  const vp = api('/runs/' + run + '/verdict').catch(() => null);
  try { c = (await api('/runs/' + run + '/calls/' + id)).call; } catch (e) { main.replaceChildren(el('h1', {}, 'Call ' + id)); showError(main, e); return; }
  verdict = await vp;
  const rejs = verdict ? verdict.verdict.rejected.filter(f => f.call_id === id) : [];
  const st = statusOf(c, rejs[0]);
  const facts = el('dl', { class: 'facts' },
    el('dt', {}, 'Run'), el('dd', {}, el('a', { href: runLink(run) }, '#' + run)),
    el('dt', {}, 'Method'), el('dd', { class: 'mono' }, c.method),
    el('dt', {}, 'Provider'), el('dd', {}, (c.provider || '-') + ' (process ' + c.process_id + ', call ' + c.call_seq + ')'),
    el('dt', {}, 'Status'), el('dd', { class: st.cls === 's-err' ? 'status-err' : st.cls === 's-ok' ? 'status-ok' : st.cls === 's-closed' ? 'muted' : 'status-inflight', id: 'call-status' }, st.text),
    el('dt', {}, 'Type'), el('dd', {}, c.type_name || '-'),
    el('dt', {}, 'Address'), el('dd', {}, c.address ? el('a', { href: resourceLink(run, c.address) }, c.address) : '-'),
    el('dt', {}, 'Started'), el('dd', {}, fmtTime(c.started_us) + ' (' + c.started_us + ' us)'),
    el('dt', {}, 'Duration'), el('dd', {}, c.ended_us ? fmtDur(c.started_us, c.ended_us) : 'in flight'),
    el('dt', {}, 'Sizes'), el('dd', {}, 'request ' + fmtBytes(c.request_bytes) + ' in ' + c.request_count + ' message' + (c.request_count === 1 ? '' : 's') +
      ', response ' + fmtBytes(c.response_bytes) + ' in ' + c.response_count + ' message' + (c.response_count === 1 ? '' : 's')));
  const parts = [el('h1', {}, c.rpc + ' ', el('span', { class: 'muted' }, '#' + c.id)), facts];
  if (rejs.length) {
    parts.push(el('section', { class: 'rejection', id: 'rejection' }, el('h2', {}, 'Core rejected this answer'),
      rejs.map(f => el('div', { class: 'diag' },
        el('strong', {}, f.rule), ' at ', el('code', {}, f.path || '(the object)'), ': ', f.message,
        el('div', { class: 'mono' }, 'expected: ', el('span', { class: 'expected' }, valueText(f.expected))),
        el('div', { class: 'mono' }, 'actual:   ', el('span', { class: 'actual' }, valueText(f.actual)))))));
  }
  const cmp = compareSection(c, rejs);
  if (cmp) parts.push(cmp);
  if (c.decode_error) parts.push(el('p', { class: 'error-box' }, 'Not decoded: ' + c.decode_error));
  const resp = valueBlock('Response', c.response);
  const diags = member(resp.tftapNode, 'diagnostics');
  if (diags && diags.t === 'arr' && diags.v.length) {
    const box = el('section', { class: 'diagnostics' }, el('h2', {}, 'Diagnostics'));
    for (const dg of diags.v) {
      const sev = member(dg, 'severity'), sum = member(dg, 'summary'), det = member(dg, 'detail'), at = member(member(dg, 'attribute'), 'path');
      const warn = sev && sev.v === 'WARNING';
      box.append(el('div', { class: 'diag' + (warn ? ' warning' : '') },
        el('strong', {}, warn ? 'Warning: ' : 'Error: '), sum ? sum.v : '',
        det && det.v ? el('div', {}, det.v) : '', at && at.v ? el('div', { class: 'mono muted' }, 'at ' + at.v) : ''));
    }
    parts.push(box);
  }
  parts.push(valueBlock('Request', c.request), resp);
  parts.push(el('p', {}, id > 1 ? el('a', { href: callLink(run, id - 1), rel: 'prev' }, '← previous call') : '', ' ',
    el('a', { href: callLink(run, id + 1), rel: 'next' }, 'next call →')));
  main.replaceChildren(...parts);
  setView(c.ended_us ? null : { live: () => callView(run, id) }, c.rpc + ' #' + id);
}

async function resourceView(run, address) {
  setView(null, address);
  const d = await api('/runs/' + run).catch(e => e);
  main.replaceChildren(el('h1', {}, address), el('p', {}, 'In ', el('a', { href: runLink(run) }, 'run #' + run), ': every change and call about this address, in order. ',
    el('a', { href: historyLink(address), id: 'history-link' }, 'Its history across runs')));
  if (d instanceof Error) { showError(main, d); return; }
  main.append(changesSection(run, address));
  const wf = waterfall(run, d, { address });
  main.append(wf);
  await wf.start().catch(e => showError(main, e));
  setView({ live: () => wf.live(null) }, address);
}

/* A resource's history: every run that touched the address (or its
 * instances), newest first, with its calls about it. */
async function historyView(address) {
  setView(null, address + ' across runs');
  const list = el('div', { class: 'history' });
  const more = el('div');
  main.replaceChildren(el('h1', {}, address, el('span', { class: 'muted' }, ' across runs')),
    el('p', { class: 'muted' }, 'Every recorded run with a call about this address or its instances, newest first.'), list, more);
  let before = null, shown = 0;
  const load = async () => {
    const d = await api('/history' + qs({ address, before }));
    for (const h of d.runs) {
      shown++;
      const r = h.run;
      const rows = h.calls.map(c => {
        const st = statusOf(c);
        return el('li', { 'data-call': c.id }, el('a', { href: callLink(r.id, c.id) }, c.rpc + ' #' + c.id), ' ', c.address || '', ' ',
          el('span', { class: st.cls === 's-err' ? 'status-err' : st.cls === 's-ok' ? 'status-ok' : 'muted' }, st.short));
      });
      list.append(el('section', { class: 'history-run', 'data-run': r.id },
        el('h3', {}, el('a', { href: resourceLink(r.id, address) }, 'Run #' + r.id), ' ', el('span', { class: 'mono' }, commandLine(r)), ' ',
          el('span', { class: 'muted' }, fmtTime(r.started_us) + (r.exit_code === null ? '' : ', exit ' + r.exit_code))),
        el('ul', {}, rows), h.more ? el('p', { class: 'muted' }, 'more calls: ', el('a', { href: resourceLink(r.id, address) }, 'all of them in run #' + r.id)) : ''));
    }
    before = d.next;
    more.replaceChildren(before ? moreButton('Older runs', () => load().catch(e => showError(more, e))) : '');
    if (!before && !shown) list.replaceChildren(el('p', { class: 'muted' }, 'No recorded run has a call about ' + address + '.'));
  };
  await load().catch(e => showError(main, e));
}

/* A decoded value as one line of text (objects and arrays as JSON). */
function valueText(v) {
  if (v === null || v === undefined) return '-';
  return showValue(v);
}

/* tftap check: which provider answer broke which rule of the contract. */
async function checkView(run) {
  setView(null, 'Findings of run ' + run);
  main.replaceChildren(el('h1', {}, 'Findings of run #' + run), el('p', {}, el('a', { href: runLink(run) }, '← run #' + run)));
  let d;
  try { d = await api('/runs/' + run + '/check'); } catch (e) { showError(main, e); return; }
  const parts = [d.violations + ' violation' + (d.violations === 1 ? '' : 's') + ' (' + d.rejected + ' core rejects, ' + d.tolerated + ' it tolerates)'];
  if (!d.violations) parts[0] = 'no rule broken';
  if (d.drift) parts.push(d.drift + ' drift');
  if (d.unchecked) parts.push(d.unchecked + ' call' + (d.unchecked === 1 ? '' : 's') + ' not checked (no schema recorded)');
  main.append(el('p', { class: 'summary ' + (d.violations ? 'status-err' : 'status-ok'), id: 'check-summary' }, parts.join('; ')));
  if (d.truncated) main.append(el('p', { class: 'muted' }, d.truncated + ' more findings are not listed here: run ', el('code', {}, 'tftap check ' + d.run)));
  if (!d.findings.length) return;
  const tbody = el('tbody');
  for (const f of d.findings)
    tbody.append(el('tr', {},
      el('td', {}, f.address ? el('a', { href: resourceLink(d.run, f.address) }, f.address) : (f.type_name || '-')),
      el('td', {}, el('a', { href: callLink(d.run, f.call_id) }, f.method || '?'), f.compared_call_id ? el('div', { class: 'muted' }, 'against ', el('a', { href: callLink(d.run, f.compared_call_id) }, 'call ' + f.compared_call_id)) : ''),
      el('td', {}, f.rule), el('td', { class: 'mono' }, f.path || '(the object)'),
      el('td', { class: f.verdict === 'rejects' ? 'status-err' : f.verdict === 'drift' ? 'muted' : 'status-inflight' }, f.verdict),
      el('td', { class: 'mono' }, valueText(f.expected)), el('td', { class: 'mono' }, valueText(f.actual)),
      el('td', {}, f.message)));
  main.append(el('table', { class: 'findings' }, el('thead', {}, el('tr', {}, ['Address', 'Call', 'Rule', 'Path', 'Verdict', 'Expected', 'Actual', 'Message'].map(h => el('th', {}, h)))), tbody));
}

/* One side of a diff finding: a value with where it came from, or text. */
function sideText(v) {
  if (v && typeof v === 'object' && 'source' in v && 'value' in v) return valueText(v.value) + ' (' + v.source + ')';
  return valueText(v);
}

function diffTable(run, other, changes) {
  const tbody = el('tbody');
  let last = null;
  for (const c of changes) {
    const addr = c.address || c.type || c.provider || '-';
    if (addr !== last) tbody.append(el('tr', { class: 'group' }, el('th', { colspan: 5 }, addr)));
    last = addr;
    tbody.append(el('tr', {},
      el('td', {}, c.kind + (c.change ? ' ' + c.change : '')),
      el('td', {}, c.method || '-', ' ', c.call_a ? el('a', { href: callLink(run, c.call_a) }, '#' + c.call_a) : '', ' ', c.call_b ? el('a', { href: callLink(other, c.call_b) }, '#' + c.call_b) : ''),
      el('td', { class: 'mono' }, (c.path || '') + (c.value ? ' ' + c.value : '')),
      el('td', { class: 'mono' }, c.change === 'added' ? '-' : sideText(c.a)),
      el('td', { class: 'mono' }, c.change === 'removed' ? '-' : sideText(c.b))));
  }
  return el('table', { class: 'diff' }, el('thead', {}, el('tr', {}, ['What', 'Calls', 'Path', 'Run #' + run, 'Run #' + other].map(h => el('th', {}, h)))), tbody);
}

/* tftap diff: what the provider did differently between two runs. */
async function diffView(a, b, params) {
  setView(null, 'Diff of runs ' + a + ' and ' + b);
  const ignore = params.get('ignore') || '';
  const field = el('input', { name: 'ignore', value: ignore, placeholder: '.id, .tags*', 'aria-label': 'ignore paths' });
  const form = el('form', { class: 'filters' }, el('label', {}, 'Ignore paths', field), el('button', { type: 'submit' }, 'Apply'));
  form.addEventListener('submit', ev => { ev.preventDefault(); navigate('/diff/' + a + '/' + b + qs({ ignore: field.value.trim() })); });
  main.replaceChildren(el('h1', {}, 'Diff of runs #' + a + ' and #' + b),
    el('p', {}, el('a', { href: runLink(a) }, 'run #' + a), ' → ', el('a', { href: runLink(b) }, 'run #' + b)), form);
  /* The provider versions of both runs: what a difference in behaviour
   * most often comes from. */
  const versions = el('table', { class: 'versions', id: 'diff-versions' });
  main.append(versions);
  Promise.all([api('/runs/' + a), api('/runs/' + b)]).then(([ra, rb]) => {
    const of = r => {
      const m = new Map();
      for (const p of r.processes) if (p.provider) m.set(p.provider, (m.get(p.provider) || new Set()).add(p.version || '?'));
      return m;
    };
    const va = of(ra), vb = of(rb);
    const names = [...new Set([...va.keys(), ...vb.keys()])].sort();
    const list = m => m ? [...m].sort().join(', ') : '-';
    versions.append(el('thead', {}, el('tr', {}, ['Provider', 'Run #' + a, 'Run #' + b].map(h => el('th', {}, h)))),
      el('tbody', {}, names.map(n => {
        const x = list(va.get(n)), y = list(vb.get(n));
        return el('tr', { class: x !== y ? 'changed' : '' }, el('td', { class: 'mono' }, n), el('td', {}, x), el('td', { class: x !== y ? 'status-err' : '' }, y));
      })));
  }).catch(() => versions.remove());
  let d;
  try { d = await api('/diff/' + a + '/' + b + qs({ ignore })); } catch (e) { showError(main, e); return; }
  let sum = d.same ? 'same behaviour' : d.differences + ' difference' + (d.differences === 1 ? '' : 's');
  if (d.input_differences) sum += '; ' + d.input_differences + ' input difference' + (d.input_differences === 1 ? '' : 's') + ' (config or prior state, not behaviour)';
  main.append(el('p', { class: 'summary ' + (d.same ? 'status-ok' : 'status-err'), id: 'diff-summary' }, sum));
  const beh = d.changes.filter(c => c.behaviour), inputs = d.changes.filter(c => !c.behaviour);
  if (beh.length) main.append(el('h2', {}, 'Behaviour'), diffTable(a, b, beh));
  if (inputs.length) main.append(el('h2', {}, 'Inputs'), el('p', { class: 'muted' }, 'What tofu sent differently: these explain differences, they are not the provider\'s.'), diffTable(a, b, inputs));
}

/* A cty type as HCL writes it: list(string), object({a = number}). */
function typeText(t) {
  if (typeof t === 'string') return t;
  if (!Array.isArray(t)) return showValue(t);
  const [k, a] = t;
  if (k === 'object') return 'object({' + Object.keys(a || {}).map(n => n + ' = ' + typeText(a[n])).join(', ') + '})';
  if (k === 'tuple') return 'tuple([' + (a || []).map(typeText).join(', ') + '])';
  return k + '(' + typeText(a) + ')';
}

/* A schema's block as a table of its attributes, nested blocks and nested
 * attribute types below their parent (a.b), instead of a JSON tree. */
function schemaTable(doc) {
  const block = doc.block || doc;
  if (!block || (!block.attributes && !block.block_types)) return null;
  const tbody = el('tbody');
  const flags = a => ['required', 'optional', 'computed', 'sensitive', 'write_only', 'deprecated'].filter(f => a[f]).map(f => f.replace('_', '-')).join(', ');
  const attrs = (list, prefix) => {
    for (const a of list || []) {
      const nested = a.nested_type;
      tbody.append(el('tr', { 'data-attr': prefix + a.name },
        el('td', { class: 'mono' }, prefix + a.name),
        el('td', { class: 'mono' }, nested ? 'nested ' + String(nested.nesting || '').toLowerCase() : typeText(a.type)),
        el('td', {}, flags(a)), el('td', {}, a.description || '')));
      if (nested) attrs(nested.attributes, prefix + a.name + '.');
    }
  };
  const blocks = (b, prefix) => {
    attrs(b.attributes, prefix);
    for (const bt of b.block_types || []) {
      const lim = [bt.min_items ? 'at least ' + bt.min_items : '', bt.max_items ? 'at most ' + bt.max_items : ''].filter(Boolean).join(', ');
      tbody.append(el('tr', { class: 'group', 'data-attr': prefix + bt.type_name },
        el('td', { class: 'mono' }, prefix + bt.type_name), el('td', { class: 'mono' }, 'block ' + String(bt.nesting || '').toLowerCase()),
        el('td', {}, lim), el('td', {}, (bt.block && bt.block.description) || '')));
      if (bt.block) blocks(bt.block, prefix + bt.type_name + '.');
    }
  };
  blocks(block, '');
  return el('table', { class: 'schema-attrs' }, el('thead', {}, el('tr', {}, ['Name', 'Type', '', 'Description'].map(h => el('th', {}, h)))), tbody);
}

async function schemasView(sha, params) {
  setView(null, 'Schemas');
  main.replaceChildren(el('h1', {}, 'Schemas'));
  let list;
  try { list = await api('/schemas'); } catch (e) { showError(main, e); return; }
  if (!list.schemas.length) { main.append(el('p', { class: 'muted' }, 'No provider schemas recorded yet.')); return; }
  /* One row per provider version: a provider may send the same schema
   * with other bytes (Go writes its maps in a random order), each a
   * recording of its own (its hash), listed in the row. */
  const groups = new Map();
  for (const s of list.schemas) {
    const k = [s.provider, s.versions, s.protocol].join('\u0000');
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(s);
  }
  const tbody = el('tbody');
  for (const g of groups.values()) {
    const s = g[0];
    tbody.append(el('tr', { class: g.some(x => x.sha256 === sha) ? 'running' : '' },
      el('td', {}, el('a', { href: '/schemas/' + s.sha256 }, s.provider || '-')),
      el('td', {}, s.versions || '-'), el('td', {}, String(s.protocol)), el('td', {}, [...new Set(g.map(x => fmtBytes(x.size)))].join(', ')),
      el('td', {}, fmtTime(Math.min(...g.map(x => x.first_seen_us)))),
      el('td', { class: 'mono' }, g.flatMap((x, i) => [i ? ', ' : '', el('a', { class: 'sha', href: '/schemas/' + x.sha256, title: x.sha256 }, x.sha256.slice(0, 12))]),
        g.length > 1 ? el('div', { class: 'muted' }, g.length + ' recordings with other bytes (a provider may write its maps in any order)') : '')));
  }
  main.append(el('table', {}, el('thead', {}, el('tr', {}, ['Provider', 'Versions', 'Protocol', 'Size', 'First seen', 'Recorded as (SHA-256)'].map(h => el('th', {}, h)))), tbody));
  if (!sha) return;
  const q = el('input', { type: 'search', value: params.get('q') || '', placeholder: 'resource type, data source…', 'aria-label': 'search types' });
  const out = el('div');
  const detail = el('div');
  main.append(el('h2', {}, 'Types'), el('div', { class: 'filters' }, el('label', {}, 'Search', q)), out, detail);
  const show = async () => {
    const d = await api('/schemas/' + sha + qs({ q: q.value.trim() }));
    out.replaceChildren();
    for (const kind of ['resource_schemas', 'data_source_schemas', 'ephemeral_resource_schemas', 'functions']) {
      if (!d[kind].length) continue;
      out.append(el('h3', {}, kind.replace(/_/g, ' ')), el('ul', { class: 'schema-types' }, d[kind].map(t =>
        el('li', {}, el('a', { href: '/schemas/' + sha + qs({ kind, type: t }) }, t)))));
    }
    if (!out.children.length) out.append(el('p', { class: 'muted' }, 'No type matches.'));
  };
  q.addEventListener('input', () => show().catch(e => showError(out, e)));
  await show().catch(e => showError(out, e));
  const type = params.get('type');
  if (type) {
    try {
      const b = await api('/schemas/' + sha + qs({ kind: params.get('kind'), type }));
      let table = null;
      try { table = schemaTable(parseJSON(b.schema)); } catch (e) { table = null; }
      if (table) detail.append(el('h2', {}, type), table);
      const raw = el('details', { class: 'raw-schema' }, el('summary', {}, 'As JSON'), valueBlock(type, b.schema));
      if (!table) raw.open = true;
      detail.append(raw);
    } catch (e) { showError(detail, e); }
  }
}

/* ---- routing ------------------------------------------------------------ */

async function route() {
  const path = location.pathname;
  const params = new URLSearchParams(location.search);
  let m;
  main.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
  try {
    if (path === '/') await runsView();
    else if ((m = /^\/runs\/(\d+|last)\/?$/.exec(path))) await runView(m[1], params);
    else if ((m = /^\/runs\/(\d+|last)\/calls\/(\d+)$/.exec(path))) await callView(m[1], Number(m[2]));
    else if ((m = /^\/runs\/(\d+|last)\/resources\/(.+)$/.exec(path))) await resourceView(m[1], decodeURIComponent(m[2]));
    else if ((m = /^\/history\/(.+)$/.exec(path))) await historyView(decodeURIComponent(m[1]));
    else if ((m = /^\/diff\/(\d+|last)\/(\d+|last)$/.exec(path))) await diffView(m[1], m[2], params);
    else if ((m = /^\/check\/(\d+|last)$/.exec(path))) await checkView(m[1]);
    else if (path === '/schemas') await schemasView(null, params);
    else if ((m = /^\/schemas\/([0-9a-f]{64})$/.exec(path))) await schemasView(m[1], params);
    else { setView(null, 'Not found'); main.replaceChildren(el('h1', {}, 'Not found'), el('p', {}, el('a', { href: '/' }, 'All runs'))); }
  } catch (e) {
    showError(main, e);
  }
}

function navigate(url) {
  history.replaceState(Object.assign({}, history.state, { scrollY: window.scrollY }), '');
  history.pushState({ scrollY: 0 }, '', url);
  route().then(() => main.focus({ preventScroll: true }));
  window.scrollTo(0, 0);
}

document.addEventListener('click', e => {
  const a = e.target.closest && e.target.closest('a[href]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/')) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
});

/* Keyboard: j/k or the arrow keys move between rows of a list, Enter opens
 * one (it is a link), "/" goes to the first filter box. */
document.addEventListener('keydown', e => {
  const t = e.target;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA')) return;
  if (e.key === '/') {
    const f = main.querySelector('input');
    if (f) { e.preventDefault(); f.focus(); }
    return;
  }
  const down = e.key === 'ArrowDown' || e.key === 'j';
  const up = e.key === 'ArrowUp' || e.key === 'k';
  if (!down && !up) return;
  const rows = Array.from(main.querySelectorAll('a.row, table.runs tbody tr:not([hidden]) td:first-child a'));
  if (!rows.length) return;
  const i = rows.indexOf(document.activeElement);
  const next = i < 0 ? 0 : Math.min(Math.max(i + (down ? 1 : -1), 0), rows.length - 1);
  e.preventDefault();
  rows[next].focus();
});

/* Back and Forward return to where the page was scrolled: the position is
 * kept in the history entry, and restored once the view has drawn. */
if ('scrollRestoration' in history) history.scrollRestoration = 'manual';
let scrollSave = 0;
window.addEventListener('scroll', () => {
  if (scrollSave) return;
  scrollSave = setTimeout(() => {
    scrollSave = 0;
    history.replaceState(Object.assign({}, history.state, { scrollY: window.scrollY }), '');
  }, 150);
}, { passive: true });
window.addEventListener('popstate', async ev => {
  const y = ev.state && ev.state.scrollY;
  await route();
  if (y) window.scrollTo(0, y);
});

/* Live: the server says when the database changed; the view refetches.
 * One stream per browser, not per tab (a browser opens six connections to
 * a host, and each tab's stream would hold one): the tab holding the
 * "live" lock listens and passes each event on to the others over a
 * BroadcastChannel; when it closes, another tab takes the lock. Refetches
 * are coalesced (one at a time, the events meanwhile make one more) and
 * at most one a second. */
const liveDot = document.getElementById('live');
const LIVE_MS = 1000;
let liveBusy = false, liveAgain = false, liveLast = 0;
async function onChange() {
  if (!view || !view.live) return;
  if (liveBusy) { liveAgain = true; return; }
  liveBusy = true;
  try {
    do {
      liveAgain = false;
      const wait = liveLast + LIVE_MS - Date.now();
      if (wait > 0) await new Promise(r => setTimeout(r, wait));
      liveLast = Date.now();
      if (view && view.live) await view.live();
    } while (liveAgain);
  } catch (e) { /* the next change tries again */ } finally { liveBusy = false; }
}
function liveOn(on, why) {
  liveDot.classList.toggle('on', on);
  liveDot.title = why;
}
function listen(relay) {
  const events = new EventSource('/api/events?token=' + encodeURIComponent(token || ''));
  events.addEventListener('hello', () => { liveOn(true, 'live updates on'); relay && relay.postMessage({ hello: 1 }); });
  events.addEventListener('change', () => { relay && relay.postMessage({ change: 1 }); onChange(); });
  events.onerror = () => { liveOn(false, 'live updates off (reconnecting)'); relay && relay.postMessage({ off: 1 }); };
  return events;
}
if (token) {
  const channel = 'BroadcastChannel' in window ? new BroadcastChannel('tftap-live') : null;
  if (channel && navigator.locks) {
    channel.onmessage = m => {
      if (m.data.change) onChange();
      if (m.data.hello) liveOn(true, 'live updates on (through another tab)');
      if (m.data.off) liveOn(false, 'live updates off (reconnecting)');
    };
    liveOn(false, 'live updates through another tab');
    /* Held until the tab closes; the next tab waiting gets it then. */
    navigator.locks.request('tftap-live', () => new Promise(() => {
      let on = false;
      channel.onmessage = m => { if (m.data.ask && on) channel.postMessage({ hello: 1 }); };
      const es = listen(channel);
      es.addEventListener('hello', () => { on = true; });
      es.addEventListener('error', () => { on = false; });
    }));
    /* A tab opened meanwhile hears nothing until the next event: say hello. */
    channel.postMessage({ ask: 1 });
  } else {
    listen(null);
  }
}

route();
