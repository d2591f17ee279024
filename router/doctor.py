"""``doctor [--repair]``: find what crashes and hand edits left inconsistent (DESIGN §10).

Every check reports a :class:`Finding`. ``--repair`` fixes only what is safe
and only what this tool owns: our own worktree registrations whose directory
is gone (one explicit path at a time, never a bare ``git worktree prune``,
which also drops other tools' entries), empty leftover directories under
``.claude/worktrees/``, branches we created that hold no commit found nowhere
else, stale holder and lock-owner files, and records that describe nothing
any more. Everything else is reported with what to run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from router import git as g
from router import interrupt
from router.errors import BadInput, ErrorCode, ExitCode, describe_io
from router.git import (
    DanglingHead,
    GitError,
    WorktreeEntry,
    head_reflog_name,
    head_reflog_only,
    head_reflog_where,
    unique_commits,
)
from router.mounts import worktree_unmounted
from router.names import ID_RE
from router.topic import holders, state, worktreelock
from router.topic.model import repo_places
from router.topic.workspace import WORKTREES_DIR, Repo, contain_all, open_repo

_LIST_SHOWN = 5
_PASSES = 3


class Kind(StrEnum):
    RECORD_CORRUPT = "record-corrupt"
    RECORD_INCOMPLETE = "record-incomplete"
    RECORD_DIR_GONE = "record-dir-gone"
    UNKNOWN_DIR = "unknown-dir"
    REGISTRATION_DIR_GONE = "registration-dir-gone"
    ORPHAN_BRANCH = "orphan-branch"
    STALE_LOCK = "stale-lock"
    STALE_HOLDER = "stale-holder"
    HOLDER_CORRUPT = "holder-corrupt"
    WORKTREES_SECTION = "worktrees-section"
    RESTORE_UNFINISHED = "restore-unfinished"
    HALF_MADE_REGISTRATION = "half-made-registration"
    UNLOCKED_WORKTREE = "unlocked-worktree"


# A repair returns what it did, or raises _NotSafe saying why it left the thing.
Fix = Callable[[], str]


class _NotSafe(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Finding:
    kind: Kind
    path: str
    detail: str
    repo: Path
    topic: str | None = None
    repaired: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "kind": str(self.kind),
            "path": self.path,
            "repaired": self.repaired,
            "detail": self.detail,
            "repo": str(self.repo),
            "topic": self.topic,
        }


@dataclass(frozen=True, slots=True)
class _Problem:
    finding: Finding
    fix: Fix | None = None  # None: never repaired automatically
    lock: str | None = None  # the lock a repair holds; default: the finding's topic

    @property
    def lock_name(self) -> str | None:
        return self.lock or self.finding.topic


@dataclass(frozen=True, slots=True)
class DoctorResult:
    repos: tuple[Path, ...]
    findings: tuple[Finding, ...]
    repair: bool
    warnings: list[str] = field(default_factory=list)
    stopped_by: int = 0  # the signal that stopped the repairs (router.interrupt), if one did

    @property
    def interrupted(self) -> bool:
        return bool(self.stopped_by)

    @property
    def exit_code(self) -> int:
        return ExitCode.for_signal(self.stopped_by) if self.stopped_by else ExitCode.OK

    @property
    def error(self) -> dict[str, str] | None:
        if not self.stopped_by:
            return None
        repaired = sum(f.repaired for f in self.findings)
        left = sum(not f.repaired for f in self.findings)
        where = f"stopped after {repaired} repair(s), {left} finding(s) not repaired"
        return interrupt.interrupted_error(self.stopped_by, where)

    def to_json(self) -> dict[str, object]:
        return {
            "repos": [str(r) for r in self.repos],
            "repair": self.repair,
            "findings": [f.to_json() for f in self.findings],
        }


def doctor(cwd: Path, *, repair: bool = False, wait: float = state.DEFAULT_WAIT) -> DoctorResult:
    """Check this repo (and the secondaries its home records name); optionally repair."""
    home = open_repo(cwd)
    repos, warnings = _repos_to_check(home)
    problems = _scan(home, repos, here=cwd)
    if not repair:
        return DoctorResult(_roots(repos), tuple(p.finding for p in problems), False, warnings)
    # Plan, then act: every lock the repairs need is taken before the first
    # repair, and the scan is repeated under them (the state may have moved).
    with _repair_locks(home, repos, problems, wait) as held:
        # Taking a lock rewrites its owner file, so the stale owners are the
        # ones the first scan saw; everything else is scanned again.
        stale_owners = [p for p in problems if p.finding.kind is Kind.STALE_LOCK]
        findings = _repair_passes(home, repos, stale_owners, held, here=cwd)
    stopped = interrupt.received()
    if stopped and not findings:
        findings = [p.finding for p in problems]  # stopped before a repair began
    return DoctorResult(_roots(repos), tuple(findings), True, warnings, stopped_by=stopped)


def _repair_passes(
    home: Repo, repos: list[Repo], first: list[_Problem], held: set[tuple[str, str]], *, here: Path
) -> list[Finding]:
    """Repair, then look again: one repair can make the next one safe (an
    unregistered worktree frees its branch; a deleted branch frees its record).

    A signal (router.interrupt) stops them at the next repair: what was
    repaired and what was not are reported as they are then.
    """
    repaired: list[Finding] = []
    extra = first
    for _ in range(_PASSES):
        try:
            problems = _repair_order(_scan(home, repos, here=here, with_locks=False) + extra)
        except interrupt.Stopped:
            return repaired  # the scan was cut short: nothing more is known
        findings = [_apply(_guarded(p, repos, held)) for p in problems]
        extra = []
        done = [f for f in findings if f.repaired]
        repaired += done
        if not done or interrupt.received():
            return repaired + [f for f in findings if not f.repaired]
    return repaired + [f for f in findings if not f.repaired]


def _roots(repos: list[Repo]) -> tuple[Path, ...]:
    return tuple(r.primary for r in repos)


def _repos_to_check(home: Repo) -> tuple[list[Repo], list[str]]:
    """The home repo plus every secondary its home records name (contained ones only)."""
    repos = [home]
    warnings: list[str] = []
    listed = [
        (record.id, place.name, Path(place.primary))
        for record in _records(home)
        if record.repo == "home"
        for place in repo_places(home.primary, None, record)[1:]
        if place.primary is not None
    ]
    verdicts = contain_all([path for _, _, path in listed], home)
    for (topic_id, name, _path), verdict in zip(listed, verdicts, strict=True):
        if verdict.repo is not None:
            repos.append(verdict.repo)
        elif verdict.reason != ErrorCode.DUPLICATE:  # another topic's record names the same repo
            warnings.append(f"{topic_id}: {name} not checked: {verdict.detail}")
    return repos, warnings


def _records(repo: Repo) -> list[state.TopicRecord]:
    found = []
    for topic_id in state.list_records(repo.common_dir):
        record = state.read_record_or_none(repo.common_dir, topic_id)  # corrupt: its own check
        if record is not None:
            found.append(record)
    return found


# -- scanning ---------------------------------------------------------------------


def _scan(home: Repo, repos: list[Repo], *, here: Path, with_locks: bool = True) -> list[_Problem]:
    """Every problem in ``repos``; ``here``: where doctor runs (a moved checkout may be it)."""
    problems: list[_Problem] = []
    for repo in repos:
        entries = repo.git.worktree_list()
        problems += _registrations(repo, entries, here)
        problems += _unlocked(repo, entries)
        problems += _unfinished_restores(repo)
        problems += _half_made_adds(repo)
        problems += _unknown_dirs(repo, entries)
        problems += _branches(repo, entries)
        problems += _record_problems(repo, entries)
        problems += _locks(repo) if with_locks else []
        problems += _holders(repo)
    problems += _worktrees_sections(home)
    return problems


def _finding(repo: Repo, kind: Kind, path: Path | str, detail: str, topic: str | None) -> Finding:
    return Finding(kind, str(path), detail, repo.primary, topic)


def _as_topic_id(name: str) -> str | None:
    # A worktree directory and its branch are named after the id (ids hold no "/").
    return name if ID_RE.fullmatch(name) else None


def _ours(repo: Repo, path: Path) -> bool:
    """True for ``<primary>/.claude/worktrees/<name>`` (checked on the path, not its target)."""
    root = os.path.realpath(repo.primary / WORKTREES_DIR)
    parent = os.path.realpath(Path(os.path.abspath(path)).parent)
    return parent == root


def _registrations(repo: Repo, entries: list[WorktreeEntry], here: Path) -> list[_Problem]:
    found = []
    for entry in entries[1:]:
        if entry.bare or os.path.lexists(entry.path):
            continue
        topic = _as_topic_id(entry.path.name)
        finding = _finding(repo, Kind.REGISTRATION_DIR_GONE, entry.path, "", topic)
        if not _ours(repo, entry.path):
            detail = (
                "registered worktree whose directory is gone; not under .claude/worktrees/, so "
                "left for the tool that made it"
            )
            found.append(_Problem(_with(finding, detail)))
        elif unmounted := worktree_unmounted(repo.common_dir, entry.path):
            # A disk or share that is not mounted looks just like a deleted
            # directory, and unregistering would cut every worktree on it off
            # from the repository once it is back ("not a git repository").
            detail = (
                f"its directory is not there because its filesystem is not mounted "
                f"({unmounted.why}); kept: mount it at {unmounted.point}; if it is really "
                f"gone, run `git worktree remove {entry.path}`"
            )
            found.append(_Problem(_with(finding, detail)))
        elif moved := _moved_to(repo, entry.path, here):
            # Its checkout was renamed, not deleted: unregistering would cut
            # that checkout (its index, its HEAD) off from the repository.
            detail = (
                f"its directory moved to {moved}; kept: run `git worktree repair {moved}` "
                "(or move it back)"
            )
            found.append(_Problem(_with(finding, detail)))
        elif worktreelock.locked_by_other(entry):
            # Our own lock keeps other tools' cleanup away, not doctor: the checks below decide.
            detail = (
                f"its directory is gone but it is locked ({entry.lock_reason or 'no reason'}); "
            )
            detail += "run `git worktree unlock` first if it is really gone"
            found.append(_Problem(_with(finding, detail)))
        elif unique := _detached_work(repo, entry):
            # Its HEAD is the only ref to those commits: unregistering it would
            # leave them to the next gc (teardown refuses the same detached HEAD).
            head = (entry.head or "")[:12]
            detail = (
                f"its directory is gone, but its detached HEAD {head} holds {unique} commit(s) "
                f"on no branch, tag or remote; kept: `git branch <name> {head}` keeps them, "
                "then run doctor --repair again"
            )
            found.append(_Problem(_with(finding, detail)))
        elif reflogged := _reflog_work(repo, entry, entries):
            # Unregistering deletes its HEAD's reflog: commits made on a HEAD
            # that moved away since, or on a branch deleted since, are then
            # left to the next gc.
            detail = f"its directory is gone, but {reflogged}; kept"
            found.append(_Problem(_with(finding, detail)))
        elif staged := _staged_work(repo, entry):
            # Unregistering deletes its index, and with it the only reference
            # to what was staged (git add without a commit).
            detail = f"its directory is gone, but its index {staged}; kept"
            found.append(_Problem(_with(finding, detail)))
        elif held := _module_work(repo, entry.path):
            # Unregistering deletes the registration, and the submodule git dirs in it.
            detail = f"its directory is gone, but its registration keeps {held}; kept"
            found.append(_Problem(_with(finding, detail)))
        else:
            detail = "registered worktree whose directory is gone"
            found.append(_Problem(_with(finding, detail), _unregister(repo, entry)))
    return found


def _unlocked(repo: Repo, entries: list[WorktreeEntry]) -> list[_Problem]:
    """Worktrees team-router made before it locked them: other tools' cleanup may delete them.

    Ours: under ``.claude/worktrees/``, named as its worktree by a topic's record
    that is not torn down (nor in the middle of removing it).
    """
    topics = {
        os.path.realpath(record.worktree): record.id
        for record in _records(repo)
        if record.worktree and not record.torn_down and record.removing is None
    }
    found = []
    for entry in entries[1:]:
        topic = topics.get(os.path.realpath(entry.path))
        if entry.bare or entry.locked or topic is None or not _ours(repo, entry.path):
            continue
        if not os.path.isdir(entry.path):
            continue  # its registration's own finding says what to do
        detail = (
            "team-router made this worktree but it is not locked: other tools' cleanup (Claude "
            "Code's among them) deletes unlocked worktrees under .claude/worktrees/; "
            "`team-router doctor --repair` locks it"
        )
        finding = _finding(repo, Kind.UNLOCKED_WORKTREE, entry.path, detail, topic)
        found.append(_Problem(finding, _lock(repo, entry, topic)))
    return found


def _lock(repo: Repo, entry: WorktreeEntry, topic: str) -> Fix:
    def fix() -> str:
        worktreelock.lock(repo.git, entry, topic)
        return f"locked (git worktree lock --reason '{worktreelock.reason_for(topic)}')"

    return fix


def _unfinished_restores(repo: Repo) -> list[_Problem]:
    """Worktrees a killed ``restore`` left half-done (its files back, perhaps not its index)."""
    from router.teardown.snapshot import restores_under_way, snapshot_ref

    found = []
    for path, of in restores_under_way(repo):
        if not os.path.isdir(path):
            continue  # its registration's own finding says what to do
        detail = (
            f"a restore of {snapshot_ref(of)} was interrupted here: what was staged may not "
            f"be staged again yet; run `team-router restore {of}` to finish it"
        )
        finding = _finding(repo, Kind.RESTORE_UNFINISHED, path, detail, _as_topic_id(of))
        found.append(_Problem(finding))
    return found


def _half_made_adds(repo: Repo) -> list[_Problem]:
    """Registrations a restore's killed ``git worktree add`` left before checking anything out.

    Until such a registration is mended or gone, git cannot read its HEAD and
    every walk of all refs fails in the repo. The restore's own rerun removes
    it and makes the worktree again; the repair removes it (only git's
    ``.git`` file is in it, never anything else).
    """
    from router.teardown.snapshot import half_made_adds, read_snapshot, undo_half_made_add

    found = []
    for half in half_made_adds(repo):
        detail = (
            f"a restore of {half.of} was killed inside `git worktree add`, before anything was "
            f"checked out: git cannot use this registration (`git rev-list --all` may fail while "
            f"it is there); `team-router restore {half.of}` removes it and restores, "
            "`team-router doctor --repair` removes it"
        )
        finding = _finding(
            repo, Kind.HALF_MADE_REGISTRATION, half.path, detail, _as_topic_id(half.of)
        )

        def fix(half: object = half) -> str:
            from router.errors import Refusal
            from router.teardown.snapshot import HalfMadeAdd

            assert isinstance(half, HalfMadeAdd)
            try:
                return undo_half_made_add(repo, half, read_snapshot(repo.git, half.of))
            except Refusal as exc:
                raise _NotSafe(exc.message) from None

        found.append(_Problem(finding, fix))
    return found


def _module_work(repo: Repo, path: Path) -> str:
    """What the submodule git dirs a gone worktree's registration keeps hold ("" when nothing)."""
    from router.teardown.nested import survey_registration
    from router.teardown.steps import nested_loss

    holding = [n for n in survey_registration(repo.common_dir, path) if n.holds_work]
    if not holding:
        return ""
    return (
        ", ".join(nested_loss(n) for n in holding)
        + ": push those commits (or drop them), then run doctor --repair again"
    )


