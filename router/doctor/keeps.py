"""What a registered worktree whose directory is gone still keeps: moved checkout, commits, index, submodules.

Unregistering such a worktree deletes its admin directory; each question here
finds what that deletion would cut off or lose, so the registration is kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from router import git as g
from router.doctor.findings import LIST_SHOWN
from router.git import (
    DanglingHead,
    GitError,
    WorktreeEntry,
    head_reflog_name,
    head_reflog_only,
    head_reflog_where,
    unique_commits,
)
from router.reasons import Reason, Why
from router.topic.workspace import Repo


def module_work(repo: Repo, path: Path) -> str:
    """What the submodule git dirs a gone worktree's registration keeps hold ("" when nothing)."""
    from router.teardown.blockers import nested_loss
    from router.teardown.factwords import nested_losses
    from router.teardown.nested import survey_registration

    holding = [n for n in survey_registration(repo.common_dir, path) if n.holds_work]
    if not holding:
        return ""
    lost = nested_losses(Why(Reason.NESTED_WORK, parts=tuple(map(nested_loss, holding))))
    return f"{lost}: push those commits (or drop them), then run doctor --repair again"


def moved_to(repo: Repo, path: Path, here: Path) -> Path | None:
    """Where the checkout registered at ``path`` went: a directory whose ``.git`` names its registration.

    Looked for only where a move is likely (the checkout doctor runs in, beside
    ``path``, beside the primary clone), never across the disk: a checkout
    moved elsewhere is not found, and its registration is judged as gone.
    """
    admin = g.registration_of(str(repo.common_dir), str(path))
    if admin is None:
        return None
    for candidate in _move_candidates(repo, path, here):
        if candidate.is_dir() and not candidate.is_symlink():
            named = g.checkout_git_dir(candidate)
            if named is not None and os.path.realpath(named) == os.path.realpath(admin):
                return candidate
    return None


def _move_candidates(repo: Repo, path: Path, here: Path) -> Iterator[Path]:
    try:
        found = g.find_git_dir(os.path.abspath(here))
    except g.Unsure:
        found = None
    if found is not None:
        yield Path(found[0])
    for folder in (path.parent, repo.primary.parent):
        try:
            yield from sorted(folder.iterdir())
        except OSError:
            continue


def staged_work(repo: Repo, entry: WorktreeEntry) -> str:
    """What a gone worktree's index holds beyond its HEAD ("" when nothing)."""
    admin = g.registration_of(str(repo.common_dir), str(entry.path))
    if admin is None:
        return ""
    index = Path(admin) / "index"
    try:
        staged = repo.git.staged_paths(index, entry.head)
    except GitError as exc:
        return (
            f"{index} cannot be read ({exc.first_line}), so what it stages is unknown: "
            "inspect it, then run `git worktree remove` on the path by hand"
        )
    if not staged:
        return ""
    shown = ", ".join(staged[:LIST_SHOWN]) + (", ..." if len(staged) > LIST_SHOWN else "")
    return (
        f"stages {len(staged)} change(s) no commit holds ({shown}): recover them with "
        f"`GIT_INDEX_FILE={index} git checkout-index -a --prefix=<dir>/`, then run "
        "`git worktree remove` on the path by hand"
    )


def reflog_work(repo: Repo, entry: WorktreeEntry, entries: list[WorktreeEntry]) -> str:
    """What only a gone registration's HEAD reflog keeps ("" when nothing), with the fix."""
    admin = g.registration_of(str(repo.common_dir), str(entry.path))
    if admin is None:
        return ""
    log = head_reflog_where(repo.common_dir, admin)
    heads = [e.head for e in entries if e.path != entry.path and e.head]
    try:
        only = head_reflog_only(repo.git, repo.common_dir, admin, heads=heads)
    except DanglingHead as exc:
        return (
            f"what its HEAD's reflog {log} alone keeps is unknown ({exc}): {exc.fix}, "
            "then run doctor --repair again"
        )
    except (g.Unsure, GitError) as exc:
        why = exc.first_line if isinstance(exc, GitError) else str(exc)
        listed = (
            "the second field of each of its lines names one"
            if os.path.isabs(log)
            else f"`git log -g {head_reflog_name(admin)}` lists them"
        )
        return (
            f"what its HEAD's reflog {log} alone keeps is unknown ({why}): keep those commits "
            f"on a branch ({listed}), then run `git worktree remove` on the path by hand"
        )
    if not only.count:
        return ""
    shown = [c[:12] for c in only.tips[:LIST_SHOWN]]
    if entry.branch is not None and not repo.git.branch_exists(entry.branch):
        fix = f"`git branch {entry.branch} {shown[0]}` brings its deleted branch back"
    else:
        fix = "`git branch <name> <commit>` keeps each line of work"
    return (
        f"its HEAD's reflog {log} is the only record of {only.count} commit(s) "
        f"(newest first: {', '.join(shown)}); {fix}, then run doctor --repair again"
    )


def detached_work(repo: Repo, entry: WorktreeEntry) -> int:
    """Commits only a detached registration's HEAD reaches (0 on a branch or an unborn HEAD)."""
    if entry.branch is not None or entry.head is None:
        return 0
    return unique_commits(repo.git, entry.head, except_branch=None)
