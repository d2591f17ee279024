"""The host's own worktrees through the router (DESIGN §14): WorktreeCreate and WorktreeRemove.

Claude Code makes a worktree for ``claude --worktree NAME``, the EnterWorktree tool
and worktree-isolated subagents; with these hooks registered it asks team-router
instead. Creation is ``new`` for that name (the §7 pipeline, one owner); removal is
``teardown`` for that topic (the §9 rules, one owner), except that the host cannot be
told "no": whatever would lose work is kept, said on stderr, and recorded.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from router.create.topic import NewResult, new_topic
from router.errors import BadInput, ErrorCode, Refusal, RouterError, error_json
from router.names import parse_id
from router.progress import Echo
from router.records import field, record, replace
from router.teardown.host_policy import HostCaller, HostKeeps, HostPolicy
from router.teardown.record import torn_down
from router.teardown.steps import Step
from router.teardown.sweep import SweepResult
from router.topic import state
from router.topic.workspace import Repo, open_repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.teardown.teardown import TeardownResult

# Field names the host has used for each value; the first non-empty one wins (§14).
NAME_KEYS = ("name", "worktree_name", "worktreeName")
PATH_KEYS = ("worktree_path", "worktreePath", "path")
# The pinned client (2.1.332) sends no discard intent with WorktreeRemove; a host that
# does (ExitWorktree's ``discard_changes``) gets a snapshot before the removal.
DISCARD_KEYS = ("discard_changes", "discardChanges", "discard")
PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"


# -- create ---------------------------------------------------------------------------


def worktree_create(
    payload: Mapping[str, Any], environ: Mapping[str, str], *, wait: float = state.DEFAULT_WAIT
) -> NewResult:
    """The worktree for the host's ``name``: made by the §7 pipeline, or found again.

    A name that is a valid topic id is the id; any other name is a description, and
    the id comes from the slug rules (§4) — or from the record of an earlier run for
    the same name, so the same name always comes back to the same worktree.
    """
    name = _first_text(payload, NAME_KEYS)
    if name is None:
        raise RouterError(
            ErrorCode.USAGE, "the host sent no worktree name (`name`); nothing was created"
        )
    cwd = _session_dir(payload, environ)
    repo = open_repo(cwd)
    topic_id = name if _is_topic_id(name) else _topic_named(repo, name)
    made = new_topic(cwd, name, topic_id=topic_id, wait=wait, isolated=True)
    _hold(repo, made.topic.id, payload)
    return made


def _hold(repo: Repo, topic_id: str, payload: Mapping[str, Any]) -> None:
    """The session that asked becomes a holder of the worktree (DESIGN §10): a subagent's
    worktree in use is never taken by `sweep --host-worktrees` (the client never removes it)."""
    from router.host.sessionstart import register_session

    session = payload.get("session_id")
    with contextlib.suppress(OSError):  # a holder that cannot be written must not cost the worktree
        register_session(
            str(repo.common_dir), topic_id, session if isinstance(session, str) else None
        )


def _is_topic_id(name: str) -> bool:
    """A valid id is used as is; one that only looks like an id (2026-13-45-x) is free text."""
    try:
        parse_id(name)
    except BadInput:
        return False
    return True


def _topic_named(repo: Repo, name: str) -> str | None:
    """The id of the live topic an earlier create made for ``name`` (another day's date too)."""
    for topic_id in state.list_records(repo.common_dir):
        try:
            record = state.read_record(repo.common_dir, topic_id)
        except state.RecordCorrupt:
            continue
        if record is None or record.description != name or torn_down(record):
            continue
        if record.worktree and os.path.isdir(record.worktree):
            return record.id
    return None


# -- remove ---------------------------------------------------------------------------


class RemoveOutcome(StrEnum):
    REMOVED = "removed"  # worktree and branch gone (work integrated, or never committed)
    SNAPSHOTTED = "snapshotted"  # gone after snapshot refs kept its work or run's artifacts
    KEPT = "kept"  # it holds work (or is not ours alone): left as it is
    NOT_OURS = "not-ours"  # no team-router topic has this worktree: left to its owner


@record
class RemoveResult:
    path: Path
    outcome: RemoveOutcome
    detail: str
    topic_id: str | None = None
    swept: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "worktree": str(self.path),
            "id": self.topic_id,
            "outcome": str(self.outcome),
            "detail": self.detail,
            "swept": list(self.swept),
        }

    @property
    def stays(self) -> bool:
        """The worktree is still there: kept for its work, or left to its owner."""
        return self.outcome is RemoveOutcome.KEPT or os.path.lexists(self.path)

    def line(self) -> str:
        topic = f" ({self.topic_id})" if self.topic_id else ""
        return f"team-router: worktree {self.path}{topic} {self.outcome}: {self.detail}"