def _moved_to(repo: Repo, path: Path, here: Path) -> Path | None:
    """Where the checkout registered at ``path`` went: a directory whose ``.git`` names its registration.

    Looked for only where a move is likely (the checkout doctor runs in, beside
    ``path``, beside the primary clone), never across the disk: a checkout
    moved elsewhere is not found, and its registration is judged as gone.
    """
    admin = g.registration_of(str(repo.common_dir), str(path))
    if admin is None:
        return None
    for candidate in _move_candidates(repo, path, here):
        if candidate.is_dir() and not candidate.is_symlink():
            named = g.checkout_git_dir(candidate)
            if named is not None and os.path.realpath(named) == os.path.realpath(admin):
                return candidate
    return None


def _move_candidates(repo: Repo, path: Path, here: Path) -> Iterator[Path]:
    try:
        found = g.find_git_dir(os.path.abspath(here))
    except g.Unsure:
        found = None
    if found is not None:
        yield Path(found[0])
    for folder in (path.parent, repo.primary.parent):
        try:
            yield from sorted(folder.iterdir())
        except OSError:
            continue


def _registered_as(repo: Repo, folder: Path) -> str | None:
    """The registered path of the linked worktree whose ``.git`` ``folder`` holds (None: none)."""
    named = g.checkout_git_dir(folder)
    admins = {os.path.realpath(a) for a in g.worktree_admin_dirs(str(repo.common_dir))}
    if named is None or os.path.realpath(named) not in admins:
        return None
    dotgit = g.registration_file(named, "gitdir")
    return os.path.dirname(dotgit) if dotgit else None


