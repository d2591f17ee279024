"""Finding a topic's artifact directory: by id, by path, or the newest one (DESIGN §8).

Candidates are the id-named directories under ``docs/plans/`` of the home
primary clone and of every worktree of the home repo. Recency is the newest
mtime of a candidate's files; an empty directory counts only when a worktree
for its id exists (then the directory's own mtime). Newest wins; a tie goes to
the greater id.

The recovery hook runs this on every session start, so the module imports
nothing heavy at the top; :func:`locate_fast` answers the hook's question from
git's own administrative files (see gitrepository-layout(5)) and says when it is
unsure, so the caller can ask git instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections import namedtuple

from router import gitfiles
from router.errors import Refusal
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
            "plan-dir-symlink",
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


class PlanDir(namedtuple("PlanDir", "id dir checkout mtime", defaults=(0.0,))):
    """A topic's artifact directory: its id, its path, the checkout that holds it, its recency.

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


def candidates(repo: Repo, entries: list[WorktreeEntry] | None = None) -> list[PlanDir]:
    """Every plan dir of the home repo: its primary clone and each of its worktrees."""
    entries = entries if entries is not None else repo.git.worktree_list()
    roots = [repo.primary] + [e.path for e in entries if not e.bare]
    return scan(roots, {e.branch for e in entries if e.branch})


def scan(roots: Iterable[Path | str], worktree_branches: set[str]) -> list[PlanDir]:
    """The plan dirs under ``docs/plans/`` of each checkout root (each root once).

    The first root is the primary clone; every other one is a linked worktree.
    """
    seen: set[str] = set()
    found: list[PlanDir] = []
    for root in roots:
        key = os.path.realpath(root)
        if key not in seen:
            in_worktree = bool(seen)
            seen.add(key)
            found += _plan_dirs_under(key, worktree_branches, in_worktree=in_worktree)
    return found


def _recorded_here(primary: str, topic_id: str) -> bool:
    """The primary clone's common git dir holds a record of ``topic_id``.

    A topic ``new`` made and then fell back to the main tree (a path taken,
    a shallow clone) has its plan dir there, empty until the first artifact,
    and no worktree: its record is what says the empty directory is a topic.
    """
    from router.topic.holders import record_file

    try:
        found = gitfiles.find_git_dir(primary)
    except gitfiles.Unsure:
        return False
    if found is None or found[0] != primary:
        return False
    return os.path.isfile(record_file(gitfiles.common_dir(found[1]), topic_id))


def _plan_dirs_under(root: str, worktree_branches: set[str], *, in_worktree: bool) -> list[PlanDir]:
    base = os.path.join(root, PLANS_DIR)
    if plan_dir_link(root) is not None:
        return []  # a symlinked docs/ or docs/plans/: nothing behind it is a plan dir here
    try:
        with os.scandir(base) as it:
            # is_symlink() is free here (the listing's d_type): no stat per topic.
            names = [e.name for e in it if not e.is_symlink()]
    except OSError:
        return []
    found = []
    for name in names:
        if not LIGHT_ID_RE.fullmatch(name):
            continue
        path = os.path.join(base, name)
        # An id never holds "/", so its branch (router.topic.ids.branch_for) is the id itself.
        # A plan dir inside a linked worktree has its worktree whatever that
        # checkout's branch: `new` run in a feature worktree reuses it (§7).
        mtime = _recency(
            path,
            has_worktree=in_worktree or name in worktree_branches,
            # Asked only of an empty dir in the primary clone: a fallen-back topic's.
            recorded=lambda: not in_worktree and _recorded_here(root, name),  # noqa: B023
        )
        if mtime is not None:
            found.append(PlanDir(name, path, root, mtime))
    return found


def _recency(path: str, *, has_worktree: bool, recorded: Callable[[], bool] = bool) -> float | None:
    """Newest artifact mtime; an empty dir counts only when its worktree exists, or when
    ``recorded()`` says the topic's record does (asked of an empty dir alone)."""
    newest_file = newest_mtime(path)
    if newest_file is not None:
        return newest_file
    if not (has_worktree or recorded()) or not os.path.isdir(path):
        return None
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def newest(found: Iterable[PlanDir]) -> PlanDir | None:
    """Newest wins; a tie goes to the greater id."""
    return max(found, key=lambda c: (c.mtime, c.id), default=None)


