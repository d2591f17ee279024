"""Which topic a command or session is about, without a target (DESIGN §8).

One rule answers the recovery hook, ``phase``, ``next`` and ``status`` alike
(:func:`discover`):

- from inside a topic's worktree (of the home repo or of any secondary repo),
  that topic: a session started there works on it;
- otherwise the newest *run* (:mod:`router.topic.runs`: the id-named directories
  under ``docs/plans/`` of the home primary clone and of every worktree of the home
  repo that a record of this machine names, not torn down). A worktree the host
  asked for (``claude --worktree``, an isolated subagent: ``made_by: host`` in its
  record) is no run until the pipeline writes an artifact into its plan dir, and
  never displaces one.

Newest wins, a tie goes to the greater id. A target the user names is resolved by
:mod:`router.topic.target`.

The recovery hook runs this on every session start, so the module imports
nothing heavy at the top; :func:`place_of` reads the repository from git's
administrative files (see gitrepository-layout(5)) and asks git only when
they are not the plain layout.
"""

from __future__ import annotations

import os
from collections import namedtuple

from router import git as g
from router.plandir.artifacts import newest_mtime
from router.topic.runs import (
    PLANS_DIR,
    RUN,
    PlanDir,
    Records,
    by_id,
    dir_mtime,
    kind_of,
    newest_live,
    plan_dir_link,
    scan,
    scan_real,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from router.git import WorktreeEntry
    from router.topic.workspace import Repo


# -- the one answer without a target ----------------------------------------------------


class Place(namedtuple("Place", "primary common_dir worktrees top")):
    """A repository as discovery sees it: its primary root, its common git dir, its linked
    worktrees (``(root, branch or None)``, real paths, in git's order), and the top level
    of the checkout the command or the session runs in."""

    __slots__ = ()

    @property
    def roots(self) -> list[str]:
        return [self.primary, *(root for root, _ in self.worktrees)]

    def branch_at(self, root: str) -> str | None:
        return next((branch for path, branch in self.worktrees if path == root), None)


Found = namedtuple("Found", "home plan records missing", defaults=((),))
Found.__doc__ = """What discovery answers: the topic's home repo (a :class:`Place`), the
topic's plan dir (None: no topic to resume from there), the home's :class:`Records`
as discovery read them (a command that goes on to read more of them reads each once), and,
when the answer is the newest run, the other runs whose worktree is missing
(:func:`deleted_worktrees`): having no file left to date them, they never are the newest
while another run lives, so whatever answers without a target names them."""


def locate(cwd: str) -> Found | None:
    """:func:`discover` from ``cwd`` (the recovery hook's question); None outside a repository."""
    place = place_of(cwd)
    return discover(place) if place is not None else None


def discover(place: Place) -> Found:
    """The topic a session or command in ``place`` is about (DESIGN §8), and its home.

    From inside a topic's worktree (a home's, or a secondary repo's: its record
    names the home) that topic, always; otherwise the newest run of the home repo.
    """
    records = Records(place.common_dir)
    roots = dict.fromkeys(os.path.realpath(root) for root in place.roots)
    top = os.path.realpath(place.top)
    linked = top != os.path.realpath(place.primary)
    if linked and top in roots:
        # The checkout's own plan dirs first: when one is a live topic, the others
        # (hundreds, in a busy home) need not be read at all.
        own = newest_live(scan_real([top], records), records)
        if own is not None:
            return Found(place, own, records)
    found = scan_real(roots, records)
    if linked or not found:
        # A topic's checkout without its plan dir: a secondary repo's worktree (or main
        # tree, after a fallback), or a home worktree whose plan dir is gone. Only a repo
        # with no plan dir of its own has every record read for it.
        at = records.at(top, place.branch_at(top), every=not found)
        if at is not None:
            topic_id, mark = at
            if mark.home is None:
                plan_dir = os.path.join(top, PLANS_DIR, topic_id)
                kind = kind_of(records, topic_id, has_artifacts=False)
                return Found(place, PlanDir(topic_id, plan_dir, top, 0.0, kind), records)
            away = _at_home(mark.home, topic_id)
            if away is not None:
                return away
        if not found:
            away = _newest_of(records.homes())
            if away is not None:
                return away
    return _newest(place, records)


def _newest(place: Place, records: Records) -> Found:
    """The newest run of ``place`` among every topic :func:`topics` finds there, and the other
    runs whose worktree is missing."""
    runs = [plan for plan in topics(place, records).values() if plan.kind == RUN]
    newest = newest_live(runs, records)
    others = [plan for plan in deleted_worktrees(place, runs, records) if plan != newest]
    return Found(place, newest, records, tuple(others))


def _at_home(home: str, topic_id: str) -> Found | None:
    """The topic as its home answers for it; None when the home is gone or moved."""
    place = place_of(home)
    if place is None:
        return None
    records = Records(place.common_dir)
    return Found(place, plan_named(place, topic_id, records), records)


def _newest_of(homes: list[str]) -> Found | None:
    """The newest run of the homes whose secondary this repo is (none of its own)."""
    answers = []
    for home in homes:
        place = place_of(home)
        if place is not None:
            answers.append(_newest(place, Records(place.common_dir)))
    if not answers:
        return None
    return max(answers, key=lambda a: (a.plan.mtime, a.plan.id) if a.plan else (-1.0, ""))


def plan_named(place: Place, topic_id: str, records: Records | None = None) -> PlanDir | None:
    """``topic_id``'s plan dir: its newest copy in the primary clone or a worktree, else its
    worktree's (not made yet, or gone), else an empty one in the primary clone; None: none.

    A topic named needs no record: the user chose it.
    """
    primary = os.path.realpath(place.primary)
    copies = []
    for root in dict.fromkeys(os.path.realpath(r) for r in place.roots):
        if plan_dir_link(root, topic_id) is not None:
            continue
        path = os.path.join(root, PLANS_DIR, topic_id)
        newest_file = newest_mtime(path)
        # An empty one in the primary clone comes last: a `new` that fell back made it.
        mtime = newest_file if newest_file is not None or root == primary else dir_mtime(path)
        if mtime is not None:
            copies.append((path, root, mtime, newest_file is not None))
    if not copies:
        worktree = _registered_worktree(place, topic_id)
        if worktree is None:
            records = records or Records(place.common_dir)
            unlisted = _without_worktree(place, records, [topic_id])
            if unlisted:
                return unlisted[0]
        path = os.path.join(worktree or primary, PLANS_DIR, topic_id)
        mtime = 0.0 if worktree is not None else dir_mtime(path)
        if mtime is None:
            return None
        copies.append((path, worktree or primary, mtime, False))
    path, root, mtime, has_artifacts = max(copies, key=lambda c: c[2])
    kind = kind_of(records or Records(place.common_dir), topic_id, has_artifacts=has_artifacts)
    return PlanDir(topic_id, path, root, mtime, kind)


def _registered_worktree(place: Place, topic_id: str) -> str | None:
    """The first linked worktree git lists on branch ``topic_id``, there or not (a directory
    deleted by hand stays listed until its registration is dropped); None: none."""
    primary = os.path.realpath(place.primary)
    return next((r for r, branch in place.worktrees if branch == topic_id and r != primary), None)


def topics(place: Place, records: Records) -> dict[str, PlanDir]:
    """Every topic of this machine in the home repo, by id, as a topic named is found
    (:func:`plan_named`): each plan dir of a recorded topic in the primary clone or a
    worktree, each recorded topic with none whose worktree git still lists (not made
    yet, or its directory deleted by hand: ``next`` resumes it at WORKTREE), and each live
    run with no plan dir and no worktree at all whose branch is kept (``doctor --repair``
    dropped the registration of a worktree deleted by hand: ``new --id`` makes it again,
    commits included; :func:`_without_worktree`). The one list
    of them: ``status`` lists these, and ``phase``, ``next`` and the recovery hook pick
    among them (:func:`discover`), so none resumes a topic another does not see.
    Torn-down topics are included: :meth:`Records.live` tells them.
    """
    found = by_id(scan(place.roots, records))
    recorded = records.ids()
    for root, branch in place.worktrees:
        if branch in found or branch not in recorded or plan_dir_link(root, branch) is not None:
            continue
        if _registered_worktree(place, branch) != root:
            continue  # the first one listed on the branch, as plan_named picks it
        mark = records.mark(branch)
        if mark is not None and mark.home is not None:
            continue  # a secondary repo's worktree: its topic is its home's
        plan_dir = os.path.join(root, PLANS_DIR, branch)
        kind = kind_of(records, branch, has_artifacts=False)
        found[branch] = PlanDir(branch, plan_dir, root, 0.0, kind)
    listed = {branch for _root, branch in place.worktrees}
    unseen = sorted(recorded - found.keys() - listed)
    found.update((plan.id, plan) for plan in _without_worktree(place, records, unseen))
    return found


def _without_worktree(place: Place, records: Records, ids: list[str]) -> list[PlanDir]:
    """The runs of ``ids`` (none with a plan dir or a worktree git lists) that live on with no
    worktree at all: recorded, not torn down, home records, their branch kept, their recorded
    worktree gone. Each resumes at WORKTREE, its plan dir where ``new --id`` makes it again.

    A record is read only for an id whose branch exists: a topic whose plan dir is
    somewhere (nearly all) costs nothing here.
    """
    ids = [topic_id for topic_id in ids if topic_id in records.ids()]
    if not ids:
        return []
    primary = os.path.realpath(place.primary)
    found = []
    for topic_id in sorted(_branches_present(place, ids)):
        mark = records.mark(topic_id)
        if mark is None or mark.finished or mark.home is not None or mark.worktree is None:
            continue
        if records.made_by_host(topic_id):
            continue  # a host's worktree is no run before its first artifact
        checkout = os.path.realpath(mark.worktree)
        if checkout == primary or os.path.lexists(checkout):
            continue
        plan_dir = os.path.join(checkout, PLANS_DIR, topic_id)
        found.append(PlanDir(topic_id, plan_dir, checkout, 0.0, RUN, False))
    return found


def _branches_present(place: Place, names: list[str]) -> set[str]:
    """Which of the branches ``names`` the home repo has: from git's files, else from git."""
    try:
        return g.branches_present(place.common_dir, names)
    except g.Unsure:
        from pathlib import Path

        from router.git import Git, GitError

        refs = {f"refs/heads/{name}": name for name in names}
        try:
            return {refs[ref] for ref in Git(Path(place.primary)).existing_refs(list(refs))}
        except GitError:
            return set()


def deleted_worktrees(place: Place, plans: Iterable[PlanDir], records: Records) -> list[PlanDir]:
    """The live ones of ``plans`` whose checkout is a worktree git still lists but whose
    directory is gone (deleted by hand), by id: each resumes at WORKTREE. One a teardown
    under way removed is not among them: it resumes at SHIPPED."""
    # The primary resolved once, and a record read only for a checkout that is gone (the
    # hook reads the one record its answer needs, not every topic's): of 500 runs in a
    # primary clone, none costs a system call or a record here.
    primary = os.path.realpath(place.primary)
    gone = (
        p
        for p in plans
        if _checkout_gone(primary, p) and records.live(p.id) and not records.tearing(p.id)
    )
    return sorted(gone, key=lambda p: p.id)


def worktree_gone(primary: str, plan: PlanDir) -> bool:
    """The plan's checkout is a linked worktree whose directory is gone (git still lists it,
    or, ``plan.listed`` False, no longer does: :func:`topics` finds no other checkout without
    a plan dir)."""
    return _checkout_gone(os.path.realpath(primary), plan)


def _checkout_gone(real_primary: str, plan: PlanDir) -> bool:
    return plan.checkout != real_primary and not os.path.lexists(plan.checkout)


# -- where a repository is: git's files, else git ---------------------------------------


def place_of(cwd: str) -> Place | None:
    """The repository around ``cwd`` from git's files when its layout is the plain one, else
    from git; None when there is none.

    Running git costs nothing here, importing the module that runs it costs
    ~45 ms (dataclasses, subprocess, pathlib), most of the hook's budget.
    """
    try:
        return locate_fast(cwd)
    except g.Unsure:
        return _git_place(cwd)


def _git_place(cwd: str) -> Place | None:
    """An unusual layout (separate git dir, core.worktree, ...): git says where things are."""
    from pathlib import Path

    from router.errors import RouterError
    from router.git import GitError
    from router.topic.workspace import open_repo

    try:
        repo = open_repo(Path(cwd))
        return repo_place(repo, repo.git.worktree_list())
    except (RouterError, GitError):
        return None


def repo_place(repo: Repo, entries: Iterable[WorktreeEntry]) -> Place:
    """:class:`Place` of a repo opened through git, and its worktree list."""
    primary = str(repo.primary)
    linked = []
    for entry in entries:
        root = os.path.realpath(entry.path)
        if not entry.bare and root != primary:
            linked.append((root, entry.branch))
    return Place(primary, str(repo.common_dir), tuple(linked), str(repo.checkout.toplevel))


def discover_at(cwd: Path) -> Found:
    """:func:`discover` for a command run in ``cwd``; ``not-a-repo`` refused outside one."""
    from router.topic.workspace import open_repo

    place = place_of(str(cwd))
    if place is None:
        repo = open_repo(cwd)  # refuses, naming why; or git knows a repo the files hide
        place = repo_place(repo, repo.git.worktree_list())
    return discover(place)


def candidates(repo: Repo) -> list[PlanDir]:
    """Every plan dir of this machine's topics in the home repo: its primary clone and each
    of its worktrees (torn-down topics included: :meth:`Records.live` tells them)."""
    return scan(repo_place(repo, repo.git.worktree_list()).roots, Records(repo.common_dir))


# -- the fast reader: git's administrative files ---------------------------------------


def locate_fast(cwd: str) -> Place | None:
    """The repo around ``cwd`` from git's files; None when there is none; Unsure otherwise.

    Only the standard layout is read (a ``.git`` directory in the primary clone,
    ``gitdir:`` files in worktrees, ``commondir``, ``worktrees/<n>/gitdir``);
    anything else raises :class:`Unsure`.
    """
    found = g.plain_checkouts(cwd)
    if found is None:
        return None
    top, primary, common, linked = found
    return Place(primary, common, tuple(linked), top)
