"""Repositories as team-router sees them: primary clones, default branches, containment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from router.errors import Refusal
from router.git import Git, GitError, GitMissing, RepoLayout, WorktreeEntry

WORKTREES_DIR = Path(".claude") / "worktrees"
PLANS_DIR = Path("docs") / "plans"
EXCLUDE_LINES = ("/.claude/worktrees/", "/docs/plans/")


@dataclass(frozen=True, slots=True)
class Repo:
    """A repository, located from any of its checkouts."""

    primary: Path  # the main working tree (realpath)
    common_dir: Path
    checkout: RepoLayout  # the checkout we were asked about

    @property
    def git(self) -> Git:
        """git anchored to the primary clone."""
        return Git(self.primary)

    def worktree_path(self, branch: str) -> Path:
        return self.primary / WORKTREES_DIR / branch


@dataclass(frozen=True, slots=True)
class DefaultBranch:
    name: str
    remote_ref: str | None  # "refs/remotes/origin/<name>" when origin has it
    local_ref: str | None  # "refs/heads/<name>" when it exists locally

    @property
    def best_ref(self) -> str:
        return self.remote_ref or self.local_ref or f"refs/heads/{self.name}"


def open_repo(path: Path) -> Repo:
    """The repo whose checkout contains ``path``; refuse ``not-a-repo`` otherwise."""
    if not path.exists():
        raise Refusal("not-a-repo", f"{path} does not exist")
    git = Git(path)
    try:
        layout = git.layout()
    except GitMissing:
        raise Refusal("not-a-repo", "git is not installed or not on PATH; install git") from None
    except GitError:
        raise Refusal(
            "not-a-repo", f"{path} is not inside a git work tree; run from a repository or pass -C"
        ) from None
    return Repo(primary=primary_root(layout), common_dir=layout.common_dir, checkout=layout)


def primary_root(layout: RepoLayout) -> Path:
    """The main working tree of the repo a checkout belongs to.

    For the usual layout the common dir is ``<primary>/.git``; anything else
    (a separate git dir, ``core.worktree``) is settled by asking git.
    """
    if not layout.is_linked_worktree:
        return layout.toplevel
    if layout.common_dir.name == ".git":
        return layout.common_dir.parent
    entries = Git(layout.toplevel).worktree_list()
    return Path(os.path.realpath(entries[0].path))


def default_branch(git: Git) -> DefaultBranch | None:
    """DESIGN §2: origin/HEAD's target, origin/main, origin/master, main, master, init.defaultBranch."""
    # One for-each-ref answers everything but the last resort: this runs in
    # nearly every command, for every repo of a topic.
    refs = git.refs_under("refs/remotes/origin/", "refs/heads/")
    target = refs.get("refs/remotes/origin/HEAD", "")
    remote = ["main", "master"]
    if target.startswith("refs/remotes/origin/"):
        remote.insert(0, target.removeprefix("refs/remotes/origin/"))
    order = [f"refs/remotes/origin/{n}" for n in remote] + ["refs/heads/main", "refs/heads/master"]
    found = next((ref for ref in order if ref in refs), None)
    if found is None:
        configured = git.config_get("init.defaultBranch")
        found = (
            f"refs/heads/{configured}"
            if configured and f"refs/heads/{configured}" in refs
            else None
        )
    if found is None:
        return None
    name = found.removeprefix("refs/remotes/origin/").removeprefix("refs/heads/")
    remote_ref, local_ref = f"refs/remotes/origin/{name}", f"refs/heads/{name}"
    return DefaultBranch(
        name=name,
        remote_ref=remote_ref if remote_ref in refs else None,
        local_ref=local_ref if local_ref in refs else None,
    )


def require_default_branch(git: Git) -> DefaultBranch:
    found = default_branch(git)
    if found is None:
        raise Refusal(
            "no-default-branch",
            f"cannot tell the default branch of {git.cwd}; run `git remote set-head origin --auto` "
            "or create main",
        )
    return found


def ensure_excludes(
    common_dir: Path,
    lines: tuple[str, ...] = EXCLUDE_LINES,
    *,
    why: str = "worktrees and plan dirs never show in git status",
) -> bool:
    """Add ignore lines (by default our two) to ``info/exclude`` once; True when it changed."""
    path = common_dir / "info" / "exclude"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    present = set(text.splitlines())
    missing = [line for line in lines if line not in present]
    if not missing:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not text or text.endswith("\n") else "\n"
    addition = prefix + f"# team-router: {why}\n"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(addition + "".join(f"{line}\n" for line in missing))
    return True


def find_worktree(entries: list[WorktreeEntry], path: Path) -> WorktreeEntry | None:
    real = os.path.realpath(path)
    for entry in entries:
        if os.path.realpath(entry.path) == real:
            return entry
    return None


def worktree_with_branch(entries: list[WorktreeEntry], branch: str) -> WorktreeEntry | None:
    for entry in entries:
        if entry.branch == branch:
            return entry
    return None


# -- containment --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Containment:
    ok: bool
    reason: str = ""  # containment | not-a-repo | missing | duplicate
    detail: str = ""
    realpath: Path | None = None


def check_containment(path: Path, home_primary: Path, seen: set[Path]) -> Containment:
    """DESIGN §6: a secondary must be a sibling of the home repo and a repo top level."""
    if not path.exists():
        return Containment(False, "missing", f"{path} does not exist")
    real = Path(os.path.realpath(path))
    if real.parent != home_primary.parent:
        return Containment(
            False,
            "containment",
            f"{path} resolves to {real}, which is not beside the home repo in {home_primary.parent}",
        )
    if real == home_primary:
        return Containment(False, "duplicate", f"{path} is the home repo itself")
    if real in seen:
        return Containment(False, "duplicate", f"{path} is listed twice")
    top = Git(real).toplevel()
    if top != real:
        where = f"its top level is {top}" if top else "it is not a git work tree"
        return Containment(False, "not-a-repo", f"{path}: {where}")
    return Containment(True, realpath=real)
