"""Finding a topic's artifact directory: by id, by path, or by discovery (DESIGN §8).

Without a target, one rule answers the recovery hook, ``phase``, ``next`` and
``status`` alike (:func:`discover`):

- from inside a topic's worktree (of the home repo or of any secondary repo),
  that topic: a session started there works on it;
- otherwise the newest *run*. Candidates are the id-named directories under
  ``docs/plans/`` of the home primary clone and of every worktree of the home
  repo, but only those this machine started: a topic with a record in the
  common git dir, not torn down. A plan dir someone committed is repository
  content, never a run. A worktree the host asked for (``claude --worktree``,
  an isolated subagent: ``made_by: host`` in its record) is no run until the
  pipeline writes an artifact into its plan dir, and never displaces one.

Recency is the newest mtime of a candidate's files (an ordering hint, never a
deletion rule), else the directory's own; newest wins, a tie goes to the
greater id.

The recovery hook runs this on every session start, so the module imports
nothing heavy at the top; :func:`place_of` reads the repository from git's
administrative files (see gitrepository-layout(5)) and asks git only when
they are not the plain layout.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections import namedtuple

from router import git as g
from router.errors import ErrorCode, Refusal, RouterError
from router.plandir.artifacts import LIGHT_ID_RE, newest_mtime

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from router.git import WorktreeEntry
    from router.topic.workspace import Repo

# Where plan dirs live, relative to a checkout's top level (a str: os.path is lighter than pathlib).
PLANS_DIR = os.path.join("docs", "plans")


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


def plan_dir_link(checkout: str, topic_id: str | None = None) -> str | None:
    """The first of ``docs``, ``docs/plans``, ``docs/plans/<id>`` under ``checkout`` that is a link.

    Older versions made the plan dir through a symlinked ``docs``; what lies
    behind one is not the repository's (:func:`create_plan_dir` refuses to make
    it there), so it is neither read nor written as a plan dir.
    """
    path = checkout
    for part in ("docs", "plans", *([topic_id] if topic_id else [])):
        path = os.path.join(path, part)
        if os.path.islink(path):
            return path
    return None


def _refuse_linked(plan: PlanDir) -> None:
    """Raise :class:`PlanDirSymlink` when ``plan`` is reached through a symlink."""
    link = plan_dir_link(plan.checkout, plan.id)
    if link is not None:
        from pathlib import Path

        what = f"the plan dir {plan.dir} behind it is neither read nor written"
        raise PlanDirSymlink(Path(plan.checkout), Path(link), what)


# What a candidate is (``PlanDir.kind``): a /team run, or a worktree the host asked for whose
# plan dir holds no artifact yet (DESIGN §8: no run until the pipeline writes one).
RUN = "run"
HOST = "host"
# A record's ``made_by`` for a topic ``hook worktree-create`` made (router.topic.state writes it).
MADE_BY_HOST = "host"


class PlanDir(namedtuple("PlanDir", "id dir checkout mtime kind", defaults=(0.0, RUN))):
    """A topic's artifact directory: its id, its path, the checkout that holds it, its recency,
    and its kind (:data:`RUN`, or :data:`HOST`).

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


# -- the records: which topics are runs of this machine ------------------------------


class Mark(namedtuple("Mark", "made_by finished worktree home")):
    """What discovery reads of a topic's record: who made the topic (:data:`MADE_BY_HOST` or
    None), whether a teardown finished it, the checkout it names as its worktree, and the home
    repo's primary clone when it is a secondary repo's record (else None)."""

    __slots__ = ()


# A record that does not parse still says this machine started the topic; nothing
# else in it is trusted (doctor reports it).
_UNREADABLE = Mark(None, False, None, None)


