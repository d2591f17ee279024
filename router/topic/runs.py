"""The runs of this machine: the plan dirs under ``docs/plans/`` of a repository's checkouts,
and the topic records that say which of them are runs (DESIGN §8).

A directory under ``docs/plans/`` is a candidate only when a record in the common
git dir names its topic: a plan dir someone committed is repository content, never
a run. Recency is the newest mtime of a candidate's files (an ordering hint, never a
deletion rule), else the directory's own.

Which of them a command or session is about is :mod:`router.topic.discovery`'s
question. Both are on the session-start hook's path: nothing heavy is imported here
(no pathlib, no error types, no git).
"""

from __future__ import annotations

import os
from collections import namedtuple

# The plan files' readers (router.plandir.artifacts, with the frontmatter's regular
# expressions) are imported where a plan dir is scanned or a record read through
# Records: `new` and `worktrees` only name PLANS_DIR and PlanDir, and load none of it.

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any

# Where plan dirs live, relative to a checkout's top level (a str: os.path is lighter than pathlib).
PLANS_DIR = os.path.join("docs", "plans")


def plan_dir_link(checkout: str, topic_id: str | None = None) -> str | None:
    """The first of ``docs``, ``docs/plans``, ``docs/plans/<id>`` under ``checkout`` that is a link.

    Older versions made the plan dir through a symlinked ``docs``; what lies
    behind one is not the repository's (:func:`router.topic.planpath.create_plan_dir` refuses to make
    it there), so it is neither read nor written as a plan dir.
    """
    path = checkout
    for part in ("docs", "plans", *([topic_id] if topic_id else [])):
        path = os.path.join(path, part)
        if os.path.islink(path):
            return path
    return None


# What a candidate is (``PlanDir.kind``): a /team run, or a worktree the host asked for whose
# plan dir holds no artifact yet (DESIGN §8: no run until the pipeline writes one).
RUN = "run"
HOST = "host"
# A record's ``made_by`` for a topic ``hook worktree-create`` made (router.topic.state writes it).
MADE_BY_HOST = "host"


class PlanDir(
    namedtuple("PlanDir", "id dir checkout mtime kind listed", defaults=(0.0, RUN, True))
):
    """A topic's artifact directory: its id, its path, the checkout that holds it, its recency,
    its kind (:data:`RUN`, or :data:`HOST`), and whether git lists that checkout (False: a run
    with no worktree at all, its branch kept: ``new --id`` makes the worktree again).

    The fields are strings (``dir``, ``checkout``) so the recovery hook never
    imports pathlib (~6 ms); ``path`` and ``root`` give them as Paths.
    """

    __slots__ = ()

    @property
    def path(self) -> Path:
        from pathlib import Path

        return Path(self.dir)

    @property
    def root(self) -> Path:
        from pathlib import Path

        return Path(self.checkout)


def remake_command(topic_id: str, request: str | None) -> str:
    """The command that makes a run's home worktree again on its existing branch, commits
    included: ``new`` with the request it kept, quoted for a shell (a placeholder when it kept
    none, or one on several lines: ``next <id>`` shows it)."""
    if request is None or not request.strip() or "\n" in request:
        quoted = '"<the user\'s request, verbatim>"'
    else:
        import shlex

        quoted = shlex.quote(request)
    return f"team-router new {quoted} --id {topic_id}"


# -- the records: which topics are runs of this machine ------------------------------


class Mark(namedtuple("Mark", "made_by finished worktree home tearing")):
    """What discovery reads of a topic's record: who made the topic (:data:`MADE_BY_HOST` or
    None), whether a teardown finished it, the checkout it names as its worktree, the home
    repo's primary clone when it is a secondary repo's record (else None), and whether a
    teardown (or pr-cleanup) of it is under way: it did a step, and a rerun finishes it."""

    __slots__ = ()


# A record that does not parse still says this machine started the topic; nothing
# else in it is trusted (doctor reports it).
_UNREADABLE = Mark(None, False, None, None, False)