def _staged_work(repo: Repo, entry: WorktreeEntry) -> str:
    """What a gone worktree's index holds beyond its HEAD ("" when nothing)."""
    admin = g.registration_of(str(repo.common_dir), str(entry.path))
    if admin is None:
        return ""
    index = Path(admin) / "index"
    try:
        staged = repo.git.staged_paths(index, entry.head)
    except GitError as exc:
        return (
            f"{index} cannot be read ({exc.first_line}), so what it stages is unknown: "
            "inspect it, then run `git worktree remove` on the path by hand"
        )
    if not staged:
        return ""
    shown = ", ".join(staged[:_LIST_SHOWN]) + (", ..." if len(staged) > _LIST_SHOWN else "")
    return (
        f"stages {len(staged)} change(s) no commit holds ({shown}): recover them with "
        f"`GIT_INDEX_FILE={index} git checkout-index -a --prefix=<dir>/`, then run "
        "`git worktree remove` on the path by hand"
    )


def _reflog_work(repo: Repo, entry: WorktreeEntry, entries: list[WorktreeEntry]) -> str:
    """What only a gone registration's HEAD reflog keeps ("" when nothing), with the fix."""
    admin = g.registration_of(str(repo.common_dir), str(entry.path))
    if admin is None:
        return ""
    log = head_reflog_where(repo.common_dir, admin)
    heads = [e.head for e in entries if e.path != entry.path and e.head]
    try:
        only = head_reflog_only(repo.git, repo.common_dir, admin, heads=heads)
    except DanglingHead as exc:
        return (
            f"what its HEAD's reflog {log} alone keeps is unknown ({exc}): {exc.fix}, "
            "then run doctor --repair again"
        )
    except (g.Unsure, GitError) as exc:
        why = exc.first_line if isinstance(exc, GitError) else str(exc)
        listed = (
            "the second field of each of its lines names one"
            if os.path.isabs(log)
            else f"`git log -g {head_reflog_name(admin)}` lists them"
        )
        return (
            f"what its HEAD's reflog {log} alone keeps is unknown ({why}): keep those commits "
            f"on a branch ({listed}), then run `git worktree remove` on the path by hand"
        )
    if not only.count:
        return ""
    shown = [c[:12] for c in only.tips[:_LIST_SHOWN]]
    if entry.branch is not None and not repo.git.branch_exists(entry.branch):
        fix = f"`git branch {entry.branch} {shown[0]}` brings its deleted branch back"
    else:
        fix = "`git branch <name> <commit>` keeps each line of work"
    return (
        f"its HEAD's reflog {log} is the only record of {only.count} commit(s) "
        f"(newest first: {', '.join(shown)}); {fix}, then run doctor --repair again"
    )