def by_id(found: Iterable[PlanDir]) -> dict[str, PlanDir]:
    """One plan dir per id (the newest, when a primary clone and a worktree both hold one).

    A tie keeps the first found (the primary clone's), as :func:`newest` does for
    ``phase`` and the hook: every command reads the same copy.
    """
    best: dict[str, PlanDir] = {}
    for plan in found:
        kept = best.get(plan.id)
        if kept is None or plan.mtime > kept.mtime:
            best[plan.id] = plan
    return best


# -- resolving a target (the CLI's path: asks git) ----------------------------------


def resolve(cwd: Path, target: str | None) -> tuple[Repo, PlanDir]:
    """The home repo and plan dir named by ``target`` (id or path), or the newest one."""
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
    from router.errors import BadInput

    repo, plan = resolve(cwd, target)
    if not os.path.isdir(plan.dir):
        raise BadInput("no-plan-dir", f"{plan.dir} does not exist; {needs(plan.id)}")
    return repo, plan


def resolve_listed(
    cwd: Path, target: str | None
) -> tuple[Repo, PlanDir, tuple[WorktreeEntry, ...] | None]:
    """:func:`resolve`, with the home's worktree list when it was read on the way (else None)."""
    from router.errors import BadInput
    from router.topic.workspace import open_repo

    if target == "":
        # An empty target (an unset "$ID" in a script) names no topic: it must not
        # fall through to discovery's newest topic, which teardown would take apart.
        raise BadInput("invalid-id", "the target is empty; pass a topic id or a plan dir path")
    if target and _looks_like_path(target):
        return (*_by_path(cwd, target), None)
    repo = home_repo(open_repo(cwd), target)
    entries = repo.git.worktree_list()
    found = candidates(repo, entries)
    if target:
        plan = (
            newest(c for c in found if c.id == target)
            or _worktree_only(repo, entries, target)
            or _in_place(repo, target)
        )
        if plan is None:
            raise BadInput(
                "no-plan-dir",
                f"no plan dir for {target!r} in {repo.primary} or its worktrees; "
                "check the id with `team-router status`",
            )
        _refuse_linked(plan)
        return repo, plan, tuple(entries)
    best = newest(found)
    if best is None:
        for hidden in hidden_plan_dirs(repo, entries):
            raise hidden
        raise BadInput(
            "no-topic", f"no topic to resume in {repo.primary}; start one with `team-router new`"
        )
    return repo, best, tuple(entries)


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


def home_repo(repo: Repo, target: str | None = None) -> Repo:
    """The home repo of the topic asked about from ``repo``; ``repo`` itself when it is the home.

    A secondary repo's record names its topic's home (DESIGN §8): from its
    primary clone or its worktree every command answers as the home does. With
    no ``target``: the topic whose worktree this checkout is, else (when this
    repo holds no plan dir of its own) the home with the newest plan dir.
    """
    from pathlib import Path

    if target is None and _answers_here(repo):
        return repo
    homes, exact = home_paths(str(repo.common_dir), str(repo.checkout.toplevel), target)
    if not homes or (not exact and candidates(repo)):
        return repo
    opened = [r for r in (_open_quietly(Path(h)) for h in homes) if r is not None]
    if not opened:
        return repo
    return max(opened, key=lambda r: (newest(candidates(r)) or PlanDir("", "", "", -1.0)).mtime)


def _answers_here(repo: Repo) -> bool:
    """The checkout holds plan dirs of its own: a home answers for itself, and no record
    needs reading (a home with 500 topics pays one listdir for this, on every `phase`)."""
    try:
        names = os.listdir(os.path.join(repo.checkout.toplevel, PLANS_DIR))
    except OSError:
        return False
    return any(LIGHT_ID_RE.fullmatch(n) for n in names)


def home_paths(common_dir: str, toplevel: str, target: str | None) -> tuple[list[str], bool]:
    """Home primaries of the topics this repo is a secondary of, as its records name them,
    and whether they answer for one topic exactly.

    Named ``target``: its home alone (exact). Otherwise the home of the topic
    whose worktree is ``toplevel`` (exact), when there is one, else every home.
    """
    from router.topic.state import secondary_homes

    if target is not None:
        homes = secondary_homes(common_dir, only=target)
        return ([homes[target][0]], True) if target in homes else ([], False)
    homes = secondary_homes(common_dir)
    here = os.path.realpath(toplevel)
    for home, worktree in homes.values():
        if worktree and os.path.realpath(worktree) == here:
            return [home], True
    return sorted({home for home, _ in homes.values()}), False


