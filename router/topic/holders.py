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

from router.processes import ancestors, process_alive, process_start_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path

HOLDERS_DIR = "holders"
_SESSION_RE = r"^[A-Za-z0-9._-]{1,128}$"  # compiled on first use: few commands name a session


STATE_DIR = "team-router"  # this tool's folder in a common git dir: topic records and holders
RECORDS_DIR = "topics"  # the records' folder in STATE_DIR
# What status read from the artifacts, kept by file identity (router.plandir.remembered).
REMEMBERED_FILE = os.path.join("cache", "frontmatter.json")
# Each topic's whole answer in status, kept by the identities of the files it follows from.
ANSWERS_FILE = os.path.join("cache", "status.json")


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


# -- liveness ---------------------------------------------------------------------


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
    from router.ioerror import io_operation

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
    return bool(re.fullmatch(_SESSION_RE, session))


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


def live_holders(common_dir: Path, topic_id: str) -> list[Holder]:
    """The topic's live holders (stale ones are dropped on the way)."""
    live: list[Holder] = []
    for item in read_all(common_dir, topic_id):
        if item.holder is None:
            continue  # unreadable: reported by doctor, never trusted, never deleted
        if not is_live(item.holder):
            drop(item.path)
            continue
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
    return holder_words(holder.pid, holder.session or "")


def holder_words(pid: int, session: str) -> str:
    """``process 123 (session abc)``: a holder as every message names it."""
    who = f"process {pid}"
    return f"{who} (session {session})" if session else who