def _detached_work(repo: Repo, entry: WorktreeEntry) -> int:
    """Commits only a detached registration's HEAD reaches (0 on a branch or an unborn HEAD)."""
    if entry.branch is not None or entry.head is None:
        return 0
    return unique_commits(repo.git, entry.head, except_branch=None)


def _with(finding: Finding, detail: str) -> Finding:
    import dataclasses

    return dataclasses.replace(finding, detail=detail)


def _unregister(repo: Repo, entry: WorktreeEntry) -> Fix:
    path = entry.path

    def fix() -> str:
        if os.path.lexists(path):
            raise _NotSafe(f"{path} exists again; left as it is")
        # Our own lock comes off right before; one explicit path and no --force,
        # so git still refuses for a lock someone else put on it since.
        lifted = worktreelock.lift(repo.git, entry)
        try:
            repo.git.worktree_remove(path, force=False)
        except GitError:
            if lifted:
                worktreelock.put_back(repo.git, entry)
            raise
        return "unregistered (git worktree remove of this one path)"

    return fix


def _unknown_dirs(repo: Repo, entries: list[WorktreeEntry]) -> list[_Problem]:
    root = repo.primary / WORKTREES_DIR
    try:
        children = sorted(root.iterdir())
    except OSError:
        return []
    known = {os.path.realpath(e.path) for e in entries}
    found = []
    for child in children:
        if not child.is_symlink() and os.path.realpath(child) in known:
            continue
        topic = _as_topic_id(child.name)
        finding = _finding(repo, Kind.UNKNOWN_DIR, child, "", topic)
        if child.is_symlink() or not child.is_dir():
            what = "a symlink" if child.is_symlink() else "a file"
            found.append(_Problem(_with(finding, f"{what} git does not know; left as it is")))
            continue
        files = _some_files(child)
        registered = _registered_as(repo, child)
        if registered is not None and os.path.lexists(registered):
            # A copy: repairing would point the live worktree's registration here.
            detail = (
                f"its .git names the registration of the worktree at {registered}, which is "
                "still there (a copy?); left as it is: move it away"
            )
            found.append(_Problem(_with(finding, detail)))
        elif registered is not None:
            detail = (
                f"a worktree moved here from {registered}; run `git worktree repair {child}` "
                "so git finds it here"
            )
            found.append(_Problem(_with(finding, detail)))
        elif files:
            detail = "directory git does not know, holding " + ", ".join(files)
            detail += "; run `team-router sweep` (it removes only residue) or move it away"
            found.append(_Problem(_with(finding, detail)))
        else:
            found.append(
                _Problem(_with(finding, "empty directory git does not know"), _rmdir(child))
            )
    return found