def worktree_remove(
    payload: Mapping[str, Any],
    environ: Mapping[str, str],
    *,
    wait: float = state.DEFAULT_WAIT,
    echo: Echo | None = None,
) -> RemoveResult:
    """Apply teardown's rules to the one worktree the host is done with; never lose work.

    Raises only for a payload that names no worktree; every other outcome, keeping
    included, is a result (the host cannot be refused).
    """
    raw = _first_text(payload, PATH_KEYS) or _first_text(payload, ("cwd",))
    if raw is None or not os.path.isabs(raw):
        raise RouterError(
            ErrorCode.USAGE, "the host sent no absolute `worktree_path`; nothing was removed"
        )
    path = Path(os.path.normpath(raw))
    discard = any(payload.get(k) is True for k in DISCARD_KEYS)
    repo = _repo_of(path, payload, environ)
    if repo is None:
        return RemoveResult(
            path, RemoveOutcome.NOT_OURS, "no git repository knows it; left as it is"
        )
    found = _topic_at(repo, path)
    if found is None:
        detail = (
            "no team-router topic has this worktree; left as it is "
            f"(`git -C {repo.primary} worktree remove {path}` removes it when it holds nothing)"
        )
        return _swept(repo, RemoveResult(path, RemoveOutcome.NOT_OURS, detail))
    topic_id, finished = found
    if finished:
        if os.path.isdir(path):
            # Teardown kept it (a checkout `new` reused, say): it is not gone.
            detail = "its topic was already torn down, and teardown kept this checkout"
            return _swept(repo, RemoveResult(path, RemoveOutcome.KEPT, detail, topic_id))
        detail = "its topic was already torn down"
        return _swept(repo, RemoveResult(path, RemoveOutcome.REMOVED, detail, topic_id))
    result = _tear_down(repo, topic_id, path, discard=discard, wait=wait, echo=echo)
    if result.outcome is RemoveOutcome.KEPT:
        result = _swept(repo, result)  # teardown refused before its sweep step
    _record_host_removal(repo, result)
    return result


def _tear_down(
    repo: Repo,
    topic_id: str,
    path: Path,
    *,
    discard: bool,
    wait: float,
    echo: Echo | None,
    caller: HostCaller = HostCaller.HOOK,
) -> RemoveResult:
    """Teardown with the host's policy (:class:`HostPolicy`): kept whatever would lose work,
    the run's artifacts, a topic of several repos, and (a sweep) what holds it now."""
    from router.teardown.teardown import teardown

    try:
        # A discard intent is --force for the work in this worktree, not for a lock or
        # another live session: those keep it, as they do without the intent.
        done = teardown(
            repo.primary,
            topic_id,
            force=discard,
            wait=wait,
            echo=echo,
            host=HostPolicy(path, caller),
        )
    except HostKeeps as exc:
        return RemoveResult(path, RemoveOutcome.KEPT, str(exc), topic_id)
    except RouterError as exc:
        # The refusal names what holds work; the worktree stays as it is.
        detail = (
            f"{exc.message} [{exc.code}]; it stays: `team-router teardown {topic_id}` once the "
            "work is merged, or with --force to snapshot and remove it"
        )
        return RemoveResult(path, RemoveOutcome.KEPT, detail, topic_id)
    return _removal_result(done, path, topic_id)


