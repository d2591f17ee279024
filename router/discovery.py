"""Finding a topic's artifact directory: by id, by path, or the newest one (DESIGN §8)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from router.errors import BadInput
from router.git import WorktreeEntry
from router.ids import ID_RE, branch_for
from router.workspace import PLANS_DIR, Repo, open_repo


@dataclass(frozen=True, slots=True)
class PlanDir:
    id: str
    path: Path
    root: Path  # the checkout (worktree or primary clone) that holds it
    mtime: float = 0.0


def candidates(repo: Repo, entries: list[WorktreeEntry] | None = None) -> list[PlanDir]:
    """Every plan dir of the home repo: its primary clone and each of its worktrees."""
    entries = entries if entries is not None else repo.git.worktree_list()
    roots = [repo.primary] + [Path(e.path) for e in entries if not e.bare]
    worktree_branches = {e.branch for e in entries if e.branch}
    seen_roots: set[str] = set()
    found: list[PlanDir] = []
    for root in roots:
        key = os.path.realpath(root)
        if key in seen_roots:
            continue
        seen_roots.add(key)
        found += _plan_dirs_under(Path(key), worktree_branches)
    return found


def _plan_dirs_under(root: Path, worktree_branches: set[str | None]) -> list[PlanDir]:
    base = root / PLANS_DIR
    try:
        names = os.listdir(base)
    except OSError:
        return []
    found = []
    for name in names:
        if not ID_RE.fullmatch(name):
            continue
        path = base / name
        mtime = _recency(path, has_worktree=branch_for(name) in worktree_branches)
        if mtime is not None:
            found.append(PlanDir(name, path, root, mtime))
    return found


def _recency(path: Path, *, has_worktree: bool) -> float | None:
    """Newest artifact mtime; an empty dir counts only when its worktree exists."""
    try:
        with os.scandir(path) as it:
            times = [e.stat().st_mtime for e in it if e.is_file()]
    except OSError:
        return None
    if times:
        return max(times)
    if has_worktree:
        try:
            return path.stat().st_mtime
        except OSError:
            return None
    return None


def newest(found: list[PlanDir]) -> PlanDir | None:
    """Newest wins; a tie goes to the greater id."""
    return max(found, key=lambda c: (c.mtime, c.id), default=None)


def resolve(cwd: Path, target: str | None) -> tuple[Repo, PlanDir]:
    """The home repo and plan dir named by ``target`` (id or path), or the newest one."""
    if target and _looks_like_path(target, cwd):
        return _by_path(cwd, target)
    repo = open_repo(cwd)
    found = candidates(repo)
    if target:
        matches = [c for c in found if c.id == target]
        if not matches:
            raise BadInput(
                "no-plan-dir",
                f"no plan dir for {target!r} in {repo.primary} or its worktrees; "
                "check the id with `team-router status`",
            )
        return repo, newest(matches)  # type: ignore[return-value]
    best = newest(found)
    if best is None:
        raise BadInput(
            "no-topic", f"no topic to resume in {repo.primary}; start one with `team-router new`"
        )
    return repo, best


def _looks_like_path(target: str, cwd: Path) -> bool:
    return "/" in target or target in {".", ".."} or not ID_RE.fullmatch(target)


def _by_path(cwd: Path, target: str) -> tuple[Repo, PlanDir]:
    path = Path(os.path.realpath(cwd / target))
    if not path.is_dir() or not ID_RE.fullmatch(path.name) or path.parent.name != "plans":
        raise BadInput(
            "no-plan-dir",
            f"{target} is not a plan dir (expected an existing docs/plans/<id>/ directory)",
        )
    repo = open_repo(path)
    root = path.parent.parent.parent
    return repo, PlanDir(path.name, path, root, _recency(path, has_worktree=True) or 0.0)
