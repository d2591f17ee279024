"""Processes as ``/proc`` tells them (Linux): alive or not, their start time, the session
and command line that called this one, and which processes use a path.

Only the standard library (``os``): the session-start hook registers its holder with
these, and the git layer tells a lock file a running git holds from one a killed git left.
"""

from __future__ import annotations

import os

# Shells that run one command line for a caller (``sh -c "..."``): a hook or an
# agent's shell tool starts team-router through one, and that shell is gone a
# moment later. The session is the process that started the shell.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"})
_MAX_HOPS = 8


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


def ancestors() -> set[int]:
    """This process and every process above it."""
    current = os.getpid()
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


def group_running(pgid: int, started: str | None = None) -> bool:
    """True while a live (not zombie) process is in process group ``pgid``, a group that is
    its session too (as a line started in a session of its own is).

    The kernel never gives a process group's id to another process while one
    member is left, so a live member is one the group's leader started. Once
    every member is gone the id is free: a process given it since (a shell's
    job, an editor) leads another group, in another session; ``started``, the
    leader's start time when the group was noted, tells it from the leader too.
    """
    if pgid <= 0:
        return False
    if started is not None and process_start_time(pgid) not in {None, started}:
        return False  # the id names a process started since: the noted group is gone
    try:
        entries = os.listdir("/proc")
    except OSError:
        return False
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        # Field 3 of stat is the state, 5 and 6 the process group and the session;
        # ``fields`` starts at field 3.
        if (
            fields
            and len(fields) > 3
            and fields[0] not in {"Z", "X"}
            and fields[2] == fields[3] == str(pgid)
        ):
            return True
    return False


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


def process_words(pid: int, name: str) -> str:
    """``process 123 (vim)``: a process and its command name, as every message names it."""
    return f"process {pid} ({name})"
