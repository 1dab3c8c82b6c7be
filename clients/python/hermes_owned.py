"""Owned children for Python agents: whatever you start dies with you.

The four verbs of hermes units for a Python program, with nothing beyond
the standard library. hermesd keeps the groups for you (it is the keeper,
your process the owner): at your death, by any death (kill -9 included),
hermesd stops your owned groups (TERM, then KILL after the grace); if
hermesd dies too, its death supervisor ends them; a group marked
persist_on_release, with its written reason, survives both.

    spawn_owned(args, **popen_kwargs) -> subprocess.Popen
    own_process_groups(pgids)
    release_process_groups(pgids)
    release_process_group_once_empty(pgid)

spawn_owned runs the child under `hermesctl run --owner PID` (hermesctl in
PATH, or $HERMESCTL), which contains its whole tree and ends it at the
owner's death; hermesd keeps that run's group for the owner and shows it
in status. Without a running hermesd, spawn_owned falls back to hermesctl
run's guarantee alone (the child still dies with its owner, but is not
shown in status, and a persist_on_release child outlives its owner as a
plain `hermesctl run --no-owner` does); the other verbs raise
HermesdNotRunning, one clear error.
"""

import http.client
import json
import os
import shutil
import socket
import stat
import subprocess

__all__ = [
    "HermesError",
    "HermesdNotRunning",
    "Refused",
    "Client",
    "spawn_owned",
    "own_process_groups",
    "release_process_groups",
    "release_process_group_once_empty",
    "status",
]

# The child of spawn_owned runs this gate first: it execs the program only
# once it has read "go" from the pipe the caller holds, which the caller
# writes after hermesd has kept the child's group. A caller that dies
# before that closes the pipe: the gate reads EOF and exits 125 without
# running the program. So the program never runs unowned.
_GATE = ('fd=$1; shift; IFS= read -r go <&"$fd" || exit 125; '
         '[ "$go" = go ] || exit 125; eval "exec $fd<&-"; exec "$@"')


class HermesError(Exception):
    """An error hermesd answered; code is its wire code ("refused", ...)."""

    def __init__(self, message, code=""):
        super().__init__(message)
        self.code = code


class HermesdNotRunning(HermesError):
    """No hermesd answers on the control socket."""


class Refused(HermesError):
    """hermesd refused the request and changed nothing."""


