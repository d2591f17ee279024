"""Repositories as team-router sees them: primary clones, default branches, containment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from router import git as g
from router.errors import ErrorCode, RouterError
from router.git import Git, GitError, GitMissing, RepoLayout
from router.ioerror import io_operation
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.git import WorktreeEntry

WORKTREES_DIR = Path(".claude") / "worktrees"
EXCLUDE_LINES = ("/.claude/worktrees/", "/docs/plans/")


@record
class Repo:
    """A repository, located from any of its checkouts.

    A record, as :class:`~router.git.RepoLayout` (no ``typing`` at run time): every
    command opens one.
    """

    primary: Path  # the main working tree (realpath)
    common_dir: Path
    checkout: RepoLayout  # the checkout we were asked about

    @property
    def git(self) -> Git:
        """git anchored to the primary clone."""
        return Git(self.primary)

    def worktree_path(self, branch: str) -> Path:
        return self.primary / WORKTREES_DIR / branch


@record
class DefaultBranch:
    """A repo's default branch, and which of origin's and the local ref exist."""

    name: str
    remote_ref: str | None  # "refs/remotes/origin/<name>" when origin has it
    local_ref: str | None  # "refs/heads/<name>" when it exists locally

    @property
    def best_ref(self) -> str:
        return self.remote_ref or self.local_ref or f"refs/heads/{self.name}"


def open_repo(path: Path) -> Repo:
    """The repo whose checkout contains ``path``; refuse ``not-a-repo`` otherwise."""
    if not path.exists():
        raise RouterError(ErrorCode.NOT_A_REPO, f"{path} does not exist")
    git = Git(path)
    try:
        # ``-C <repo>``, the usual case: the top level's files say it, no process.
        layout = git.files_layout() or git.layout()
    except GitMissing:
        raise RouterError(
            ErrorCode.NOT_A_REPO, "git is not installed or not on PATH; install git"
        ) from None
    except GitError:
        raise RouterError(
            ErrorCode.NOT_A_REPO,
            f"{path} is not inside a git work tree; run from a repository or pass -C",
        ) from None
    return Repo(primary=primary_root(layout), common_dir=layout.common_dir, checkout=layout)


def primary_clone(cwd: Path) -> Repo:
    """The repo of ``cwd`` with its primary clone confirmed three ways (``not-a-repo`` else).

    git's own top level and git dir (``rev-parse``), and the first entry of the
    worktree list, must all name the clone ``open_repo`` found: a command that
    runs inside the worktree it removes anchors every later git call there.
    """
    repo = open_repo(cwd)
    layout = repo.git.try_layout()
    try:
        entries = repo.git.worktree_list()
    except GitError:
        entries = []
    first = entries[0] if entries else None
    ok = (
        layout is not None
        and not layout.is_linked_worktree  # git dir == common dir
        and layout.toplevel == repo.primary  # --show-toplevel
        and layout.common_dir == repo.common_dir
        and first is not None
        and not first.bare
        and _names_primary(Path(os.path.realpath(first.path)), repo)  # first of `worktree list`
    )
    if not ok:
        raise RouterError(
            ErrorCode.NOT_A_REPO,
            f"cannot confirm the primary clone of the repo at {cwd} (git dir, worktree list and "
            "top level disagree); nothing was touched",
        )
    return repo


def _names_primary(listed: Path, repo: Repo) -> bool:
    # In a clone made with --separate-git-dir (and no core.worktree), git lists
    # the main worktree under its git dir's path: that entry is still ours.
    return listed == repo.primary or listed == repo.common_dir


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
    listed = Path(os.path.realpath(entries[0].path))
    if listed != layout.common_dir:
        return listed  # core.worktree: git knows the main working tree
    # A clone made with --separate-git-dir: its git dir keeps no pointer to its work
    # tree, so git lists the git dir itself as the main worktree. The checkout
    # whose .git names the common dir is it; where to look comes from this tool.
    found = next(
        (p for p in _may_be_primary(layout) if g.checkout_git_dir(p) == layout.common_dir), None
    )
    return found or listed


def _may_be_primary(layout: RepoLayout) -> list[Path]:
    """Where the main checkout of ``layout``'s repo may be: above a worktree the
    router made (``<primary>/.claude/worktrees/<name>``), and what its records name."""
    from router.topic import state

    places = []
    above = layout.toplevel.parents
    if len(above) > 2 and layout.toplevel.parent == above[2] / WORKTREES_DIR:
        places.append(above[2])
    for topic_id in state.list_records(layout.common_dir):
        record = state.read_record_or_none(layout.common_dir, topic_id)
        if record is not None:
            places += [Path(r.path) for r in record.repos if r.name == "home"]
            if record.worktree is not None:
                places.append(Path(record.worktree).parent.parent.parent)
    return list(dict.fromkeys(places))


def default_branch(git: Git, refs: Mapping[str, str] | None = None) -> DefaultBranch | None:
    """DESIGN §2: origin/HEAD's target, origin/main, origin/master, main, master, init.defaultBranch.

    ``refs``: the repo's refs under ``refs/remotes/origin/`` and ``refs/heads/``
    (name -> symref target), when the caller read them already.
    """
    # One for-each-ref answers everything but the last resort: this runs in
    # nearly every command, for every repo of a topic.
    if refs is None:
        tips = git.ref_tips("refs/remotes/origin/", "refs/heads/")
        refs = {name: t.symref for name, t in tips.items()}
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


def ensure_excludes(
    common_dir: Path,
    lines: tuple[str, ...] = EXCLUDE_LINES,
    *,
    why: str = "worktrees and plan dirs never show in git status",
) -> bool:
    """Add ignore lines (by default our two) to ``info/exclude`` once; True when it changed."""
    path = common_dir / "info" / "exclude"
    try:
        data = path.read_bytes()  # git reads bytes: a line in another encoding is the user's
    except FileNotFoundError:
        data = b""
    present = {line.rstrip(b"\r") for line in data.split(b"\n")}
    missing = [line for line in lines if line.encode() not in present]
    if not missing:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not data or data.endswith(b"\n") else "\n"
    addition = prefix + f"# team-router: {why}\n"
    with io_operation("appending to", path), path.open("a", encoding="utf-8") as fh:
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
