/* tests/web/browser.sh's driver: every view of `tftap serve` in headless
 * chromium (puppeteer-core over the DevTools protocol), asserting what a
 * person sees. One browser for all views; screenshots go to conf.shots.
 * usage: node browser.js CONF_JSON (written by browser.sh) */
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const conf = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const puppeteer = require(path.join(conf.node_dir, 'node_modules', 'puppeteer-core'));

let passed = 0, failed = 0;
const ok = name => { passed++; console.log('ok: ' + name); };
const notOk = name => { failed++; console.log('FAILED: ' + name); };
const check = (name, cond) => (cond ? ok(name) : notOk(name));
const checkEq = (name, got, want) => {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  g === w ? ok(name) : notOk(name + ': got ' + g + ', expected ' + w);
};
const T = 30000; /* a bound, never a wait: every wait polls for its condition */

async function main() {
  const browser = await puppeteer.launch({
    executablePath: conf.chromium,
    headless: true,
    userDataDir: conf.profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
  });
  const base = conf.url.replace(/\/\?token=.*$/, '');
  await browser.defaultBrowserContext().overridePermissions(base, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  const errors = [];
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text() + ' @ ' + page.url()); });
  page.on('pageerror', e => errors.push('page error: ' + e.message));
  /* Documents the page loads (a full navigation, not the app's own): the
   * live section names them when it finds it was reloaded. */
  const documents = [];
  page.on('request', r => { if (r.isNavigationRequest() && r.frame() === page.mainFrame()) documents.push(r.url().replace(/token=[^&]*/, 'token=…')); });
  const shot = async name => page.screenshot({ path: path.join(conf.shots, name + '.png'), fullPage: true });
  const text = sel => page.$eval(sel, e => e.innerText);
  const count = sel => page.$$eval(sel, es => es.length);
  const waitCount = async (sel, n) => {
    try {
      await page.waitForFunction((s, k) => document.querySelectorAll(s).length === k, { timeout: T }, sel, n);
    } catch (e) { /* reported by the caller's check */ }
    return count(sel);
  };
  const go = async p => {
    await page.goto(base + p, { waitUntil: 'domcontentloaded' });
  };

  /* ---- runs: the token, the list, keyboard navigation ---- */
  await page.goto(conf.url, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('table.runs tbody tr', { timeout: T });
  checkEq('runs: one row per recorded run', await waitCount('table.runs tbody tr', conf.runs.length), conf.runs.length);
  check('runs: the token leaves the address bar', !page.url().includes('token='));
  const hist = await (await page.createCDPSession()).send('Page.getNavigationHistory');
  check('runs: and the history (' + hist.entries.length + ' entries)', hist.entries.length > 0 && hist.entries.every(e => !e.url.includes('token=')));
  checkEq('runs: no cookie (cookies are not scoped by port)', (await page.cookies()).map(c => c.name), []);
  check('runs: the token is in the tab\'s storage', await page.evaluate(() => (sessionStorage.getItem('tftap_token') || '').length === 32));
  const runA = await text(`tr[data-run="${conf.a.run}"]`);
  check('runs: run A reads as the tofu apply it was', /tofu apply/.test(runA) && /tofu/.test(runA));
  const runB = await page.$$eval(`tr[data-run="${conf.b.run}"] td`, tds => tds.map(t => t.innerText));
  checkEq('runs: run B shows its exit code', runB[7], '1');
  check('runs: run B is FAILED, with why', /^FAILED exit 1/.test(runB[1]));
  const runR = await page.$$eval(`tr[data-run="${conf.r.run}"] td`, tds => tds.map(t => t.innerText));
  checkEq('runs: run R is FAILED: exit 1, 1 rejected', runR[1], 'FAILED exit 1, ' + conf.r.verdict.rejected.length + ' rejected');
  checkEq('runs: its directory', runR[3], conf.r.cwd);
  const argv = execFileSync('bash', ['-c', 'eval "set -- $1"; printf "%s\\0" "$@"', '_', runR[2]]).toString().split('\0').slice(0, -1);
  checkEq('runs: its command pastes back into a shell as the same arguments', argv, conf.r.argv);
  checkEq('runs: its findings counted', runR[10], conf.r.verdict.rejected.length + ' finding' + (conf.r.verdict.rejected.length === 1 ? '' : 's'));
  check('runs: run A is ok', /^ok/.test(await page.$eval(`tr[data-run="${conf.a.run}"] td:nth-child(2)`, t => t.innerText)));
  checkEq('runs: each run links to its check', await page.$eval(`tr[data-run="${conf.b.run}"] td:last-child a`, a => new URL(a.href).pathname).catch(() => null), '/check/' + conf.b.run);
  await shot('runs');
  await page.keyboard.press('j');
  const first = await page.evaluate(() => document.activeElement.getAttribute('href'));
  checkEq('keyboard: j focuses the newest run', first, '/runs/' + conf.runs[0]);
  await page.keyboard.press('ArrowDown');
  const second = await page.evaluate(() => document.activeElement.getAttribute('href'));
  checkEq('keyboard: ArrowDown moves to the next run', second, '/runs/' + conf.runs[1]);
  await page.keyboard.press('Enter');
  await page.waitForSelector('.lane', { timeout: T });
  checkEq('keyboard: Enter opens it (client-side, a deep link)', new URL(page.url()).pathname, '/runs/' + conf.runs[1]);

  /* ---- run R: why it failed, without a click ---- */
  await go('/runs/' + conf.r.run);
  await page.waitForSelector('#verdict-line', { timeout: T });
  const rv = conf.r.verdict, rej = rv.rejected[0];
  checkEq('failed apply: the verdict line says what tftap show says', await text('#verdict-line'),
    'Run ' + conf.r.run + ' failed: the command exited 1; ' + rv.rejected.length + ' answer' + (rv.rejected.length === 1 ? '' : 's') + ' core rejects.');
  const rrow = await page.$$eval('table.rejected-answers tbody tr', trs => trs.map(tr => [...tr.children].map(td => td.innerText)));
  checkEq('failed apply: the rejected answer: call, address, rule, path, both values exact, why', rrow[0],
    [rej.method + ' #' + rej.call_id, rej.address, rej.rule, rej.path, JSON.stringify(rej.expected), JSON.stringify(rej.actual), rej.message]);
  const vbox = await page.$eval('#verdict', e => { const r = e.getBoundingClientRect(); return { top: r.top, bottom: r.bottom }; });
  check('failed apply: the verdict is above the fold (' + JSON.stringify(vbox) + ')', vbox.bottom <= 900);
  checkEq('failed apply: it links to its call', await page.$eval('table.rejected-answers a', a => new URL(a.href).pathname), '/runs/' + conf.r.run + '/calls/' + rej.call_id);
  await page.waitForSelector(`a.row.s-err[data-call="${rej.call_id}"]`, { timeout: T }).catch(() => {});
  checkEq('failed apply: the offending call is red in the waterfall, "rejected"', await page.$eval(`a.row[data-call="${rej.call_id}"]`, r => r.classList.contains('s-err') && r.querySelector('.c-status').innerText).catch(() => null), 'rejected');
  checkEq('failed apply: and no other row is red (expected closes are not: ' + conf.r.closed + ')', await count('a.row.s-err'), 1 + conf.r.failed);
  await page.waitForSelector(`details.change.rejected[data-call="${rej.call_id}"]`, { timeout: T }).catch(() => {});
  check('failed apply: its change says core rejected it', /core rejected this answer: /.test(await page.$eval(`details.change[data-call="${rej.call_id}"] summary`, e => e.innerText).catch(() => '')));
  const tick = await page.$eval('.row.axis .ticks', e => e.getBoundingClientRect().left);
  const barBox = await page.$eval('a.row .c-bar', e => e.getBoundingClientRect().left);
  check('waterfall: the time axis starts where the bars do (' + tick + ', ' + barBox + ')', Math.abs(tick - barBox) < 1);
  await shot('failed-apply');
  await page.click('table.rejected-answers a');
  await page.waitForSelector('#compare', { timeout: T });
  check('failed apply: its call page says core rejected it', /^core rejected its answer: /.test(await text('#call-status')) && /rule|apply/.test(await text('#rejection')));
  const cmpRow = await page.$eval(`#compare tr[data-path="${rej.path}"]`, tr => ({ cls: tr.className, cells: [...tr.children].map(td => td.innerText) })).catch(() => null);
  checkEq('failed apply: planned versus new, the finding\'s path marked', cmpRow, { cls: 'rejected', cells: [rej.path, JSON.stringify(rej.expected), JSON.stringify(rej.actual)] });
  await shot('failed-apply-call');
  await go('/runs/' + conf.r.run);
  await page.waitForFunction(want => document.querySelector('input[name=other]') && document.querySelector('input[name=other]').value === String(want), { timeout: T }, conf.r.prev).catch(() => {});
  checkEq('diff: the default base is the previous run of the same command in the same directory', await page.$eval('input[name=other]', e => Number(e.value)), conf.r.prev);
  const planMarks = await page.$$eval('details.change pre.plan span', ss => [...new Set(ss.map(x => x.className + ' ' + x.innerText))].sort());
  check('changes: the markers coloured as tofu prints them (' + planMarks.join(', ') + ')', planMarks.includes('p-upd ~'));
  await go('/runs/last');
  await page.waitForSelector('#verdict-line', { timeout: T });
  checkEq('/runs/last is pinned to the run it was on load', new URL(page.url()).pathname, '/runs/' + conf.runs[0]);

  /* ---- exact numbers and markers in what the API sends ---- */
  const exactApi = await page.evaluate(() => {
    const t = '{"a":123456789012345678901234567890,"b":123456789012345678901234567891,"c":0.1000000000000000055511151231257827,"d":-1e+400,"e":42,"f":{"$sensitive":"hmac-sha256:00"}}';
    const viaBrowser = parseJSON(t), viaOwn = toJS(parseExact(t));
    return [viaBrowser, viaOwn].map(v => [showValue(v.a), showValue(v.b), showValue(v.c), showValue(v.d), v.e, showValue(v.f)]);
  });
  const wantExact = ['123456789012345678901234567890', '123456789012345678901234567891', '0.1000000000000000055511151231257827', '-1e+400', 42, '(sensitive value)'];
  checkEq('exact: API numbers keep their text (the browser\'s parser with source text)', exactApi[0], wantExact);
  checkEq('exact: and without it (the page\'s own parser)', exactApi[1], wantExact);

  /* ---- run A: waterfall lanes, rows, the plan-like changes ---- */
  await go('/runs/' + conf.a.run);
  await page.waitForSelector('a.row', { timeout: T });
  checkEq('run A: one lane per provider process', await count('.lane'), conf.a.processes);
  const heads = await page.$$eval('.lane-head', hs => hs.map(h => h.innerText));
  check('run A: lanes name their providers', heads.some(h => /tftest5/.test(h)) && heads.some(h => /tftest6/.test(h)));
  checkEq('run A: every call has a row', await waitCount('a.row', conf.a.calls), conf.a.calls);
  const colours = await page.$$eval('a.row', rs => [...new Set(rs.map(r => r.className.split(' ')[1]))].sort());
  check('run A: rows coloured by method (plan, apply, schema, config)', ['m-apply', 'm-plan', 'm-schema', 'm-config'].every(c => colours.includes(c)));
  checkEq('run A: a clean run has no red row (expected closes are grey)', await count('a.row.s-err'), 0);
  const bars = await page.$$eval('a.row .bar', bs => bs.filter(b => b.getBoundingClientRect().width >= 1).length);
  checkEq('run A: every row has its bar on the time axis', bars, conf.a.calls);
  checkEq('run A: each bar says its duration', await page.$$eval('a.row .dur', ds => ds.filter(d => /^[0-9.]+(us|ms|s)$/.test(d.innerText)).length), conf.a.calls);
  /* The minimap and zoom: every call drawn on the whole run; zooming
   * narrows the window the bars and the axis show, and widens the bars. */
  const zoomState = () => page.evaluate(() => {
    const c = document.querySelector('.minimap-canvas');
    const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let ink = 0;
    for (let i = 3; i < px.length; i += 4) if (px[i]) ink++;
    const map = document.querySelector('.minimap').getBoundingClientRect(), win = document.querySelector('.minimap-window').getBoundingClientRect();
    const bars = {};
    for (const r of document.querySelectorAll('a.row')) {
      const b = r.querySelector('.bar'), cb = r.querySelector('.c-bar').getBoundingClientRect(), bb = b.getBoundingClientRect();
      bars[r.dataset.call] = { hidden: b.hidden, width: bb.width, inside: bb.left > cb.left + 1 && bb.right < cb.right - 1 };
    }
    return { ink, label: document.querySelector('.zoom-label').innerText, left: (win.left - map.left) / map.width, width: win.width / map.width,
      ticks: [...document.querySelectorAll('.row.axis .ticks span')].map(s => s.innerText), bars };
  });
  /* (what is above the minimap, the verdict and the changes, drawn first: no layout moves under the pointer) */
  await page.waitForSelector('details.change', { timeout: T }).catch(() => {});
  await page.waitForNetworkIdle({ idleTime: 300, timeout: T }).catch(() => {});
  await page.waitForFunction(() => document.querySelector('.minimap-canvas') && document.querySelector('.minimap-canvas').width > 100, { timeout: T }).catch(() => {});
  const z0 = await zoomState();
  check('zoom: the minimap draws the calls (' + z0.ink + ' pixels) and frames the whole run (' + z0.label + ')', z0.ink > 0 && /^the whole run/.test(z0.label) && Math.abs(z0.width - 1) < 0.01);
  await page.click('button.zoom-in');
  const z1 = await zoomState();
  check('zoom in: the window is the middle half (' + z1.left.toFixed(3) + ', ' + z1.width.toFixed(3) + ', ' + z1.label + ')',
    Math.abs(z1.left - 0.25) < 0.01 && Math.abs(z1.width - 0.5) < 0.01 && /^showing /.test(z1.label));
  check('zoom in: the axis starts a quarter in (' + z1.ticks.join(' ') + ')', z1.ticks[0] !== '0' && z1.ticks[4] !== z0.ticks[4]);
  const grown = Object.keys(z1.bars).filter(id => !z1.bars[id].hidden && z1.bars[id].inside && z0.bars[id].width >= 4).map(id => z1.bars[id].width / z0.bars[id].width);
  check('zoom in: bars inside the window twice as wide (' + grown.map(r => r.toFixed(2)).join(', ') + ')', grown.length > 0 && grown.every(r => r > 1.9 && r < 2.1));
  check('zoom in: calls outside the window have no bar', Object.values(z1.bars).some(b => b.hidden) && !Object.values(z0.bars).some(b => b.hidden));
  const mm = await page.$eval('.minimap', e => { e.scrollIntoView({ block: 'center' }); const r = e.getBoundingClientRect(); return { x: r.left, y: r.top + r.height / 2, w: r.width }; });
  await page.mouse.move(mm.x + mm.w * 0.1, mm.y);
  await page.mouse.down();
  await page.mouse.move(mm.x + mm.w * 0.2, mm.y, { steps: 4 });
  await page.mouse.move(mm.x + mm.w * 0.3, mm.y, { steps: 4 });
  await page.mouse.up();
  const z2 = await zoomState();
  check('zoom: dragging across the minimap shows that stretch (' + z2.left.toFixed(3) + ', ' + z2.width.toFixed(3) + ')', Math.abs(z2.left - 0.1) < 0.01 && Math.abs(z2.width - 0.2) < 0.01);
  /* The stretch is in the address: a reload (or a link) shows it again. */
  const zoomUrl = await page.evaluate(() => location.search);
  check('zoom: the stretch shown is in the address (' + zoomUrl + ')', /[?&]zoom=\d+-\d+/.test(zoomUrl));
  await page.reload({ waitUntil: 'domcontentloaded' });
  await waitCount('a.row', conf.a.calls);
  const zr = await zoomState();
  check('zoom: a reload shows the same stretch (' + zr.left.toFixed(3) + ', ' + zr.width.toFixed(3) + ', ' + zr.ticks[0] + ', ' + zr.label + ')',
    Math.abs(zr.left - 0.1) < 0.01 && Math.abs(zr.width - 0.2) < 0.01 && zr.ticks.join(' ') === z2.ticks.join(' ') && zr.label === z2.label);
  /* (the page above the minimap fills in after a reload: find it again) */
  await page.waitForSelector('details.change', { timeout: T }).catch(() => {});
  await page.waitForNetworkIdle({ idleTime: 300, timeout: T }).catch(() => {});
  const mm2 = await page.$eval('.minimap', e => { e.scrollIntoView({ block: 'center' }); const r = e.getBoundingClientRect(); return { x: r.left, y: r.top + r.height / 2, w: r.width }; });
  await page.mouse.click(mm2.x + mm2.w * 0.7, mm2.y);
  const z3 = await zoomState();
  check('zoom: a click on the minimap moves the window there (' + z3.left.toFixed(3) + ', ' + z3.width.toFixed(3) + ')', Math.abs(z3.left - 0.6) < 0.01 && Math.abs(z3.width - 0.2) < 0.01);
  await page.click('button.zoom-out');
  const z4 = await zoomState();
  check('zoom out: twice the window (' + z4.width.toFixed(3) + ')', Math.abs(z4.width - 0.4) < 0.01);
  await shot('zoomed');
  await page.click('button.zoom-reset');
  const z5 = await zoomState();
  checkEq('zoom: "Whole run" shows every bar again, the axis as before, no zoom in the address', [Math.abs(z5.width - 1) < 0.01, Object.values(z5.bars).filter(b => !b.hidden).length, z5.ticks, await page.evaluate(() => location.search.includes('zoom='))], [true, conf.a.calls, z0.ticks, false]);
  await page.waitForSelector('details.change', { timeout: T });
  const addrs = await page.$$eval('details.change', ds => ds.map(d => d.dataset.address).sort());
  checkEq('run A: the changes are those of tftap show', addrs, conf.a.addresses.slice().sort());
  const upd = await page.$$eval('details.change', ds => ds.map(d => d.innerText).find(t => /tftest6_thing\.updated/.test(t)) || '');
  check('run A: the change reads like a plan', /\+ resource "tftest6_thing" "updated"/.test(upd) && /number_attr\s+= 1\.5/.test(upd));
  check('run A: the secret shows as (sensitive value)', /secret\s+= \(sensitive value\)/.test(upd) && !upd.includes('s1'));
  await shot('run');
  await page.focus('details.change summary');
  await page.keyboard.press('Enter');
  check('run A: a change collapses from the keyboard', !(await page.$eval('details.change', d => d.open)));
  await page.keyboard.press('Enter');
  check('run A: and opens again', await page.$eval('details.change', d => d.open));

  /* ---- filters: a deep link with the filter in it ---- */
  await page.type('input[name=type]', 'tftest6_thing');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.search.includes('type=tftest6_thing'), { timeout: T });
  const n6 = await waitCount('a.row', conf.a.thing_calls);
  checkEq('filter: only the type\'s calls', n6, conf.a.thing_calls);
  const whats = await page.$$eval('a.row .c-what', ws => ws.every(w => /tftest6_thing/.test(w.innerText)));
  check('filter: each row is about the type', whats);
  await go('/runs/' + conf.a.run + '?method=APPLY');
  checkEq('filter: method, any case, from the URL', await waitCount('a.row', conf.a.apply_calls), conf.a.apply_calls);

  /* ---- one call: trees, exact values, sensitive and unknown markers ---- */
  await go('/runs/' + conf.a.run + '/calls/' + conf.a.apply_call);
  await page.waitForSelector('.tree', { timeout: T });
  const req = await page.$eval('section.value', s => s.innerText);
  check('call: the request tree shows values as sent', /"number_attr": 1\.5/.test(req) && /"string_attr": "before"/.test(req));
  check('call: sensitive values are marked, not shown', (await count('.sensitive')) > 0 && !req.includes('"s1"'));
  check('call: as "(sensitive value)", no hash on the page', /\(sensitive value\)/.test(req) && !/hmac-sha256/.test(await text('main')));
  checkEq('call: status', await text('#call-status'), 'ok');
  await shot('call');
  await go('/runs/' + conf.a.run + '/calls/' + conf.a.unknown_call);
  await page.waitForSelector('.tree', { timeout: T });
  check('call: unknown values read "(known after apply)"', (await page.$$eval('.unknown', us => us.map(u => u.innerText))).some(t => /known after apply/.test(t)));
  const collapsed = await page.$eval('.tree details details', d => { d.querySelector('summary').click(); return d.open; });
  check('call: a subtree collapses', !collapsed);

  /* exact numbers and refinements (a call written into the database by the test) */
  await go('/runs/' + conf.c.run + '/calls/' + conf.c.call);
  await page.waitForSelector('.tree', { timeout: T });
  const exact = await page.$eval('section.value .tree', t => t.innerText);
  check('call: big numbers are exact', exact.includes('123456789012345678901234567890') && exact.includes('0.1000000000000000055511151231257827') && exact.includes('-1e+400'));
  check('call: refinements are shown', exact.includes('known after apply: not null, prefix "ami-"'));
  await page.click('section.value button');
  await page.waitForFunction(() => /copied/.test(document.querySelector('section.value [role=status]').innerText), { timeout: T }).catch(() => {});
  const copied = await page.evaluate(() => navigator.clipboard.readText()).catch(e => 'error: ' + e.message);
  check('call: "Copy as JSON" copies the exact text', copied.includes('123456789012345678901234567890') && copied.includes('-1e+400') && JSON.parse(copied) !== undefined);

  /* ---- a failed call ---- */
  await go('/runs/' + conf.b.run + '?status=error');
  const failedSel = `a.row.s-err[data-call="${conf.b.call}"]`;
  await page.waitForSelector(failedSel, { timeout: T });
  const failedRow = await text(failedSel);
  check('failed: the failed call is red and says its status', failedRow.includes(conf.b.status));
  checkEq('failed: status=error shows only failed calls', await count('a.row'), await count('a.row.s-err'));
  await shot('failed-run');
  await page.click(failedSel);
  await page.waitForSelector('#call-status', { timeout: T });
  check('failed: the call page says the status', (await text('#call-status')).startsWith('failed: ' + conf.b.status));
  await shot('failed-call');

  /* ---- one resource ---- */
  await go('/runs/' + conf.a.run + '/resources/tftest6_thing.updated');
  await page.waitForSelector('details.change', { timeout: T });
  const radd = await page.$$eval('details.change', ds => ds.map(d => d.dataset.address));
  check('resource: only its changes', radd.length > 0 && radd.every(a => a === 'tftest6_thing.updated'));
  await page.waitForSelector('a.row', { timeout: T });
  const rrows = await page.$$eval('a.row .c-what', ws => ws.map(w => w.innerText));
  check('resource: only its calls, in order', rrows.length === conf.a.updated_calls && rrows.every(w => w === 'tftest6_thing.updated'));
  await shot('resource');
  await page.click('#history-link');
  await page.waitForSelector('section.history-run', { timeout: T }).catch(() => {});
  checkEq('history: the address across runs, each run with its calls about it', await page.$$eval('section.history-run', ss => ss.map(x => [Number(x.dataset.run), x.querySelectorAll('li').length])),
    [[conf.a.run, conf.a.updated_calls]]);
  await shot('history');

  /* ---- check and diff: what tftap check and tftap diff say ---- */
  await go('/runs/' + conf.b.run);
  await page.waitForSelector('#check-link', { timeout: T });
  await page.click('#check-link');
  await page.waitForSelector('#check-summary', { timeout: T });
  checkEq('check: the run page links to its check', new URL(page.url()).pathname, '/check/' + conf.b.run);
  const ck = conf.check;
  checkEq('check: the summary says what tftap check --json counts', (await text('#check-summary')).split(';')[0].replace(/ \(.*/, ''),
    ck.violations ? ck.violations + ' violation' + (ck.violations === 1 ? '' : 's') : 'no rule broken');
  checkEq('check: one row per finding', await count('table.findings tbody tr'), ck.findings);
  await shot('check');
  await go('/runs/' + conf.b.run);
  await page.waitForSelector('input[name=other]', { timeout: T });
  await page.$eval('input[name=other]', (e, v) => { e.value = v; }, String(conf.a.run));
  await page.click('form.inline button');
  await page.waitForSelector('#diff-summary', { timeout: T });
  checkEq('diff: the run page diffs with the run asked for', new URL(page.url()).pathname, '/diff/' + conf.a.run + '/' + conf.b.run);
  await page.waitForSelector('#diff-versions tbody tr', { timeout: T }).catch(() => {});
  const vrows = await page.$$eval('#diff-versions tbody tr', trs => trs.map(tr => [...tr.children].map(td => td.innerText)));
  check('diff: the provider versions of both runs (' + JSON.stringify(vrows) + ')', vrows.some(r => /tftest6$/.test(r[0]) && r[1] === '0.1.0' && r[2] === '0.1.0'));
  const df = conf.diff;
  checkEq('diff: the summary says what tftap diff --json counts', (await text('#diff-summary')).split(';')[0],
    df.same ? 'same behaviour' : df.differences + ' difference' + (df.differences === 1 ? '' : 's'));
  checkEq('diff: one row per difference, behaviour and inputs apart', await count('table.diff tbody tr:not(.group)'), df.changes);
  await shot('diff');
  await go('/diff/' + conf.a.run + '/' + conf.a.run);
  await page.waitForSelector('#diff-summary', { timeout: T });
  checkEq('diff: a run against itself behaves the same', await text('#diff-summary'), 'same behaviour');

  /* ---- schemas ---- */
  await go('/schemas');
  await page.waitForSelector('main table tbody tr', { timeout: T });
  checkEq('schemas: each recorded schema listed once', await count('main table tbody a.sha'), conf.schemas);
  const groups = await page.$$eval('main table tbody tr', trs => trs.map(tr => [...tr.children].slice(0, 3).map(td => td.innerText).join(' ')));
  checkEq('schemas: one row per provider version and protocol', groups.length, new Set(groups).size);
  const link = await page.$$eval('main table tbody tr', rs => {
    const r = rs.find(x => /tftest6/.test(x.innerText));
    return r ? r.querySelector('a').getAttribute('href') : null;
  });
  await page.click(`a[href="${link}"]`);
  await page.waitForSelector('.schema-types a', { timeout: T });
  const types = await page.$$eval('.schema-types a', as => as.map(a => a.innerText));
  check('schemas: the provider\'s types', types.includes('tftest6_thing'));
  await page.type('input[type=search]', 'thing');
  await page.waitForFunction(() => [...document.querySelectorAll('.schema-types a')].every(a => /thing/.test(a.innerText)), { timeout: T }).catch(() => {});
  const found = await page.$$eval('.schema-types a', as => as.map(a => a.innerText));
  check('schemas: search', found.length > 0 && found.every(t => /thing/.test(t)));
  await page.click('.schema-types a');
  await page.waitForSelector('section.value .tree', { timeout: T });
  await page.waitForSelector('table.schema-attrs', { timeout: T }).catch(() => {});
  const attrRows = await page.$$eval('table.schema-attrs tbody tr', trs => trs.map(tr => [...tr.children].map(td => td.innerText)));
  check('schemas: a type\'s attributes as a table: name, type, flags (' + attrRows.length + ' rows)', attrRows.length > 0 && attrRows.some(r => r[0] === 'id' && /computed/.test(r[2])));
  check('schemas: and as JSON', /"attributes"/.test(await page.$eval('section.value .tree', t => t.textContent)));
  await shot('schemas');

  /* ---- live: a run appears and grows without a reload ---- */
  await go('/');
  await page.waitForSelector('table.runs tbody tr', { timeout: T });
  await page.waitForSelector('#live.on', { timeout: T }); /* listening before the run starts */
  await page.evaluate(() => { window.tftapNoReload = 1; });
  const documentsBefore = documents.length;
  const before = await count('table.runs tbody tr');
  execFileSync('bash', [conf.live, 'start'], { stdio: 'inherit' });
  const live = JSON.parse(fs.readFileSync(conf.live_state, 'utf8'));
  checkEq('live: the new run appears', await waitCount('table.runs tbody tr', before + 1), before + 1);
  check('live: marked as running', await page.$eval(`tr[data-run="${live.run}"]`, r => r.classList.contains('running')).catch(() => false));
  /* One step in the page: a live update may redraw the row at any moment.
   * ($eval is two: it finds the link, then clicks it in a second call; a
   * link redrawn between them is clicked detached from the document, where
   * the app does not see the click and Chromium follows the link: the page
   * reloaded.) */
  await page.evaluate(run => document.querySelector(`tr[data-run="${run}"] a`).click(), live.run);
  await page.waitForSelector('a.row', { timeout: T });
  check('live: its page says it is recording', /recording/.test(await text('main h1')));
  const rowsBefore = await count('a.row');
  execFileSync('bash', [conf.live, 'stop'], { stdio: 'inherit' });
  const done = JSON.parse(fs.readFileSync(conf.live_state, 'utf8'));
  const rowsAfter = await waitCount('a.row', done.calls);
  checkEq('live: the run grows to every call', rowsAfter, done.calls);
  const addressed = await page.waitForFunction(n => [...document.querySelectorAll('a.row')].filter(r => r.tftapCall && r.tftapCall.address).length === n, { timeout: T }, done.addressed).then(() => true, () => false);
  check('live: the addresses matched at its end appear without a reload (' + done.addressed + ')', addressed);
  check('live: the calls after the page opened came in (' + rowsBefore + ' -> ' + rowsAfter + ')', rowsAfter > rowsBefore);
  await page.waitForFunction(() => !/recording/.test(document.querySelector('main h1').innerText), { timeout: T }).catch(() => {});
  check('live: and it says when the run ended', !/recording/.test(await text('main h1')));
  const kept = await page.evaluate(() => window.tftapNoReload === 1);
  if (!kept)
    console.log('live: documents loaded meanwhile: ' + JSON.stringify(documents.slice(documentsBefore)));
  check('live: without a reload', kept);
  await shot('live');

  /* ---- seven tabs on one run: one live stream for the browser, not one
   * per tab (a browser opens six connections to a host) ---- */
  const tabs = [];
  for (let i = 0; i < 7; i++) {
    const t = await browser.newPage();
    t.on('pageerror', e => errors.push('page error (tab ' + i + '): ' + e.message));
    await t.goto(base + '/runs/' + conf.r.run, { waitUntil: 'domcontentloaded' });
    tabs.push(t);
  }
  let loaded = 0;
  for (const t of tabs) {
    try {
      await t.waitForSelector('a.row', { timeout: T });
      await t.waitForSelector('#verdict-line', { timeout: T });
      loaded++;
    } catch (e) { /* counted */ }
  }
  checkEq('seven tabs: each shows the run and its verdict (the token shared by the tabs)', loaded, 7);
  await tabs[6].bringToFront();
  await tabs[6].evaluate(sel => document.querySelector(sel).click(), `a.row[data-call="${conf.r.verdict.rejected[0].call_id}"]`);
  check('seven tabs: a click in the seventh opens its call', await tabs[6].waitForSelector('#call-status', { timeout: T }).then(() => true, () => false));
  await tabs[0].evaluate(() => document.querySelector('table.rejected-answers a').click());
  check('seven tabs: and in the first', await tabs[0].waitForSelector('#compare', { timeout: T }).then(() => true, () => false));
  const streams = [];
  for (const t of [page].concat(tabs)) streams.push(await t.$eval('#live', e => e.title));
  check('seven tabs: at most one holds the live stream (' + JSON.stringify(streams) + ')', streams.filter(x => x === 'live updates on').length <= 1);
  for (const t of tabs) await t.close();
  await page.bringToFront();

  /* ---- scale: a run of 50,000 calls ---- */
  if (conf.big_url) {
    const big = conf.big_url.replace(/\/\?token=.*$/, '');
    await page.goto(conf.big_url, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('table.runs tbody tr', { timeout: T });
    const cdp = await page.createCDPSession();
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    let bytes = 0;
    cdp.on('Network.loadingFinished', e => { bytes += e.encodedDataLength; });
    const t0 = Date.now();
    await page.goto(big + '/runs/1', { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('a.row', { timeout: T });
    const firstRows = Date.now() - t0;
    await page.waitForSelector('details.change', { timeout: 120000 });
    await page.waitForNetworkIdle({ idleTime: 300, timeout: 120000 }).catch(() => {});
    const rows = await count('a.row');
    console.log('scale: first rows after ' + firstRows + ' ms; first view ' + bytes + ' bytes, ' + rows + ' rows');
    check('scale: the first view of 50,000 calls transfers at most 300 KB (' + bytes + ' bytes)', bytes > 0 && bytes <= 300 * 1024);
    checkEq('scale: one page of rows', rows, 200);
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    checkEq('scale: scrolling to the end loads the next page', await waitCount('a.row', 400), 400);
    /* Back returns to where the page was scrolled. */
    await page.evaluate(() => window.scrollTo(0, 2000));
    await page.waitForFunction(() => history.state && history.state.scrollY === window.scrollY, { timeout: T }).catch(() => {});
    const y = await page.evaluate(() => window.scrollY);
    await page.evaluate(() => [...document.querySelectorAll('a.row')].find(r => r.getBoundingClientRect().top > 100).click());
    await page.waitForSelector('#call-status', { timeout: T });
    await page.goBack();
    await page.waitForFunction(want => document.querySelectorAll('a.row').length > 0 && Math.abs(window.scrollY - want) < 2, { timeout: T }, y).catch(() => {});
    checkEq('scale: Back restores the scroll position', await page.evaluate(() => Math.round(window.scrollY)), Math.round(y));
    /* Live at scale: commits while the page watches make at most one round
     * of requests each (coalesced: often fewer), and no row twice. */
    const apiReqs = [];
    const onReq = r => { if (r.url().includes('/api/') && !r.url().includes('/api/events')) apiReqs.push(new URL(r.url()).pathname); };
    page.on('request', onReq);
    const TOUCHES = 10;
    execFileSync('bash', [conf.touch, String(TOUCHES)], { stdio: 'inherit' });
    await page.waitForFunction(() => document.querySelector('#live.on'), { timeout: T }).catch(() => {});
    await page.waitForNetworkIdle({ idleTime: 1500, timeout: 60000 }).catch(() => {});
    page.off('request', onReq);
    console.log('scale: live requests for ' + TOUCHES + ' commits: ' + JSON.stringify(apiReqs));
    check('scale: live, at most one request per commit (' + apiReqs.length + ' for ' + TOUCHES + ')', apiReqs.length <= TOUCHES);
    const ids = await page.$$eval('a.row', rs => rs.map(r => r.dataset.call));
    checkEq('scale: live, no row twice', ids.length, new Set(ids).size);
    await cdp.detach();
  }

  checkEq('no console errors on any view', errors, []);
  await browser.close();
  console.log('browser: ' + passed + ' passed, ' + failed + ' failed');
  process.exit(failed ? 1 : 0);
}

main().catch(e => { console.log('FAILED: ' + (e.stack || e)); process.exit(1); });
