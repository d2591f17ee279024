"""Containment (DESIGN §6): whether a path ``repos.md`` lists is a repository a topic may use."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

from router.errors import ErrorCode
from router.git import Git, GitError, RepoLayout
from router.parallel import parallel_map
from router.records import record
from router.topic.workspace import Repo, primary_root


class Uncontained(StrEnum):
    """Why a listed path is not a repository the topic may use (a ``repo-unusable`` kind)."""

    MISSING = "missing"  # ``path`` does not exist
    ELSEWHERE = "elsewhere"  # ``path`` resolves to ``at``, not beside home in ``where``
    HOME_ITSELF = "home-itself"
    NOT_A_WORK_TREE = "not-a-work-tree"
    INSIDE = "inside"  # ``path`` is inside the work tree whose top level is ``at``
    NO_PRIMARY = "no-primary"  # git cannot name its primary clone
    # a linked worktree of ``at``, a repo not beside home in ``where``
    LINKED_ELSEWHERE = "linked-elsewhere"
    LINKED_HOME = "linked-home"  # a linked worktree of the home repo (``at``)
    ALREADY_LISTED = "already-listed"  # the repository ``at``, already listed


_UNCONTAINED_WORDS = {
    Uncontained.MISSING: "{path} does not exist",
    Uncontained.ELSEWHERE: "{path} resolves to {at}, which is not beside the home repo in {where}",
    Uncontained.HOME_ITSELF: "{path} is the home repo itself",
    Uncontained.NOT_A_WORK_TREE: "{path}: it is not a git work tree",
    Uncontained.INSIDE: "{path}: its top level is {at}",
    Uncontained.NO_PRIMARY: "{path}: git cannot name its primary clone",
    Uncontained.LINKED_ELSEWHERE: (
        "{path} is a linked worktree of {at}, which is not beside the home repo in {where}; "
        "list a sibling clone instead"
    ),
    Uncontained.LINKED_HOME: "{path} is a linked worktree of the home repo ({at})",
    Uncontained.ALREADY_LISTED: "{path} is the repository {at}, already listed",
}


def uncontained_words(kind: str, path: str, at: str = "", where: str = "") -> str:
    """Why ``path`` is not a repository the topic may use, in words (one place says them)."""
    return _UNCONTAINED_WORDS[Uncontained(kind)].format(path=path, at=at, where=where)


@record
class Containment:
    """Whether a path repos.md lists is a repository the topic may use, and why not."""

    ok: bool
    reason: ErrorCode | None = None  # containment | not-a-repo | missing | duplicate
    kind: Uncontained | None = None  # why not (``path``, ``at``, ``where``: its facts)
    path: str = ""
    at: str = ""
    where: str = ""
    realpath: Path | None = None
    # The repository behind the listed checkout (set when ``ok``). Its
    # ``checkout`` is the listed one: a linked worktree there is reused in place
    # (or refused on the default branch) by the creation pipeline, as §7 treats
    # the command's own checkout.
    repo: Repo | None = None

    @property
    def detail(self) -> str:
        """Why not, in words ("" when it may be used)."""
        if self.kind is None:
            return ""
        return uncontained_words(self.kind, self.path, self.at, self.where)


def contain_all(paths: list[Path], home: Repo) -> list[Containment]:
    """DESIGN §6 for a topic's secondaries, in ``repos.md`` order.

    A repository is accepted once: a later entry whose common git dir is the
    home repo's or an earlier entry's is a ``duplicate``, whatever its path.
    """
    # A checkout in the plain layout is probed from its files in a fraction of
    # a millisecond, less than starting a thread: threads only where git is asked.
    # The layout read to decide that is the one its probe uses: read once.
    layouts = [Git(p).files_layout() for p in paths]
    if all(layout is not None for layout in layouts):
        probes = [_probe(p, home, layout) for p, layout in zip(paths, layouts, strict=True)]
    else:
        probes = parallel_map(lambda p: _probe(p, home), paths)
    seen = {home.common_dir}
    verdicts = []
    for verdict in probes:
        if verdict.ok:
            verdict = _unless_duplicate(verdict, home, seen)
        if verdict.repo is not None:
            seen.add(verdict.repo.common_dir)
        verdicts.append(verdict)
    return verdicts


def _probe(path: Path, home: Repo, layout: RepoLayout | None = None) -> Containment:
    """The checks one path needs alone: it exists, beside home, a top level, its repo a sibling.

    ``layout``: the path's, read from its files already (None: not read yet).
    """
    if not path.exists():
        return Containment(False, ErrorCode.MISSING, Uncontained.MISSING, str(path))
    real = Path(os.path.realpath(path))
    siblings = home.primary.parent
    if real.parent != siblings:
        return Containment(
            False, ErrorCode.CONTAINMENT, Uncontained.ELSEWHERE, str(path), str(real), str(siblings)
        )
    if real == home.primary:
        return Containment(False, ErrorCode.DUPLICATE, Uncontained.HOME_ITSELF, str(path))
    layout = layout or Git(real).checkout_layout()
    if layout is None:
        around = Git(real).try_layout()
        if around is None:
            return Containment(False, ErrorCode.NOT_A_REPO, Uncontained.NOT_A_WORK_TREE, str(path))
        return Containment(
            False, ErrorCode.NOT_A_REPO, Uncontained.INSIDE, str(path), str(around.toplevel)
        )
    try:
        primary = primary_root(layout)
    except GitError:
        return Containment(False, ErrorCode.NOT_A_REPO, Uncontained.NO_PRIMARY, str(path))
    repo = Repo(primary=primary, common_dir=layout.common_dir, checkout=layout)
    if repo.primary.parent != siblings and layout.common_dir != home.common_dir:
        # A linked worktree beside home of a repo kept elsewhere: creating a
        # worktree or branch would happen in that repo, outside the sibling set.
        return Containment(
            False,
            ErrorCode.CONTAINMENT,
            Uncontained.LINKED_ELSEWHERE,
            str(path),
            str(repo.primary),
            str(siblings),
        )
    return Containment(True, realpath=real, repo=repo)


def _unless_duplicate(verdict: Containment, home: Repo, seen: set[Path]) -> Containment:
    repo = verdict.repo
    assert repo is not None and verdict.realpath is not None
    if repo.common_dir == home.common_dir:
        return Containment(
            False,
            ErrorCode.DUPLICATE,
            Uncontained.LINKED_HOME,
            str(verdict.realpath),
            str(home.primary),
        )
    if repo.common_dir in seen:
        return Containment(
            False,
            ErrorCode.DUPLICATE,
            Uncontained.ALREADY_LISTED,
            str(verdict.realpath),
            str(repo.primary),
        )
    return verdict