class Records:
    """The topic records of one common git dir as a command reads them: which ids have one
    (one listdir), each one's JSON and :class:`Mark` (read when first asked, once), and
    the plan dirs they make runs under each checkout root (each root scanned once).

    Read straight from the files, without the lock, as the hook must (router.topic.state
    writes them, and builds a whole record from :meth:`data` rather than read the file
    again). Only the few records an answer depends on are read: ``phase`` in a home with
    500 topics reads the newest one, not all of them.
    """

    __slots__ = (
        "_data",
        "_files",
        "_folder",
        "_identities",
        "_ids",
        "_listed",
        "_marks",
        "_under",
        "common_dir",
    )

    def __init__(self, common_dir: str | os.PathLike[str]) -> None:
        from router.topic.holders import RECORDS_DIR, STATE_DIR

        self.common_dir = os.fspath(common_dir)
        self._folder = os.path.join(self.common_dir, STATE_DIR, RECORDS_DIR)
        self._ids: frozenset[str] | None = None
        self._data: dict[str, dict[str, Any] | None] = {}
        self._marks: dict[str, Mark] = {}
        self._under: dict[str, list[PlanDir]] = {}
        self._listed: dict[str, list[tuple[str, bool]] | None] = {}
        self._files: dict[str, list[os.DirEntry[str]] | None] = {}
        self._identities: dict[str, os.stat_result] = {}

    def ids(self) -> frozenset[str]:
        """Every id with a record here."""
        if self._ids is None:
            try:
                names = os.listdir(self._folder)
            except OSError:
                names = []
            self._ids = frozenset(n[: -len(".json")] for n in names if n.endswith(".json"))
        return self._ids

    def data(self, topic_id: str) -> dict[str, Any] | None:
        """The record's JSON object; None when there is no record or it is not one."""
        if topic_id not in self.ids():
            return None
        if topic_id not in self._data:
            from router.plandir.artifacts import read_identified

            path = os.path.join(self._folder, f"{topic_id}.json")
            try:
                raw, self._identities[topic_id] = read_identified(path)
            except OSError:
                raw = None
            self._data[topic_id] = _parsed(raw)
        return self._data[topic_id]

    def identity(self, topic_id: str) -> os.stat_result | None:
        """The record file's identity: as :meth:`data` read it (taken before its bytes), else
        as it is now, without reading it; None when there is none."""
        if topic_id in self._identities or topic_id in self._data:
            return self._identities.get(topic_id)
        if topic_id not in self.ids():
            return None
        try:
            return os.stat(os.path.join(self._folder, f"{topic_id}.json"))
        except OSError:
            return None

    def mark(self, topic_id: str) -> Mark | None:
        """The record's mark; None when ``topic_id`` has no record here."""
        if topic_id not in self.ids():
            return None
        if topic_id not in self._marks:
            self._marks[topic_id] = _mark_of(self.data(topic_id))
        return self._marks[topic_id]

    def live(self, topic_id: str) -> bool:
        """A topic this machine started and has not torn down."""
        mark = self.mark(topic_id)
        return mark is not None and not mark.finished

    def tearing(self, topic_id: str) -> bool:
        """A teardown or pr-cleanup of the topic stopped part-way (a signal, a kill, a step
        that failed): the run shipped and its cleanup is the rerun's to finish. Its worktree
        and plan dir may be gone with the steps done: it resumes at SHIPPED, never WORKTREE."""
        mark = self.mark(topic_id)
        return mark is not None and mark.tearing

    def made_by_host(self, topic_id: str) -> bool:
        mark = self.mark(topic_id)
        return mark is not None and mark.made_by == MADE_BY_HOST

    def at(self, top: str, branch: str | None, *, every: bool) -> tuple[str, Mark] | None:
        """The live topic whose record names the checkout ``top`` as its own: the one of the
        branch checked out there (a topic's branch is its id), else, with ``every``, any."""
        ids = [branch] if branch in self.ids() else []
        if every:
            ids += sorted(self.ids() - set(ids))
        for topic_id in ids:
            mark = self.mark(topic_id)
            if mark is not None and not mark.finished and _same_path(mark.worktree, top):
                return topic_id, mark
        return None

    def homes(self) -> list[str]:
        """The homes of the topics this repo is a secondary of, torn down or not: a repo with
        no topic of its own answers as their home does (every record is read)."""
        marks = [self.mark(topic_id) for topic_id in sorted(self.ids())]
        return sorted({m.home for m in marks if m is not None and m.home})

    def plan_dirs(self, root: str) -> list[PlanDir]:
        """The plan dirs of recorded topics under ``root`` (a real path), scanned once."""
        if root not in self._under:
            self._under[root] = _plan_dirs_under(root, self)
        return self._under[root]

    def files(self, plan_dir: str) -> list[os.DirEntry[str]] | None:
        """The files of ``plan_dir``, each stat'ed, listed once (:func:`plan_files`)."""
        if plan_dir not in self._files:
            from router.plandir.artifacts import plan_files

            self._files[plan_dir] = plan_files(plan_dir)
        return self._files[plan_dir]

    def listing(self, root: str) -> list[tuple[str, bool]] | None:
        """Each entry of ``root``'s ``docs/plans/`` (``root`` a real path) with whether it is a
        symlink, listed once; None when it cannot be listed."""
        if root not in self._listed:
            try:
                with os.scandir(os.path.join(root, PLANS_DIR)) as it:
                    # is_symlink() is free here (the listing's d_type): no stat per topic.
                    self._listed[root] = [(e.name, e.is_symlink()) for e in it]
            except OSError:
                self._listed[root] = None
        return self._listed[root]