class Records:
    """The topic records of one common git dir as discovery reads them: which ids have one
    (one listdir), and each one's :class:`Mark` (read when first asked, once).

    Read straight from the files, without the lock, as the hook must (router.topic.state
    writes them). Only the few records an answer depends on are read: ``phase`` in a
    home with 500 topics reads the newest one, not all of them.
    """

    __slots__ = ("_folder", "_ids", "_marks")

    def __init__(self, common_dir: str | os.PathLike[str]) -> None:
        from router.topic.holders import RECORDS_DIR, STATE_DIR

        self._folder = os.path.join(os.fspath(common_dir), STATE_DIR, RECORDS_DIR)
        self._ids: frozenset[str] | None = None
        self._marks: dict[str, Mark] = {}

    def ids(self) -> frozenset[str]:
        """Every id with a record here."""
        if self._ids is None:
            try:
                names = os.listdir(self._folder)
            except OSError:
                names = []
            self._ids = frozenset(n[: -len(".json")] for n in names if n.endswith(".json"))
        return self._ids

    def mark(self, topic_id: str) -> Mark | None:
        """The record's mark; None when ``topic_id`` has no record here."""
        if topic_id not in self.ids():
            return None
        if topic_id not in self._marks:
            self._marks[topic_id] = _read_mark(os.path.join(self._folder, f"{topic_id}.json"))
        return self._marks[topic_id]

    def live(self, topic_id: str) -> bool:
        """A topic this machine started and has not torn down."""
        mark = self.mark(topic_id)
        return mark is not None and not mark.finished

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


def _read_mark(path: str) -> Mark:
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError, RecursionError):
        return _UNREADABLE
    if not isinstance(data, dict):
        return _UNREADABLE
    extra = data.get("extra")  # schema 1 kept the teardown mark there
    teardown = data.get("teardown", extra.get("teardown") if isinstance(extra, dict) else None)
    made_by, worktree, home = data.get("made_by"), data.get("worktree"), data.get("home")
    return Mark(
        made_by if isinstance(made_by, str) else None,
        isinstance(teardown, dict) and teardown.get("complete") is True,
        worktree if isinstance(worktree, str) and worktree else None,
        home if data.get("repo") != "home" and isinstance(home, str) and home else None,
    )


def _same_path(path: str | None, real: str) -> bool:
    return path is not None and os.path.realpath(path) == real


def kind_of(records: Records, topic_id: str, *, has_artifacts: bool) -> str:
    """:data:`HOST` for a host-made topic before its first artifact, else :data:`RUN`."""
    if not has_artifacts and records.made_by_host(topic_id):
        return HOST
    return RUN


# -- candidates ------------------------------------------------------------------------


def candidates(repo: Repo, entries: list[WorktreeEntry] | None = None) -> list[PlanDir]:
    """Every plan dir of this machine's topics in the home repo: its primary clone and each
    of its worktrees (torn-down topics included: :meth:`Records.live` tells them)."""
    entries = entries if entries is not None else repo.git.worktree_list()
    return scan(repo_place(repo, entries).roots, Records(repo.common_dir))


def scan(roots: Iterable[str], records: Records) -> list[PlanDir]:
    """The plan dirs of recorded topics under ``docs/plans/`` of each checkout root (each
    root once). A directory without a record is repository content (a plan dir someone
    committed), never a run: it is not listed."""
    seen: set[str] = set()
    found: list[PlanDir] = []
    for root in roots:
        key = os.path.realpath(root)
        if key not in seen:
            seen.add(key)
            found += _plan_dirs_under(key, records)
    return found


def _plan_dirs_under(root: str, records: Records) -> list[PlanDir]:
    base = os.path.join(root, PLANS_DIR)
    if plan_dir_link(root) is not None:
        return []  # a symlinked docs/ or docs/plans/: nothing behind it is a plan dir here
    recorded = records.ids()
    if not recorded:
        return []  # no record, no run: not even a listdir
    try:
        with os.scandir(base) as it:
            # is_symlink() is free here (the listing's d_type): no stat per topic.
            names = [e.name for e in it if e.name in recorded and not e.is_symlink()]
    except OSError:
        return []
    found = []
    for name in names:
        if not LIGHT_ID_RE.fullmatch(name):
            continue
        path = os.path.join(base, name)
        newest_file = newest_mtime(path)
        mtime = newest_file if newest_file is not None else _dir_mtime(path)
        if mtime is not None:
            kind = kind_of(records, name, has_artifacts=newest_file is not None)
            found.append(PlanDir(name, path, root, mtime, kind))
    return found


def _dir_mtime(path: str) -> float | None:
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


