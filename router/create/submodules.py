"""Creation's ``submodules`` stage (DESIGN §7): a new worktree gets the primary's submodules.

Every submodule the primary clone has initialised is checked out in the new
worktree at the commit the branch records, from the primary's own objects
(:func:`router.git.borrow_module`): nothing the machine has is fetched again,
and an unreachable remote does not matter. Then, level by level, the ones
the primary's copy of each has initialised, from its git dir of them
(``modules/<a>/modules/<b>``). Each commit checked out is pinned in the primary's
git dir it is borrowed from, so the primary's ``git gc`` keeps it
(:func:`router.git.borrow_module`). ``restore`` checks a restored worktree's
submodules out here too, each where the snapshot had it. One that cannot be is a warning
naming it and the command that fetches it; the worktree is made all the same.

Its step in the record is :data:`router.create.creation.SUBMODULES_STEP`: that name is
on every creation's path, this module only where there are submodules to check out.

A kill during the stage is finished by the rerun: a submodule git dir is only
ever renamed into place whole, and a checkout git never finished (no index
yet) is checked out again whole.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path

from router import git as g
from router.git import Git, GitError, Gitlink
from router.parallel import parallel_map
from router.records import record, replace


class SubmoduleStatus(StrEnum):
    CHECKED_OUT = "checked-out"  # by this run, from the primary's objects
    PRESENT = "present"  # checked out already (by the run a kill stopped, or by hand)
    SKIPPED = "skipped"  # the primary has not initialised it, or the checkout leaves it out
    FAILED = "failed"  # could not be checked out: a warning names it


@record
class SubmoduleOutcome:
    """One submodule of a new worktree: where, the commit it is checked out at, what was done."""

    path: str  # relative to the worktree; a nested one's through its parents (``libs/a/vendor/b``)
    name: str
    commit: str
    status: SubmoduleStatus
    detail: str = ""  # why it was skipped or failed
    within: str = ""  # the submodule a nested one is in (relative to the worktree); "" at the top
    staged: str = ""  # the commit the index records, when it is checked out at another (restore)

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


@record
class _Where:
    """The checkout the stage works in at one level, and the primary's copy of it."""

    primary: Path  # the primary's checkout (its clone, or its checkout of a submodule)
    common_dir: Path  # that checkout's git dir: where its initialised submodules are named and kept
    worktree: Path
    git_dir: Path
    within: str  # "" at the worktree's top; else the submodule this level is, from the top
    borrower: str  # the worktree's registration name: its pins in the primary's git dirs say it

    def inside(self, rel: str) -> str:
        """``rel`` (relative to this level) relative to the worktree's top."""
        return f"{self.within}/{rel}" if self.within else rel


def check_out_submodules(
    primary: Path, common_dir: Path, worktree: Path, *, at: Mapping[str, str] | None = None
) -> tuple[SubmoduleOutcome, ...]:
    """Check out in ``worktree`` the submodules ``primary`` has initialised, and theirs in
    turn; never raises for a submodule git or the disk refuses (its outcome says ``failed``).

    ``at``: the commit a submodule (by path) is checked out at rather than the one
    the index records: ``restore`` puts each where the snapshot had it.
    """
    return _level(primary, common_dir, worktree, "", at or {}, "")


def _level(
    primary: Path,
    common_dir: Path,
    worktree: Path,
    within: str,
    at: Mapping[str, str],
    borrower: str,
) -> tuple[SubmoduleOutcome, ...]:
    """One level's submodules checked out, all at once; each one's own after it."""
    git = Git(worktree)
    git_dir = g.checkout_git_dir(worktree)
    try:
        links = g.declared_gitlinks(git, worktree)
        # The primary's config says what it initialised: at the top, the one the
        # worktree shares; below, the primary's own git dir of the submodule.
        initialised = g.initialised_names(Git(common_dir)) if links else set()
    except (GitError, OSError) as exc:
        # Not one submodule could be read: one outcome for them all, named by their list.
        why = f"cannot list the submodules: {_said_by(exc)}"
        path = f"{within}/.gitmodules" if within else ".gitmodules"
        return (SubmoduleOutcome(path, "", "", SubmoduleStatus.FAILED, why, within),)
    if not links or git_dir is None:
        return ()
    # At the top the worktree's git dir is its registration; below, the top's name holds.
    where = _Where(primary, common_dir, worktree, git_dir, within, borrower or git_dir.name)
    # The git dirs one after the other (a few small processes each), then every
    # checkout at once, each followed by its own submodules: each is its own repository.
    decided = [
        _make_git_dir(where, link, at.get(link.path, link.commit), initialised) for link in links
    ]
    done = parallel_map(lambda pair: _with_nested(where, *pair), zip(links, decided, strict=True))
    return tuple(o for found in done for o in found)


def _with_nested(
    where: _Where, link: Gitlink, decided: SubmoduleOutcome
) -> tuple[SubmoduleOutcome, ...]:
    """``link`` checked out, then its own submodules, from the primary's git dir of it
    (``modules/<a>/modules/<b>``); their paths from the worktree's top."""
    left = _checked_out(where, decided)
    found = (replace(left, path=where.inside(left.path), within=where.within),)
    if left.status not in (SubmoduleStatus.CHECKED_OUT, SubmoduleStatus.PRESENT):
        return found
    source = g.primary_module(where.common_dir, where.primary, link)
    if source is None:  # checked out by hand: the primary has nothing below it to go by
        return found
    inner = (where.primary / link.path, source, where.worktree / link.path)
    return found + _level(*inner, where.inside(link.path), {}, where.borrower)


def _make_git_dir(
    where: _Where, link: Gitlink, commit: str, initialised: set[str]
) -> SubmoduleOutcome:
    """Make ``link``'s git dir in the worktree at ``commit``, or say why not; CHECKED_OUT =
    due for checkout."""
    status, detail = _prepared(where, link, commit, initialised)
    staged = link.commit if commit != link.commit else ""
    return SubmoduleOutcome(link.path, link.name, commit, status, detail, staged=staged)


def _prepared(
    where: _Where, link: Gitlink, commit: str, initialised: set[str]
) -> tuple[SubmoduleStatus, str]:
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
        g.borrow_module(source, target, commit, top, pin=g.borrow_pin(where.borrower))
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
        return _submodule_failed(decided, _said_by(exc))
    if g.checkout_finished(top, target) and g.detached_head(target) == decided.commit:
        return decided
    return _submodule_failed(decided, failure.first_line if failure else "git checked out nothing")


def _submodule_failed(decided: SubmoduleOutcome, detail: str) -> SubmoduleOutcome:
    return replace(decided, status=SubmoduleStatus.FAILED, detail=detail)


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
    # A nested one is fetched from the submodule it is in, by its path there.
    parent = worktree / failed.within if failed.within else worktree
    rel = failed.path.removeprefix(f"{failed.within}/") if failed.within else failed.path
    fix = f"`git -C {parent} submodule update --init"
    if not failed.name:  # none could be listed (see _level)
        return (
            f"{repo_name}: the submodules of {parent} were not checked out ({failed.detail}); "
            f"the worktree is made without them: {fix}` fetches them"
        )
    # The index records another commit than the one it was at: that one goes back next.
    then = (
        f", then `git -C {worktree / failed.path} checkout --detach {failed.commit}` puts it "
        "where it was"
    ) * bool(failed.staged)
    return (
        f"{repo_name}: submodule {failed.path} was not checked out in {worktree} "
        f"({failed.detail}); the worktree is made without it: {fix} -- {rel}` fetches it{then}"
    )
