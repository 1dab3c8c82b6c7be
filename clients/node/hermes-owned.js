'use strict';
// Owned children for Node agents: whatever you start dies with you.
//
// The four verbs of hermes units for a Node program, with nothing beyond
// Node's own modules. hermesd keeps the groups for you (it is the keeper,
// your process the owner): at your death, by any death (kill -9
// included), hermesd stops your owned groups (TERM, then KILL after the
// grace); if hermesd dies too, its death supervisor ends them; a group
// marked persistOnRelease, with its written reason, survives both.
//
//   await spawnOwned(cmd, args, options)       -> ChildProcess
//   await ownProcessGroups(pgids, options)
//   await releaseProcessGroups(pgids)
//   await releaseProcessGroupOnceEmpty(pgid)
//
// spawnOwned runs the child under `hermesctl run --owner PID` (hermesctl in
// PATH, or $HERMESCTL), which contains its whole tree and ends it at the
// owner's death; hermesd keeps that run's group for the owner and shows it
// in status. Without a running hermesd, spawnOwned falls back to hermesctl
// run's guarantee alone (the child still dies with its owner, but is not
// shown in status, and a persistOnRelease child outlives its owner as a
// plain `hermesctl run --no-owner` does); the other verbs reject with
// HermesdNotRunning, one clear error.

const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');

// The child of spawnOwned runs this gate first: it execs the program only
// once it has read "go" from the pipe the caller holds, which the caller
// writes after hermesd has kept the child's group. A caller that dies
// before that closes the pipe: the gate reads EOF and exits 125 without
// running the program. So the program never runs unowned.
const GATE = 'fd=$1; shift; IFS= read -r go <&"$fd" || exit 125; ' +
  '[ "$go" = go ] || exit 125; eval "exec $fd<&-"; exec "$@"';

class HermesError extends Error {
  constructor(message, code = '') {
    super(message);
    this.name = 'HermesError';
    this.code = code;
  }
}

class HermesdNotRunning extends HermesError {
  constructor(message) {
    super(message, 'not_running');
    this.name = 'HermesdNotRunning';
  }
}

class Refused extends HermesError {
  constructor(message) {
    super(message, 'refused');
    this.name = 'Refused';
  }
}

function socketPath() {
  if (process.env.HERMES_SOCKET) return process.env.HERMES_SOCKET;
  const cands = [];
  if (process.env.XDG_RUNTIME_DIR) cands.push(path.join(process.env.XDG_RUNTIME_DIR, 'hermes', 'hermesd.sock'));
  cands.push(path.join('/run/user', String(process.geteuid()), 'hermes', 'hermesd.sock'));
  const state = process.env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state');
  cands.push(path.join(state, 'hermes', 'hermesd.sock'));
  for (const c of cands) {
    try {
      if (fs.statSync(c).isSocket()) return c;
    } catch { /* not there */ }
  }
  return cands[0];
}

class Client {
  // options.socketPath: HERMES_SOCKET, else the default places, as
  // hermesctl finds them.
  constructor({ socketPath: sp, timeoutMs = 10000 } = {}) {
    this.socketPath = sp || socketPath();
    this.timeoutMs = timeoutMs;
  }

