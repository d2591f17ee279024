"""Durable per-repo records, cross-process locks and the crash seam (DESIGN §10).

Everything lives in the repo's *common* git dir under ``team-router/``: it is
never tracked, and every worktree of the repo sees the same state.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, astuple, dataclass
from pathlib import Path

from router import git as g
from router.errors import ErrorCode, RouterError, io_operation
from router.topic.holders import RECORDS_DIR, STATE_DIR, record_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: importing typing costs ~3 ms

DEFAULT_WAIT = 30.0
CRASH_ENV = "TEAM_ROUTER_CRASH_AT"
# Record key: a removal of ours is under way at this path (the removal journal); a kill may
# have left it half-deleted, and what is left there is not work (router.teardown.removal).
REMOVING = "removing"


def state_root(common_dir: Path) -> Path:
    return common_dir / STATE_DIR


def crash_point(step: str) -> None:
    """Exit at once before ``step`` when the test seam asks for it."""
    if os.environ.get(CRASH_ENV) == step:
        os._exit(137)


# -- atomic files -------------------------------------------------------------


def write_atomic(path: Path, text: str, *, errors: str = "strict", mode: int | None = None) -> None:
    """Write ``text`` so a reader sees the old file or the new one, never half of one.

    ``errors="surrogateescape"`` writes a path that is not UTF-8 as its own bytes.
    ``mode``: the new file's permission bits (default 0600). A failure names
    the write and ``path`` (a full disk fails the write or the fsync, whose
    error names no file).
    """
    with io_operation("writing", path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _new_temp(path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline="") as fh:
                fh.write(text)
                fh.flush()
                if mode is not None:
                    os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def _new_temp(path: Path) -> tuple[int, str]:
    """A new file beside ``path`` (``.<name>.<random>.tmp``), open for writing, made by us alone.

    ``tempfile.mkstemp`` does the same, but importing it (``shutil``,
    ``random``) costs more than the write.
    """
    while True:
        tmp = str(path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp"))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), tmp
        except FileExistsError:
            continue


# -- records ------------------------------------------------------------------

# 1: the untyped ``extra`` object (temp_paths, teardown, restored, included,
#    integrating, removing, pr_cleanup, host_removal); 2: named fields, ``home``
#    on secondaries.
SCHEMA = 2


@dataclass(frozen=True, slots=True)
class RepoEntry:
    """One repo of a topic, as the home record remembers it for teardown."""

    name: str
    path: str
    worktree: str | None = None


@dataclass(frozen=True, slots=True)
class TeardownMark:
    """The teardown steps done in this repo; ``complete`` once a run finished them all.

    A complete mark is a tombstone: a second teardown still knows the topic and
    exits 0, and ``new`` with the same id starts a new run instead of resuming.
    """

    done: tuple[str, ...] = ()
    complete: bool = False
    # Steps a run stopped at that are the user's to finish, not the tool's (a
    # default branch --ff-only cannot move): settled for ``complete``, and a
    # rerun reports them left rather than failing at them again.
    left: tuple[str, ...] = ()

    def with_done(
        self,
        steps: Iterable[str],
        order: Sequence[str],
        *,
        complete: bool,
        left: Iterable[str] = (),
    ) -> TeardownMark:
        """The one merge of done steps: earlier runs' and these, in ``order`` (unknown last).

        A step done now is no longer left to the user.
        """
        rank = {name: n for n, name in enumerate(order)}

        def ordered(names: set[str]) -> tuple[str, ...]:
            return tuple(sorted(names, key=lambda s: (rank.get(s, len(rank)), s)))

        done = set(self.done) | set(steps)
        return TeardownMark(ordered(done), complete, ordered((set(self.left) | set(left)) - done))


@dataclass(frozen=True, slots=True)
class Restored:
    """What ``restore`` made from a snapshot, so a rerun answers the same without a second copy."""

    snapshot: str
    branch: str
    worktree: str


@dataclass(frozen=True, slots=True)
class Picking:
    """A cherry-pick this tool started: onto ``target`` at ``tip``, the ``commits`` of ``branch``.

    Written before the first pick: a kill mid-pick leaves the primary busy, and
    only this mark lets the rerun tell its own half-done pick from the user's.
    """

    branch: str
    target: str
    tip: str
    commits: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "branch": self.branch,
            "target": self.target,
            "tip": self.tip,
            "commits": list(self.commits),
        }

    @classmethod
    def from_json(cls, data: object) -> Picking | None:
        """The mark as written, or None for anything else (a hand edit is not trusted)."""
        if not isinstance(data, dict):
            return None
        commits = data.get("commits")
        shas = [data.get("tip"), *(commits if isinstance(commits, list) else [None])]
        if not all(isinstance(s, str) and _SHA.match(s) for s in shas):
            return None
        if not all(isinstance(data.get(k), str) for k in ("branch", "target")):
            return None
        return cls(data["branch"], data["target"], data["tip"], tuple(commits))  # type: ignore[arg-type]


_SHA = re.compile(f"^(?:{g.ANY_OBJECT_ID})$")


class Judged(
    namedtuple("Judged", "path dev ino mode size mtime_ns ctime_ns digest", defaults=("",))
):
    """One file a removal judged safe to delete, as it was then (see router.topic.removal).

    Its path (relative to the directory being removed), its identity (device,
    inode, mode, size and both kernel stamps, compared for equality, never for
    order) and, where it was read, its content (``digest``: sha256 of its bytes,
    a symlink's of its target; "" when not read). A tuple, not a dataclass: a
    journal holds one per file of a worktree, and a record read parses them all.
    """

    __slots__ = ()

    def to_json(self) -> str:
        # One string per file: a journal of a large worktree stays one line each.
        fields = (self.dev, self.ino, self.mode, self.size, self.mtime_ns, self.ctime_ns)
        return ":".join([*map(str, fields), self.digest, self.path])

    @classmethod
    def from_json(cls, text: object) -> Judged:
        try:
            dev, ino, mode, size, mtime, ctime, digest, path = text.split(":", 7)  # type: ignore[attr-defined]
            if not path:
                raise ValueError
            # Stamps may be negative (a file dated before 1970): int, not isdigit.
            return cls(
                path, int(dev), int(ino), int(mode), int(size), int(mtime), int(ctime), digest
            )
        except (AttributeError, ValueError):
            raise ValueError(f"{text!r} is not a journaled file") from None


@dataclass(frozen=True, slots=True)
class Removal:
    """A removal of ours under way: the directory, and every file in it it judged safe to delete.

    Written before anything is deleted (a worktree proven clean or
    snapshotted; a plan dir copied and verified). A rerun after a kill, or
    after a file that could not be deleted, finishes it: what is left goes
    only while it is exactly a file in ``files``. A mark of an earlier
    version journaled no files: everything left there is kept.
    """

    path: str
    files: tuple[Judged, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "files": [f.to_json() for f in self.files]}

    @classmethod
    def from_json(cls, data: object) -> Removal:
        if not isinstance(data, dict) or not isinstance(data.get("path"), str):
            raise ValueError("removing must name a path")
        files = data.get("files", [])
        if not isinstance(files, list):
            raise ValueError("removing.files must be a list")
        # ``at`` (a time earlier versions compared file times with) is not read.
        return cls(data["path"], tuple(Judged.from_json(f) for f in files))


@dataclass(frozen=True, slots=True)
class HostRemoval:
    """What the host's last removal of the topic's worktree (``hook worktree-remove``) did:
    the host cannot show our output, so doctor and people read it here."""

    worktree: str
    outcome: str  # removed | kept | snapshotted
    detail: str = ""


@dataclass(frozen=True, slots=True)
class RanStep:
    """One step of a teardown or pr-cleanup run, as the run reported it (DESIGN §9)."""

    name: str
    outcome: str  # done | skipped | refused | failed
    detail: str
    code: str = ""  # the error code of a step that stopped

    def to_json(self) -> dict[str, str]:
        data = {"name": self.name, "outcome": self.outcome, "detail": self.detail}
        if self.code:
            data["code"] = self.code
        return data


@dataclass(frozen=True, slots=True)
class LastRun:
    """The steps the last teardown or pr-cleanup that acted in this repo ran, in order.

    What a run did, kept beside what it finished (``teardown``): a rerun, ``status``
    and a person read what happened, not only which steps are done.
    """

    command: str  # teardown | pr-cleanup
    steps: tuple[RanStep, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"command": self.command, "steps": [s.to_json() for s in self.steps]}

    @classmethod
    def from_json(cls, data: object) -> LastRun:
        shape = "last_run must name a command and a list of steps"
        if not isinstance(data, dict) or not isinstance(data.get("command"), str):
            raise ValueError(shape)
        steps = data.get("steps", [])
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            raise ValueError(shape)
        ran = tuple(
            RanStep(s.get("name"), s.get("outcome"), s.get("detail", ""), s.get("code", ""))
            for s in steps
        )
        if not all(isinstance(v, str) for s in ran for v in astuple(s)):
            raise ValueError("every step of last_run needs a string name, outcome and detail")
        return cls(data["command"], ran)


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """What one repo remembers of a topic (``<common>/team-router/topics/<id>.json``)."""

    id: str
    repo: str  # the repo's name in the topic ("home" for the home repo)
    branch: str
    worktree: str | None = None
    base_commit: str | None = None
    # True only when this tool cut the branch: teardown never deletes one it did not.
    branch_created: bool = False
    description: str | None = None  # the request `new` was given; a rerun finds its id by it
    # `new --fix`: the short track (QUESTION -> PLAN -> IMPLEMENT -> PR) from the first brief.
    track: str | None = None
    plan_dir: str | None = None
    # Creation steps done (inspect, base, claim, ..., record): a crash resumes after the last.
    steps: tuple[str, ...] = ()
    # Home record only: every repo of the topic, so teardown still knows them
    # after the plan dir (and its repos.md) is gone.
    repos: tuple[RepoEntry, ...] = ()
    # Secondary records only: the home repo's primary clone, so every command
    # run from this repo (or its worktree) answers for the topic as the home does.
    home: str | None = None
    # Files a .worktreeinclude copy placed in the worktree: removal names them
    # (git ignores them, so they would otherwise vanish unmentioned).
    included: tuple[str, ...] = ()
    # Home record only: the plan's temp paths, kept before the plan dir goes.
    temp_paths: tuple[str, ...] = ()
    # The default branch commit .teamteardown was read from when teardown
    # --integrate began picking: the picks may bring the branch's own
    # .teamteardown onto it, so every later run reads it at this commit.
    declared_at: str | None = None
    teardown: TeardownMark | None = None
    restored: Restored | None = None
    integrating: Picking | None = None
    removing: Removal | None = None
    # How the last pr-cleanup ended the branch (merged or abandoned).
    pr_cleanup_mode: str | None = None
    host_removal: HostRemoval | None = None
    # The steps of the last teardown or pr-cleanup that acted here, as it reported them.
    last_run: LastRun | None = None
    # "host" for a topic `hook worktree-create` made (claude --worktree, EnterWorktree, an
    # isolated subagent): no /team run until an artifact is written (router.topic.discovery).
    made_by: str | None = None
    schema: int = SCHEMA

    @property
    def creating(self) -> bool:
        """A creation is under way: claimed (the path may exist) but not yet recorded done."""
        return "claim" in self.steps and "record" not in self.steps

    @property
    def torn_down(self) -> bool:
        return self.teardown is not None and self.teardown.complete

    def with_step(self, step: str) -> TopicRecord:
        if step in self.steps:
            return self
        return _replace(self, steps=(*self.steps, step))

    def to_json(self) -> dict[str, Any]:
        # The removal journal renders itself (one string per file), not through asdict.
        data = asdict(_replace(self, removing=None, last_run=None))
        data["steps"] = list(self.steps)
        data["repos"] = [asdict(r) for r in self.repos]
        data["included"] = list(self.included)
        data["temp_paths"] = list(self.temp_paths)
        if self.teardown is not None:
            data["teardown"] = {
                "done": list(self.teardown.done),
                "complete": self.teardown.complete,
                "left": list(self.teardown.left),
            }
        if self.integrating is not None:
            data["integrating"] = self.integrating.to_json()
        if self.removing is not None:
            data["removing"] = self.removing.to_json()
        if self.last_run is not None:
            data["last_run"] = self.last_run.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TopicRecord:
        """A record from its JSON (any schema); ValueError/TypeError when a field has the wrong shape."""
        data = _upgrade(data)
        repos = tuple(RepoEntry(**r) for r in data.get("repos", []))
        nested = {
            "repos",
            "teardown",
            "restored",
            "integrating",
            "removing",
            "host_removal",
            "last_run",
        }
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k not in nested}
        for key in ("steps", "included", "temp_paths"):
            if not isinstance(known.get(key, []), list):
                raise ValueError(f"{key} must be a list")
            known[key] = tuple(known.get(key, ()))
        record = cls(
            **known,
            repos=repos,
            teardown=_teardown_of(data.get("teardown")),
            restored=Restored(**data["restored"]) if data.get("restored") is not None else None,
            integrating=_picking_of(data.get("integrating")),
            removing=(
                Removal.from_json(data["removing"]) if data.get("removing") is not None else None
            ),
            host_removal=(
                HostRemoval(**data["host_removal"])
                if data.get("host_removal") is not None
                else None
            ),
            last_run=(
                LastRun.from_json(data["last_run"]) if data.get("last_run") is not None else None
            ),
        )
        _check_shape(record)
        return record


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A record of an earlier schema in today's shape (written back by the next update).

    Schema 1 kept its marks in ``extra``, read leniently: a value of the wrong
    shape was ignored there, so it is dropped here rather than failing the record.
    """
    if data.get("schema", 1) >= SCHEMA:
        return data
    extra = data.get("extra", {})
    if not isinstance(extra, dict):
        raise ValueError("extra must be an object")
    out = {k: v for k, v in data.items() if k != "extra"}
    out["schema"] = SCHEMA
    included, temps = extra.get("included"), extra.get("temp_paths")
    out["included"] = (
        [p for p in included if isinstance(p, str)] if isinstance(included, list) else []
    )
    out["temp_paths"] = [str(p) for p in temps] if isinstance(temps, list) else []
    info = extra.get("teardown")
    if isinstance(info, dict) and isinstance(info.get("done", []), list):
        done = [s for s in info.get("done", []) if isinstance(s, str)]
        out["teardown"] = {"done": done, "complete": info.get("complete") is True}
    restored = extra.get("restored")
    if isinstance(restored, dict) and all(
        isinstance(restored.get(k), str) for k in ("snapshot", "branch", "worktree")
    ):
        out["restored"] = {k: restored[k] for k in ("snapshot", "branch", "worktree")}
    if Picking.from_json(extra.get("integrating")) is not None:
        out["integrating"] = extra["integrating"]
    removing = extra.get("removing")
    if isinstance(removing, dict) and isinstance(removing.get("path"), str):
        out["removing"] = {"path": removing["path"]}  # no files journaled: all left is kept
    host = extra.get("host_removal")
    if isinstance(host, dict) and all(
        isinstance(host.get(k), str) for k in ("worktree", "outcome")
    ):
        detail = host.get("detail")
        out["host_removal"] = {
            "worktree": host["worktree"],
            "outcome": host["outcome"],
            "detail": detail if isinstance(detail, str) else "",
        }
    mode = extra.get("pr_cleanup")
    if isinstance(mode, dict) and isinstance(mode.get("mode"), str):
        out["pr_cleanup_mode"] = mode["mode"]
    return out


def _teardown_of(value: object) -> TeardownMark | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(value.get(key, []), list) for key in ("done", "left")
    ):
        raise ValueError("teardown must be an object with lists of done and left steps")
    return TeardownMark(
        tuple(value.get("done", [])), value.get("complete", False), tuple(value.get("left", []))
    )


