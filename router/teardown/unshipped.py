"""The run's artifacts (DESIGN §9): a run that has not shipped keeps its plan dir.

A plan dir is ignored by git (``/docs/plans/`` in ``info/exclude``), so no git
check protects it: removing the home worktree, or the in-place plan dir of a
run that fell back, deletes ``task.md``, ``design.md`` ... without a trace.
Until the run has shipped (its ``pr.md`` is written) those files are the run
itself: teardown and pr-cleanup refuse ``unshipped-run`` naming them, and
``--force`` snapshots them (``restore`` brings the run back where it was).

The same holds for a plan dir left in a directory git no longer knows under
``.claude/worktrees/`` (a half-removed worktree, or one the pipeline wrote
into after, or during, its removal): the sweep keeps it (``unshipped-run``),
or under ``--force`` snapshots it first (:func:`at_stake_in`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from pathlib import Path

from router.fsutil import files_under
from router.plandir.artifacts import LIGHT_ID_RE, PR
from router.reasons import Reason, Why
from router.records import record
from router.topic.runs import PLANS_DIR, plan_dir_link


@record
class RunArtifacts:
    """The topic's plan dir in one checkout, as a removal would delete it."""

    checkout: Path
    plan_dir: Path
    files: tuple[str, ...]  # every file in it, relative to the plan dir, sorted

    @property
    def shipped(self) -> bool:
        return PR in self.files

    @property
    def in_checkout(self) -> tuple[str, ...]:
        """The files relative to the checkout's top level (what a snapshot force-adds)."""
        rel = self.plan_dir.relative_to(self.checkout).as_posix()
        return tuple(f"{rel}/{f}" for f in self.files)


def run_artifacts(checkout: Path, topic_id: str) -> RunArtifacts | None:
    """``<checkout>/docs/plans/<id>/`` and its files; None when it is not there.

    Behind a symlinked ``docs``, ``docs/plans`` or plan dir there is nothing a
    removal deletes (it deletes the link, never what it points to): None too.
    A folder that cannot be read is listed as such, never taken for empty.
    """
    plan_dir = checkout / PLANS_DIR / topic_id
    if plan_dir_link(str(checkout), topic_id) is not None or not os.path.isdir(plan_dir):
        return None
    return RunArtifacts(checkout, plan_dir, files_under(plan_dir))


def has_shipped(found: Iterable[RunArtifacts | None]) -> bool:
    """Some plan dir of the run holds its ``pr.md``: the run has shipped, wherever that is."""
    return any(a is not None and a.shipped for a in found)


def run_shipped(primary: Path, topic_id: str, worktree: Path | None) -> bool:
    """The topic's pr.md is in one of its plan dirs (its worktree's or the primary clone's)."""
    return has_shipped(run_artifacts(c, topic_id) for c in (worktree, primary) if c is not None)


def unshipped(found: Iterable[RunArtifacts | None], *, shipped: bool = False) -> list[RunArtifacts]:
    """The plan dirs holding artifacts of a run that has not shipped (none has ``pr.md``).

    ``shipped``: the run was found shipped where these plan dirs cannot show it
    (its worktree's plan dir, removed before the primary clone's is judged).
    """
    dirs = [a for a in found if a is not None]
    if shipped or has_shipped(dirs):
        return []
    return [a for a in dirs if a.files]


def unshipped_why(topic_id: str, dirs: list[RunArtifacts], *, command: str) -> Why:
    """Why ``command`` keeps the run's artifacts: each plan dir with its files (worded, with
    both ways out, by router.teardown.wording)."""
    parts = tuple(Why(Reason.ARTIFACTS, path=str(a.plan_dir), items=a.files) for a in dirs)
    return Why(Reason.UNSHIPPED, topic=topic_id, again=command, parts=parts)


def artifact_files(dirs: list[RunArtifacts]) -> tuple[str, ...]:
    """The run's files a forced removal keeps in its snapshot (the words name them)."""
    return tuple(f for a in dirs for f in a.files)


def at_stake_in(
    directory: Path, files: tuple[str, ...], primary: Path | None, shipped: Collection[str] = ()
) -> list[RunArtifacts]:
    """The plan dirs in ``directory`` (one git no longer knows) that hold an unshipped run's artifacts.

    ``files``: what the directory holds (relative, as the sweep listed it); a
    ``docs/plans/<id>/`` among them is the run ``<id>``'s plan dir, as in a
    worktree. The run has shipped when its ``pr.md`` is in that plan dir, in
    the primary clone's (``primary``), or the caller found it before
    (``shipped``: the ids of runs a teardown saw shipped, their worktree gone
    since).
    """
    plans = PLANS_DIR.split(os.sep)
    ids = sorted(
        {
            parts[len(plans)]
            for f in files
            if (parts := f.split("/"))[: len(plans)] == plans and len(parts) > len(plans) + 1
        }
    )
    found = []
    for topic_id in ids:
        if not LIGHT_ID_RE.fullmatch(topic_id) or topic_id in shipped:
            continue  # a folder no run can have, or a run known to have shipped
        here = _listed_artifacts(directory, topic_id, files)
        if here.shipped:
            continue  # its pr.md is here: the primary clone's plan dir need not be read
        there = run_artifacts(primary, topic_id) if primary is not None else None
        found += unshipped([here], shipped=has_shipped([there]))
    return found


def _listed_artifacts(directory: Path, topic_id: str, files: tuple[str, ...]) -> RunArtifacts:
    """The run's plan dir in ``directory`` as ``files`` (the directory's listing) has it, not
    listed again: a listing enters no link, so behind a symlinked ``docs``, ``docs/plans``
    or plan dir it holds no file, as :func:`run_artifacts` finds none."""
    prefix = f"{PLANS_DIR}/{topic_id}/".replace(os.sep, "/")
    listed = tuple(f[len(prefix) :] for f in files if f.startswith(prefix))
    return RunArtifacts(directory, directory / PLANS_DIR / topic_id, listed)


def residue_why(dirs: list[RunArtifacts], *, command: str) -> Why:
    """Why ``command`` keeps a directory git no longer knows: each directory with the unshipped
    run's files in it (pr-cleanup has no --force: its words name the sweep's)."""
    parts = tuple(
        Why(
            Reason.RESIDUE,
            path=str(a.checkout),
            topic=a.plan_dir.name,
            items=a.in_checkout,
            again=command,
        )
        for a in dirs
    )
    return Why(Reason.UNSHIPPED, again=command, parts=parts)