def _some_files(folder: Path) -> list[str]:
    shown: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(Path(dirpath, d))]:
            shown.append(os.path.relpath(Path(dirpath, name), folder))
            if len(shown) >= _LIST_SHOWN:
                return [*shown, "..."]
    return shown


def _rmdir(path: Path) -> Fix:
    def fix() -> str:
        try:
            # rmdir, never rmtree: it fails if anything appeared in the meantime.
            path.rmdir()
        except OSError as exc:
            raise _NotSafe(f"not removed: {exc.strerror}") from None
        return "removed the empty directory"

    return fix


def _branches(repo: Repo, entries: list[WorktreeEntry]) -> list[_Problem]:
    held = {e.branch for e in entries if e.branch}
    found = []
    for record in _records(repo):
        branch = record.branch
        if not record.branch_created or branch in held or not repo.git.branch_exists(branch):
            continue
        finding = _finding(repo, Kind.ORPHAN_BRANCH, f"refs/heads/{branch}", "", record.id)
        detail = "branch this tool created; no worktree has it checked out"
        found.append(_Problem(_with(finding, detail), _delete_branch(repo, branch)))
    return found


def _delete_branch(repo: Repo, branch: str) -> Fix:
    def fix() -> str:
        if any(e.branch == branch for e in repo.git.worktree_list()):
            raise _NotSafe("a worktree has it checked out again; kept")
        tip = repo.git.rev_parse(f"refs/heads/{branch}")
        if tip is None:
            return "already gone"
        unique = unique_commits(repo.git, tip, except_branch=branch)
        if unique:
            raise _NotSafe(
                f"kept: {unique} commit(s) exist on no other branch, tag or remote; "
                f"run `team-router teardown {branch}` or push it"
            )
        common = str(repo.common_dir)
        busy = g.busy_with_branch(common, branch)
        if busy is not None:
            raise _NotSafe(f"a rebase or bisect under way in {busy} works on it; kept")
        checked_out = g.checked_out_branches(common)
        if checked_out is None:
            # Unsure who has it: `git branch -D` decides, refusing a checked-out branch.
            repo.git.branch_delete(branch)
            return f"deleted (its tip {tip[:12]} is on another ref)"
        if branch in checked_out:
            raise _NotSafe("a worktree has it checked out again; kept")
        # Deleted only while it is still at the judged tip (git checks and
        # deletes in one step): a commit made on it meanwhile keeps it.
        if not repo.git.branch_delete_at(branch, tip):
            raise _NotSafe("it moved while doctor judged it; kept: run doctor --repair again")
        left = repo.git.drop_branch_config(branch)
        return f"deleted (its tip {tip[:12]} is on another ref){left}"

    return fix