def _picking_of(value: object) -> Picking | None:
    if value is None:
        return None
    pick = Picking.from_json(value)
    if pick is None:
        raise ValueError("integrating must name a branch, a target and commit ids")
    return pick


_TEXT_FIELDS = (
    "worktree",
    "base_commit",
    "description",
    "track",
    "plan_dir",
    "home",
    "pr_cleanup_mode",
    "declared_at",
    "made_by",
)


def _check_shape(record: TopicRecord) -> None:
    # A record steers deletions (its branch, its worktree): a hand-edited or
    # half-understood one must fail here rather than be half trusted later.
    if not all(isinstance(v, str) and v for v in (record.id, record.repo, record.branch)):
        raise ValueError("id, repo and branch must be non-empty strings")
    if any(not isinstance(getattr(record, k), str | None) for k in _TEXT_FIELDS):
        raise ValueError(f"{', '.join(_TEXT_FIELDS)} must be strings or null")
    if not isinstance(record.branch_created, bool):
        raise ValueError("branch_created must be true or false")
    if record.declared_at is not None and not _SHA.match(record.declared_at):
        # It names the commit whose .teamteardown runs: a branch name would not do.
        raise ValueError("declared_at must be a commit id")
    if not isinstance(record.schema, int) or record.schema > SCHEMA:
        raise ValueError(f"schema {record.schema!r} is not one this version reads (<= {SCHEMA})")
    for key in ("steps", "included", "temp_paths"):
        if not all(isinstance(s, str) for s in getattr(record, key)):
            raise ValueError(f"{key} must be a list of strings")
    mark = record.teardown
    if mark is not None and (
        not all(isinstance(s, str) for s in (*mark.done, *mark.left))
        or not isinstance(mark.complete, bool)
    ):
        raise ValueError(
            "teardown.done and teardown.left must be strings and teardown.complete true or false"
        )
    if record.restored is not None and not all(
        isinstance(v, str) for v in astuple(record.restored)
    ):
        raise ValueError("restored must name a snapshot, a branch and a worktree")
    if record.host_removal is not None and not all(
        isinstance(v, str) for v in astuple(record.host_removal)
    ):
        raise ValueError("host_removal must name a worktree, an outcome and a detail")
    if record.removing is not None and not isinstance(record.removing.path, str):
        raise ValueError("removing must name a path")
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
    return Path(record_file(common_dir, topic_id))


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


