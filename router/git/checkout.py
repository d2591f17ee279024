"""Changing what a checkout holds: cherry-pick, merge, reset, restore, submodules, and the
state a stopped operation leaves in the git dir."""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

from router.git.remote import FETCH_TIMEOUT
from router.git.run import GitError, Runner
from router.git.sparse import indexed_paths, mark_unmaterialised, unmaterialised

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.git.refs import RefMethods


def cherry_pick(git: Runner, commits: Sequence[str]) -> None:
    """Cherry-pick ``commits`` in order onto the checked-out branch (one sequence)."""
    git.run("cherry-pick", "--no-edit", "--allow-empty-message", *commits)


def cherry_pick_head(git: RefMethods) -> str | None:
    """The commit a stopped cherry-pick was applying, if one is in progress."""
    return git.rev_parse("CHERRY_PICK_HEAD")


def cherry_pick_abort(git: Runner) -> GitError | None:
    """``git cherry-pick --abort``: None when it ran, else why not (a lock file in the way ...).

    --abort puts HEAD back where the whole sequence started, so a conflict on
    the third commit does not leave the first two on the target branch.
    """
    return _end_pick(git, "--abort")


def cherry_pick_quit(git: Runner) -> GitError | None:
    """Forget a stopped cherry-pick (sequencer and CHERRY_PICK_HEAD), keeping HEAD, index and files.

    None when it ran, else why not (as for :func:`cherry_pick_abort`, a lock
    file in its way is reported although git exits 0).
    """
    return _end_pick(git, "--quit")


def _end_pick(git: Runner, how: str) -> GitError | None:
    """``git cherry-pick <how>``: None when it ran, else its failure or the lock it met.

    git deletes CHERRY_PICK_HEAD under ``CHERRY_PICK_HEAD.lock`` and
    ``packed-refs.lock``; when a killed git left one of them, --abort and
    --quit print the error but exit 0 with the pick still in progress. That
    complaint is returned too (exit code 0), so the caller can name the lock.
    """
    result = git.run("cherry-pick", how, check=False)
    error = result.as_error()
    return error if not result.ok or error.lock_file is not None else None


# What a stopped git operation leaves in the git dir, and the command that undoes it.
_IN_PROGRESS = (
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("sequencer", "cherry-pick"),  # a multi-commit pick between two commits
    ("REVERT_HEAD", "revert"),
    ("MERGE_HEAD", "merge"),
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    # A bisect can start with HEAD still on the branch (no revisions yet, or
    # --no-checkout): a pull or a pick there would move it under the bisect.
    ("BISECT_START", "bisect"),
)


def operation_in_progress(git_dir: Path) -> str | None:
    """``cherry-pick``, ``revert``, ``merge``, ``rebase`` or ``bisect`` when one is stopped in ``git_dir``."""
    for name, operation in _IN_PROGRESS:
        if os.path.lexists(git_dir / name):
            if operation == "rebase" and (git_dir / name / "applying").exists():
                return "am"
            return operation
    return None


def sequencer_start(git_dir: Path) -> str | None:
    """Where a stopped multi-commit cherry-pick started (``sequencer/head``), if one is."""
    try:
        return (git_dir / "sequencer" / "head").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def sequencer_unstarted(git_dir: Path) -> bool:
    """``sequencer/`` exists without its ``head``: a cherry-pick killed as it began, before it
    wrote where it starts (it holds ``sequencer/head.lock`` then) and before any pick."""
    seq = git_dir / "sequencer"
    return seq.is_dir() and not (seq / "head").exists()


def sequencer_empty(git_dir: Path) -> bool:
    """``sequencer/`` exists and holds nothing: git made it and was killed before it wrote
    anything, or was killed removing it as the sequence ended. Nothing in it can be lost."""
    seq = git_dir / "sequencer"
    try:
        return seq.is_dir() and not any(seq.iterdir())
    except OSError:
        return False


def sequencer_locks(git_dir: Path) -> list[Path]:
    """Lock files git took inside ``sequencer/`` (``head.lock`` and kin)."""
    return sorted((git_dir / "sequencer").glob("*.lock"))