def _record_problems(repo: Repo, entries: list[WorktreeEntry]) -> list[_Problem]:
    found = []
    for topic_id in state.list_records(repo.common_dir):
        path = state.record_path(repo.common_dir, topic_id)
        try:
            record = state.read_record(repo.common_dir, topic_id)
        except state.RecordCorrupt as exc:
            detail = f"{exc.reason}; not trusted, not deleted: fix or move it by hand"
            found.append(_Problem(_finding(repo, Kind.RECORD_CORRUPT, path, detail, topic_id)))
            continue
        if record is None:
            continue
        found += _record_checks(repo, record, path)
    for aside in state.corrupt_records(repo.common_dir):
        topic = _as_topic_id(aside.name.partition(".json")[0])
        detail = "a record that did not parse, set aside when a new one was written; inspect it, then delete it by hand"
        found.append(_Problem(_finding(repo, Kind.RECORD_CORRUPT, aside, detail, topic)))
    return found


def _record_checks(repo: Repo, record: state.TopicRecord, path: Path) -> list[_Problem]:
    if record.torn_down:
        # Teardown keeps the record, marked complete, so a second teardown still
        # knows the topic and exits 0: that is a tombstone, not an inconsistency.
        return []
    if record.worktree is None:
        if record.creating:
            detail = (
                f"creation stopped after {record.steps[-1]!r}; run the same `team-router new` or "
                "`team-router worktrees` again to finish it"
            )
            return [_Problem(_finding(repo, Kind.RECORD_INCOMPLETE, path, detail, record.id))]
        return []
    worktree = Path(record.worktree)
    if os.path.realpath(worktree) == str(repo.primary) or os.path.lexists(worktree):
        return []
    unmounted = worktree_unmounted(repo.common_dir, worktree)
    if unmounted is not None:
        # Not gone: its branch and record are still the topic's (teardown refuses too).
        detail = (
            f"its worktree {worktree} is not there because its filesystem is not mounted "
            f"({unmounted.why}); kept: mount it at {unmounted.point}"
        )
        return [_Problem(_finding(repo, Kind.RECORD_DIR_GONE, path, detail, record.id))]
    detail = f"its worktree {worktree} is gone"
    finding = _finding(repo, Kind.RECORD_DIR_GONE, path, detail, record.id)
    return [_Problem(finding, _drop_record(repo, record))]


def _drop_record(repo: Repo, record: state.TopicRecord) -> Fix:
    def fix() -> str:
        # Only a record that describes nothing any more goes: while its branch
        # or another repo's worktree survives, teardown still needs it.
        if os.path.lexists(record.worktree or ""):
            raise _NotSafe("its worktree is back; kept")
        if repo.git.branch_exists(record.branch):
            raise _NotSafe(
                f"kept: branch {record.branch} still exists; run `team-router teardown {record.id}`"
            )
        snapshot = _snapshot_of(repo, record.branch)
        if snapshot is not None:
            # A teardown stopped after its snapshot: the record is what names
            # the topic's other repos for `restore`, and the rerun marks it done.
            raise _NotSafe(
                f"kept: {snapshot} holds a snapshot of its work; run `team-router teardown "
                f"{record.id}` to finish the teardown, or `team-router restore {record.id}`"
            )
        if any(
            r.worktree and os.path.lexists(r.worktree) for r in record.repos if r.name != "home"
        ):
            raise _NotSafe(
                f"kept: other repos of the topic still have worktrees; run `team-router teardown {record.id}`"
            )
        state.delete_record(repo.common_dir, record.id)
        return "deleted the record (no worktree and no branch left)"

    return fix