# -- discovery: the one answer without a target ----------------------------------------


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


Found = namedtuple("Found", "home plan")
Found.__doc__ = """What discovery answers: the topic's home repo (a :class:`Place`) and the
topic's plan dir (None: no topic to resume from there)."""


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
    found = scan(place.roots, records)
    top = os.path.realpath(place.top)
    linked = top != os.path.realpath(place.primary)
    if linked:
        own = newest_live((p for p in found if p.checkout == top), records)
        if own is not None:
            return Found(place, own)
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
                return Found(place, PlanDir(topic_id, plan_dir, top, 0.0, kind))
            away = _at_home(mark.home, topic_id)
            if away is not None:
                return away
        if not found:
            away = _newest_of(records.homes())
            if away is not None:
                return away
    return Found(place, newest_live((p for p in found if p.kind == RUN), records))


def _at_home(home: str, topic_id: str) -> Found | None:
    """The topic as its home answers for it; None when the home is gone or moved."""
    place = place_of(home)
    if place is None:
        return None
    return Found(place, plan_named(place, topic_id, Records(place.common_dir)))


def _newest_of(homes: list[str]) -> Found | None:
    """The newest run of the homes whose secondary this repo is (none of its own)."""
    answers = []
    for home in homes:
        place = place_of(home)
        if place is not None:
            records = Records(place.common_dir)
            runs = (p for p in scan(place.roots, records) if p.kind == RUN)
            answers.append(Found(place, newest_live(runs, records)))
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
        mtime = newest_file if newest_file is not None or root == primary else _dir_mtime(path)
        if mtime is not None:
            copies.append((path, root, mtime, newest_file is not None))
    if not copies:
        worktree = next(
            (r for r, branch in place.worktrees if branch == topic_id and r != primary), None
        )
        path = os.path.join(worktree or primary, PLANS_DIR, topic_id)
        mtime = 0.0 if worktree is not None else _dir_mtime(path)
        if mtime is None:
            return None
        copies.append((path, worktree or primary, mtime, False))
    path, root, mtime, has_artifacts = max(copies, key=lambda c: c[2])
    kind = kind_of(records or Records(place.common_dir), topic_id, has_artifacts=has_artifacts)
    return PlanDir(topic_id, path, root, mtime, kind)


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


# -- resolving a target (the CLI's path) ----------------------------------------------


def resolve(cwd: Path, target: str | None) -> tuple[Repo, PlanDir]:
    """The home repo and plan dir named by ``target`` (id or path), or discovery's."""
    repo, plan, _entries = resolve_listed(cwd, target)
    return repo, plan


def resolve_existing(
    cwd: Path, target: str | None, *, needs: Callable[[str], str]
) -> tuple[Repo, PlanDir]:
    """:func:`resolve` for a command that reads or writes the plan dir: gone, it is ``no-plan-dir``.

    Discovery still finds a topic whose worktree exists without its plan dir
    (``phase`` answers QUESTION for it); a command that needs the files there
    says the directory is gone and ``needs(id)`` says why it matters and what to do.
    """

    repo, plan = resolve(cwd, target)
    if not os.path.isdir(plan.dir):
        raise RouterError(ErrorCode.NO_PLAN_DIR, f"{plan.dir} does not exist; {needs(plan.id)}")
    return repo, plan


def resolve_listed(
    cwd: Path, target: str | None
) -> tuple[Repo, PlanDir, tuple[WorktreeEntry, ...] | None]:
    """:func:`resolve`, with the home's worktree list when it was read on the way (else None)."""
    from pathlib import Path

    from router.topic.workspace import open_repo

    if target == "":
        # An empty target (an unset "$ID" in a script) names no topic: it must not
        # fall through to discovery, whose topic teardown would take apart.
        raise RouterError(
            ErrorCode.INVALID_ID, "the target is empty; pass a topic id or a plan dir path"
        )
    if target and _looks_like_path(target):
        return (*_by_path(cwd, target), None)
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
        _refuse_linked(plan)
        return repo, plan, tuple(entries)
    found = discover_at(cwd)
    repo = open_repo(Path(found.home.primary))
    entries = repo.git.worktree_list()
    if found.plan is None:
        for hidden in hidden_plan_dirs(repo, entries):
            raise hidden
        raise RouterError(
            ErrorCode.NO_TOPIC,
            f"no topic to resume in {repo.primary}; start one with `team-router new`",
        )
    return repo, found.plan, tuple(entries)


