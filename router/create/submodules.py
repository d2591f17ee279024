"""Creation's ``submodules`` stage (DESIGN §7): a new worktree gets the primary's submodules.

Every submodule the primary clone has initialised is checked out in the new
worktree at the commit the branch records, from the primary's own objects
(:func:`router.git.borrow_module`): nothing the machine has is fetched again,
and an unreachable remote does not matter. One that cannot be is a warning
naming it and the command that fetches it; the worktree is made all the same.

A kill during the stage is finished by the rerun: a submodule git dir is only
ever renamed into place whole, and a checkout git never finished (no index
yet) is checked out again whole.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from router import git as g
from router.git import Git, GitError, Gitlink
from router.parallel import parallel_map

SUBMODULES_STEP = "submodules"  # its name in the record's steps and for the crash seam


class SubmoduleStatus(StrEnum):
    CHECKED_OUT = "checked-out"  # by this run, from the primary's objects
    PRESENT = "present"  # checked out already (by the run a kill stopped, or by hand)
    SKIPPED = "skipped"  # the primary has not initialised it, or the checkout leaves it out
    FAILED = "failed"  # could not be checked out: a warning names it


@dataclass(frozen=True, slots=True)
class SubmoduleOutcome:
    """One submodule of a new worktree: where, the commit the branch records, what was done."""

    path: str
    name: str
    commit: str
    status: SubmoduleStatus
    detail: str = ""  # why it was skipped or failed

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "name": self.name,
            "commit": self.commit,
            "status": str(self.status),
            "detail": self.detail or None,
        }

    def said(self) -> str:
        """``lib checked-out at 3f2a9c1d0b7e`` or ``vendor/x failed (why)``, for the text report."""
        what = f"{self.path} {self.status}"
        if self.status in (SubmoduleStatus.CHECKED_OUT, SubmoduleStatus.PRESENT):
            return f"{what} at {self.commit[:12]}"
        return f"{what} ({self.detail})"


@dataclass(frozen=True, slots=True)
class _Where:
    """The repo and worktree the stage works in."""

    primary: Path
    common_dir: Path
    worktree: Path
    git_dir: Path


def check_out_submodules(
    primary: Path, common_dir: Path, worktree: Path
) -> tuple[SubmoduleOutcome, ...]:
    """Check out in ``worktree`` the submodules ``primary`` has initialised; never raises
    for a submodule git or the disk refuses (its outcome says ``failed``)."""
    git = Git(worktree)
    git_dir = g.checkout_git_dir(worktree)
    try:
        links = g.declared_gitlinks(git, worktree)
        initialised = g.initialised_names(git) if links else set()
    except (GitError, OSError) as exc:
        # Not one submodule could be read: one outcome for them all, named by their list.
        why = f"cannot list the submodules: {_said_by(exc)}"
        return (SubmoduleOutcome(".gitmodules", "", "", SubmoduleStatus.FAILED, why),)
    if not links or git_dir is None:
        return ()
    where = _Where(primary, common_dir, worktree, git_dir)
    # The git dirs one after the other (a few small processes each), then every
    # checkout at once: each submodule is its own repository.
    decided = [_make_git_dir(where, link, initialised) for link in links]
    return tuple(parallel_map(lambda o: _checked_out(where, o), decided))


def _make_git_dir(where: _Where, link: Gitlink, initialised: set[str]) -> SubmoduleOutcome:
    """Make ``link``'s git dir in the worktree, or say why not; CHECKED_OUT = due for checkout."""
    status, detail = _prepared(where, link, initialised)
    return SubmoduleOutcome(link.path, link.name, link.commit, status, detail)


def _prepared(where: _Where, link: Gitlink, initialised: set[str]) -> tuple[SubmoduleStatus, str]:
    if link.name not in initialised:
        return SubmoduleStatus.SKIPPED, f"not initialised in {where.primary}"
    top = where.worktree / link.path
    if not top.is_dir() or top.is_symlink():
        return SubmoduleStatus.SKIPPED, "not in the checkout (outside its sparse cone)"
    source = g.primary_module(where.common_dir, where.primary, link)
    if source is None:
        return SubmoduleStatus.FAILED, f"{where.primary} has not checked it out: nothing to borrow"
    target = g.module_dir(where.git_dir, link.name)
    try:
        if target.exists():
            return _resumed(top, target)
        g.borrow_module(source, target, link.commit, top)
    except g.MissingCommit as exc:
        return SubmoduleStatus.FAILED, f"{exc}: fetch it there first"
    except (GitError, OSError) as exc:
        return SubmoduleStatus.FAILED, _said_by(exc)
    return SubmoduleStatus.CHECKED_OUT, ""


def _resumed(top: Path, target: Path) -> tuple[SubmoduleStatus, str]:
    """The submodule's git dir is there already: checked out, or a checkout a kill cut short."""
    if g.checkout_finished(top, target):
        return SubmoduleStatus.PRESENT, ""
    from router.processes import processes_using  # lazy: only a resumed stage needs it

    users = processes_using([os.path.realpath(top), os.path.realpath(target)])
    if users:
        pids = ", ".join(str(p) for found in users.values() for p in sorted(found))
        return SubmoduleStatus.FAILED, f"process(es) {pids} still use it: run this again then"
    g.forget_unfinished_checkout(top, target)
    return SubmoduleStatus.CHECKED_OUT, ""


def _checked_out(where: _Where, decided: SubmoduleOutcome) -> SubmoduleOutcome:
    """A submodule due for checkout, checked out; then as git left it: at the commit, or failed."""
    if decided.status is not SubmoduleStatus.CHECKED_OUT:
        return decided
    target = g.module_dir(where.git_dir, decided.name)
    top = where.worktree / decided.path
    try:
        failure = g.checkout_borrowed(top, target, decided.commit)
    except OSError as exc:
        return _failed(decided, _said_by(exc))
    if g.checkout_finished(top, target) and g.detached_head(target) == decided.commit:
        return decided
    return _failed(decided, failure.first_line if failure else "git checked out nothing")


def _failed(decided: SubmoduleOutcome, detail: str) -> SubmoduleOutcome:
    return SubmoduleOutcome(
        decided.path, decided.name, decided.commit, SubmoduleStatus.FAILED, detail
    )


def _said_by(exc: GitError | OSError) -> str:
    return exc.first_line if isinstance(exc, GitError) else f"{exc.strerror or exc}"


def warnings_for(
    repo_name: str, worktree: Path, outcomes: tuple[SubmoduleOutcome, ...]
) -> list[str]:
    """One warning per submodule that failed, naming it and the command that fetches it."""
    return [
        _warning(repo_name, worktree, o) for o in outcomes if o.status is SubmoduleStatus.FAILED
    ]


def _warning(repo_name: str, worktree: Path, failed: SubmoduleOutcome) -> str:
    fix = f"`git -C {worktree} submodule update --init"
    if not failed.name:  # none could be listed (see check_out_submodules)
        return (
            f"{repo_name}: the submodules of {worktree} were not checked out ({failed.detail}); "
            f"the worktree is made without them: {fix}` fetches them"
        )
    return (
        f"{repo_name}: submodule {failed.path} was not checked out in {worktree} "
        f"({failed.detail}); the worktree is made without it: {fix} -- {failed.path}` fetches it"
    )
