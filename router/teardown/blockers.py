"""What keeps a worktree from being removed: changes, nested repositories, a
missing disk, a checkout someone else uses, commits only a reflog holds.

Each check returns the refusal (a :class:`StepResult`) naming its error code and
the fix, or None when it finds nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from router import git as g
from router.errors import ErrorCode
from router.git import Git, GitError, StatusReport, WorktreeEntry
from router.mounts import worktree_unmounted
from router.reasons import Reason, Why
from router.records import replace
from router.teardown.nested import NestedKind, NestedRepo
from router.teardown.steps import Step, StepResult, refused
from router.topic import state, worktreelock
from router.topic.runs import PLANS_DIR
from router.topic.workspace import WORKTREES_DIR, Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.topic.holders import Holder


def holding_parts(holders: Iterable[Holder], *, elsewhere: bool = False) -> tuple[Why, ...]:
    """Each live session holding a topic, as what a reason is about (``parts``);
    ``elsewhere``: a topic of the repository, not the one at hand."""
    return tuple(
        Why(Reason.HOLDER, count=h.pid, text=h.session or "", flag=elsewhere) for h in holders
    )


def found_blockers(*checks: StepResult | None) -> tuple[StepResult, ...]:
    """The refusals the ``checks`` found, in their order (a check that found nothing is None)."""
    return tuple(c for c in checks if c is not None)


def nested_blocker(
    path: Path,
    nested: tuple[NestedRepo, ...],
    *,
    again: str = "teardown",
    step: Step = Step.REMOVE,
    what: str = "the worktree",
) -> StepResult | None:
    """Refuse (``--force`` or not) while a repository inside the worktree holds work of its own.

    ``again`` is the command the message says to run again; ``step`` the
    step that refuses, and ``what`` the directory it would have removed.
    """
    holding = [n for n in nested if n.holds_work]
    if not holding:
        return None
    losses = tuple(map(nested_loss, holding))
    held = Why(Reason.NESTED_WORK, path=str(path), parts=losses, again=again, step=step)
    return refused(step, ErrorCode.NESTED_WORK, held)


def nested_loss(repo: NestedRepo) -> Why:
    """What removing ``repo`` would lose (NESTED_REPO), each clause a part: ``submodule lib
    (2 commit(s) on none of its remote-tracking refs; 1 untracked file(s): a)``."""
    parts = [repo.problem] if repo.problem else _losses(repo)
    return Why(Reason.NESTED_REPO, kind=str(repo.kind), path=repo.rel, parts=tuple(parts))


def _losses(repo: NestedRepo) -> list[Why]:
    parts = [Why(Reason.UNPUSHED, count=repo.unpushed)] if repo.unpushed else []
    if repo.unpushed and repo.gone:
        # Its tracking refs still name the commits, but the remote they copy is gone.
        parts.append(Why(Reason.REMOTES_GONE, items=repo.gone))
    if repo.status.dirty:
        parts.append(Why(Reason.CHANGES, items=repo.status.tracked, others=repo.status.untracked))
    if repo.kind is NestedKind.UNINITIALISED:
        parts.append(Why(Reason.UNSEEN_FILES))
    if repo.kind is NestedKind.MODULE:
        # Its config names a checkout that may be gone, and git then stops unless told.
        parts.append(Why(Reason.MODULE_DIR, path=repo.rel))
    return parts


def foreign_worktree(repo: Repo, path: Path, branch: str, entry: WorktreeEntry) -> Why | None:
    """Why the worktree at ``path`` is not this branch's to remove (None when it is).

    The path comes from a record or from ``repos.md`` (written by a model); git
    decides whose worktree it is: one on another branch belongs to other work
    (with its own plan dir and ignored files), and a detached one counts only
    at this branch's own worktree path.
    """
    if entry.branch == branch:
        return None
    own_path = os.path.realpath(path) == os.path.realpath(repo.worktree_path(branch))
    if entry.branch is None and own_path:
        return None
    # The topic's own path switched to another branch: an agent switched it (`new` reruns
    # take it as the topic's). Its work is on that branch, not this one's: kept, and the
    # words say how to take it apart with the topic.
    on = (entry.branch,) if entry.branch else ()
    return Why(Reason.FOREIGN, path=str(path), branch=branch, others=on, flag=bool(on) and own_path)


def hidden_work(worktree: Path, topic_id: str | None) -> tuple[str, ...]:
    """Untracked files under ``docs/plans/`` that only an exclude file (ours) hides, sorted.

    ``new`` adds ``/docs/plans/`` to the repo's ``info/exclude`` so a plan dir
    stays out of ``git status``; that line hides every other untracked file
    under ``docs/plans/`` of every worktree too, and neither git's dirty check
    nor ``add --all`` sees them. They are the user's work all the same; one
    a ``.gitignore`` ignores is not (ignored files are never work to teardown,
    as in git's own check). The topic's own plan dir
    (``docs/plans/<topic_id>/``) is not counted: it is the run's, its own
    rules apply. Nothing is listed behind a symlinked ``docs/`` or
    ``docs/plans/`` (removing the worktree deletes the link, not its target);
    a nested repository is left to :mod:`router.teardown.nested`. Raises
    GitError when git cannot list them: nothing is assumed.
    """
    for part in (worktree / "docs", worktree / PLANS_DIR):
        if os.path.islink(part) or not os.path.isdir(part):
            return ()
    if topic_id and os.listdir(worktree / PLANS_DIR) in ([], [topic_id]):
        return ()  # the plan dir alone (the usual case): no git to ask
    untracked = Git(worktree).untracked_under(f"{PLANS_DIR}/")
    own = f"{PLANS_DIR}/{topic_id}" if topic_id else None
    return tuple(
        sorted(
            p
            for p in untracked
            if not p.endswith("/") and (own is None or (p != own and not p.startswith(f"{own}/")))
        )
    )


def with_hidden(status: StatusReport, hidden: tuple[str, ...]) -> StatusReport:
    """``status`` with the hidden untracked files of :func:`hidden_work` counted as untracked."""
    if not hidden:
        return status
    extra = tuple(p for p in hidden if p not in status.untracked)
    return replace(status, untracked=(*status.untracked, *extra))


def unmounted_blocker(repo: Repo, path: Path, *, again: str = "teardown") -> StepResult | None:
    """A registered worktree whose directory is missing because its disk is not mounted: refused.

    --force or not: git would drop the registration of a directory it cannot
    see, and the checkout, with whatever work is in it, would no longer be a
    git repository once the disk is back.
    """
    unmounted = worktree_unmounted(repo.common_dir, path)
    if unmounted is None:
        return None
    shows, at, point = str(unmounted.shows), str(unmounted.at), str(unmounted.point)
    why = Why(Reason.NOT_MOUNTED, path=str(path), kind=shows, items=(at,), other=point, again=again)
    return refused(Step.REMOVE, ErrorCode.NOT_MOUNTED, why)


def worktree_blocker(path: Path, entry: WorktreeEntry, status: StatusReport) -> StepResult | None:
    # Our own lock (DESIGN §10) keeps other tools away, not team-router: only another's refuses.
    if worktreelock.locked_by_other(entry):
        locked = Why(Reason.LOCKED, path=str(path), text=entry.lock_reason or "")
        return refused(Step.REMOVE, ErrorCode.LOCKED_WORKTREE, locked)
    if status.dirty:
        hidden = any(p.startswith(f"{PLANS_DIR}/") for p in status.untracked)
        dirty = Why(Reason.DIRTY, path=str(path), items=tuple(status.tracked), flag=hidden)
        dirty = replace(dirty, others=tuple(status.untracked))
        return refused(Step.REMOVE, ErrorCode.DIRTY_WORKTREE, dirty)
    return None


def worktrees_in_use(
    paths: Iterable[Path], *, host: bool = False, topic_lock: Path | None = None
) -> dict[Path, list[Why]] | None:
    """``path -> [process 123 (vim), ...]`` (each a PROCESS) for each of ``paths`` another
    process works in.

    Its working directory or an open file is there: git removes the tree from
    under it, and a shell is left in a deleted directory, an editor writes its
    buffers back into one. One scan of /proc answers every path (a teardown
    asks once for all its repos). The command line that asked for the removal
    is left out (:func:`requesters`: this process, the ones above it, the rest of
    its pipeline): it may sit in the worktree itself. ``host``: the session that
    called is a host removing a worktree it made, and every process below it is
    its own (:func:`router.processes.session_processes`). ``topic_lock``: the topic's lock,
    which the caller holds; another team-router run that has it open is queued
    behind this one for the same topic (it sees what this one leaves), not work in
    the worktree. None where there is no /proc to read.
    """
    from router.processes import (
        processes_using,
        queued_on,
        requesters,
        session_processes,
    )

    real = {os.path.realpath(p): p for p in paths}
    if not real:
        return {}
    users = processes_using(list(real))
    if users is None:
        return None
    if not users:
        return {}  # nobody there: the exclusions need no scan of /proc of their own
    mine = requesters() | (session_processes() if host else set())
    if topic_lock is not None:
        mine |= queued_on(topic_lock, {pid for pids in users.values() for pid in pids})
    others = {r: sorted(set(pids) - mine) for r, pids in users.items()}
    return {real[r]: [_process(pid) for pid in pids] for r, pids in others.items() if pids}


def _process(pid: int) -> Why:
    from router.processes import process_name

    return Why(Reason.PROCESS, count=pid, text=process_name(pid))


def reflog_blocker(
    repo: Repo, path: Path, entries: Iterable[WorktreeEntry], *, again: str = "teardown"
) -> StepResult | None:
    """Refuse (``--force`` or not) while the worktree's HEAD reflog is the only record of commits.

    A commit made on a detached HEAD that was then left (checking the branch
    out again) is reachable from that reflog alone, and ``git worktree remove``
    deletes it with the registration. What an amend or a rebase replaced is
    still in the branch's own reflog: that does not count. No snapshot keeps a
    reflog, so ``--force`` does not override it; the fixes name the commits.
    """
    admin = g.registration_of(str(repo.common_dir), str(path))
    if admin is None:
        return None
    log = g.head_reflog_where(repo.common_dir, admin)
    # Its own HEAD counts as kept: a detached HEAD's commits are the detached-HEAD
    # check's (and a --force snapshot's parent), not the reflog's.
    heads = [e.head for e in entries if e.head]
    try:
        only = g.head_reflog_only(repo.git, repo.common_dir, admin, heads=heads)
    except (g.Unsure, GitError, g.DanglingHead) as exc:
        unknown = Why(Reason.REFLOG_UNKNOWN, path=str(path), ref=str(log))
        if isinstance(exc, g.DanglingHead):
            unknown = replace(unknown, branch=exc.branch)  # the branch its HEAD names
        else:
            unknown = _unknown_reflog(unknown, exc)
        return refused(Step.REMOVE, ErrorCode.UNINTEGRATED_COMMITS, replace(unknown, again=again))
    if not only.count:
        return None
    kept = Why(Reason.REFLOG_ONLY, path=str(path), count=only.count, items=tuple(only.tips[:5]))
    return refused(Step.REMOVE, ErrorCode.UNINTEGRATED_COMMITS, replace(kept, again=again))


def _unknown_reflog(unknown: Why, exc: g.Unsure | GitError) -> Why:
    """Why the reflog could not be read: git's first line (``text``), a reflog file it cannot
    trust, or the repository's config or refs not read from their files (a part)."""
    if isinstance(exc, GitError):
        return replace(unknown, text=exc.first_line)
    if isinstance(exc, g.OddReflog):
        odd = Why(Reason.ODD_REFLOG, path=exc.path, flag=exc.unreadable)
        return replace(unknown, parts=(odd,))
    if exc.kind:
        layout = Why(Reason.UNREAD_LAYOUT, kind=exc.kind, path=exc.path)
        return replace(unknown, parts=(layout,))
    return replace(unknown, text=str(exc))  # no Unsure the reflog's readers raise


def in_use_blocker(path: Path, users: Iterable[Why], *, again: str = "teardown") -> StepResult:
    """The removal refused while ``users`` work in the worktree: ``held``, as --reclaim says of
    a process in a checkout. --force does not override it (it snapshots files, and no
    snapshot keeps an editor's buffers): closing the process is the fix that loses nothing."""
    in_use = Why(Reason.IN_USE, path=str(path), parts=tuple(users), again=again)
    return refused(Step.REMOVE, ErrorCode.HELD, in_use)


NO_PROC_NOTE = (
    "this system has no /proc: processes working in the worktree were not looked for "
    "(close any shell or editor there before it is removed)"
)


def reused_checkout(repo: Repo, worktree: Path) -> Why | None:
    """Why a linked worktree outside ``.claude/worktrees/`` stays: `new` reused the user's
    checkout, never made it (None for one of ours). teardown and pr-cleanup keep it
    unless ``--remove-reused`` is given."""
    ours = repo.primary / WORKTREES_DIR
    if Path(os.path.realpath(worktree)).parent == Path(os.path.realpath(ours)):
        return None
    return Why(Reason.KEPT, path=str(worktree))


def reused_branch(branch: str, record: state.TopicRecord | None) -> Why | None:
    """Why the branch stays: the topic's record says team-router did not create it (None else)."""
    if record is None or record.branch_created:
        return None
    return Why(Reason.KEPT, branch=branch)