def read_record_or_none(
    common_dir: Path, topic_id: str, warnings: list[str] | None = None
) -> TopicRecord | None:
    """The record, or None when absent or corrupt: the one policy for a corrupt record.

    A corrupt record is never trusted, rewritten or deleted here; the caller
    gets a warning naming it (doctor reports it as record-corrupt).
    """
    try:
        return read_record(common_dir, topic_id)
    except RecordCorrupt as exc:
        if warnings is not None:
            warnings.append(f"{exc.path}: {exc.reason}; it is left as it is and not trusted")
        return None


def update_record(
    common_dir: Path,
    topic_id: str,
    change: Callable[[TopicRecord], TopicRecord | None],
    *,
    new: Callable[[], TopicRecord] | None = None,
    replace_corrupt: bool = False,
    wait: float = DEFAULT_WAIT,
) -> TopicRecord | None:
    """The one writer of a record: read it, apply ``change``, write the result, under its lock.

    An absent record starts from ``new()`` (none: nothing is written). A corrupt
    one is left alone unless ``replace_corrupt`` (then it is set aside as
    ``<id>.json.corrupt-<n>``, never lost). ``change`` returning None deletes the
    record. Returns the record as written (None: not written, or deleted).
    """
    with _record_lock(common_dir, topic_id, wait):
        try:
            record = read_record(common_dir, topic_id)
        except RecordCorrupt:
            if not replace_corrupt:
                return None
            record = None
        if record is None:
            if new is None:
                return None
            record = new()
        changed = change(record)
        if changed is None:
            delete_record(common_dir, topic_id)
            return None
        if changed.schema != SCHEMA:
            changed = _replace(changed, schema=SCHEMA)
        write_record(common_dir, changed)
        return changed


