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
        repos = tuple(RepoEntry(**r) for r in data.get("repos", []))
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k != "repos"}
        known["steps"] = tuple(known.get("steps", ()))
        return cls(**known, repos=repos)


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
    except OSError as exc:
        raise RecordCorrupt(path, str(exc)) from exc
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return TopicRecord.from_json(data)
    except (ValueError, TypeError) as exc:
        raise RecordCorrupt(path, f"does not parse ({exc})") from exc


def write_record(common_dir: Path, record: TopicRecord) -> None:
    write_atomic(
        record_path(common_dir, record.id),
        json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n",
    )


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
            _owner_path(path).write_text(str(os.getpid()), encoding="utf-8")
        yield
    finally:
        with contextlib.suppress(OSError):
            _owner_path(path).unlink()
        lock.release()


def _read_owner(lock: Path) -> str | None:
    try:
        return _owner_path(lock).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None