def _socket_path():
    if os.environ.get("HERMES_SOCKET"):
        return os.environ["HERMES_SOCKET"]
    cands = []
    if os.environ.get("XDG_RUNTIME_DIR"):
        cands.append(os.path.join(os.environ["XDG_RUNTIME_DIR"], "hermes", "hermesd.sock"))
    cands.append(os.path.join("/run/user", str(os.geteuid()), "hermes", "hermesd.sock"))
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    cands.append(os.path.join(state, "hermes", "hermesd.sock"))
    for c in cands:
        try:
            if stat.S_ISSOCK(os.stat(c).st_mode):
                return c
        except OSError:
            pass
    return cands[0]


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("hermesd", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except OSError:
            s.close()
            raise
        self.sock = s


class Client:
    """A client of hermesd's control socket (socket: HERMES_SOCKET, else the
    default places, as hermesctl finds them)."""

    def __init__(self, socket_path=None, timeout=10.0):
        self.socket_path = socket_path or _socket_path()
        self.timeout = timeout

    def _call(self, method, path, body=None):
        conn = _UnixConnection(self.socket_path, self.timeout)
        try:
            try:
                conn.request(method, path, body=None if body is None else json.dumps(body),
                             headers={"Content-Type": "application/json"})
            except (FileNotFoundError, ConnectionRefusedError) as e:
                raise HermesdNotRunning(
                    "hermesd is not running (nothing answers on %s: %s); start hermesd, "
                    "or set HERMES_SOCKET to its control socket" % (self.socket_path, e.strerror)) from None
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        try:
            doc = json.loads(data or b"{}")
        except ValueError:
            raise HermesError("hermesd answered %d: %r" % (resp.status, data[:200])) from None
        if resp.status // 100 != 2:
            cls = Refused if doc.get("code") == "refused" else HermesError
            raise cls(doc.get("error") or "hermesd answered %d" % resp.status, doc.get("code", ""))
        return doc

    def own_process_groups(self, pgids, owner=None, persist_on_release=None, name=None):
        """Hand process groups started elsewhere (an MCP SDK's, a browser
        harness's) to hermesd for owner (default: this process): they die
        with it. persist_on_release is the written reason of a group that
        must survive its owner and hermesd. All or none; returns the kept
        groups as status shows them."""
        req = {"pgids": [int(p) for p in pgids]}
        if owner:
            req["owner_pid"] = int(owner)
        if persist_on_release is not None:
            req["ownership"], req["reason"] = "persist_on_release", persist_on_release
        if name:
            req["name"] = name
        return self._call("POST", "/v1/owned/own", req)["groups"]

    def release_process_groups(self, pgids):
        """Give groups up: they outlive their owner and hermesd."""
        return self._call("POST", "/v1/owned/release", {"pgids": [int(p) for p in pgids]})["groups"]

    def release_process_group_once_empty(self, pgid):
        """Give a group up once nothing is left in it; until then it stays
        owned."""
        return self._call("POST", "/v1/owned/release", {"pgids": [int(pgid)], "once_empty": True})["groups"]

    def status(self):
        """hermesd's status; status()["owned"] lists the kept groups."""
        return self._call("GET", "/v1/status")

    def spawn_owned(self, args, *, owner=None, persist_on_release=None, name=None, mode=None, grace=None,
                    **popen_kwargs):
        """Start args as subprocess.Popen(args, **popen_kwargs) does (pipes,
        cwd, env as asked) under `hermesctl run --owner OWNER` (OWNER: this
        process unless named), which contains the child's whole tree
        (setsid and double-fork escapees included) and ends it at the
        owner's death; its group is kept by hermesd for the owner before the
        program runs, and shows in status. persist_on_release (a reason)
        makes it survive its owner and hermesd. mode ("cgroup", "pgroup")
        and grace ("3s") are hermesctl run's. Returns the Popen, whose pid
        is hermesctl's: signals to it reach the child's group, and its exit
        status is the child's.

        Without hermesd, the child is still owned (hermesctl run's
        guarantee: it dies with its owner), but not kept nor shown."""
        if isinstance(args, (str, bytes)):
            args = [args]
        for k in ("start_new_session", "process_group", "preexec_fn"):
            if k in popen_kwargs:
                raise TypeError("spawn_owned: %s is not allowed: the child leads a session of its own" % k)
        if popen_kwargs.get("shell"):
            raise TypeError("spawn_owned: shell=True is not supported; pass ['sh', '-c', cmd]")
        owner = int(owner or os.getpid())
        run = [hermesctl(), "run"]
        run += ["--no-owner"] if persist_on_release is not None else ["--owner", str(owner)]
        if mode:
            run += ["--mode", mode]
        if grace:
            run += ["--grace", str(grace)]
        r, w = os.pipe()
        try:
            pass_fds = tuple(popen_kwargs.pop("pass_fds", ())) + (r,)
            p = subprocess.Popen(["/bin/sh", "-c", _GATE, "hermes-gate", str(r)] + run + ["--"] + list(args),
                                 pass_fds=pass_fds, start_new_session=True, **popen_kwargs)
        except BaseException:
            os.close(w)
            raise
        finally:
            os.close(r)
        try:
            self.own_process_groups([p.pid], owner=owner, persist_on_release=persist_on_release,
                                    name=name or os.path.basename(str(args[0])))
        except HermesdNotRunning:
            pass  # hermesctl run's guarantee alone
        except BaseException:
            os.close(w)  # the gate reads EOF: the program never runs
            p.wait()
            raise
        os.write(w, b"go\n")
        os.close(w)
        return p


def hermesctl():
    """The hermesctl spawn_owned runs: $HERMESCTL, else hermesctl in PATH."""
    path = os.environ.get("HERMESCTL") or shutil.which("hermesctl")
    if not path:
        raise HermesError("hermesctl is not in PATH (spawn_owned runs children under hermesctl run); "
                          "install it, or set HERMESCTL to its path")
    return path


_default = None


def _client():
    global _default
    if _default is None:
        _default = Client()
    return _default


def spawn_owned(args, **kwargs):
    return _client().spawn_owned(args, **kwargs)


def own_process_groups(pgids, **kwargs):
    return _client().own_process_groups(pgids, **kwargs)


def release_process_groups(pgids):
    return _client().release_process_groups(pgids)


def release_process_group_once_empty(pgid):
    return _client().release_process_group_once_empty(pgid)


def status():
    return _client().status()