def reset_hard(git: Runner, commit: str) -> None:
    git.run("reset", "--quiet", "--hard", commit)


def pull(
    git: Runner, remote: str, branch: str, *, rebase: bool, timeout: float = FETCH_TIMEOUT
) -> None:
    """``git pull --rebase`` (or ``--ff-only``) ``remote branch`` in the checkout at cwd."""
    mode = "--rebase" if rebase else "--ff-only"
    git.run("pull", "--quiet", mode, "--no-autostash", remote, branch, timeout=timeout)


class FastForward(StrEnum):
    """What ``git merge --ff-only`` did with a branch."""

    MOVED = "moved"  # the branch was behind: it now sits on the ref
    CURRENT = "current"  # the branch already held the ref: nothing changed
    REFUSED = "refused"  # the branch has commits of its own (or git refused): unchanged


def fast_forward(git: Runner, ref: str) -> FastForward:
    """``git merge --ff-only ref`` in the checkout at cwd.

    What ``git pull`` runs after its fetch when the branch has nothing of its
    own, without that second fetch: a caller that fetched moments ago already
    holds origin's tip.
    """
    # No auto-maintenance either, as for this tool's fetches: the user's own next git runs it.
    merge = ("merge", "--ff-only", "--no-stat", "--no-autostash", ref)
    res = git.run(*merge, check=False, config=("maintenance.auto=false",))
    if not res.ok:
        return FastForward.REFUSED
    # LC_ALL=C: git's own words for a merge that had nothing to do.
    return FastForward.CURRENT if "Already up to date" in res.stdout else FastForward.MOVED


def rebase_abort(git: Runner) -> None:
    git.run("rebase", "--abort", check=False)


def read_index(worktree: Runner, tree_ish: str, *, sparse: bool = False) -> None:
    """Make the worktree's index ``tree_ish`` without touching its files.

    ``sparse``: the worktree is a sparse one, whose files never written must
    stay marked so (read-tree drops the marks, and they would read as deleted).
    """
    unwritten = unmaterialised(worktree, worktree.cwd) if sparse else []
    worktree.run("read-tree", f"{tree_ish}^{{tree}}")
    if unwritten:
        held = indexed_paths(worktree)
        still = [p for p in unwritten if p in held and not os.path.lexists(worktree.cwd / p)]
        mark_unmaterialised(worktree, still, None)
    # read-tree leaves no stat data: refresh it so unchanged files do not look
    # modified to the next command (exit 1 just means some files differ).
    worktree.run("update-index", "-q", "--refresh", check=False)


def write_tree_files(git: Runner, tree: str, index_file: Path) -> None:
    """Write the files of ``tree`` into the work tree, never over a file already there.

    Through a private index, so the repo's own index is untouched;
    ``checkout-index`` without ``--force`` keeps an existing file and fails.
    """
    env = {"GIT_INDEX_FILE": str(index_file)}
    git.run("read-tree", tree, env=env)
    git.run("checkout-index", "--all", env=env)


def restore_worktree_files(git: Runner, source: str) -> None:
    """Make the working tree match ``source`` without touching the index.

    The result shows as uncommitted edits and untracked files, exactly as the
    snapshot found them, not as an extra commit.
    """
    git.run("restore", f"--source={source}", "--worktree", "--", ":/")


SUBMODULE_TIMEOUT = 120.0  # `submodule update` may have to fetch the new commit


def submodule_update(git: Runner, paths: Sequence[str]) -> None:
    """Check out the recorded commit in the initialised submodules at ``paths``.

    ``--checkout`` whatever ``submodule.<name>.update`` says: the caller has
    just moved the gitlink and wants the submodule where the superproject
    records it, never a merge, rebase or custom command.
    """
    update = ("submodule", "update", "--checkout", "--recursive", "--", *paths)
    git.run(*update, timeout=SUBMODULE_TIMEOUT, env={"GIT_LITERAL_PATHSPECS": "1"})
