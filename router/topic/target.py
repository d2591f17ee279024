"""Resolving the topic a command names: an id, a plan dir's path, or (none named) the
one discovery finds (:mod:`router.topic.discovery`); the CLI's path to a topic.

An id asked about from a secondary repo is answered by the topic's home
(:func:`home_repo`, DESIGN §8); a word that names a topic without its date prefix
is refused with the whole ids it may mean.
"""

from __future__ import annotations

import os

from router.errors import ErrorCode, RouterError
from router.topic.planpath import hidden_plan_dirs, refuse_linked
from router.topic.runs import PlanDir, Records, dir_mtime, kind_of

# Discovery and the plan files' readers are imported where a topic is resolved: `new`
# asks this module only for an id's home repo (:func:`home_repo`), a record's mark.

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from router.git import WorktreeEntry
    from router.topic.workspace import Repo


def resolve_existing(
    cwd: Path, target: str | None, *, needs: Callable[[str], str]
) -> tuple[Repo, PlanDir]:
    """:func:`resolve` for a command that reads or writes the plan dir: gone, it is ``no-plan-dir``.

    Discovery still finds a topic whose worktree exists without its plan dir
    (``phase`` answers QUESTION for it); a command that needs the files there
    says the directory is gone and ``needs(id)`` says why it matters and what to do.
    """

    repo, plan, _entries, _missing = resolve(cwd, target)
    if not os.path.isdir(plan.dir):
        raise RouterError(ErrorCode.NO_PLAN_DIR, f"{plan.dir} does not exist; {needs(plan.id)}")
    return repo, plan


def resolve(
    cwd: Path, target: str | None, *, listed: bool = False
) -> tuple[Repo, PlanDir, tuple[WorktreeEntry, ...] | None, tuple[PlanDir, ...]]:
    """The home repo and plan dir named by ``target`` (id or path), or discovery's; the
    home's worktree list when it was read on the way (else None; ``listed``: the caller
    wants it, where discovery's topic needs none read); and the other runs whose worktree
    is missing when discovery chose the newest run (``Found.missing``; none for a
    target): ``phase`` and ``next`` name them."""
    from pathlib import Path

    from router.topic.discovery import discover_at, plan_named, repo_place
    from router.topic.workspace import open_repo

    if target == "":
        # An empty target (an unset "$ID" in a script) names no topic: it must not
        # fall through to discovery, whose topic teardown would take apart.
        raise RouterError(
            ErrorCode.INVALID_ID, "the target is empty; pass a topic id or a plan dir path"
        )
    if target and _looks_like_path(target):
        return (*_by_path(cwd, target), None, ())
    if target:
        repo = home_repo(open_repo(cwd), target)
        entries = repo.git.worktree_list()
        plan = plan_named(repo_place(repo, entries), target)
        if plan is None:
            raise RouterError(
                ErrorCode.NO_PLAN_DIR,
                f"no plan dir for {target!r} in {repo.primary} or its worktrees; "
                "check the id with `team-router status`",
            )
        refuse_linked(plan)
        return repo, plan, tuple(entries), ()
    found = discover_at(cwd)
    repo = open_repo(Path(found.home.primary))
    if found.plan is not None:
        read = tuple(repo.git.worktree_list()) if listed else None
        return repo, found.plan, read, found.missing
    for hidden in hidden_plan_dirs(repo, repo.git.worktree_list()):
        raise hidden
    raise RouterError(
        ErrorCode.NO_TOPIC,
        f"no topic to resume in {repo.primary}; start one with `team-router new`",
    )


def home_repo(repo: Repo, target: str) -> Repo:
    """The home repo of topic ``target`` asked about from ``repo``: the home its record names
    when ``repo`` is one of its secondaries (DESIGN §8), else ``repo`` itself."""
    from pathlib import Path

    mark = Records(repo.common_dir).mark(target)
    if mark is None or mark.home is None:
        return repo
    return _open_quietly(Path(mark.home)) or repo


def _open_quietly(path: Path) -> Repo | None:
    from router.topic.workspace import open_repo

    try:
        return open_repo(path)
    except RouterError:
        return None  # the home is gone or moved: answer for this repo, as before


def _looks_like_path(target: str) -> bool:
    from router.plandir.artifacts import LIGHT_ID_RE

    return "/" in target or target in {".", ".."} or not LIGHT_ID_RE.fullmatch(target)


def _by_path(cwd: Path, target: str) -> tuple[Repo, PlanDir]:
    from pathlib import Path

    from router.plandir.artifacts import LIGHT_ID_RE, newest_mtime
    from router.topic.workspace import open_repo

    given = os.path.abspath(cwd / target)
    path = Path(os.path.realpath(given))
    if not path.is_dir() or not LIGHT_ID_RE.fullmatch(path.name) or path.parent.name != "plans":
        raise RouterError(
            ErrorCode.NO_PLAN_DIR,
            f"{target} is not a plan dir (expected an existing docs/plans/<id>/ directory)"
            + _meant(cwd, target),
        )
    # Judged on the path as given: realpath has already gone through the link.
    plans = os.path.dirname(given)
    refuse_linked(PlanDir(os.path.basename(given), given, os.path.dirname(os.path.dirname(plans))))
    repo = open_repo(path)
    root = path.parent.parent.parent
    newest_file = newest_mtime(str(path))
    mtime = newest_file if newest_file is not None else dir_mtime(str(path)) or 0.0
    kind = kind_of(Records(repo.common_dir), path.name, has_artifacts=newest_file is not None)
    return repo, PlanDir(path.name, str(path), str(root), mtime, kind)


def _meant(cwd: Path, word: str) -> str:
    """For a bare word that names a topic without its prefix: the whole ids it may mean.

    ``next add-rate-limiting`` is the topic of ``2026-05-01-add-rate-limiting``: say
    so rather than leave the user to find the prefix.
    """
    from router.errors import ToolFailed
    from router.plandir.artifacts import topic_of
    from router.topic.discovery import repo_place, topics
    from router.topic.workspace import open_repo

    if "/" in word or not word:
        return ""
    try:
        repo = home_repo(open_repo(cwd), word)
        place = repo_place(repo, repo.git.worktree_list())
    except (RouterError, ToolFailed):
        return ""  # only a hint: the refusal stands without it
    ids = sorted(i for i in topics(place, Records(repo.common_dir)) if topic_of(i) == word)
    if not ids:
        return ""
    return f"; {word!r} is the topic of {' and of '.join(ids)}: pass the whole id"
