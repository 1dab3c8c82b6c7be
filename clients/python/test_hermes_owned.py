"""Tests of hermes_owned against a real hermesd and real processes.

They need HERMES_SOCKET (a running hermesd's control socket), HERMESCTL
(hermesctl's path) and HERMES_STATE (hermesctl run's state directory):
cmd/hermesd's TestClientLibraries starts a hermesd and runs them under
`make test`. HERMES_TEST_MODES lists the containment modes to run the
families in ("cgroup pgroup"); HERMES_TEST_MCP_SERVER is the entry point of
@modelcontextprotocol/server-filesystem when .ci/run installed it.
"""

import json
import os
import random
import select
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hermes_owned as h  # noqa: E402

GRACE = "500ms"
WAIT = 20.0  # the grace and the machine's noise
LIVE = bool(os.environ.get("HERMES_SOCKET")) and sys.platform.startswith("linux")
WHY = "needs a running hermesd (HERMES_SOCKET) on Linux: cmd/hermesd's TestClientLibraries provides one"


def marked(marker):
    """The live (not zombie) processes whose command line holds marker."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read()
            with open("/proc/%s/stat" % d) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmd and state not in ("Z", "X"):
            out.append(int(d))
    return out


def wait_for(cond, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("not within %ss: %s" % (timeout, what))
        time.sleep(0.05)


def kill_marked(*markers):
    """Kills what the markers name: no survivor outlives a test."""
    for m in markers:
        for pid in marked(m):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def readline(pipe, what, timeout=WAIT):
    """A line from pipe, or an AssertionError naming what was awaited once
    timeout passed: a child that hangs fails the test, never stalls it."""
    ready, _, _ = select.select([pipe], [], [], timeout)
    if not ready:
        raise AssertionError("not within %ss: %s" % (timeout, what))
    return pipe.readline()


def new_marker():
    return "%d" % random.randrange(10**8, 10**9)


def modes():
    return os.environ.get("HERMES_TEST_MODES", "pgroup").split()


class Agent:
    """An agent process running families_agent.py (the seeds' families, or
    a plain child only); rows are the families it started."""

    def __init__(self, marker, mode, families=False):
        env = dict(os.environ, CLIENT_DIR=HERE, MARKER=marker, MODE=mode, GRACE=GRACE,
                   FAMILIES="1" if families else "",
                   MCP_SERVER=os.environ.get("HERMES_TEST_MCP_SERVER", "") if families else "",
                   MCP_ROOT=os.environ.get("TMPDIR", "/tmp"))
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, "families_agent.py")], env=env,
                                  stdout=subprocess.PIPE)
        try:
            line = readline(self.p.stdout, "the agent's ready line", timeout=3 * WAIT)
        except AssertionError:
            self.p.kill()
            self.p.wait()
            raise
        if not line.startswith(b"ready "):
            self.p.kill()
            self.p.wait()
            raise AssertionError("agent did not get ready: %r" % line)
        self.rows = json.loads(line[len(b"ready "):])

    def kill(self):
        self.p.kill()
        self.p.wait()
        self.p.stdout.close()


@unittest.skipUnless(LIVE, WHY)
class Families(unittest.TestCase):
    """The seeds' families for a Python owner killed with kill -9: every
    owned child gone within the grace, the persist_on_release one running
    with its reason in status, a live control owner's children untouched.
    (cmd/hermesd's survivors matrix runs the same agent, row by row.)"""

    def test_owner_killed(self):
        for mode in modes():
            with self.subTest(mode=mode):
                self.families(mode)

    def families(self, mode):
        m, ctl = new_marker(), new_marker()
        self.addCleanup(kill_marked, m, ctl)
        control = Agent(ctl, mode)
        self.addCleanup(control.kill)
        agent = Agent(m, mode, families=True)
        self.addCleanup(agent.kill)
        if os.environ.get("HERMES_TEST_MCP_SERVER"):
            self.assertIn("MCP server on stdio (npm)", [r["family"] for r in agent.rows])
        for r in agent.rows:
            wait_for(lambda: len(marked(r["marker"])) >= r["processes"],
                     "%s: %d processes running (%s)" % (r["family"], r["processes"], marked(r["marker"])))
        before_ctl = marked(ctl)
        self.assertEqual(len(before_ctl), 2, "the control's hermesctl and sleep")
        agent.kill()
        owned = [r for r in agent.rows if r["ownership"] == "owned"]
        wait_for(lambda: not any(marked(r["marker"]) for r in owned), "every owned process gone after the owner's kill -9 (left: %s)" %
                 {r["family"]: marked(r["marker"]) for r in owned})
        for r in agent.rows:
            if r["ownership"] != "persist_on_release":
                continue
            self.assertEqual(len(marked(r["marker"])), r["processes"], "the persist_on_release task is gone")
            kept = [g for g in h.status().get("owned", []) if g["name"] == "task-" + r["marker"]]
            self.assertEqual(len(kept), 1, h.status().get("owned"))
            self.assertEqual(kept[0]["ownership"], "persist_on_release")
            self.assertEqual(kept[0]["reason"], "a background task the test left running on purpose")
            self.assertEqual(kept[0]["state"], "persisting")
        self.assertEqual(sorted(marked(ctl)), sorted(before_ctl), "the live control owner's children")


@unittest.skipUnless(LIVE, WHY)
class Verbs(unittest.TestCase):
    def start_group(self, *args):
        p = subprocess.Popen(list(args) or ["sleep", "4000"], start_new_session=True)

        def end():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        self.addCleanup(end)
        return p

    def owned(self):
        return {g["pgid"]: g for g in h.status().get("owned", [])}

    def test_own_and_release(self):
        p = self.start_group()
        got = h.own_process_groups([p.pid], name="held")
        self.assertEqual([(g["pgid"], g["owner_pid"], g["ownership"], g["name"]) for g in got],
                         [(p.pid, os.getpid(), "owned", "held")])
        self.assertEqual(self.owned()[p.pid]["owner_pid"], os.getpid())
        h.release_process_groups([p.pid])
        self.assertNotIn(p.pid, self.owned())
        self.assertIsNone(p.poll(), "a released group is left running")
        with self.assertRaises(h.Refused):
            h.release_process_groups([p.pid])

    def test_release_once_empty(self):
        p = self.start_group()
        h.own_process_groups([p.pid])
        got = h.release_process_group_once_empty(p.pid)
        self.assertEqual(got[0]["state"], "releasing")
        self.assertIn(p.pid, self.owned(), "kept until empty")
        p.kill()
        p.wait()
        wait_for(lambda: p.pid not in self.owned(), "the empty group forgotten")

    def test_owner_death_ends_own(self):
        """A Python owner hands over a group it started elsewhere, and is
        killed with kill -9: hermesd stops that group."""
        m = new_marker()
        code = ("import os, subprocess, sys, time; sys.path.insert(0, %r); import hermes_owned as h; "
                "p = subprocess.Popen(['sleep', '4000.' + os.environ['M']], start_new_session=True); "
                "h.own_process_groups([p.pid]); print('ready', flush=True); time.sleep(4000)") % HERE
        owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=dict(os.environ, M=m))
        self.addCleanup(kill_marked, m)
        self.assertEqual(readline(owner.stdout, "the owner's ready line").strip(), b"ready")
        self.assertEqual(len(marked(m)), 1)
        owner.kill()
        owner.wait()
        owner.stdout.close()
        wait_for(lambda: not marked(m), "the handed-over group stopped at its owner's death")

    def test_refusals(self):
        p = self.start_group()
        q = self.start_group()
        h.own_process_groups([q.pid])  # the death supervisor runs now
        st = h.status()
        cases = [
            ([1], {}, "pgid"),
            ([p.pid], {"owner": 1}, "init"),
            ([st["daemon"]["pid"]], {}, "hermesd's own group"),
            ([st["supervisor"]["pid"]], {}, "hermesd's death supervisor"),
            ([p.pid, q.pid], {}, "kept already"),
        ]
        for pgids, kw, why in cases:
            with self.subTest(why=why):
                with self.assertRaises(h.Refused) as cm:
                    h.own_process_groups(pgids, **kw)
                self.assertRegex(str(cm.exception), why)
        with self.assertRaises(h.HermesError) as cm:
            h.own_process_groups([p.pid], persist_on_release="  ")
        self.assertIn("reason", str(cm.exception))
        self.assertNotIn(p.pid, self.owned(), "a refusal changes nothing")
        self.assertIsNone(p.poll())

    def test_refuses_the_callers_group(self):
        """A caller in a group of its own (not this test's, whose group may
        have been made outside its pid namespace and read as 0) asks to
        own it: refused, naming the caller."""
        code = ("import os, sys; sys.path.insert(0, %r); import hermes_owned as h\n"
                "try:\n    h.own_process_groups([os.getpgrp()])\nexcept h.Refused as e:\n    print(e)\n"
                "else:\n    print('accepted')") % HERE
        out = subprocess.run([sys.executable, "-c", code], start_new_session=True, capture_output=True,
                             text=True, check=True, timeout=WAIT).stdout
        self.assertRegex(out, r"group \d+ holds pid \d+ \(python3?[^)]*\), the caller")

    def test_dead_owner_stops_the_group(self):
        dead = subprocess.Popen(["true"])
        dead.wait()
        p = self.start_group()
        with self.assertRaises(h.Refused) as cm:
            h.own_process_groups([p.pid], owner=dead.pid)
        self.assertIn("already exited", str(cm.exception))
        wait_for(lambda: p.poll() is not None, "the group handed over for a dead owner stopped")

    def test_status_and_who(self):
        """hermesctl status and who show a spawned child's group with its
        owner."""
        p = h.spawn_owned(["sleep", "4000"], name="shown", grace=GRACE)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        ctl = [os.environ["HERMESCTL"], "--socket", os.environ["HERMES_SOCKET"]]
        out = subprocess.run(ctl + ["status"], capture_output=True, text=True, check=True, timeout=WAIT).stdout
        self.assertRegex(out, r"(?m)^  shown +%d +pid %d +owned +kept +-$" % (p.pid, os.getpid()))
        out = subprocess.run(ctl + ["who", str(p.pid)], capture_output=True, text=True, check=True, timeout=WAIT).stdout
        self.assertRegex(out, r"(?m)^kept for: +pid %d, group %d \(shown\), owned, since " % (os.getpid(), p.pid))

    def test_spawn_keeps_pipes(self):
        p = h.spawn_owned(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, grace=GRACE)
        out, _ = p.communicate(b'{"jsonrpc": "2.0", "id": 1}\n', timeout=WAIT)
        self.assertEqual(out, b'{"jsonrpc": "2.0", "id": 1}\n')
        self.assertEqual(p.returncode, 0)