def _removal_result(done: TeardownResult, path: Path, topic_id: str) -> RemoveResult:
    """What the host's removal came to, from the teardown's steps and the worktree left."""
    swept = tuple(str(p) for p in done.swept)
    warnings = list(done.warnings)

    def kept(detail: str) -> RemoveResult:
        return RemoveResult(path, RemoveOutcome.KEPT, detail, topic_id, swept, warnings)

    if done.exit_code != 0:
        error = done.error or error_json(ErrorCode.STEP_FAILED, "a step did not finish")
        rest = (
            f"{error['message']} [{error['code']}]; `team-router teardown {topic_id}` finishes it"
        )
        if os.path.lexists(path):
            return kept(rest)
        detail = f"worktree removed, but {rest}"
        return RemoveResult(path, RemoveOutcome.REMOVED, detail, topic_id, swept, warnings)
    if os.path.isdir(path):
        # Teardown left the worktree (on another branch, say): it is kept, whatever else went.
        return kept(
            next(
                (s.detail for r in done.repos for s in r.steps if s.name == Step.REMOVE),
                "teardown did not remove it",
            )
        )
    # One question, asked of the steps: which refs hold what they removed (a worktree's or
    # branch's snapshot, or an unshipped run's plan dir); `restore` brings back either kind.
    refs = list(dict.fromkeys(ref for r in done.repos for s in r.steps for ref in s.snapshots))
    if refs:
        detail = (
            f"removed after a snapshot: what it held is in {', '.join(refs)}; "
            f"`team-router restore {topic_id}` brings it back"
        )
        return RemoveResult(path, RemoveOutcome.SNAPSHOTTED, detail, topic_id, swept, warnings)
    detail = "worktree, branch and residue removed (it held no work that exists nowhere else)"
    return RemoveResult(path, RemoveOutcome.REMOVED, detail, topic_id, swept, warnings)


def _swept(repo: Repo, result: RemoveResult) -> RemoveResult:
    """Residue under ``.claude/worktrees/`` goes whatever happened to the worktree (§9 step 7)."""
    from router.teardown.sweep import sweep_repo

    try:
        swept = sweep_repo(repo.primary)
    except (RouterError, OSError) as exc:
        return replace(result, detail=f"{result.detail}; residue not swept ({exc})")
    return replace(
        result,
        swept=(*result.swept, *(str(p) for p in swept.swept)),
        warnings=[*result.warnings, *swept.warnings],
    )


def _record_host_removal(repo: Repo, result: RemoveResult) -> None:
    """What the host's removal did, in the topic's home record (doctor and people read it)."""
    if result.topic_id is None:
        return
    removal = state.HostRemoval(str(result.path), str(result.outcome), result.detail)
    try:
        state.update_record(
            repo.common_dir,
            result.topic_id,
            lambda record: replace(record, host_removal=removal),
            wait=1,
        )
    except (RouterError, OSError):
        return  # the outcome is still on stderr; a record we cannot write must not fail the host


# -- payload --------------------------------------------------------------------------