def hidden_plan_dirs(repo: Repo, entries: list[WorktreeEntry]) -> list[PlanDirSymlink]:
    """Topics behind a symlinked ``docs`` or ``docs/plans`` of a checkout, one refusal each.

    Those plan dirs were made by an older version; discovery leaves them out
    (:func:`plan_dir_link`), so ``status`` names them and a ``phase`` that
    finds nothing else says why rather than "no topic".
    """
    from pathlib import Path

    roots = [str(repo.primary)] + [str(e.path) for e in entries if not e.bare]
    found = []
    for root in dict.fromkeys(roots):
        for link, ids in _links_to_plan_dirs(root):
            what = f"the plan dirs behind it ({', '.join(ids)}) are neither read nor written"
            found.append(PlanDirSymlink(Path(root), Path(link), what))
    return found


def _links_to_plan_dirs(root: str) -> list[tuple[str, list[str]]]:
    """Each link under ``root`` that hides plan dirs, with their ids: a symlinked ``docs`` or
    ``docs/plans`` (every id behind it), else each id-named link in ``docs/plans``."""
    link = plan_dir_link(root)
    try:
        with os.scandir(os.path.join(root, PLANS_DIR)) as it:
            entries = [(e.name, e.is_symlink()) for e in it if LIGHT_ID_RE.fullmatch(e.name)]
    except OSError:
        return []
    if link is not None:
        return [(link, sorted(name for name, _ in entries))] if entries else []
    return [(os.path.join(root, PLANS_DIR, name), [name]) for name, linked in entries if linked]


def home_repo(repo: Repo, target: str) -> Repo:
    """The home repo of topic ``target`` asked about from ``repo``: the home its record names
    when ``repo`` is one of its secondaries (DESIGN §8), else ``repo`` itself."""
    from pathlib import Path

    mark = Records(repo.common_dir).mark(target)
    if mark is None or mark.home is None:
        return repo
    return _open_quietly(Path(mark.home)) or repo


def _open_quietly(path: Path) -> Repo | None:
    from router.errors import RouterError
    from router.topic.workspace import open_repo

    try:
        return open_repo(path)
    except RouterError:
        return None  # the home is gone or moved: answer for this repo, as before


def _looks_like_path(target: str) -> bool:
    return "/" in target or target in {".", ".."} or not LIGHT_ID_RE.fullmatch(target)


def _by_path(cwd: Path, target: str) -> tuple[Repo, PlanDir]:
    from pathlib import Path

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
    _refuse_linked(PlanDir(os.path.basename(given), given, os.path.dirname(os.path.dirname(plans))))
    repo = open_repo(path)
    root = path.parent.parent.parent
    newest_file = newest_mtime(str(path))
    mtime = newest_file if newest_file is not None else _dir_mtime(str(path)) or 0.0
    kind = kind_of(Records(repo.common_dir), path.name, has_artifacts=newest_file is not None)
    return repo, PlanDir(path.name, str(path), str(root), mtime, kind)


def _meant(cwd: Path, word: str) -> str:
    """For a bare word that names a topic without its prefix: the whole ids it may mean.

    ``next add-rate-limiting`` is the topic of ``2026-05-01-add-rate-limiting``: say
    so rather than leave the user to find the prefix.
    """
    from router.errors import RouterError, ToolFailed
    from router.plandir.artifacts import topic_of
    from router.topic.workspace import open_repo

    if "/" in word or not word:
        return ""
    try:
        repo = home_repo(open_repo(cwd), word)
        place = repo_place(repo, repo.git.worktree_list())
    except (RouterError, ToolFailed):
        return ""  # only a hint: the refusal stands without it
    ids = sorted(
        i for i in by_id(scan(place.roots, Records(repo.common_dir))) if topic_of(i) == word
    )
    if not ids:
        return ""
    return f"; {word!r} is the topic of {' and of '.join(ids)}: pass the whole id"


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