def _snapshot_of(repo: Repo, branch: str) -> str | None:
    """The snapshot ref of ``branch`` when it exists (None: no snapshot)."""
    from router.teardown.snapshot import snapshot_ref

    ref = snapshot_ref(branch)
    return ref if repo.git.rev_parse(ref) is not None else None


def _locks(repo: Repo) -> list[_Problem]:
    found = []
    for owner in state.lock_owners(repo.common_dir):
        if not owner.stale:
            continue
        detail = f"owner file of process {owner.pid}, which is gone (a crashed run)"
        finding = _finding(repo, Kind.STALE_LOCK, owner.path, detail, _as_topic_id(owner.name))
        found.append(_Problem(finding, _drop_owner(owner), lock=owner.name))
    return found


def _drop_owner(owner: state.LockOwner) -> Fix:
    def fix() -> str:
        # Called while doctor holds this very lock, so no live process owns it.
        with contextlib.suppress(FileNotFoundError):
            owner.path.unlink()
        return "dropped the owner file (the lock itself is free)"

    return fix


def _holders(repo: Repo) -> list[_Problem]:
    found = []
    for topic_id in holders.topics_with_holders(repo.common_dir):
        for item in holders.read_all(repo.common_dir, topic_id):
            if item.holder is None:
                detail = f"holder file {item.problem}; not trusted, not deleted"
                found.append(
                    _Problem(_finding(repo, Kind.HOLDER_CORRUPT, item.path, detail, topic_id))
                )
            elif not holders.is_live(item.holder):
                detail = f"{holders.describe(item.holder)} is gone"
                finding = _finding(repo, Kind.STALE_HOLDER, item.path, detail, topic_id)
                found.append(_Problem(finding, _drop_holder(item.path)))
    return found


def _drop_holder(path: Path) -> Fix:
    def fix() -> str:
        holders.drop(path)
        return "dropped the stale holder"

    return fix


# -- repos.md ## Worktrees ----------------------------------------------------------


def _worktrees_sections(home: Repo) -> list[_Problem]:
    from router.plandir.reposmd import REPOS_MD
    from router.topic.discovery import candidates

    found = []
    seen: set[str] = set()
    for plan in candidates(home):
        if plan.id in seen or not (plan.path / REPOS_MD).is_file():
            continue
        seen.add(plan.id)
        for problem in _section_disagreements(home, plan.id, plan.path / REPOS_MD):
            finding = _finding(home, Kind.WORKTREES_SECTION, plan.path / REPOS_MD, problem, plan.id)
            found.append(_Problem(finding))
    return found


def _section_disagreements(home: Repo, topic_id: str, path: Path) -> list[str]:
    from router.plandir.reposmd import read_repos_md

    try:
        parsed = read_repos_md(path)
    except BadInput as exc:
        return [f"repos.md cannot be checked: {exc.message}"]
    if parsed.worktrees_span is None:
        return []
    listed = _section_lines(parsed)
    actual = _actual_locations(home, parsed, topic_id)
    problems = []
    for name, where in listed.items():
        if name not in actual:
            problems.append(
                f"lists {name!r}, which is not a repo of this topic that passed containment"
            )
        elif os.path.realpath(where) not in actual[name].all:
            problems.append(f"{name}: lists {where}, but git has no checkout of it there")
    for name, place in actual.items():
        if place.worktrees and name not in listed:
            problems.append(
                f"{name} has a worktree ({place.worktrees[0]}) the section does not list"
            )
    return [f"{p}; run `team-router worktrees {topic_id}` to rewrite it" for p in problems]


@dataclass(frozen=True, slots=True)
class _Places:
    """Where a repo of the topic may be worked on: its main tree (a fallback) or a worktree."""

    primary: str
    worktrees: list[str]

    @property
    def all(self) -> set[str]:
        return {self.primary, *self.worktrees}


def _section_lines(parsed) -> dict[str, str]:
    from router.plandir.reposmd import worktree_lines

    return {line.name: line.path for line in worktree_lines(parsed)}


def _actual_locations(home: Repo, parsed, topic_id: str) -> dict[str, _Places]:
    """Per repo name: its primary root and its worktrees on the topic's branch, per git."""
    from router.names import branch_for

    branch = branch_for(topic_id)
    repos: dict[str, Repo] = {"home": home}
    verdicts = contain_all([spec.path for spec in parsed.secondaries], home)
    for spec, verdict in zip(parsed.secondaries, verdicts, strict=True):
        if verdict.repo is not None:
            repos[spec.name] = verdict.repo
    actual = {}
    for name, repo in repos.items():
        try:
            entries = repo.git.worktree_list()
        except GitError:
            continue
        # A checkout `new` reused keeps its own branch; the repo's record names it.
        wanted = {branch, _recorded_branch(repo, topic_id) or branch}
        on_branch = sorted(os.path.realpath(e.path) for e in entries[1:] if e.branch in wanted)
        actual[name] = _Places(str(repo.primary), on_branch)
    return actual