  call(method, urlPath, body) {
    return new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request({
        socketPath: this.socketPath, path: urlPath, method, timeout: this.timeoutMs,
        headers: data === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) },
      }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          let doc;
          try {
            doc = JSON.parse(Buffer.concat(chunks).toString() || '{}');
          } catch {
            reject(new HermesError(`hermesd answered ${res.statusCode}: not JSON`));
            return;
          }
          if (res.statusCode >= 300) {
            const msg = doc.error || `hermesd answered ${res.statusCode}`;
            reject(doc.code === 'refused' ? new Refused(msg) : new HermesError(msg, doc.code || ''));
            return;
          }
          resolve(doc);
        });
      });
      req.on('timeout', () => req.destroy(new HermesError(`hermesd did not answer within ${this.timeoutMs} ms`)));
      req.on('error', (e) => {
        if (e.code === 'ENOENT' || e.code === 'ECONNREFUSED') {
          reject(new HermesdNotRunning(`hermesd is not running (nothing answers on ${this.socketPath}: ${e.code}); start hermesd, or set HERMES_SOCKET to its control socket`));
          return;
        }
        reject(e);
      });
      req.end(data);
    });
  }

  // Hand process groups started elsewhere (an MCP SDK's, a browser
  // harness's) to hermesd for options.owner (default: this process): they
  // die with it. options.persistOnRelease is the written reason of a group
  // that must survive its owner and hermesd. All or none; resolves to the
  // kept groups as status shows them.
  async ownProcessGroups(pgids, { owner, persistOnRelease, name } = {}) {
    const req = { pgids: pgids.map(Number) };
    if (owner) req.owner_pid = Number(owner);
    if (persistOnRelease !== undefined) {
      req.ownership = 'persist_on_release';
      req.reason = persistOnRelease;
    }
    if (name) req.name = name;
    return (await this.call('POST', '/v1/owned/own', req)).groups;
  }

  // Give groups up: they outlive their owner and hermesd.
  async releaseProcessGroups(pgids) {
    return (await this.call('POST', '/v1/owned/release', { pgids: pgids.map(Number) })).groups;
  }

  // Give a group up once nothing is left in it; until then it stays owned.
  async releaseProcessGroupOnceEmpty(pgid) {
    return (await this.call('POST', '/v1/owned/release', { pgids: [Number(pgid)], once_empty: true })).groups;
  }

  // hermesd's status; its `owned` lists the kept groups.
  status() {
    return this.call('GET', '/v1/status');
  }

  // Start cmd with args as child_process.spawn does (stdio, cwd, env as
  // asked) under `hermesctl run --owner OWNER` (OWNER: this process unless
  // options.owner names another), which contains the child's whole tree
  // (setsid and double-fork escapees included) and ends it at the owner's
  // death; its group is kept by hermesd for the owner before the program
  // runs, and shows in status. options.persistOnRelease (a reason) makes
  // it survive its owner and hermesd; options.mode ('cgroup', 'pgroup')
  // and options.grace ('3s') are hermesctl run's. Resolves to the
  // ChildProcess, whose pid is hermesctl's: signals to it reach the
  // child's group, and its exit status is the child's. Without hermesd
  // the child is still owned (hermesctl run's guarantee), but not kept nor
  // shown.
  async spawnOwned(cmd, args = [], options = {}) {
    const { owner, persistOnRelease, name, mode, grace, ...spawnOptions } = options;
    if ('detached' in spawnOptions || spawnOptions.shell) {
      throw new TypeError('spawnOwned: detached and shell are not allowed: the child leads a session of its own; pass ("sh", ["-c", cmd])');
    }
    const ownerPID = Number(owner || process.pid);
    const run = [hermesctl(), 'run'];
    run.push(...(persistOnRelease !== undefined ? ['--no-owner'] : ['--owner', String(ownerPID)]));
    if (mode) run.push('--mode', mode);
    if (grace) run.push('--grace', String(grace));
    let stdio = spawnOptions.stdio ?? 'pipe';
    if (typeof stdio === 'string') stdio = [stdio, stdio, stdio];
    stdio = [...stdio];
    while (stdio.length < 3) stdio.push('pipe');
    const gateFD = stdio.length;
    stdio.push('pipe');
    const child = spawn('/bin/sh', ['-c', GATE, 'hermes-gate', String(gateFD), ...run, '--', cmd, ...args],
      { ...spawnOptions, stdio, detached: true });
    if (child.pid === undefined) {
      await new Promise((resolve, reject) => child.once('error', reject));
    }
    const gate = child.stdio[gateFD];
    try {
      await this.ownProcessGroups([child.pid], { owner: ownerPID, persistOnRelease, name: name || path.basename(cmd) });
    } catch (e) {
      if (!(e instanceof HermesdNotRunning)) {
        gate.destroy(); // the gate reads EOF: the program never runs
        throw e;
      }
    }
    await new Promise((resolve) => gate.end('go\n', resolve));
    return child;
  }
}

// The hermesctl spawnOwned runs: $HERMESCTL, else hermesctl in PATH.
function hermesctl() {
  if (process.env.HERMESCTL) return process.env.HERMESCTL;
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir || '.', 'hermesctl');
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch { /* not here */ }
  }
  throw new HermesError('hermesctl is not in PATH (spawnOwned runs children under hermesctl run); install it, or set HERMESCTL to its path');
}

let defaultClient;
function client() {
  defaultClient ??= new Client();
  return defaultClient;
}

module.exports = {
  Client,
  HermesError,
  HermesdNotRunning,
  Refused,
  spawnOwned: (cmd, args, options) => client().spawnOwned(cmd, args, options),
  ownProcessGroups: (pgids, options) => client().ownProcessGroups(pgids, options),
  releaseProcessGroups: (pgids) => client().releaseProcessGroups(pgids),
  releaseProcessGroupOnceEmpty: (pgid) => client().releaseProcessGroupOnceEmpty(pgid),
  status: () => client().status(),
};
