"""Holders: sessions that use a topic's worktrees, so teardown keeps them (DESIGN §10).

A holder is one small JSON file under ``<common git dir>/team-router/holders/<id>/``
naming a process (pid plus its start time) and, optionally, the host's
session id. It is *stale* once that process is gone, or once its pid belongs to
a different process (the start time differs); stale holders are dropped when
read. A file that does not parse is reported and kept, never trusted.

This module sits on the session-start hook's path: it imports nothing heavy
at import time (no typer, jinja2 or locks, and not even dataclasses,
hashlib or tempfile, which the hook's other modules do without).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path

HOLDERS_DIR = "holders"
# Shells that run one command line for a caller (``sh -c "..."``): a hook or an
# agent's shell tool starts team-router through one, and that shell is gone a
# moment later. The session is the process that started the shell.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"})
_SESSION_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_MAX_HOPS = 8


STATE_DIR = "team-router"  # this tool's folder in a common git dir: topic records and holders
RECORDS_DIR = "topics"  # the records' folder in STATE_DIR


def record_file(common_dir: str | os.PathLike[str], topic_id: str) -> str:
    """Where the record of ``topic_id`` lives in ``common_dir``: a string, for the recovery
    hook's path (it imports no pathlib); ``router.topic.state`` reads and writes it."""
    return os.path.join(os.fspath(common_dir), STATE_DIR, RECORDS_DIR, f"{topic_id}.json")


class Holder(namedtuple("Holder", "pid start_time session host since", defaults=(None, None, 0.0))):
    """One holder: ``pid`` and its ``start_time`` (/proc/<pid>/stat field 22, None where
    it cannot be read), the host's ``session`` id, the ``host`` name, and ``since`` (epoch s)."""

    __slots__ = ()

    def to_json(self) -> dict[str, object]:
        return dict(self._asdict())

    @classmethod
    def from_json(cls, data: object) -> Holder:
        if not isinstance(data, dict) or type(data.get("pid")) is not int:
            raise ValueError("not a holder object with an integer pid")
        start, session, host = data.get("start_time"), data.get("session"), data.get("host")
        since = data.get("since", 0.0)
        return cls(
            pid=data["pid"],
            start_time=str(start) if start is not None else None,
            session=str(session) if session is not None else None,
            host=str(host) if host is not None else None,
            since=float(since) if isinstance(since, int | float) else 0.0,
        )


class HolderFile(namedtuple("HolderFile", "path holder problem", defaults=("",))):
    """A holder as found on disk: its file, and the holder (None when it does not parse)."""

    __slots__ = ()


# -- processes --------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of ``/proc/<pid>/stat`` (after the command name), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces
    # or parentheses: everything after the *last* ')' is the numeric fields.
    _, sep, rest = raw.rpartition(")")
    return rest.split() if sep else None


def process_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux); None elsewhere or if gone."""
    fields = _stat_fields(pid)
    # Field 22 of stat; ``fields`` starts at field 3.
    return fields[19] if fields and len(fields) > 19 else None


def _parent_of(pid: int) -> int | None:
    if pid == os.getpid():
        return os.getppid()
    fields = _stat_fields(pid)
    return int(fields[1]) if fields and len(fields) > 1 and fields[1].isdigit() else None


def _is_command_shell(pid: int) -> bool:
    """True for ``sh -c '...'`` and kin: a shell that only runs one command line."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return False
    if not argv or not argv[0]:
        return False
    name = os.path.basename(argv[0].decode("utf-8", "replace")).lstrip("-")
    # Only short option clusters: ``-c``, ``-ec``, ``-lc`` (``--norc`` is no command line).
    return name in _SHELLS and any(
        a.startswith(b"-") and not a.startswith(b"--") and b"c" in a[1:] for a in argv[1:3]
    )


def session_pid() -> int:
    """The pid of the session that called team-router: our parent, past ``sh -c`` wrappers."""
    pid = os.getppid()
    for _ in range(_MAX_HOPS):
        if pid <= 1 or not _is_command_shell(pid):
            break
        parent = _parent_of(pid)
        if parent is None or parent <= 1:
            break
        pid = parent
    return pid


def ancestors(pid: int | None = None) -> set[int]:
    """``pid`` (default: this process) and every process above it."""
    current = os.getpid() if pid is None else pid
    found = {current}
    for _ in range(64):
        parent = _parent_of(current)
        if parent is None or parent <= 0 or parent in found:
            break
        found.add(parent)
        current = parent
    return found


