'use strict';
// Tests of hermes-owned against a real hermesd and real processes (node
// --test). They need HERMES_SOCKET (a running hermesd's control socket),
// HERMESCTL and HERMES_STATE: cmd/hermesd's TestClientLibraries starts a
// hermesd and runs them under `make test`. HERMES_TEST_MODES lists the
// containment modes ("cgroup pgroup"); HERMES_TEST_MCP_SERVER is the entry
// point of @modelcontextprotocol/server-filesystem when .ci/run installed
// it.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const h = require('./hermes-owned.js');

const GRACE = '500ms';
const WAIT = 20000; // the grace and the machine's noise
const LIVE = Boolean(process.env.HERMES_SOCKET) && process.platform === 'linux';
const WHY = 'needs a running hermesd (HERMES_SOCKET) on Linux: cmd/hermesd\'s TestClientLibraries provides one';

// The live (not zombie) processes whose command line holds marker.
function marked(marker) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`);
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (cmd.includes(marker) && state !== 'Z' && state !== 'X') out.push(Number(d));
    } catch { /* gone */ }
  }
  return out;
}

async function waitFor(cond, what) {
  const deadline = Date.now() + WAIT;
  for (;;) {
    if (cond()) return;
    if (Date.now() > deadline) throw new Error(`not within ${WAIT} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const newMarker = () => String(100000000 + Math.floor(Math.random() * 899999999));

function modes() {
  return (process.env.HERMES_TEST_MODES || 'pgroup').split(/\s+/).filter(Boolean);
}

// startAgent runs families-agent.js (the seeds' families, or a plain
// child only) and resolves to the process and the families it started,
// once it said ready.
function startAgent(t, marker, mode, { families = false } = {}) {
  const env = { ...process.env, MARKER: marker, MODE: mode, GRACE, FAMILIES: families ? '1' : '',
    MCP_SERVER: families ? process.env.HERMES_TEST_MCP_SERVER || '' : '', MCP_ROOT: os.tmpdir() };
  const p = spawn(process.execPath, [path.join(__dirname, 'families-agent.js')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => p.kill('SIGKILL'));
  return new Promise((resolve, reject) => {
    let out = '';
    p.stdout.on('data', (c) => {
      out += c;
      const i = out.indexOf('\n');
      if (i >= 0 && out.startsWith('ready ')) resolve({ p, rows: JSON.parse(out.slice(6, i)) });
    });
    p.on('exit', (code) => reject(new Error(`agent exited ${code} before ready`)));
  });
}

async function killed(p) {
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGKILL');
  await exited;
}

for (const mode of modes()) {
  test(`families: a Node owner killed with kill -9 (${mode})`, { skip: !LIVE && WHY }, async (t) => {
    const m = newMarker();
    const ctl = newMarker();
    t.after(() => [m, ctl].flatMap(marked).forEach((pid) => { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }));
    await startAgent(t, ctl, mode);
    const agent = await startAgent(t, m, mode, { families: true });
    if (process.env.HERMES_TEST_MCP_SERVER) {
      assert.ok(agent.rows.some((r) => r.family === 'MCP server on stdio (npm)'), 'the MCP server is among the families');
    }
    for (const r of agent.rows) {
      await waitFor(() => marked(r.marker).length >= r.processes, `${r.family}: ${r.processes} processes running`);
    }
    const before = marked(ctl).sort();
    assert.strictEqual(before.length, 2, 'the control\'s hermesctl and sleep');
    await killed(agent.p);
    const owned = agent.rows.filter((r) => r.ownership === 'owned');
    await waitFor(() => owned.every((r) => marked(r.marker).length === 0), 'every owned process gone after the owner\'s kill -9');
    const st = await h.status();
    for (const r of agent.rows.filter((x) => x.ownership === 'persist_on_release')) {
      assert.strictEqual(marked(r.marker).length, r.processes, 'the persist_on_release task is gone');
      const kept = (st.owned || []).filter((g) => g.name === 'task-' + r.marker);
      assert.strictEqual(kept.length, 1, JSON.stringify(st.owned));
      assert.strictEqual(kept[0].ownership, 'persist_on_release');
      assert.strictEqual(kept[0].reason, 'a background task the test left running on purpose');
      assert.strictEqual(kept[0].state, 'persisting');
    }
    assert.deepStrictEqual(marked(ctl).sort(), before, 'the live control owner\'s children');
  });
}

test('own, release, release once empty', { skip: !LIVE && WHY }, async (t) => {
  const p = spawn('sleep', ['4000'], { detached: true, stdio: 'ignore' });
  t.after(() => { try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ } });
  const got = await h.ownProcessGroups([p.pid], { name: 'held' });
  assert.deepStrictEqual(got.map((g) => [g.pgid, g.owner_pid, g.ownership, g.name]), [[p.pid, process.pid, 'owned', 'held']]);
  await h.releaseProcessGroups([p.pid]);
  assert.ok(!((await h.status()).owned || []).some((g) => g.pgid === p.pid));
  assert.strictEqual(p.exitCode, null, 'a released group is left running');
  await assert.rejects(h.releaseProcessGroups([p.pid]), h.Refused);
  await h.ownProcessGroups([p.pid]);
  const rel = await h.releaseProcessGroupOnceEmpty(p.pid);
  assert.strictEqual(rel[0].state, 'releasing');
  process.kill(p.pid, 'SIGKILL');
  const deadline = Date.now() + WAIT;
  while (((await h.status()).owned || []).some((g) => g.pgid === p.pid)) {
    assert.ok(Date.now() < deadline, 'the empty group forgotten');
    await new Promise((r) => setTimeout(r, 50));
  }
});

test('refusals change nothing', { skip: !LIVE && WHY }, async (t) => {
  const p = spawn('sleep', ['4000'], { detached: true, stdio: 'ignore' });
  t.after(() => { try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ } });
  await assert.rejects(h.ownProcessGroups([1]), (e) => e instanceof h.Refused && /pgid/.test(e.message));
  await assert.rejects(h.ownProcessGroups([p.pid], { owner: 1 }), (e) => e instanceof h.Refused && /init/.test(e.message));
  await assert.rejects(h.ownProcessGroups([p.pid], { persistOnRelease: ' ' }), /reason/);
  assert.ok(!((await h.status()).owned || []).some((g) => g.pgid === p.pid));
});

test('spawnOwned keeps the pipes the caller asked for', { skip: !LIVE && WHY }, async () => {
  const p = await h.spawnOwned('cat', [], { grace: GRACE });
  const out = [];
  p.stdout.on('data', (c) => out.push(c));
  const exited = new Promise((r) => p.once('close', r));
  p.stdin.end('{"jsonrpc":"2.0","id":1}\n');
  assert.strictEqual(await exited, 0);
  assert.strictEqual(Buffer.concat(out).toString(), '{"jsonrpc":"2.0","id":1}\n');
});

test('without hermesd: one clear error', async () => {
  const c = new h.Client({ socketPath: '/nonexistent/hermes/hermesd.sock' });
  await assert.rejects(c.ownProcessGroups([12345]), (e) => e instanceof h.HermesdNotRunning && /hermesd is not running/.test(e.message));
});
