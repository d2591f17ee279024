"""A topic's record: the typed fields, and their JSON with its checks and schema upgrades.

The file that holds it, and its atomic write under a lock, are router.topic.state's.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from collections.abc import Iterable, Sequence

from router import git as g
from router.records import fields, record, replace, values

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: importing typing costs ~3 ms

    from router.reasons import Why

# 1: the untyped ``extra`` object (temp_paths, teardown, restored, included,
#    integrating, removing, pr_cleanup, host_removal); 2: named fields, ``home``
#    on secondaries.
SCHEMA = 2


@record
class RepoEntry:
    """One repo of a topic, as the home record remembers it for teardown."""

    name: str
    path: str
    worktree: str | None = None


@record
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


@record
class Restored:
    """What ``restore`` made from a snapshot, so a rerun answers the same without a second copy."""

    snapshot: str
    branch: str
    worktree: str


@record
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


# namedtuple's own __new__ is a Python function: with every field given, tuple's is the
# same tuple without that frame (a journal holds one Judged per file of a worktree).
_new_judged = tuple.__new__


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
        # An f-string, not a join over map(str): a worktree's journal is written
        # once per removal, 2,000 of these for 2,000 files.
        path, dev, ino, mode, size, mtime_ns, ctime_ns, digest = self
        return f"{dev}:{ino}:{mode}:{size}:{mtime_ns}:{ctime_ns}:{digest}:{path}"

    @classmethod
    def from_json(cls, text: object) -> Judged:
        try:
            dev, ino, mode, size, mtime, ctime, digest, path = text.split(":", 7)  # type: ignore[attr-defined]
            if not path:
                raise ValueError
            # Stamps may be negative (a file dated before 1970): int, not isdigit.
            fields = (
                path,
                int(dev),
                int(ino),
                int(mode),
                int(size),
                int(mtime),
                int(ctime),
                digest,
            )
        except (AttributeError, ValueError):
            raise ValueError(f"{text!r} is not a journaled file") from None
        return _new_judged(cls, fields)


@record
class Removal:
    """A removal of ours under way: the directory, and every file in it it judged safe to delete.

    Written before anything is deleted (a worktree proven clean or
    snapshotted; a plan dir copied and verified). A rerun after a kill, or
    after a file that could not be deleted, finishes it: what is left goes
    only while it is exactly a file in ``files``, or (``index``) a file
    the checkout's index tracked. A mark of an earlier version journaled no
    files: everything left there is kept.
    """

    path: str
    files: tuple[Judged, ...] = ()
    # A checkout proven clean: its index as it was (base64), which names every tracked
    # file with the stat git verified it by and its blob; ``files`` names the rest.
    index: str = ""
    index_mtime_ns: int = 0  # the index file's own stamp (git's racy-clean rule)
    index_hash: str = ""  # "sha1" or "sha256": how its blobs are named

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"path": self.path, "files": [f.to_json() for f in self.files]}
        if self.index:
            data["index"] = {
                "data": self.index,
                "mtime_ns": self.index_mtime_ns,
                "hash": self.index_hash,
            }
        return data

    @classmethod
    def from_json(cls, data: object) -> Removal:
        if not isinstance(data, dict) or not isinstance(data.get("path"), str):
            raise ValueError("removing must name a path")
        files = data.get("files", [])
        if not isinstance(files, list):
            raise ValueError("removing.files must be a list")
        # ``at`` (a time earlier versions compared file times with) is not read.
        index = data.get("index")
        if index is None:
            # map, not a generator: one Judged per file of a worktree, ~30% faster read.
            return cls(data["path"], tuple(map(Judged.from_json, files)))
        if not (
            isinstance(index, dict)
            and isinstance(index.get("data"), str)
            and type(index.get("mtime_ns")) is int
            and index.get("hash") in ("sha1", "sha256")
        ):
            raise ValueError("removing.index must hold data, mtime_ns and hash")
        return cls(
            data["path"],
            tuple(map(Judged.from_json, files)),
            index["data"],
            index["mtime_ns"],
            index["hash"],
        )


@record
class HostRemoval:
    """What the host's last removal of the topic's worktree (``hook worktree-remove``) did:
    the host cannot show our output, so doctor and people read it here."""

    worktree: str
    outcome: str  # removed | kept | snapshotted
    detail: str = ""


@record
class RanStep:
    """One step of a teardown or pr-cleanup run, as the run reported it (DESIGN §9).

    ``why`` is its reason as a value (what a later run reads); ``detail`` the words the
    run said. A record written before reasons were kept, or a step whose words have no
    reason yet, has only the words (``why`` None).
    """

    name: str
    outcome: str  # done | skipped | refused | failed
    detail: str
    code: str = ""  # the error code of a step that stopped
    why: Why | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"name": self.name, "outcome": self.outcome}
        if self.why is not None:
            data["reason"] = str(self.why.reason)
        data["detail"] = self.detail
        if self.code:
            data["code"] = self.code
        if self.why is not None:
            data["why"] = self.why.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RanStep:
        texts = (
            data.get("name"),
            data.get("outcome"),
            data.get("detail", ""),
            data.get("code", ""),
        )
        if not all(isinstance(v, str) for v in texts):
            raise ValueError("every step of last_run needs a string name, outcome and detail")
        return cls(*texts, why=_why_read(data.get("why")))  # type: ignore[arg-type]


def _why_read(data: object) -> Why | None:
    """A step's kept reason; None when there is none, or one this version does not know
    (a newer version's): its words still say it, so the record stays readable."""
    if data is None:
        return None
    # Imported here: only a teardown's or pr-cleanup's steps keep one, and creating the
    # reasons' enum costs a command that reads a record (``new``, ``phase``) ~4 ms.
    from router.reasons import Why

    try:
        return Why.from_json(data)
    except ValueError:
        return None


@record
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
        return cls(data["command"], tuple(RanStep.from_json(s) for s in steps))


@record
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
    # The directories a sparse worktree was created with (cone mode); None: the whole tree.
    sparse: tuple[str, ...] | None = None
    # Files a .worktreeinclude copy placed in the worktree: removal names them
    # (git ignores them, so they would otherwise vanish unmentioned).
    included: tuple[str, ...] = ()
    # The .worktreesetup lines that succeeded in this worktree: a rerun never runs
    # them again. ``setup_state`` says where the stage stands: lines are left to run
    # ("pending", or "failed": one failed), or none is ("done", "none": none declared).
    setup_done: tuple[str, ...] = ()
    setup_state: str | None = None
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
        return replace(self, steps=(*self.steps, step))

    def with_home(
        self, plan_dir: str, entries: Iterable[RepoEntry], track: str | None
    ) -> TopicRecord:
        """The home record naming the topic's plan dir and these repos, each in place of its
        earlier entry; ``track`` None keeps the one it has (`new --fix` run again)."""
        known = {r.name: r for r in self.repos}
        known.update((entry.name, entry) for entry in entries)
        kept = track or self.track
        return replace(self, plan_dir=plan_dir, repos=tuple(known.values()), track=kept)

    def to_json(self) -> dict[str, Any]:
        # Field by field, not through ``asdict``: that copies every value deeply
        # (~1 ms a record, and a creation writes its record three times per repo),
        # where every field but the few nested ones below is a string, a bool, an
        # int, None or a tuple of strings. The removal journal renders itself (one
        # string per file).
        data: dict[str, Any] = {name: getattr(self, name) for name in _RECORD_FIELDS}
        data["steps"] = list(self.steps)
        data["repos"] = [
            {"name": r.name, "path": r.path, "worktree": r.worktree} for r in self.repos
        ]
        data["included"] = list(self.included)
        data["setup_done"] = list(self.setup_done)
        data["temp_paths"] = list(self.temp_paths)
        data["sparse"] = list(self.sparse) if self.sparse is not None else None
        if self.teardown is not None:
            data["teardown"] = {
                "done": list(self.teardown.done),
                "complete": self.teardown.complete,
                "left": list(self.teardown.left),
            }
        for name in ("restored", "host_removal"):  # records of strings alone, field by field
            if (value := getattr(self, name)) is not None:
                data[name] = {f.name: getattr(value, f.name) for f in fields(value)}
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
        known = {k: data[k] for k in _RECORD_FIELDS if k in data and k not in nested}
        for key in ("steps", "included", "temp_paths", "setup_done"):
            if not isinstance(known.get(key, []), list):
                raise ValueError(f"{key} must be a list")
            known[key] = tuple(known.get(key, ()))
        if known.get("sparse") is not None:
            if not isinstance(known["sparse"], list):
                raise ValueError("sparse must be a list or null")
            known["sparse"] = tuple(known["sparse"])
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
    """A record of an earlier schema in today's shape (written back by an update that changes it).

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
    "setup_state",
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
    for key in ("steps", "included", "temp_paths", "sparse", "setup_done"):
        if not all(isinstance(s, str) for s in getattr(record, key) or ()):
            raise ValueError(f"{key} must be a list of strings")
    mark = record.teardown
    if mark is not None and (
        not all(isinstance(s, str) for s in (*mark.done, *mark.left))
        or not isinstance(mark.complete, bool)
    ):
        raise ValueError(
            "teardown.done and teardown.left must be strings and teardown.complete true or false"
        )
    if record.restored is not None and not all(isinstance(v, str) for v in values(record.restored)):
        raise ValueError("restored must name a snapshot, a branch and a worktree")
    if record.host_removal is not None and not all(
        isinstance(v, str) for v in values(record.host_removal)
    ):
        raise ValueError("host_removal must name a worktree, an outcome and a detail")
    if record.removing is not None and not isinstance(record.removing.path, str):
        raise ValueError("removing must name a path")
    for entry in record.repos:
        if not (isinstance(entry.name, str) and isinstance(entry.path, str)):
            raise ValueError("every repos entry needs a string name and path")
        if not isinstance(entry.worktree, str | None):
            raise ValueError("a repos entry's worktree must be a string or null")


# Every field of a record, in order: the keys of its JSON.
_RECORD_FIELDS = tuple(f.name for f in fields(TopicRecord))

# The fields that say an operation is under way (creation's steps, setup's stage,
# teardown's steps, the pick, the removal): the journal's marks. Only
# router.topic.journal changes them (router.topic.state.update_record refuses any
# other writer), so a rerun finds every mark written by one set of rules.
MARK_FIELDS = ("steps", "setup_done", "setup_state", "teardown", "integrating", "removing")


def marks_of(record: TopicRecord | None) -> tuple[object, ...]:
    """The record's marks (:data:`MARK_FIELDS`), to tell whether a write changes them."""
    return tuple(getattr(record, f, None) for f in MARK_FIELDS)


def parse_record(text: str) -> TopicRecord:
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