def _first_text(payload: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value.strip() and "\0" not in value:
            return value.strip()
    return None


def _session_dir(payload: Mapping[str, Any], environ: Mapping[str, str]) -> Path:
    """The main clone the host runs in: the payload's ``cwd``, else ``CLAUDE_PROJECT_DIR``."""
    for value in (payload.get("cwd"), environ.get(PROJECT_DIR_ENV)):
        if isinstance(value, str) and os.path.isabs(value) and os.path.isdir(value):
            return Path(value)
    raise RouterError(
        ErrorCode.USAGE,
        f"the host sent no existing `cwd` and {PROJECT_DIR_ENV} is not set to a directory; "
        "nothing was created",
    )


def _repo_of(path: Path, payload: Mapping[str, Any], environ: Mapping[str, str]) -> Repo | None:
    """The repo of the worktree: from the worktree itself, or (when it is gone) the project."""
    candidates = [path, payload.get("cwd"), environ.get(PROJECT_DIR_ENV)]
    for value in candidates:
        if isinstance(value, (str, Path)) and os.path.isdir(value):
            try:
                return open_repo(Path(value))
            except Refusal:
                continue
    return None


def _topic_at(repo: Repo, path: Path) -> tuple[str, bool] | None:
    """(id, torn down) of the topic whose record names ``path`` as its worktree; a live one first."""
    wanted = os.path.realpath(path)
    finished = None
    for topic_id in state.list_records(repo.common_dir):
        try:
            record = state.read_record(repo.common_dir, topic_id)
        except state.RecordCorrupt:
            continue
        if record is None or not record.worktree:
            continue
        if os.path.realpath(record.worktree) != wanted:
            continue
        if not torn_down(record):
            return record.id, False
        finished = (record.id, True)
    return finished


# -- sweep --host-worktrees --------------------------------------------------------------


class SweptOutcome(StrEnum):
    REMOVED = "removed"  # worktree, branch and record's topic gone: it held nothing
    WOULD_REMOVE = "would-remove"  # --dry-run: it holds nothing
    KEPT = "kept"  # it holds something (named), or its removal was refused


@record
class SweptWorktree:
    id: str
    worktree: str | None
    outcome: SweptOutcome
    detail: str

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "worktree": self.worktree,
            "outcome": str(self.outcome),
            "detail": self.detail,
        }


@record
class HostSweepResult:
    """``sweep --host-worktrees``: each host-made topic's outcome, then the residue sweep."""

    host_worktrees: tuple[SweptWorktree, ...]
    residue: SweepResult

    @property
    def warnings(self) -> list[str]:
        return self.residue.warnings

    @property
    def exit_code(self) -> int:
        return self.residue.exit_code

    @property
    def error(self) -> dict[str, str] | None:
        return self.residue.error

    def to_json(self) -> dict[str, object]:
        return {
            **self.residue.to_json(),
            "host_worktrees": [h.to_json() for h in self.host_worktrees],
        }


def sweep_host_worktrees(
    cwd: Path,
    *,
    dry_run: bool = False,
    wait: float = state.DEFAULT_WAIT,
    echo: Echo | None = None,
    force: bool = False,
) -> HostSweepResult:
    """Remove the worktrees the host asked for that hold nothing (DESIGN §8), as the client
    would have; keep and name the others; then sweep residue (§9 step 7).

    Each is judged again under its topic's lock right before it goes: a session that
    took it, a file or a commit made meanwhile keeps it.
    """
    from router.phase.idle import host_worktrees
    from router.teardown.sweep import Runs, sweep

    repo = open_repo(cwd)
    swept = []
    for found in host_worktrees(repo):
        if found.worktree is None or not found.idle:
            detail = f"it holds {'; '.join(found.holds)}"
            swept.append(SweptWorktree(found.id, found.worktree, SweptOutcome.KEPT, detail))
        elif dry_run:
            detail = "it holds nothing"
            swept.append(SweptWorktree(found.id, found.worktree, SweptOutcome.WOULD_REMOVE, detail))
        else:
            result = _tear_down(
                repo,
                found.id,
                Path(found.worktree),
                discard=False,
                wait=wait,
                echo=echo,
                caller=HostCaller.SWEEP,
            )
            removed = result.outcome is RemoveOutcome.REMOVED
            outcome = SweptOutcome.REMOVED if removed else SweptOutcome.KEPT
            swept.append(SweptWorktree(found.id, found.worktree, outcome, result.detail))
    residue = sweep(
        repo.primary,
        None,
        git=repo.git,
        common_dir=repo.common_dir,
        dry_run=dry_run,
        runs=Runs(repo.primary, force=force, repo=repo),
    )
    return HostSweepResult(tuple(swept), residue)
