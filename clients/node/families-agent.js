'use strict';
// A Node agent that starts the seeds' families of children, for tests.
//
// Run by hermes-owned.test.js and by cmd/hermesd's survivors matrix
// (TestGatewaySurvivors), which kill it with kill -9 and look for what
// survives. It starts each family through hermes-owned (spawnOwned, or
// ownProcessGroups for a group started elsewhere), each family marked by a
// marker of its own in its processes' command lines (MARKER followed by
// two digits: the arguments of sleep, 4000.MARKERnn, are valid durations),
// then prints one line, "ready " and a JSON list of the families it
// started, as clients/python/families_agent.py does:
//
//   [{"family": "plain child", "marker": "...", "processes": 2,
//     "ownership": "owned"}, ...]
//
// processes counts what runs of the family once it started, its hermesctl
// run included; a family with ownership "persist_on_release" must outlive
// the agent, with its reason (REASON) in status. The agent then waits
// until it is killed.
//
// Environment: MARKER (digits), MODE and GRACE (hermesctl run's --mode and
// --grace), FAMILIES ("1": every family; else the plain child only, as a
// control owner), MCP_SERVER (the entry point of
// @modelcontextprotocol/server-filesystem; its row is left out when
// empty), MCP_ROOT (a directory for the server to serve).

const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const h = require('./hermes-owned.js');

const REASON = 'a background task the test left running on purpose';

const { MARKER: base, MODE: mode, GRACE: grace } = process.env;
const rows = [];
const marker = (i) => base + String(i).padStart(2, '0');
const sleep = (m) => '4000.' + m;

// own starts one family through spawnOwned; argv is given its marker.
async function own(family, processes, argv, { ownership = 'owned', ...o } = {}) {
  const m = marker(rows.length);
  const [cmd, ...args] = argv(m);
  const extra = ownership === 'owned' ? {} : { persistOnRelease: REASON, name: 'task-' + m };
  const p = await h.spawnOwned(cmd, args, { mode, grace, stdio: 'ignore', ...extra, ...o });
  rows.push({ family, marker: m, processes, ownership });
  return p;
}

// mcp starts a real MCP server on stdio and asks it to initialize over
// its pipes.
async function mcp() {
  const root = path.join(process.env.MCP_ROOT, 'mcp-' + marker(rows.length));
  fs.mkdirSync(root, { recursive: true });
  const p = await own('MCP server on stdio (npm)', 2, () => ['node', process.env.MCP_SERVER, root], { stdio: ['pipe', 'pipe', 'ignore'] });
  p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
    protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '0' } } }) + '\n');
  await new Promise((resolve, reject) => {
    let buf = '';
    p.stdout.on('data', (c) => {
      buf += c;
      if (buf.includes('\n')) {
        if (JSON.parse(buf.split('\n')[0]).result) resolve(); else reject(new Error('the MCP server did not initialize: ' + buf));
      }
    });
  });
}

async function main() {
  await own('plain child', 2, (m) => ['sleep', sleep(m)]);
  if (process.env.FAMILIES) {
    await own('tree of three', 4, (m) => ['sh', '-c', 'sleep "$0" & sleep "$0" & wait', sleep(m)]);
    await own('TERM-ignorer', 2, (m) => ['sh', '-c', 'trap "" TERM; exec sleep "$0"', sleep(m)]);
    await own('setsid escapee', 3, (m) => ['sh', '-c', 'setsid sleep "$0" & wait', sleep(m)]);
    await own('daemon: forks twice, env cleared', 4, (m) => ['sh', '-c', '(env -i setsid sleep "$0" &); sleep "$0"', sleep(m)]);
    // A language server: it reads its stdin to EOF (the agent's death
    // closes it), then lives on.
    await own('language server ignoring stdin EOF', 2, (m) => ['sh', '-c', 'cat >/dev/null; exec sleep "$0"', sleep(m)],
      { stdio: ['pipe', 'ignore', 'ignore'] });
    await own('persist_on_release task', 2, (m) => ['sleep', sleep(m)], { ownership: 'persist_on_release' });
    // A group started elsewhere (an SDK's), handed over.
    const m = marker(rows.length);
    const ext = spawn('sleep', [sleep(m)], { detached: true, stdio: 'ignore' });
    await h.ownProcessGroups([ext.pid]);
    rows.push({ family: 'group handed over (ownProcessGroups)', marker: m, processes: 1, ownership: 'owned' });
  }
  if (process.env.MCP_SERVER) await mcp();
  console.log('ready ' + JSON.stringify(rows));
}

main().catch((e) => { console.error(e); process.exit(3); });
setInterval(() => {}, 1 << 30);