def _open_quietly(path: Path) -> Repo | None:
    from router.errors import RouterError
    from router.topic.workspace import open_repo

    try:
        return open_repo(path)
    except RouterError:
        return None  # the home is gone or moved: answer for this repo, as before


def _worktree_only(repo: Repo, entries: list[WorktreeEntry], topic_id: str) -> PlanDir | None:
    """A topic whose worktree exists but whose plan dir does not (yet, or any more)."""
    for entry in entries:
        root = os.path.realpath(entry.path)
        if entry.branch == topic_id and root != str(repo.primary):
            return PlanDir(topic_id, os.path.join(root, PLANS_DIR, topic_id), root, 0.0)
    return None


def _in_place(repo: Repo, topic_id: str) -> PlanDir | None:
    """A named topic's plan dir in the primary clone that holds no file yet.

    A `new` whose home worktree fell back creates it there (DESIGN §2); the
    recency rule leaves it out of discovery, but named by its id it is found.
    """
    path = os.path.join(repo.primary, PLANS_DIR, topic_id)
    try:
        mtime = os.stat(path).st_mtime if os.path.isdir(path) else None
    except OSError:
        mtime = None
    return PlanDir(topic_id, path, str(repo.primary), mtime) if mtime is not None else None


def _looks_like_path(target: str) -> bool:
    return "/" in target or target in {".", ".."} or not LIGHT_ID_RE.fullmatch(target)


def _by_path(cwd: Path, target: str) -> tuple[Repo, PlanDir]:
    from pathlib import Path

    from router.errors import BadInput
    from router.topic.workspace import open_repo

    given = os.path.abspath(cwd / target)
    path = Path(os.path.realpath(given))
    if not path.is_dir() or not LIGHT_ID_RE.fullmatch(path.name) or path.parent.name != "plans":
        raise BadInput(
            "no-plan-dir",
            f"{target} is not a plan dir (expected an existing docs/plans/<id>/ directory)",
        )
    # Judged on the path as given: realpath has already gone through the link.
    plans = os.path.dirname(given)
    _refuse_linked(PlanDir(os.path.basename(given), given, os.path.dirname(os.path.dirname(plans))))
    repo = open_repo(path)
    root = path.parent.parent.parent
    mtime = _recency(str(path), has_worktree=True) or 0.0
    return repo, PlanDir(path.name, str(path), str(root), mtime)


# -- the hook's fast path: git's administrative files ---------------------------------

FastHome = namedtuple("FastHome", "primary common_dir roots branches top", defaults=("",))
FastHome.__doc__ = """The home repo as its git files describe it: primary root, common dir,
every checkout root (primary first), the branches checked out in them, and the
root of the checkout that holds ``cwd``."""


def locate_fast(cwd: str) -> FastHome | None:
    """The repo around ``cwd`` from git's files; None when there is none; Unsure otherwise.

    Running git costs nothing here, importing the module that runs it costs
    ~45 ms (dataclasses, subprocess, pathlib), most of the hook's budget. Only
    the standard layout is read (a ``.git`` directory in the primary clone,
    ``gitdir:`` files in worktrees, ``commondir``, ``worktrees/<n>/gitdir``);
    anything else raises :class:`Unsure`.
    """
    found = gitfiles.find_git_dir(os.path.realpath(cwd))
    if found is None:
        return None
    top, git_dir = found
    common = gitfiles.common_dir(git_dir)
    primary = os.path.dirname(common)
    if (
        os.path.basename(common) != ".git"
        or os.path.realpath(os.path.join(primary, ".git")) != common
    ):
        raise gitfiles.Unsure(f"{common} is not the .git directory of a primary clone")
    gitfiles.refuse_unusual_config(common)
    roots: list[str] = [primary]
    branches: set[str] = set()
    _add_branch(branches, os.path.join(common, "HEAD"))
    for admin in gitfiles.worktree_admin_dirs(common):
        gitfile = gitfiles.read_line(os.path.join(admin, "gitdir"))
        if gitfile:
            roots.append(os.path.dirname(os.path.normpath(os.path.join(admin, gitfile))))
            _add_branch(branches, os.path.join(admin, "HEAD"))
    return FastHome(primary, common, roots, branches, top)


def _add_branch(branches: set[str], head_file: str) -> None:
    branch = gitfiles.head_branch(head_file)
    if branch is not None:
        branches.add(branch)
