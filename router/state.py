"""Durable per-repo records, cross-process locks and the crash seam (DESIGN §10).

Everything lives in the repo's *common* git dir under ``team-router/``: it is
never tracked, and every worktree of the repo sees the same state.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from router.errors import Refusal

STATE_DIR = "team-router"
DEFAULT_WAIT = 30.0
CRASH_ENV = "TEAM_ROUTER_CRASH_AT"
# Record key: teardown (or pr-cleanup) is removing the worktree at this path; a kill may
# have left it half-deleted, and what is left there is not work (router.teardown).
REMOVING = "removing"


def state_root(common_dir: Path) -> Path:
    return common_dir / STATE_DIR


def crash_point(step: str) -> None:
    """Exit at once before ``step`` when the test seam asks for it."""
    if os.environ.get(CRASH_ENV) == step:
        os._exit(137)


# -- atomic files -------------------------------------------------------------


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so a reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# -- records ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RepoEntry:
    """One repo of a topic, as the home record remembers it for teardown."""

    name: str
    path: str
    worktree: str | None = None


@dataclass(frozen=True, slots=True)
class TopicRecord:
    id: str
    repo: str  # the repo's name in the topic ("home" for the home repo)
    branch: str
    worktree: str | None = None
    base_commit: str | None = None
    branch_created: bool = False
    description: str | None = None
    plan_dir: str | None = None
    steps: tuple[str, ...] = ()
    # Home record only: every repo of the topic, so teardown still knows them
    # after the plan dir (and its repos.md) is gone.
    repos: tuple[RepoEntry, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def with_step(self, step: str) -> TopicRecord:
        if step in self.steps:
            return self
        return _replace(self, steps=(*self.steps, step))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = list(self.steps)
        data["repos"] = [asdict(r) for r in self.repos]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TopicRecord:
        """A record from its JSON; ValueError/TypeError when a field has the wrong shape."""
        repos = tuple(RepoEntry(**r) for r in data.get("repos", []))
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k != "repos"}
        known["steps"] = tuple(known.get("steps", ()))
        record = cls(**known, repos=repos)
        _check_shape(record)
        return record


_TEXT_FIELDS = ("worktree", "base_commit", "description", "plan_dir")


def _check_shape(record: TopicRecord) -> None:
    # A record steers deletions (its branch, its worktree): a hand-edited or
    # half-understood one must fail here rather than be half trusted later.
    if not all(isinstance(v, str) and v for v in (record.id, record.repo, record.branch)):
        raise ValueError("id, repo and branch must be non-empty strings")
    if any(not isinstance(getattr(record, k), str | None) for k in _TEXT_FIELDS):
        raise ValueError(f"{', '.join(_TEXT_FIELDS)} must be strings or null")
    if not isinstance(record.branch_created, bool):
        raise ValueError("branch_created must be true or false")
    if not all(isinstance(s, str) for s in record.steps):
        raise ValueError("steps must be a list of strings")
    if not isinstance(record.extra, dict):
        raise ValueError("extra must be an object")
    for entry in record.repos:
        if not (isinstance(entry.name, str) and isinstance(entry.path, str)):
            raise ValueError("every repos entry needs a string name and path")
        if not isinstance(entry.worktree, str | None):
            raise ValueError("a repos entry's worktree must be a string or null")


def _replace(record: TopicRecord, **changes: Any) -> TopicRecord:
    import dataclasses

    return dataclasses.replace(record, **changes)


class RecordCorrupt(Exception):
    """A record exists but does not parse: report it, never trust or delete it."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def record_path(common_dir: Path, topic_id: str) -> Path:
    return state_root(common_dir) / "topics" / f"{topic_id}.json"