class WithoutHermesd(unittest.TestCase):
    def test_one_clear_error(self):
        c = h.Client(socket_path="/nonexistent/hermes/hermesd.sock")
        with self.assertRaises(h.HermesdNotRunning) as cm:
            c.own_process_groups([12345])
        self.assertIn("hermesd is not running", str(cm.exception))

    @unittest.skipUnless(os.environ.get("HERMESCTL") and sys.platform.startswith("linux"), "needs hermesctl (HERMESCTL)")
    def test_spawn_falls_back_to_hermesctl_run(self):
        """Without hermesd, spawn_owned still runs the child owned by its
        caller: it dies with it."""
        m = new_marker()
        code = ("import os, sys, time; sys.path.insert(0, %r); import hermes_owned as h; "
                "c = h.Client(socket_path='/nonexistent/hermesd.sock'); "
                "c.spawn_owned(['sh', '-c', 'setsid sleep \"$0\" & wait', '4000.' + os.environ['M']], grace=%r); "
                "print('ready', flush=True); time.sleep(4000)") % (HERE, GRACE)
        owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=dict(os.environ, M=m))
        self.addCleanup(kill_marked, m)
        self.assertEqual(readline(owner.stdout, "the owner's ready line").strip(), b"ready")
        wait_for(lambda: len(marked(m)) >= 3, "hermesctl, sh and the setsid sleep running")
        owner.kill()
        owner.wait()
        owner.stdout.close()
        wait_for(lambda: not marked(m), "the tree gone at the owner's death")


if __name__ == "__main__":
    unittest.main()