def session_processes() -> set[int]:
    """Every process below the calling session (:func:`session_pid`): what it started.

    Empty when the session is init (nothing to tell apart there). Read from one
    pass over ``/proc``.
    """
    root = session_pid()
    if root <= 1:
        return set()
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if name.isdigit():
            parent = _parent_of(int(name))
            if parent is not None:
                children.setdefault(parent, []).append(int(name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def requesters() -> set[int]:
    """The processes of the command line that started this one: its :func:`ancestors`, and
    the other commands of its shell pipeline (``team-router teardown --json | jq .`` typed
    in a worktree: jq sits there only to read what this process prints).

    A pipeline's commands are joined stdout to stdin: those reading this process's
    output (and whatever reads theirs), and those writing its input. A process that
    merely shares its output pipe (a server started with ``&`` by the same shell) writes
    to it and joins nothing: it is not one of them.
    """
    found = ancestors()
    ends: dict[int, tuple[str | None, str | None]] = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if name.isdigit() and int(name) not in found:
            ends[int(name)] = (_pipe_at(name, 0), _pipe_at(name, 1))
    me = str(os.getpid())
    for side, start in ((0, {_pipe_at(me, 1), _pipe_at(me, 2)}), (1, {_pipe_at(me, 0)})):
        # side 0: readers of our output, then readers of theirs; side 1: writers of our input.
        pipes = start - {None}
        while pipes:
            joined = {pid for pid, fds in ends.items() if fds[side] in pipes} - found
            found |= joined
            pipes = {ends[pid][1 - side] for pid in joined} - {None}
    return found


def _pipe_at(pid: str, fd: int) -> str | None:
    """``pipe:[123]`` when ``fd`` of ``pid`` is a pipe, else None."""
    try:
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None
    return target if target.startswith("pipe:") else None


def process_alive(pid: int) -> bool:
    """True while ``pid`` names a running (not zombie) process."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    except (OSError, OverflowError):
        return False  # OverflowError: a pid past the C range (`hold --pid 10**20`) names no process
    fields = _stat_fields(pid)
    # A zombie has exited; only its exit status waits to be collected.
    return not (fields and fields[0] in {"Z", "X"})


def processes_using(
    paths: list[str], *, excluding: set[int] | frozenset[int] = frozenset()
) -> dict[str, list[int]] | None:
    """``path -> pids`` for each of ``paths`` (real paths) some process uses: its working
    directory or an open file lies there. Paths no process uses are left out, and so are
    this process and ``excluding`` (say, the :func:`ancestors` that started it).

    Read from ``/proc`` (Linux); None where there is none, since nothing then
    shows that no process uses them. Another user's process, whose entries
    cannot be read, is not seen.
    """
    if not os.path.isdir("/proc/self/fd"):
        return None
    roots = [p.rstrip(os.sep) for p in paths]
    found: dict[str, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid() or int(name) in excluding:
            continue
        try:
            links = [f"/proc/{name}/cwd"]
            links += [f"/proc/{name}/fd/{fd}" for fd in os.listdir(f"/proc/{name}/fd")]
        except OSError:
            continue  # gone, or not ours to read
        used: set[str] = set()
        for link in links:
            try:
                target = os.readlink(link).removesuffix(" (deleted)")
            except OSError:
                continue
            used.update(r for r in roots if target == r or target.startswith(r + os.sep))
        for root in used:
            found.setdefault(root, []).append(int(name))
    return found


def queued_on(lock: str | os.PathLike[str], pids: set[int]) -> set[int]:
    """Which of ``pids`` have the lock file ``lock`` open: team-router runs waiting for it.

    A run keeps the file open while it waits (and while it holds the lock): one
    that waits for a topic's lock acts on that topic only after the holder is done.
    """
    target = os.path.realpath(lock)
    found = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    found.add(pid)
                    break
            except OSError:
                continue
    return found


def process_name(pid: int) -> str:
    """The command name of ``pid`` (``/proc/<pid>/comm``), so a user can tell which one it is;
    "?" when it cannot be read."""
    try:
        with open(f"/proc/{pid}/comm", "rb") as fh:
            return fh.read().decode("utf-8", "replace").strip() or "?"
    except OSError:
        return "?"


def describe_process(pid: int) -> str:
    """``process 123 (vim)``: how a refusal names a process the user is to close."""
    return f"process {pid} ({process_name(pid)})"


def this_host() -> str:
    return os.uname().nodename if hasattr(os, "uname") else ""


def is_live(holder: Holder) -> bool:
    """False once the holder's process is gone or its pid was reused by another process."""
    if holder.host and holder.host != this_host():
        return True  # another machine's process: we cannot prove it is gone
    if not process_alive(holder.pid):
        return False
    if holder.start_time is None:
        return True  # no start time was recorded (no /proc): liveness is all we know
    now = process_start_time(holder.pid)
    return now is None or now == holder.start_time


# -- files ------------------------------------------------------------------------


def holders_dir(common_dir: Path, topic_id: str) -> Path:
    from pathlib import Path

    return Path(_folder(common_dir, topic_id))


def _folder(common_dir: str | PathLike[str], topic_id: str) -> str:
    # Plain strings: the hook writes holders without importing pathlib.
    return os.path.join(os.fspath(common_dir), STATE_DIR, HOLDERS_DIR, topic_id)


def _file_name(holder: Holder) -> str:
    # The start time is part of the name: a reader that drops a stale holder
    # can never delete the file of a new process that got the same pid. The
    # session id is allowlisted (valid_session), so it is safe in a file name.
    session = holder.session if holder.session and valid_session(holder.session) else "-"
    return f"{holder.pid}-{holder.start_time or 'x'}-{session}.json"


def _write_atomic(path: str, text: str) -> None:
    """Temp file, then os.replace: a reader sees the old holder or the new one, never half.

    No fsync, unlike records: after a power loss every process is gone, so a
    holder file lost with it would have been stale anyway, and the hook that
    writes it runs at every session start.
    """
    from router.errors import io_operation

    folder, name = os.path.split(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with io_operation("writing", tmp):  # a full disk fails the write, naming no file
            os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError:
        with_suppressed_unlink(tmp)
        raise


def valid_session(session: str) -> bool:
    return bool(_SESSION_RE.fullmatch(session))


def make_holder(pid: int, session: str | None = None) -> Holder:
    return Holder(pid, process_start_time(pid), session, this_host(), round(time.time(), 3))


def register(common_dir: str | PathLike[str], topic_id: str, holder: Holder) -> str:
    """Write (or refresh) ``holder`` for the topic; returns its file."""
    path = os.path.join(_folder(common_dir, topic_id), _file_name(holder))
    _write_atomic(path, json.dumps(holder.to_json(), sort_keys=True) + "\n")
    return path


def read_all(common_dir: Path, topic_id: str) -> list[HolderFile]:
    """Every holder file of the topic, live or not, parsed or not; nothing is changed."""
    folder = holders_dir(common_dir, topic_id)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        found.append(_read_one(folder / name))
    return found


def _read_one(path: Path) -> HolderFile:
    try:
        return HolderFile(path, Holder.from_json(json.loads(path.read_text(encoding="utf-8"))))
    except (OSError, ValueError, TypeError) as exc:
        return HolderFile(path, None, f"does not parse ({exc})")
    except RecursionError:  # json recurses once per nesting level
        return HolderFile(path, None, "does not parse (nested too deeply)")


def topics_with_holders(common_dir: Path) -> list[str]:
    folder = os.path.join(common_dir, STATE_DIR, HOLDERS_DIR)
    try:
        return sorted(n for n in os.listdir(folder) if os.path.isdir(os.path.join(folder, n)))
    except OSError:
        return []


def drop(path: Path) -> None:
    with_suppressed_unlink(os.fspath(path))


def with_suppressed_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return


def live_holders(common_dir: Path, topic_id: str, excluding_pid: int | None = None) -> list[Holder]:
    """The topic's live holders (stale ones are dropped on the way), minus ``excluding_pid``."""
    live: list[Holder] = []
    for item in read_all(common_dir, topic_id):
        if item.holder is None:
            continue  # unreadable: reported by doctor, never trusted, never deleted
        if not is_live(item.holder):
            drop(item.path)
            continue
        if item.holder.pid != excluding_pid:
            live.append(item.holder)
    return live


def holders_excluding(common_dir: Path, topic_id: str, pids: set[int]) -> list[Holder]:
    """Live holders whose process is not one of ``pids`` (for "another session holds it")."""
    return [h for h in live_holders(common_dir, topic_id) if h.pid not in pids]


def other_holders(common_dir: Path, topic_id: str) -> list[Holder]:
    """Live holders other than this process and the sessions above it."""
    return holders_excluding(common_dir, topic_id, ancestors())


def release(
    common_dir: Path, topic_id: str, *, pid: int | None, session: str | None
) -> list[Holder]:
    """Drop the holders matching ``pid`` and/or ``session``; returns the ones dropped."""
    dropped = []
    for item in read_all(common_dir, topic_id):
        holder = item.holder
        if holder is None:
            continue
        if pid is not None and holder.pid != pid:
            continue
        if session is not None and holder.session != session:
            continue
        drop(item.path)
        dropped.append(holder)
    return dropped


def describe(holder: Holder) -> str:
    who = f"process {holder.pid}"
    return f"{who} (session {holder.session})" if holder.session else who
