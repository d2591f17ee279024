"""Containment (DESIGN §6): whether a path ``repos.md`` lists is a repository a topic may use."""

from __future__ import annotations

import os
from pathlib import Path

from router.errors import ErrorCode
from router.git import Git, GitError, RepoLayout
from router.parallel import parallel_map
from router.records import record
from router.topic.workspace import Repo, primary_root


@record
class Containment:
    """Whether a path repos.md lists is a repository the topic may use, and why not."""

    ok: bool
    reason: ErrorCode | None = None  # containment | not-a-repo | missing | duplicate
    detail: str = ""
    realpath: Path | None = None
    # The repository behind the listed checkout (set when ``ok``). Its
    # ``checkout`` is the listed one: a linked worktree there is reused in place
    # (or refused on the default branch) by the creation pipeline, as §7 treats
    # the command's own checkout.
    repo: Repo | None = None


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
        return Containment(False, ErrorCode.MISSING, f"{path} does not exist")
    real = Path(os.path.realpath(path))
    siblings = home.primary.parent
    if real.parent != siblings:
        return Containment(
            False,
            ErrorCode.CONTAINMENT,
            f"{path} resolves to {real}, which is not beside the home repo in {siblings}",
        )
    if real == home.primary:
        return Containment(False, ErrorCode.DUPLICATE, f"{path} is the home repo itself")
    layout = layout or Git(real).checkout_layout()
    if layout is None:
        around = Git(real).try_layout()
        where = f"its top level is {around.toplevel}" if around else "it is not a git work tree"
        return Containment(False, ErrorCode.NOT_A_REPO, f"{path}: {where}")
    try:
        primary = primary_root(layout)
    except GitError:
        return Containment(
            False, ErrorCode.NOT_A_REPO, f"{path}: git cannot name its primary clone"
        )
    repo = Repo(primary=primary, common_dir=layout.common_dir, checkout=layout)
    if repo.primary.parent != siblings and layout.common_dir != home.common_dir:
        # A linked worktree beside home of a repo kept elsewhere: creating a
        # worktree or branch would happen in that repo, outside the sibling set.
        return Containment(
            False,
            ErrorCode.CONTAINMENT,
            f"{path} is a linked worktree of {repo.primary}, which is not beside the home repo "
            f"in {siblings}; list a sibling clone instead",
        )
    return Containment(True, realpath=real, repo=repo)


def _unless_duplicate(verdict: Containment, home: Repo, seen: set[Path]) -> Containment:
    repo = verdict.repo
    assert repo is not None and verdict.realpath is not None
    if repo.common_dir == home.common_dir:
        return Containment(
            False,
            ErrorCode.DUPLICATE,
            f"{verdict.realpath} is a linked worktree of the home repo ({home.primary})",
        )
    if repo.common_dir in seen:
        return Containment(
            False,
            ErrorCode.DUPLICATE,
            f"{verdict.realpath} is the repository {repo.primary}, already listed",
        )
    return verdict
