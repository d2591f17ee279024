"""What happens on origin behind the test's back: merges and commits made through a scratch clone."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers.repos import commit, git, write


def bare_origin(repo: Path) -> Path:
    """The local bare repository behind ``repo``'s origin (``insteadOf`` applied)."""
    return Path(git(repo, "remote", "get-url", "origin"))


def scratch_clone(repo: Path, label: str) -> Path:
    """A fresh clone of ``repo``'s origin beside the workspace, as someone else's machine."""
    path = repo.parent.parent / "scratch" / f"{repo.name}-{label}"
    if path.exists():
        shutil.rmtree(path)
    git(repo.parent, "clone", "-q", str(bare_origin(repo)), str(path))
    return path


def push_branch(worktree: Path, branch: str) -> None:
    git(worktree, "push", "-q", "origin", f"{branch}:{branch}")


def merge_on_origin(
    repo: Path, branch: str, *, how: str = "merge", base: str = "main", delete: bool = True
) -> str:
    """Merge ``branch`` into origin's ``base`` as GitHub's merge button would; the new tip.

    ``how`` is ``merge`` (a merge commit), ``squash`` (one new commit, no
    common history) or ``rebase`` (the commits replayed: new shas, same patches).
    """
    scratch = scratch_clone(repo, f"merge-{branch.replace('/', '-')}")
    git(scratch, "checkout", "-q", base)
    theirs = f"origin/{branch}"
    if how == "merge":
        git(scratch, "merge", "-q", "--no-ff", "-m", f"Merge pull request from {branch}", theirs)
    elif how == "squash":
        git(scratch, "merge", "-q", "--squash", theirs)
        git(scratch, "commit", "-q", "-m", f"{branch} (squashed)")
    elif how == "rebase":
        # GitHub replays the commits as new ones. Under the suite's fixed
        # identity and dates a replay onto the same base would reproduce the
        # same shas, so the base moves first (someone else's commit).
        commit(scratch, "UNRELATED.md", "another change\n", "unrelated change on the base")
        git(scratch, "checkout", "-q", "-b", "replay", theirs)
        git(scratch, "rebase", "-q", base)
        git(scratch, "checkout", "-q", base)
        git(scratch, "merge", "-q", "--ff-only", "replay")
    else:
        raise ValueError(how)
    git(scratch, "push", "-q", "origin", base)
    if delete:
        git(scratch, "push", "-q", "origin", "--delete", branch)
    return git(scratch, "rev-parse", "HEAD")


def commit_on_origin(repo: Path, rel: str, text: str, *, base: str = "main") -> str:
    """Someone else's commit on origin's ``base`` (so the local ``base`` falls behind)."""
    scratch = scratch_clone(repo, "other")
    git(scratch, "checkout", "-q", base)
    sha = commit(scratch, rel, text, f"other change {rel}")
    git(scratch, "push", "-q", "origin", base)
    return sha


def declare(repo: Path, files: dict[str, str], message: str = "declare") -> str:
    """``files`` (path -> text) committed on ``repo``'s main and pushed, so origin/main declares
    them: what creation and teardown read from the default branch (``.worktreesetup``,
    ``.worktreeinclude``, ``.teamteardown``). The new tip."""
    for rel, text in files.items():
        write(repo / rel, text)
    git(repo, "add", "--", *files)
    git(repo, "commit", "-q", "-m", message)
    git(repo, "push", "-q", "origin", "main")
    return git(repo, "rev-parse", "HEAD")


def include(repo: Path, *patterns: str, message: str = "include") -> str:
    """``patterns`` both ignored and listed in ``.worktreeinclude`` on the default branch: each
    new worktree gets a copy of the primary's matching files."""
    text = "".join(f"{p}\n" for p in patterns)
    return declare(repo, {".gitignore": text, ".worktreeinclude": text}, message)