def _record_lock(
    common_dir: Path, topic_id: str, wait: float
) -> contextlib.AbstractContextManager[None]:
    # Two processes (or a repo's worker threads) updating one record must not
    # lose each other's change between the read and the atomic replace. No
    # owner file: the lock is held for milliseconds and never across git; one
    # left by a kill would be a stale-lock finding whose repair (doctor holds
    # that lock) then waits on itself when it writes the record.
    path = lock_path(common_dir, f"record-{topic_id}")
    return take_lock(path, f"the record of {topic_id} in {common_dir}", wait=wait, owner=False)


class LockBusy(Exception):
    """Another process (or thread) still held the lock when the wait ran out."""


LOCK_POLL = 0.05  # seconds between attempts while another holder has the lock


def acquire(path: Path, wait: float) -> int:
    """An exclusive ``flock`` on ``path`` (created if missing); its descriptor, closed to release.

    Waits up to ``wait`` seconds, then raises :class:`LockBusy`. The kernel
    drops the lock when its holder exits, however it exits: a killed command
    never leaves a lock behind. Each call opens its own file description, so
    two threads of one process exclude each other too. Our own few lines
    instead of a locking library: importing one cost ~20 ms on every command
    that writes a record.
    """
    import fcntl
    import time

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    # ``wait > 0`` is False for NaN too, which would otherwise never be reached.
    deadline = time.monotonic() + (wait if wait > 0 else 0.0)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise LockBusy(str(path)) from None
            time.sleep(LOCK_POLL)
        except BaseException:
            os.close(fd)
            raise


