"""Doctor's checks of the worktrees git knows and of the folders under ``.claude/worktrees/``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from router import git as g
from router.doctor.findings import (
    LIST_SHOWN,
    Kind,
    Problem,
    as_topic_id,
    is_ours,
    new_finding,
    with_detail,
)
from router.doctor.keeps import detached_work, module_work, moved_to, reflog_work, staged_work
from router.doctor.records import readable_records
from router.doctor.repairs import lock_worktree, remove_empty_dir, undo_our_add, unregister
from router.git import WorktreeEntry
from router.mounts import worktree_unmounted
from router.records import record
from router.topic import journal, worktreelock
from router.topic.workspace import WORKTREES_DIR, Repo


@record
class _Gone:
    """A registered worktree whose directory is gone, with what judging it needs."""

    repo: Repo
    entry: WorktreeEntry
    entries: list[WorktreeEntry]  # every registration of the repo
    here: Path  # where doctor runs (a moved checkout may be it)


def registration_problems(repo: Repo, entries: list[WorktreeEntry], here: Path) -> list[Problem]:
    return [
        _gone_registration(_Gone(repo, entry, entries, here))
        for entry in entries[1:]
        if not entry.bare and not os.path.lexists(entry.path)
    ]


def _gone_registration(gone: _Gone) -> Problem:
    """Kept with the first reason that says why, else unregistered by the repair."""
    path = gone.entry.path
    finding = new_finding(gone.repo, Kind.REGISTRATION_DIR_GONE, path, "", as_topic_id(path.name))
    for why_kept in _REASONS_TO_KEEP:
        detail = why_kept(gone)
        if detail:
            return Problem(with_detail(finding, detail))
    detail = "registered worktree whose directory is gone"
    return Problem(with_detail(finding, detail), unregister(gone.repo, gone.entry))


def _not_ours(gone: _Gone) -> str:
    if is_ours(gone.repo, gone.entry.path):
        return ""
    return (
        "registered worktree whose directory is gone; not under .claude/worktrees/, so "
        "left for the tool that made it"
    )


def _unmounted(gone: _Gone) -> str:
    # A disk or share that is not mounted looks just like a deleted
    # directory, and unregistering would cut every worktree on it off
    # from the repository once it is back ("not a git repository").
    unmounted = worktree_unmounted(gone.repo.common_dir, gone.entry.path)
    if not unmounted:
        return ""
    return (
        f"its directory is not there because its filesystem is not mounted "
        f"({unmounted.why}); kept: mount it at {unmounted.point}; if it is really "
        f"gone, run `git worktree remove {gone.entry.path}`"
    )


def _moved(gone: _Gone) -> str:
    # Its checkout was renamed, not deleted: unregistering would cut
    # that checkout (its index, its HEAD) off from the repository.
    moved = moved_to(gone.repo, gone.entry.path, gone.here)
    if not moved:
        return ""
    return (
        f"its directory moved to {moved}; kept: run `git worktree repair {moved}` (or move it back)"
    )


def _locked_by_other(gone: _Gone) -> str:
    # Our own lock keeps other tools' cleanup away, not doctor: the checks below decide.
    if not worktreelock.locked_by_other(gone.entry):
        return ""
    return (
        f"its directory is gone but it is locked ({gone.entry.lock_reason or 'no reason'}); "
        "run `git worktree unlock` first if it is really gone"
    )


def _detached(gone: _Gone) -> str:
    # Its HEAD is the only ref to those commits: unregistering it would
    # leave them to the next gc (teardown refuses the same detached HEAD).
    unique = detached_work(gone.repo, gone.entry)
    if not unique:
        return ""
    head = (gone.entry.head or "")[:12]
    return (
        f"its directory is gone, but its detached HEAD {head} holds {unique} commit(s) "
        f"on no branch, tag or remote; kept: `git branch <name> {head}` keeps them, "
        "then run doctor --repair again"
    )


def _reflogged(gone: _Gone) -> str:
    # Unregistering deletes its HEAD's reflog: commits made on a HEAD
    # that moved away since, or on a branch deleted since, are then
    # left to the next gc.
    reflogged = reflog_work(gone.repo, gone.entry, gone.entries)
    return f"its directory is gone, but {reflogged}; kept" if reflogged else ""


def _staged(gone: _Gone) -> str:
    # Unregistering deletes its index, and with it the only reference
    # to what was staged (git add without a commit).
    staged = staged_work(gone.repo, gone.entry)
    return f"its directory is gone, but its index {staged}; kept" if staged else ""


def _submodules(gone: _Gone) -> str:
    # Unregistering deletes the registration, and the submodule git dirs in it.
    held = module_work(gone.repo, gone.entry.path)
    return f"its directory is gone, but its registration keeps {held}; kept" if held else ""


# In this order: the cheap questions about where the directory went come first,
# then what only the registration holds (each costs git's time).
_REASONS_TO_KEEP: tuple[Callable[[_Gone], str], ...] = (
    _not_ours,
    _unmounted,
    _moved,
    _locked_by_other,
    _detached,
    _reflogged,
    _staged,
    _submodules,
)


def unlocked_problems(repo: Repo, entries: list[WorktreeEntry]) -> list[Problem]:
    """Worktrees team-router made before it locked them: other tools' cleanup may delete them.

    Ours: under ``.claude/worktrees/``, named as its worktree by a topic's record
    that is not torn down (nor in the middle of removing it).
    """
    topics = {
        os.path.realpath(record.worktree): record.id
        for record in readable_records(repo)
        if record.worktree
        and not record.torn_down
        and journal.find(record, journal.Operation.REMOVE) is None
    }
    found = []
    for entry in entries[1:]:
        topic = topics.get(os.path.realpath(entry.path))
        if entry.bare or entry.locked or topic is None or not is_ours(repo, entry.path):
            continue
        if not os.path.isdir(entry.path):
            continue  # its registration's own finding says what to do
        detail = (
            "team-router made this worktree but it is not locked: other tools' cleanup (Claude "
            "Code's among them) deletes unlocked worktrees under .claude/worktrees/; "
            "`team-router doctor --repair` locks it"
        )
        finding = new_finding(repo, Kind.UNLOCKED_WORKTREE, entry.path, detail, topic)
        found.append(Problem(finding, lock_worktree(repo, entry, topic)))
    return found


def unfinished_restore_problems(repo: Repo) -> list[Problem]:
    """Worktrees a killed ``restore`` left half-done (its files back, perhaps not its index)."""
    from router.teardown.snapshot import snapshot_ref

    found = []
    for half in journal.restores_pending(repo.common_dir):
        path, of = Path(str(half.path)), half.branch
        if half.operation is not journal.Operation.RESTORE or not os.path.isdir(path):
            continue  # its registration's own finding says what to do
        detail = (
            f"a restore of {snapshot_ref(of)} was interrupted here: what was staged may not "
            f"be staged again yet; run `team-router restore {of}` to finish it"
        )
        finding = new_finding(repo, Kind.RESTORE_UNFINISHED, path, detail, as_topic_id(of))
        found.append(Problem(finding))
    return found


def half_made_add_problems(repo: Repo) -> list[Problem]:
    """Registrations a killed ``git worktree add`` of ours left unusable: a restore's, killed
    before anything was checked out, and a ``new``'s (or ``worktrees``'), killed before git
    set its HEAD (git's placeholder, the null id).

    Until such a registration is mended or gone, git cannot read its HEAD and
    every walk of all refs fails in the repo. The rerun of the command removes
    it and makes the worktree again; the repair removes it under the same
    "ours" rule (:mod:`router.create.ouradd`): anything else in that directory
    is kept and named.
    """
    from router.teardown.restore_journal import half_made_adds

    found: list[Problem] = []
    restores: set[str] = set()
    for add, admin in half_made_adds(repo):
        restores.add(os.path.realpath(admin))
        of = add.restore.branch if add.restore else add.branch
        detail = (
            f"a restore of {of} was killed inside `git worktree add`, before anything was "
            f"checked out: git cannot use this registration (`git rev-list --all` may fail while "
            f"it is there); `team-router restore {of}` removes it and restores, "
            "`team-router doctor --repair` removes it"
        )
        finding = new_finding(repo, Kind.HALF_MADE_REGISTRATION, add.path, detail, as_topic_id(of))
        found.append(Problem(finding, undo_our_add(repo, admin, add.path, add.topic_id, of)))
    for torn in g.worktree_admin_dirs(str(repo.common_dir)):
        dotgit = g.registration_file(torn, "gitdir")
        if not dotgit or not g.placeholder_head(torn) or os.path.realpath(torn) in restores:
            continue
        path = Path(os.path.dirname(dotgit))
        topic = worktreelock.reason_topic(g.registration_file(torn, "locked"))
        topic = topic or as_topic_id(path.name)
        creation = f"a `team-router new` of {topic}" if topic else "a `git worktree add`"
        detail = (
            f"{creation} was killed inside `git worktree add`, before git set the worktree's "
            f"HEAD: git cannot use its registration {torn} (`git rev-list --all` fails while "
            "it is there); `team-router new` (`worktrees` for a repo other than the topic's "
            "home) run again removes it and creates the worktree, "
            "`team-router doctor --repair` removes it"
        )
        finding = new_finding(repo, Kind.HALF_MADE_REGISTRATION, path, detail, topic)
        fix = undo_our_add(repo, Path(torn), path, topic, None) if topic else None
        found.append(Problem(finding, fix))
    return found


def _registered_as(repo: Repo, folder: Path) -> str | None:
    """The registered path of the linked worktree whose ``.git`` ``folder`` holds (None: none)."""
    named = g.checkout_git_dir(folder)
    admins = {os.path.realpath(a) for a in g.worktree_admin_dirs(str(repo.common_dir))}
    if named is None or os.path.realpath(named) not in admins:
        return None
    dotgit = g.registration_file(named, "gitdir")
    return os.path.dirname(dotgit) if dotgit else None


def unknown_dir_problems(repo: Repo, entries: list[WorktreeEntry]) -> list[Problem]:
    root = repo.primary / WORKTREES_DIR
    try:
        children = sorted(root.iterdir())
    except OSError:
        return []
    known = {os.path.realpath(e.path) for e in entries}
    found = []
    for child in children:
        if not child.is_symlink() and os.path.realpath(child) in known:
            continue
        topic = as_topic_id(child.name)
        finding = new_finding(repo, Kind.UNKNOWN_DIR, child, "", topic)
        if child.is_symlink() or not child.is_dir():
            what = "a symlink" if child.is_symlink() else "a file"
            found.append(Problem(with_detail(finding, f"{what} git does not know; left as it is")))
            continue
        files = _some_files(child)
        registered = _registered_as(repo, child)
        if registered is not None and os.path.lexists(registered):
            # A copy: repairing would point the live worktree's registration here.
            detail = (
                f"its .git names the registration of the worktree at {registered}, which is "
                "still there (a copy?); left as it is: move it away"
            )
            found.append(Problem(with_detail(finding, detail)))
        elif registered is not None:
            detail = (
                f"a worktree moved here from {registered}; run `git worktree repair {child}` "
                "so git finds it here"
            )
            found.append(Problem(with_detail(finding, detail)))
        elif files:
            detail = "directory git does not know, holding " + ", ".join(files)
            detail += "; run `team-router sweep` (it removes only residue) or move it away"
            found.append(Problem(with_detail(finding, detail)))
        else:
            found.append(
                Problem(
                    with_detail(finding, "empty directory git does not know"),
                    remove_empty_dir(child),
                )
            )
    return found


def _some_files(folder: Path) -> list[str]:
    shown: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(Path(dirpath, d))]:
            shown.append(os.path.relpath(Path(dirpath, name), folder))
            if len(shown) >= LIST_SHOWN:
                return [*shown, "..."]
    return shown
