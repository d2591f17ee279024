"""A topic's plan dir on disk is never reached through a symlink: made a level at a time
(:func:`create_plan_dir`), refused when a link is in the way (:class:`PlanDirSymlink`),
and named when a link hides plan dirs an older version made (:func:`hidden_plan_dirs`).

Whether a path goes through a link is :func:`router.topic.runs.plan_dir_link`'s
answer, which discovery reads on the session-start hook's path; the refusals, with
the error types they need, are here.
"""

from __future__ import annotations

import contextlib
import errno
import os

from router.errors import ErrorCode, Refusal
from router.topic.runs import PLANS_DIR, Records, plan_dir_link

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from router.git import WorktreeEntry
    from router.topic.runs import PlanDir
    from router.topic.workspace import Repo


def create_plan_dir(checkout: Path, topic_id: str) -> Path:
    """Make ``<checkout>/docs/plans/<id>/`` a level at a time, never through a symlink.

    A ``docs`` or ``docs/plans`` that is a symlink (tracked, so every checkout
    has it) would put the plan dir wherever it points, outside the repository
    perhaps: beyond our info/exclude line and beyond teardown's reach (it
    never removes through a link). :class:`PlanDirSymlink` is raised before
    anything is made through it; OSError when a file is in the way.
    """
    path = checkout
    for part in ("docs", "plans", topic_id):
        path = path / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)
        # Checked after the mkdir: a link it met (even a dangling one) made it
        # fail, and a link put in place of the directory it made is seen too.
        if os.path.islink(path):
            raise PlanDirSymlink(checkout, path)
    if not os.path.isdir(path):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
    return path


class PlanDirSymlink(Refusal):
    """A checkout's ``docs`` or ``docs/plans`` (or the plan dir) is a symlink: refused (exit 1)."""

    def __init__(
        self,
        checkout: Path,
        link: Path,
        what: str = "the plan dir would be written wherever it points, so none is made there",
    ) -> None:
        rel = os.path.relpath(link, checkout)
        super().__init__(
            ErrorCode.PLAN_DIR_SYMLINK,
            f"{link} is a symlink (to {os.readlink(link)}): {what}; team-router keeps plan dirs "
            f"in a real {PLANS_DIR}/ directory of the repository: replace the link `{rel}` with "
            "a directory (`git rm` it and commit when it is tracked; move the plan dirs behind "
            "it into the new one), then run this again",
        )


def refuse_linked(plan: PlanDir) -> None:
    """Raise :class:`PlanDirSymlink` when ``plan`` is reached through a symlink."""
    link = plan_dir_link(plan.checkout, plan.id)
    if link is not None:
        from pathlib import Path

        what = f"the plan dir {plan.dir} behind it is neither read nor written"
        raise PlanDirSymlink(Path(plan.checkout), Path(link), what)


def hidden_plan_dirs(
    repo: Repo, entries: list[WorktreeEntry], records: Records | None = None
) -> list[PlanDirSymlink]:
    """Topics behind a symlinked ``docs`` or ``docs/plans`` of a checkout, one refusal each.

    Those plan dirs were made by an older version; discovery leaves them out
    (:func:`plan_dir_link`), so ``status`` names them and a ``phase`` that
    finds nothing else says why rather than "no topic". ``records``: the command's,
    whose listing of each ``docs/plans/`` this reads rather than list it again.
    """
    from pathlib import Path

    listings = records or Records(repo.common_dir)
    roots = [str(repo.primary)] + [str(e.path) for e in entries if not e.bare]
    found = []
    for root in dict.fromkeys(roots):
        listed = listings.listing(os.path.realpath(root))
        for link, ids in _links_to_plan_dirs(root, listed):
            what = f"the plan dirs behind it ({', '.join(ids)}) are neither read nor written"
            found.append(PlanDirSymlink(Path(root), Path(link), what))
    return found


def _links_to_plan_dirs(
    root: str, listed: list[tuple[str, bool]] | None
) -> list[tuple[str, list[str]]]:
    """Each link under ``root`` that hides plan dirs, with their ids: a symlinked ``docs`` or
    ``docs/plans`` (every id behind it), else each id-named link in ``docs/plans``
    (``listed``: its entries, with whether each is a link)."""
    if listed is None:
        return []
    from router.plandir.artifacts import LIGHT_ID_RE

    link = plan_dir_link(root)
    entries = [(name, linked) for name, linked in listed if LIGHT_ID_RE.fullmatch(name)]
    if link is not None:
        return [(link, sorted(name for name, _ in entries))] if entries else []
    return [(os.path.join(root, PLANS_DIR, name), [name]) for name, linked in entries if linked]