def secondary_homes(
    common_dir: str | os.PathLike[str], only: str | None = None
) -> dict[str, tuple[str, str | None]]:
    """Topic id -> (home primary clone, this repo's worktree) for each topic this repo is a
    secondary of (its record names the home); ``only``: that topic's record alone.

    Read straight from the files, without the lock: the session-start hook asks
    this from a secondary repo. Unreadable records are skipped (doctor reports them).
    """
    folder = os.path.join(common_dir, STATE_DIR, RECORDS_DIR)
    try:
        names = [f"{only}.json"] if only else sorted(os.listdir(folder))
    except OSError:
        return {}
    names = [n for n in names if n.endswith(".json")]
    found: dict[str, tuple[str, str | None]] = {}
    for name in names:
        topic_id = name[: -len(".json")]
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                text = fh.read()
            # Written with sorted keys and indent 2: a home record is skipped unparsed
            # (a home repo with 500 topics reads them all on every `phase`).
            if '"repo": "home"' in text or '"home": ' not in text:
                continue
            data = json.loads(text)
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(data, dict) or data.get("id") != topic_id:
            continue
        home, worktree = data.get("home"), data.get("worktree")
        if data.get("repo") != "home" and isinstance(home, str) and home:
            found[topic_id] = (home, worktree if isinstance(worktree, str) else None)
    return found


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
    folder = state_root(common_dir) / RECORDS_DIR
    if not folder.is_dir():
        return []
    return sorted(folder.glob(f"*.json{CORRUPT_MARK}*"))