def _recorded_branch(repo: Repo, topic_id: str) -> str | None:
    record = state.read_record_or_none(repo.common_dir, topic_id)  # corrupt: its own check
    return record.branch if record is not None else None


# -- repairing ------------------------------------------------------------------------

_ORDER = {
    # Registrations before directories and branches (a registration holds its
    # branch); branches before records (a record goes only once its branch has).
    Kind.REGISTRATION_DIR_GONE: 0,
    Kind.UNKNOWN_DIR: 1,
    Kind.ORPHAN_BRANCH: 2,
    Kind.RECORD_DIR_GONE: 3,
    Kind.STALE_HOLDER: 4,
    Kind.STALE_LOCK: 5,
}


def _guarded(problem: _Problem, repos: list[Repo], held: set[tuple[str, str]]) -> _Problem:
    """A problem that appeared after the locks were taken is reported, not repaired."""
    import dataclasses

    from router.create.pipeline import REPO_LOCK

    name = problem.lock_name
    if problem.fix is None or name is None or name == REPO_LOCK:
        return problem
    common = next(str(r.common_dir) for r in repos if r.primary == problem.finding.repo)
    if (common, name) in held:
        return problem

    def later() -> str:
        raise _NotSafe(
            "appeared while doctor was repairing; run `team-router doctor --repair` again"
        )

    return dataclasses.replace(problem, fix=later)


def _topic_home(repo: Repo, name: str) -> Repo:
    """The home of the topic ``name`` as seen from ``repo`` (``repo`` itself for a home)."""
    from router.topic.discovery import home_repo

    return home_repo(repo, name) if ID_RE.fullmatch(name) else repo


def _repair_order(problems: list[_Problem]) -> list[_Problem]:
    return sorted(problems, key=lambda p: _ORDER.get(p.finding.kind, 9))


def _apply(problem: _Problem) -> Finding:
    import dataclasses

    finding, fix = problem.finding, problem.fix
    if fix is None:
        return finding
    return interrupt.unless_stopped(
        lambda: _repair(finding, fix),
        lambda why, _started: dataclasses.replace(finding, detail=f"{finding.detail}; {why}"),
    )


def _repair(finding: Finding, fix: Fix) -> Finding:
    import dataclasses

    try:
        done = fix()
    except _NotSafe as exc:
        return dataclasses.replace(finding, detail=f"{finding.detail}; {exc}")
    except GitError as exc:
        return dataclasses.replace(finding, detail=f"{finding.detail}; repair failed: {exc}")
    except OSError as exc:
        why = describe_io(exc)
        return dataclasses.replace(finding, detail=f"{finding.detail}; repair failed: {why}")
    return dataclasses.replace(finding, detail=f"{finding.detail}; {done}", repaired=True)


@contextlib.contextmanager
def _repair_locks(
    home: Repo, repos: list[Repo], problems: list[_Problem], wait: float
) -> Iterator[set[tuple[str, str]]]:
    """Every topic lock the repairs touch (sorted), then each repo's ``_repo`` lock.

    Creation takes a topic lock and then ``_repo``; taking them in the same
    order here means doctor and a running ``new`` can never wait on each other
    in a circle.
    """
    from router.create.pipeline import REPO_LOCK

    wanted: set[tuple[str, str]] = set()
    by_dir = {str(r.common_dir): r.common_dir for r in repos}
    homes: dict[str, Path] = {}  # topic homes outside ``repos``: their topic lock only
    for problem in problems:
        name = problem.lock_name
        if problem.fix is None or name is None or name == REPO_LOCK:
            continue
        repo = next(r for r in repos if r.primary == problem.finding.repo)
        wanted.add((str(repo.common_dir), name))
        if problem.finding.kind is not Kind.STALE_LOCK:
            wanted.add((str(home.common_dir), name))
            # Run in a secondary, ``home`` is that repo; teardown and the other
            # commands lock the topic where the secondary's record names its home.
            topic_home = _topic_home(repo, name)
            homes[str(topic_home.common_dir)] = topic_home.common_dir
            wanted.add((str(topic_home.common_dir), name))
    with contextlib.ExitStack() as stack:
        for common, name in sorted(wanted):
            stack.enter_context(state.held_lock({**homes, **by_dir}[common], name, wait=wait))
        for common in sorted(by_dir):
            stack.enter_context(state.held_lock(by_dir[common], REPO_LOCK, wait=wait))
        yield wanted