def _parsed(raw: bytes | None) -> dict[str, Any] | None:
    import json

    if raw is None:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))  # as open(encoding="utf-8") read it
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _mark_of(data: dict[str, Any] | None) -> Mark:
    if data is None:
        return _UNREADABLE
    extra = data.get("extra")  # schema 1 kept the teardown mark there
    teardown = data.get("teardown", extra.get("teardown") if isinstance(extra, dict) else None)
    made_by, worktree, home = data.get("made_by"), data.get("worktree"), data.get("home")
    finished = isinstance(teardown, dict) and teardown.get("complete") is True
    # A refusal before any step leaves the topic as it was: only a step done starts the end.
    began = isinstance(teardown, dict) and bool(teardown.get("done"))
    return Mark(
        made_by if isinstance(made_by, str) else None,
        finished,
        worktree if isinstance(worktree, str) and worktree else None,
        home if data.get("repo") != "home" and isinstance(home, str) and home else None,
        began and not finished,
    )


def _same_path(path: str | None, real: str) -> bool:
    return path is not None and os.path.realpath(path) == real


def kind_of(records: Records, topic_id: str, *, has_artifacts: bool) -> str:
    """:data:`HOST` for a host-made topic before its first artifact, else :data:`RUN`."""
    if not has_artifacts and records.made_by_host(topic_id):
        return HOST
    return RUN


# -- finding them --------------------------------------------------------------------


def scan(roots: Iterable[str], records: Records) -> list[PlanDir]:
    """The plan dirs of recorded topics under ``docs/plans/`` of each checkout root (each
    root once). A directory without a record is repository content (a plan dir someone
    committed), never a run: it is not listed."""
    return scan_real(dict.fromkeys(os.path.realpath(root) for root in roots), records)


def scan_real(roots: Iterable[str], records: Records) -> list[PlanDir]:
    """:func:`scan` of checkout roots that are real paths already, each given once."""
    found: list[PlanDir] = []
    for root in roots:
        found += records.plan_dirs(root)
    return found


def _plan_dirs_under(root: str, records: Records) -> list[PlanDir]:
    base = os.path.join(root, PLANS_DIR)
    if plan_dir_link(root) is not None:
        return []  # a symlinked docs/ or docs/plans/: nothing behind it is a plan dir here
    recorded = records.ids()
    if not recorded:
        return []  # no record, no run: not even a listdir
    listed = records.listing(root)
    if listed is None:
        return []
    names = [name for name, linked in listed if name in recorded and not linked]
    from router.plandir.artifacts import LIGHT_ID_RE, newest_of

    found = []
    for name in names:
        if not LIGHT_ID_RE.fullmatch(name):
            continue
        path = os.path.join(base, name)
        newest_file = newest_of(records.files(path))
        mtime = newest_file if newest_file is not None else dir_mtime(path)
        if mtime is not None:
            kind = kind_of(records, name, has_artifacts=newest_file is not None)
            found.append(PlanDir(name, path, root, mtime, kind))
    return found


def dir_mtime(path: str) -> float | None:
    """The directory's own mtime; None when ``path`` is not a directory."""
    try:
        return os.stat(path).st_mtime if os.path.isdir(path) else None
    except OSError:
        return None


def newest_live(found: Iterable[PlanDir], records: Records) -> PlanDir | None:
    """The newest plan dir of a topic not torn down, a run before a host's worktree; a tie
    goes to the greater id.

    Records are read newest first until one answers: usually one.
    """
    # sorted() is stable with reverse=True: of two copies of one id at one mtime the
    # first found (the primary clone's) stays first, as with :func:`by_id`.
    ordered = sorted(found, key=lambda c: (c.kind == RUN, c.mtime, c.id), reverse=True)
    return next((c for c in ordered if records.live(c.id)), None)


def by_id(found: Iterable[PlanDir]) -> dict[str, PlanDir]:
    """One plan dir per id (the newest, when a primary clone and a worktree both hold one).

    A tie keeps the first found (the primary clone's), as :func:`newest_live` does for
    ``phase`` and the hook: every command reads the same copy.
    """
    best: dict[str, PlanDir] = {}
    for plan in found:
        kept = best.get(plan.id)
        if kept is None or plan.mtime > kept.mtime:
            best[plan.id] = plan
    return best