def delete_record(common_dir: Path, topic_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        record_path(common_dir, topic_id).unlink()


def topic_of_branch(common_dir: Path, branch: str) -> str | None:
    """The topic whose record in this repo names ``branch`` as its branch (one not torn
    down first), or None. A topic's branch is its id unless ``new`` reused a checkout on
    the user's own branch; unreadable records are skipped (doctor reports them)."""
    found = [
        record
        for topic_id in list_records(common_dir)
        if (record := read_record_or_none(common_dir, topic_id)) is not None
        and record.branch == branch
    ]
    found.sort(key=lambda r: (r.torn_down, r.id))
    return found[0].id if found else None


def list_records(common_dir: Path) -> list[str]:
    """Ids that have a record file in this repo."""
    folder = state_root(common_dir) / RECORDS_DIR
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json"))


# -- locks --------------------------------------------------------------------


def lock_path(common_dir: Path, name: str) -> Path:
    return state_root(common_dir) / "locks" / f"{name}.lock"


def _owner_path(lock: Path) -> Path:
    return lock.with_suffix(".pid")


def held_lock(
    common_dir: Path, name: str, *, wait: float = DEFAULT_WAIT
) -> contextlib.AbstractContextManager[None]:
    """Hold ``locks/<name>.lock``; after ``wait`` seconds refuse ``locked`` naming the holder."""
    return take_lock(lock_path(common_dir, name), name, wait=wait, owner=True)


@contextlib.contextmanager
def take_lock(path: Path, label: str, *, wait: float, owner: bool) -> Iterator[None]:
    """Hold the lock at ``path``, or after ``wait`` seconds refuse ``locked`` naming its holder.

    The one "take this lock or refuse" of every lock here. ``owner``: write the
    owner file (pid and start time) that a refusal and doctor read.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = acquire(path, wait)
    except LockBusy:
        raise RouterError(
            ErrorCode.LOCKED,
            f"{label} is locked by {_holder_named(path)}; wait for it to finish or pass a "
            "longer --wait",
        ) from None
    try:
        if owner:
            with contextlib.suppress(OSError):
                _owner_path(path).write_text(_owner_text(), encoding="utf-8")
        yield
    finally:
        if owner:
            with contextlib.suppress(OSError):
                _owner_path(path).unlink()
        os.close(fd)


def _owner_text() -> str:
    # pid and start time: a crash leaves this file behind (the kernel drops the
    # lock itself), and doctor tells a stale owner from a live one by both.
    from router.processes import process_start_time

    return f"{os.getpid()} {process_start_time(os.getpid()) or '-'}\n"


def _holder_named(lock: Path) -> str:
    """Who holds ``lock``, as a refusal names it: a pid only while that process lives.

    A killed run leaves its owner file behind, and the run holding the lock now
    writes its own only after it has the lock: until then the file names a
    dead process, which is nobody to wait for.
    """
    owner = read_owner(lock)
    if owner is None or owner.stale:
        return "another team-router run"
    return f"process {owner.pid}"


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
        from router.topic.holders import Holder, is_live

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
