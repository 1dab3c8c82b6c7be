"""A Python agent that starts the seeds' families of children, for tests.

Run by test_hermes_owned.py and by cmd/hermesd's survivors matrix
(TestGatewaySurvivors), which kill it with kill -9 and look for what
survives. It starts each family through hermes_owned (spawn_owned, or
own_process_groups for a group started elsewhere), each family marked by a
marker of its own in its processes' command lines (MARKER followed by two
digits: the arguments of sleep, 4000.MARKERnn, are valid durations), then
prints one line, "ready " and a JSON list of the families it started:

    [{"family": "plain child", "marker": "...", "processes": 2,
      "ownership": "owned"}, ...]

processes counts what runs of the family once it started, its hermesctl
run included; a family with ownership "persist_on_release" must outlive
the agent, with its reason (REASON below) in status. The agent then
sleeps until it is killed.

Environment: CLIENT_DIR (where hermes_owned.py is), MARKER (digits), MODE
and GRACE (hermesctl run's --mode and --grace), FAMILIES ("1": every
family; else the plain child only, as a control owner), MCP_SERVER (the
entry point of @modelcontextprotocol/server-filesystem; its row is left
out when empty), MCP_ROOT (a directory for the server to serve).
"""

import json
import os
import select
import subprocess
import sys
import time

sys.path.insert(0, os.environ["CLIENT_DIR"])
import hermes_owned as h  # noqa: E402

REASON = "a background task the test left running on purpose"


def main():
    base, mode, grace = os.environ["MARKER"], os.environ["MODE"], os.environ["GRACE"]
    rows = []

    def own(family, processes, argv, ownership="owned", **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.DEVNULL)
        extra = {"persist_on_release": REASON, "name": "task-" + marker(len(rows))} if ownership != "owned" else {}
        p = h.spawn_owned(argv(marker(len(rows))), mode=mode, grace=grace, **extra, **kw)
        rows.append({"family": family, "marker": marker(len(rows)), "processes": processes, "ownership": ownership})
        return p

    def marker(i):
        return "%s%02d" % (base, i)

    def sleep(m):
        return "4000." + m

    kids = [own("plain child", 2, lambda m: ["sleep", sleep(m)])]
    if os.environ.get("FAMILIES"):
        kids.append(own("tree of three", 4, lambda m: ["sh", "-c", 'sleep "$0" & sleep "$0" & wait', sleep(m)]))
        kids.append(own("TERM-ignorer", 2, lambda m: [
            sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(4000)", m]))
        kids.append(own("setsid escapee", 3, lambda m: ["sh", "-c", 'setsid sleep "$0" & wait', sleep(m)]))
        kids.append(own("daemon: forks twice, env cleared", 4,
                        lambda m: ["sh", "-c", '(env -i setsid sleep "$0" &); sleep "$0"', sleep(m)]))
        # A language server: it reads its stdin to EOF (the agent's death
        # closes it), then lives on.
        kids.append(own("language server ignoring stdin EOF", 2, lambda m: [
            sys.executable, "-c", "import sys, time; sys.stdin.read(); time.sleep(4000)", m], stdin=subprocess.PIPE))
        own("persist_on_release task", 2, lambda m: ["sleep", sleep(m)], ownership="persist_on_release")
        # A group started elsewhere (an SDK's), handed over.
        ext = subprocess.Popen(["sleep", sleep(marker(len(rows)))], start_new_session=True)
        h.own_process_groups([ext.pid])
        rows.append({"family": "group handed over (own_process_groups)", "marker": marker(len(rows)),
                     "processes": 1, "ownership": "owned"})
    if os.environ.get("MCP_SERVER"):
        kids.append(mcp(own, marker(len(rows))))
    print("ready " + json.dumps(rows), flush=True)
    time.sleep(4000)


def mcp(own, m):
    """A real MCP server on stdio, asked to initialize over its pipes."""
    root = os.path.join(os.environ["MCP_ROOT"], "mcp-" + m)
    os.makedirs(root, exist_ok=True)
    p = own("MCP server on stdio (npm)", 2, lambda _: ["node", os.environ["MCP_SERVER"], root],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).encode() + b"\n")
    p.stdin.flush()
    if not select.select([p.stdout], [], [], 60)[0]:
        raise SystemExit("the MCP server did not answer initialize within 60 s")
    answer = json.loads(p.stdout.readline())
    if "result" not in answer:
        raise SystemExit("the MCP server did not initialize: %r" % answer)
    return p


if __name__ == "__main__":
    main()