def read_record(common_dir: Path, topic_id: str) -> TopicRecord | None:
    """The topic's record in this repo; None when absent; RecordCorrupt when unreadable."""
    path = record_path(common_dir, topic_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordCorrupt(path, f"cannot be read ({exc})") from exc
    try:
        record = _parse_record(text)
    except (ValueError, TypeError) as exc:
        raise RecordCorrupt(path, f"does not parse ({exc})") from exc
    if record.id != topic_id:
        raise RecordCorrupt(path, f"names topic {record.id!r}, not {topic_id!r}")
    return record


def _parse_record(text: str) -> TopicRecord:
    """A record from its file's text; ValueError/TypeError for anything that is not one."""
    try:
        data = json.loads(text)
    except RecursionError:
        # json recurses once per nesting level: a hostile or broken file must
        # read as corrupt, not end the command with a traceback.
        raise ValueError("nested too deeply to be a record") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return TopicRecord.from_json(data)


def write_record(common_dir: Path, record: TopicRecord) -> Path | None:
    """Write ``record`` atomically; a corrupt file in its place is first set aside, never lost.

    Returns where a corrupt predecessor was kept (``<id>.json.corrupt-<n>``), or None.
    """
    path = record_path(common_dir, record.id)
    kept = _set_aside_if_corrupt(path)
    write_atomic(path, json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n")
    return kept


CORRUPT_MARK = ".corrupt-"


def _set_aside_if_corrupt(path: Path) -> Path | None:
    try:
        if _parse_record(path.read_text(encoding="utf-8")).id == path.stem:
            return None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError):
        pass
    for n in range(1, 1000):
        aside = path.with_name(f"{path.name}{CORRUPT_MARK}{n}")
        if not os.path.lexists(aside):
            # A rename, not a copy: the bytes the user may need stay exactly as they were.
            os.replace(path, aside)
            return aside
    raise RecordCorrupt(path, "does not parse, and 999 earlier corrupt copies are in the way")


def corrupt_records(common_dir: Path) -> list[Path]:
    """Corrupt records set aside by :func:`write_record` (kept for the user to inspect)."""
    folder = state_root(common_dir) / "topics"
    if not folder.is_dir():
        return []
    return sorted(folder.glob(f"*.json{CORRUPT_MARK}*"))


def delete_record(common_dir: Path, topic_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        record_path(common_dir, topic_id).unlink()


def list_records(common_dir: Path) -> list[str]:
    """Ids that have a record file in this repo."""
    folder = state_root(common_dir) / "topics"
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json"))


# -- locks --------------------------------------------------------------------


def lock_path(common_dir: Path, name: str) -> Path:
    return state_root(common_dir) / "locks" / f"{name}.lock"


def _owner_path(lock: Path) -> Path:
    return lock.with_suffix(".pid")


@contextlib.contextmanager
def held_lock(common_dir: Path, name: str, *, wait: float = DEFAULT_WAIT) -> Iterator[None]:
    """Hold ``locks/<name>.lock``; after ``wait`` seconds refuse ``locked`` naming the holder."""
    from filelock import FileLock, Timeout  # lazy: costs ~20 ms to import

    path = lock_path(common_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path), timeout=max(wait, 0.0))
    try:
        lock.acquire()
    except Timeout:
        holder = _read_owner(path)
        who = f"process {holder}" if holder else "another process"
        raise Refusal(
            "locked",
            f"{name} is locked by {who}; wait for it to finish or pass a longer --wait",
        ) from None
    try:
        with contextlib.suppress(OSError):
            _owner_path(path).write_text(_owner_text(), encoding="utf-8")
        yield
    finally:
        with contextlib.suppress(OSError):
            _owner_path(path).unlink()
        lock.release()


def _owner_text() -> str:
    # pid and start time: a crash leaves this file behind (the kernel drops the
    # lock itself), and doctor tells a stale owner from a live one by both.
    from router.holders import process_start_time

    return f"{os.getpid()} {process_start_time(os.getpid()) or '-'}\n"


def _read_owner(lock: Path) -> str | None:
    owner = read_owner(lock)
    return str(owner.pid) if owner else None


@dataclass(frozen=True, slots=True)
class LockOwner:
    """What a lock's owner file says: who held (or holds) ``locks/<name>.lock``."""

    name: str
    path: Path  # the owner file, ``locks/<name>.pid``
    pid: int
    start_time: str | None

    @property
    def stale(self) -> bool:
        """True when the process that wrote the file is gone (or its pid was reused)."""
        from router.holders import Holder, is_live

        return not is_live(Holder(self.pid, self.start_time))


def read_owner(lock: Path) -> LockOwner | None:
    path = _owner_path(lock)
    try:
        words = path.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return None
    if not words or not words[0].isdigit():
        return None
    start = words[1] if len(words) > 1 and words[1] != "-" else None
    return LockOwner(lock.stem, path, int(words[0]), start)


def lock_owners(common_dir: Path) -> list[LockOwner]:
    """Every owner file under ``locks/`` (held locks and ones a crash left behind)."""
    folder = state_root(common_dir) / "locks"
    if not folder.is_dir():
        return []
    found = []
    for pid_file in sorted(folder.glob("*.pid")):
        owner = read_owner(pid_file.with_suffix(".lock"))
        if owner is not None:
            found.append(owner)
    return found
