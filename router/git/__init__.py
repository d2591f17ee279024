"""The one git boundary: every git process team-router starts is started here.

Callers get typed results (``WorktreeEntry``, ``StatusReport``), never raw text.
Commands are argument lists (never a shell), user-supplied names come after
``--`` wherever git accepts it, and output that is parsed is requested in a
machine format (``--porcelain``, ``-z``) under ``LC_ALL=C``.

git runs through :mod:`subprocess` directly rather than GitPython's command
layer: importing GitPython costs about 120 ms (70 ms for ``git.cmd`` alone),
which is twice the whole budget of the session-start hook and more than the
overhead ``new`` may add to a bare ``git worktree add`` (DESIGN §15).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from router import gitfiles
from router.git.run import (
    GitError,
    Runner,
    Running,
    base_env,
    verified,
)
from router.git.run import (
    GitMissing as GitMissing,
)

FETCH_TIMEOUT = 20.0  # seconds; a network command must never hang a pipeline
# git >= 2.32 parallel checkout: 0 is one worker per core. The checkout is
# most of the cost of creating a worktree; callers that already create several
# worktrees at once pass 1, since their threads keep the cores busy.
ALL_CORES = 0

# The reason `git worktree add` locks a worktree with while it creates it
# (LC_ALL=C); git removes the lock when the checkout is done, so a kill leaves it.
ADD_IN_PROGRESS = "initializing"


def left_locks(common_dir: Path) -> list[Path]:
    """git lock files in a repo's git dir: each one a git that is running now, or one killed.

    Looked for where git's ref, index, worktree and cherry-pick commands put them
    (the git dir itself, ``refs/``, each ``worktrees/<name>/``, ``sequencer/``), not in ``objects/``
    (large, and its ``maintenance.lock`` only makes auto-maintenance skip).
    """
    found = sorted(common_dir.glob("*.lock")) + sorted(common_dir.glob("worktrees/*/*.lock"))
    found += sorted(common_dir.glob("sequencer/*.lock"))
    refs = common_dir / "refs"
    if refs.is_dir():
        found += sorted(refs.rglob("*.lock"))
    return found


def left_lock_warnings(name: str, primary: Path, common_dir: Path) -> list[str]:
    """One warning for each git lock file left in repo ``name`` (:func:`left_locks`), with the fix.

    A git killed mid-command (a Ctrl-C, a kill of the whole run) leaves its
    lock behind, and every later git command that needs it fails. team-router
    never removes one (it cannot tell a killed git from a running one), so it
    says where they are. A lock a live process holds open is a git at work
    (another topic's checkout, say), never named: removing it would break that git.
    """
    from router.topic.holders import processes_using

    locks = left_locks(common_dir)
    held = (processes_using([os.path.realpath(lock) for lock in locks]) or {}) if locks else {}
    return [
        f"{name}: {lock} is a git lock file; if no git command is running in "
        f"{primary}, remove it (a killed git left it behind)"
        for lock in locks
        if os.path.realpath(lock) not in held
    ]


@dataclass(frozen=True, slots=True)
class WorktreeEntry:
    """One entry of ``git worktree list --porcelain`` (or the same read from git's files)."""

    path: Path
    head: str | None  # None for a worktree on an unborn branch
    branch: str | None  # short name; None when detached
    bare: bool = False
    locked: bool = False
    lock_reason: str = ""
    prunable: bool = False


@dataclass(frozen=True, slots=True)
class RepoLayout:
    """Where a checkout's top level, git dir and common git dir are (real paths)."""

    toplevel: Path
    git_dir: Path
    common_dir: Path

    @property
    def is_linked_worktree(self) -> bool:
        return self.git_dir != self.common_dir


@dataclass(frozen=True, slots=True)
class StatusReport:
    """``git status --porcelain``: tracked paths with changes, then untracked ones."""

    tracked: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()

    @property
    def dirty(self) -> bool:
        return bool(self.tracked or self.untracked)


@dataclass(frozen=True, slots=True)
class CherryEntry:
    """One line of ``git cherry``: a commit and whether upstream has its patch."""

    sha: str
    present: bool  # True when an equivalent patch is already upstream ("-")


class Git(Runner):
    """git anchored to one directory (``git -C <cwd>``): what team-router asks it."""

    __slots__ = ()

    def blob(self, sha: str) -> bytes:
        """The exact bytes of blob ``sha`` (text mode would turn its CRLFs into LFs)."""
        return self.run_bytes("cat-file", "blob", sha)

    # -- where am I -----------------------------------------------------------

    def layout(self) -> RepoLayout:
        """Top level, git dir and common git dir of the checkout at cwd (absolute)."""
        return self._layout(with_head=False)[0]

    def checkout_state(self) -> tuple[RepoLayout, str | None]:
        """Layout and checked-out branch in one process (``None`` when detached)."""
        return self._layout(with_head=True)

    def _layout(self, *, with_head: bool) -> tuple[RepoLayout, str | None]:
        head_args = ("--symbolic-full-name", "HEAD") if with_head else ()
        lines = self.out(
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
            *head_args,
        ).splitlines()
        if len(lines) != (4 if with_head else 3):
            raise GitError(["git", "rev-parse"], 128, "not a work tree")
        top, gdir, common = (Path(os.path.realpath(x)) for x in lines[:3])
        head = lines[3].strip() if with_head else ""
        branch = head.removeprefix("refs/heads/") if head.startswith("refs/heads/") else None
        return RepoLayout(top, gdir, common), branch

    def try_layout(self) -> RepoLayout | None:
        try:
            return self.layout()
        except GitError:
            return None

    def checkout_layout(self) -> RepoLayout | None:
        """The layout of the checkout whose top level is cwd; None when cwd is not one.

        Read from the checkout's files when they show the plain layout (one
        process fewer per repo of a topic), else git's own answer.
        """
        plain = self.files_layout()
        if plain is not None:
            return plain
        layout = self.try_layout()
        return (
            layout
            if layout is not None and layout.toplevel == Path(os.path.realpath(self.cwd))
            else None
        )

    def top_checkout_state(self) -> tuple[RepoLayout, str | None]:
        """:meth:`checkout_state` of the checkout whose top level is cwd, from its files when plain.

        Raises GitError when git, asked because the layout is not the plain
        one, finds no checkout there.
        """
        layout = self.files_layout()
        if layout is None:
            return self.checkout_state()
        return layout, gitfiles.head_branch(os.path.join(layout.git_dir, "HEAD"))

    def files_layout(self) -> RepoLayout | None:
        """The layout of the checkout whose top level is cwd, from its files; None unless plain."""
        plain = self._plain_layout()
        return RepoLayout(*(Path(p) for p in plain)) if plain is not None else None

    def toplevel(self) -> Path | None:
        res = self.run("rev-parse", "--show-toplevel", check=False)
        return Path(os.path.realpath(res.stdout.strip())) if res.ok and res.stdout.strip() else None

    def common_dir(self) -> Path:
        return Path(
            os.path.realpath(self.out("rev-parse", "--path-format=absolute", "--git-common-dir"))
        )

    def current_branch(self) -> str | None:
        """Short name of the checked-out branch; None when detached."""
        res = self.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
        return res.stdout.strip() or None if res.ok else None

    # -- refs and commits -----------------------------------------------------

    def rev_parse(self, rev: str) -> str | None:
        """The commit ``rev`` names, or None when it does not resolve.

        Raises GitError when git could not answer (not a repository, a
        corrupt one): a failed read is never "there is no such commit".
        """
        res = self.run(
            "rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}", check=False
        )
        return verified(res)

    def commits(self, revs: Sequence[str]) -> dict[str, str | None]:
        """What :meth:`rev_parse` answers for each of ``revs``: from git's files, or one process.

        Full names of branches and remote-tracking refs, and ``HEAD``, are read
        from git's files when the checkout at cwd is in the plain layout
        (:func:`gitfiles.read_ref`). Anything else is one git process for all:
        ``cat-file --batch-check`` resolves each line as ``rev-parse --verify``
        does and answers "<rev> missing" for one that does not resolve, where a
        single ``rev-parse`` with several revisions stops at the first such one.
        """
        if not revs:
            return {}
        # Read from the files, a ref naming an object the repository lacks (a
        # corrupt repo: git writes a ref only after its object) is answered as
        # that id, where ``rev-parse --verify`` answers None. Left unchecked on
        # purpose, as no caller can lose work by it; each errs towards "it
        # exists". Creation keeps such a branch (branch_created stays False, so
        # teardown never deletes it) and refuses a half-made worktree whose
        # branch left its base; its id then reaches git (worktree add, ls-tree,
        # merge-base), which fails on the missing object. A branch deleted at
        # its recorded base loses only the ref (the record keeps the id). A
        # .teamteardown pin at such an id finds no file, so no line runs, as
        # reading that ref unpinned would. A new caller that deletes on
        # "absent", or proves a merge from this answer, must ask git instead.
        plain = self._plain_layout() if all(map(gitfiles.readable_ref, revs)) else None
        if plain is not None:
            # Branches, remote-tracking refs and HEAD: from git's files, no process.
            try:
                return gitfiles.read_refs(plain[2], plain[1], list(revs))
            except gitfiles.Unsure:
                pass
        if any("\n" in rev for rev in revs):
            return {rev: self.rev_parse(rev) for rev in revs}  # one per line: never split one
        lines = "".join(f"{rev}^{{commit}}\n" for rev in revs)
        out = self.run(
            "cat-file", "--batch-check=%(objectname) %(objecttype)", input=lines
        ).stdout.splitlines()
        if len(out) != len(revs):
            raise GitError(["git", "cat-file"], 128, "unexpected --batch-check answer")
        found: dict[str, str | None] = {}
        for rev, line in zip(revs, out, strict=True):
            sha, _, kind = line.partition(" ")
            found[rev] = sha if kind == "commit" else None
        return found

    def symbolic_target(self, ref: str) -> str | None:
        res = self.run("symbolic-ref", "-q", ref, check=False)
        return res.stdout.strip() or None if res.ok else None

    def existing_refs(self, refs: Sequence[str]) -> set[str]:
        """Which of the given full ref names exist (one process for all)."""
        if not refs:
            return set()
        out = self.out("for-each-ref", "--format=%(refname)", "--", *refs)
        return set(out.splitlines())

    def refs_under(self, *prefixes: str) -> dict[str, str]:
        """Every ref under ``prefixes`` mapped to its symref target ("" for a plain ref)."""
        out = self.out("for-each-ref", "--format=%(refname)%00%(symref)", "--", *prefixes)
        refs = {}
        for line in out.splitlines():
            name, _, target = line.partition("\0")
            refs[name] = target
        return refs

    def ref_tips(self, *prefixes: str) -> dict[str, tuple[str, str]]:
        """Every ref under ``prefixes`` -> (its commit, its symref target or ""), in one process."""
        out = self.out(
            "for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)", "--", *prefixes
        )
        tips = {}
        for line in out.splitlines():
            name, _, rest = line.partition("\0")
            sha, _, target = rest.partition("\0")
            tips[name] = (sha, target)
        return tips

    def branch_exists(self, branch: str) -> bool:
        return self.ok("show-ref", "--verify", "--quiet", "--", f"refs/heads/{branch}")

    def local_branches(self) -> list[str]:
        out = self.out("for-each-ref", "--format=%(refname:short)", "refs/heads/")
        return [b for b in out.splitlines() if b]

    def check_ref_format_branch(self, name: str) -> bool:
        return self.ok("check-ref-format", "--branch", name)

    def config_get(self, key: str) -> str | None:
        res = self.run("config", "--get", "--", key, check=False)
        return res.stdout.strip() if res.ok else None

    def has_remote(self, name: str = "origin") -> bool:
        return name in self.out("remote").splitlines()

    def remote_url(self, name: str = "origin") -> str | None:
        return self.config_get(f"remote.{name}.url")

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self.ok("merge-base", "--is-ancestor", ancestor, descendant)

    def merge_base(self, a: str, b: str) -> str | None:
        res = self.run("merge-base", a, b, check=False)
        return res.stdout.strip() or None if res.ok else None

    def rev_list(self, range_: str, *, limit: int | None = None) -> list[str]:
        args = ["rev-list"]
        if limit is not None:
            args.append(f"--max-count={limit}")
        return [x for x in self.out(*args, range_, "--").splitlines() if x]

    def count_commits(self, range_: str) -> int:
        return int(self.out("rev-list", "--count", range_, "--") or 0)

    def cherry(self, upstream: str, head: str) -> list[CherryEntry]:
        """``git cherry upstream head``: commits of head and whether upstream has their patch."""
        out = self.out("cherry", upstream, head)
        entries = []
        for line in out.splitlines():
            sign, _, sha = line.partition(" ")
            entries.append(CherryEntry(sha.strip(), sign == "-"))
        return entries

    def tree_of(self, rev: str) -> str | None:
        """The tree ``rev`` names, or None when it does not resolve (raises as :meth:`rev_parse`)."""
        res = self.run("rev-parse", "-q", "--verify", f"{rev}^{{tree}}", check=False)
        return verified(res)

    def merge_tree(self, ours: str, theirs: str) -> str | None:
        """Tree of a clean ``merge-tree --write-tree`` merge; None on conflict or failure."""
        res = self.run("merge-tree", "--write-tree", ours, theirs, check=False)
        if not res.ok:
            return None
        return res.stdout.splitlines()[0].strip() if res.stdout else None

    def show_file(self, rev: str, path: str) -> str | None:
        """Content of ``path`` at ``rev``; None when absent."""
        res = self.run("show", f"{rev}:{path}", check=False)
        return res.stdout if res.ok else None

    def ls_files(self, path: str) -> list[str] | None:
        """Tracked files under ``path``; None when the check itself failed."""
        res = self.run("ls-files", "-z", "--", path, check=False)
        if not res.ok:
            return None
        return [p for p in res.stdout.split("\0") if p]

    def ignored_untracked_files(self) -> list[str]:
        """Untracked files git ignores, relative to the top level."""
        out = self.run("ls-files", "-z", "--others", "--ignored", "--exclude-standard").stdout
        return [p for p in out.split("\0") if p]

    def is_ignored(self, paths: Sequence[str]) -> set[str]:
        if not paths:
            return set()
        res = self.run("check-ignore", "-z", "--stdin", input="\0".join(paths) + "\0", check=False)
        return {p for p in res.stdout.split("\0") if p}

    # -- network --------------------------------------------------------------

    def fetch(self, remote: str = "origin", *, timeout: float = FETCH_TIMEOUT) -> GitError | None:
        """Best-effort ``git fetch --quiet remote``: None on success, else the error."""
        return self.start_fetch(remote, timeout=timeout).error()

    def start_fetch(self, remote: str = "origin", *, timeout: float = FETCH_TIMEOUT) -> Running:
        """:meth:`fetch`, started: the process runs while the caller goes on."""
        # No auto-maintenance: a background gc is the user's git's business,
        # not a cost to add to every worktree we create.
        return self.start("fetch", "--quiet", "--no-auto-maintenance", remote, timeout=timeout)

    # -- worktrees ------------------------------------------------------------

    def worktree_list(self) -> list[WorktreeEntry]:
        """``git worktree list --porcelain -z``; the first entry is the main worktree.

        For a checkout top level in the plain layout, the same list read from
        git's files (:func:`gitfiles.listed_worktrees`); otherwise git is asked.
        """
        plain = self._plain_layout()
        if plain is not None:
            try:
                listed = gitfiles.listed_worktrees(plain[2])
            except gitfiles.Unsure:
                pass
            else:
                return [
                    WorktreeEntry(
                        Path(path),
                        head,
                        branch,
                        locked=reason is not None,
                        lock_reason=reason or "",
                        prunable=prunable,
                    )
                    for path, head, branch, reason, prunable in listed
                ]
        out = self.run("worktree", "list", "--porcelain", "-z").stdout
        return parse_worktree_list(out)

    def _plain_layout(self) -> tuple[str, str, str] | None:
        """:func:`gitfiles.plain_layout` of cwd, when git here would read the files it reads."""
        return None if self.env else gitfiles.plain_layout(str(self.cwd))

    def worktree_add(
        self,
        path: Path,
        branch: str,
        *,
        base: str | None,
        workers: int = ALL_CORES,
        lock_reason: str | None = None,
    ) -> None:
        """Add a worktree: with ``base`` create ``branch`` there, else attach the existing branch.

        ``lock_reason``: the worktree is locked with it from the moment git
        registers it (``--lock --reason`` writes the reason where git would
        otherwise write "initializing"), so it is never unlocked for a moment.
        """
        # --no-track: a branch cut from origin/HEAD must not take origin/main as
        # its upstream, or a later pull/push in the worktree would target main.
        new = ["--no-track", "-b", branch] if base is not None else []
        lock = ["--lock", "--reason", lock_reason] if lock_reason is not None else []
        start = [base] if base is not None else [branch]
        self.run(
            "worktree",
            "add",
            "--quiet",
            *new,
            *lock,
            "--",
            str(path),
            *start,
            config=[f"checkout.workers={workers}"],
        )

    def worktree_lock(self, path: Path, reason: str) -> None:
        """``git worktree lock --reason``: other tools' cleanup (``git worktree prune``) skips it."""
        self.run("worktree", "lock", "--reason", reason, "--", str(path))

    def worktree_unlock(self, path: Path) -> None:
        self.run("worktree", "unlock", "--", str(path))

    def index_file(self) -> Path | None:
        """The index file of the checkout at cwd (it may not exist); None when git does not answer.

        For a checkout top level in the plain layout, its git dir's ``index``
        (read from its files, as git would); otherwise git is asked.
        """
        plain = self.files_layout()
        if plain is not None:
            return plain.git_dir / "index"
        try:
            out = self.out("rev-parse", "--path-format=absolute", "--git-path", "index")
        except GitError:
            return None
        return Path(out) if out else None

    def staged_paths(self, index: Path, head: str | None) -> list[str]:
        """Paths where the index file ``index`` differs from commit ``head`` (None: unborn).

        Reads another checkout's index without its work tree (it may be gone):
        ``--cached`` never looks at files, and neither command writes the index.
        A missing index file holds nothing. Raises GitError on an index git
        cannot read.
        """
        if not os.path.exists(index):
            return []
        env = {"GIT_INDEX_FILE": str(index)}
        if head is None:
            out = self.out("ls-files", "-z", env=env)
        else:
            out = self.out("diff-index", "--cached", "--name-only", "-z", head, "--", env=env)
        return [p for p in out.split("\0") if p]

    def worktree_remove(self, path: Path, *, force: bool, keep_locked: bool = False) -> None:
        """``git worktree remove``; ``force`` also removes a locked one unless ``keep_locked``.

        Without ``force`` git's own check refuses a worktree with changes: its
        internal ``git status`` must list untracked files whatever the user's
        ``status.showUntrackedFiles`` says (with ``no`` it would remove them).
        """
        args = ["worktree", "remove"]
        if force:
            # Twice: a locked worktree needs -f -f (callers decide about locks first).
            args += ["--force"] if keep_locked else ["--force", "--force"]
        self.run(*args, "--", str(path), config=["status.showUntrackedFiles=all"])

    def branch_delete(self, branch: str) -> None:
        self.run("branch", "-D", "--", branch)

    def branch_delete_at(self, branch: str, tip: str) -> bool:
        """Delete ``branch`` only while it points at ``tip`` (git checks and deletes atomically).

        False when the branch has moved (or is gone): nothing was deleted. The
        caller checks first that no checkout has the branch (``git branch -D``
        would refuse) and drops its ``branch.<name>`` config section.
        """
        try:
            self.run("update-ref", "-d", f"refs/heads/{branch}", tip)
        except GitError as exc:
            if "but expected" in exc.stderr or "unable to resolve reference" in exc.stderr:
                return False
            raise
        return True

    def remove_config_section(self, section: str) -> None:
        self.run("config", "--remove-section", "--", section)

    def drop_branch_config(self, branch: str) -> str:
        """Remove ``branch.<name>`` as ``git branch -D`` would; what stays, said as a suffix."""
        try:
            self.remove_config_section(f"branch.{branch}")
        except GitError as exc:
            # No section (never pushed), or one set only in a global file, which
            # `git branch -D` leaves too.
            if "no such section" not in exc.stderr:
                return f"; its config section branch.{branch} stays ({exc.first_line})"
        return ""

    # -- working tree state ---------------------------------------------------

    def status(self) -> StatusReport:
        """Tracked changes and untracked files, reported separately.

        core.fsmonitor is disabled (in :meth:`Git.run`): another checkout's
        fsmonitor daemon may be stale or absent, and status must reflect the disk.
        """
        out = self.run(
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=none",
        ).stdout
        return parse_status(out)

    def head(self) -> str | None:
        return self.rev_parse("HEAD")


# -- demo fixtures: throw-away repositories with a local bare origin -------------


def init_repo(path: Path, *, branch: str, bare: bool = False) -> Git:
    """``git init`` a new repository at ``path`` on ``branch``; the Git anchored there."""
    path.mkdir(parents=True, exist_ok=True)
    # -b, not init.defaultBranch: a fresh machine may have no config at all.
    args = ["init", "--quiet", "-b", branch]
    if bare:
        args.append("--bare")
    Git(path).run(*args)
    return Git(path)


def commit_all(git: Git, message: str) -> str:
    """Stage everything in the checkout and commit it; the new commit's sha."""
    git.run("add", "--all")
    git.run("commit", "--quiet", "--no-verify", "-m", message)
    return git.out("rev-parse", "HEAD")


def add_remote(git: Git, name: str, url: str) -> None:
    git.run("remote", "add", "--", name, url)


def push(git: Git, remote: str, branch: str, *, set_head: bool = False) -> None:
    """Push ``branch`` with upstream tracking; ``set_head`` also points ``<remote>/HEAD`` at it."""
    git.run("push", "--quiet", "--set-upstream", remote, f"refs/heads/{branch}:refs/heads/{branch}")
    if set_head:
        git.run("remote", "set-head", remote, branch)


def log_subjects(git: Git, rev: str, *, limit: int) -> list[str]:
    """The subjects of the last ``limit`` commits reachable from ``rev``, newest first."""
    out = git.out("log", f"--max-count={limit}", "--format=%s", "--end-of-options", rev, "--")
    return [line for line in out.splitlines() if line]


# -- teardown, snapshots and restore: integrate, update, snapshot refs ----------

SNAPSHOT_PREFIX = "refs/team-router/snapshots/"


def cherry_pick(git: Git, commits: Sequence[str]) -> None:
    """Cherry-pick ``commits`` in order onto the checked-out branch (one sequence)."""
    git.run("cherry-pick", "--no-edit", "--allow-empty-message", *commits)


def cherry_pick_head(git: Git) -> str | None:
    """The commit a stopped cherry-pick was applying, if one is in progress."""
    return git.rev_parse("CHERRY_PICK_HEAD")


def cherry_pick_abort(git: Git) -> GitError | None:
    """``git cherry-pick --abort``: None when it ran, else why not (a lock file in the way ...).

    --abort puts HEAD back where the whole sequence started, so a conflict on
    the third commit does not leave the first two on the target branch.
    """
    return _end_pick(git, "--abort")


def _end_pick(git: Git, how: str) -> GitError | None:
    """``git cherry-pick <how>``: None when it ran, else its failure or the lock it met.

    git deletes CHERRY_PICK_HEAD under ``CHERRY_PICK_HEAD.lock`` and
    ``packed-refs.lock``; when a killed git left one of them, --abort and
    --quit print the error but exit 0 with the pick still in progress. That
    complaint is returned too (exit code 0), so the caller can name the lock.
    """
    result = git.run("cherry-pick", how, check=False)
    error = result.as_error()
    return error if not result.ok or error.lock_file is not None else None


# What a stopped git operation leaves in the git dir, and the command that undoes it.
_IN_PROGRESS = (
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("sequencer", "cherry-pick"),  # a multi-commit pick between two commits
    ("REVERT_HEAD", "revert"),
    ("MERGE_HEAD", "merge"),
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    # A bisect can start with HEAD still on the branch (no revisions yet, or
    # --no-checkout): a pull or a pick there would move it under the bisect.
    ("BISECT_START", "bisect"),
)


def operation_in_progress(git_dir: Path) -> str | None:
    """``cherry-pick``, ``revert``, ``merge``, ``rebase`` or ``bisect`` when one is stopped in ``git_dir``."""
    for name, operation in _IN_PROGRESS:
        if os.path.lexists(git_dir / name):
            if operation == "rebase" and (git_dir / name / "applying").exists():
                return "am"
            return operation
    return None


def sequencer_start(git_dir: Path) -> str | None:
    """Where a stopped multi-commit cherry-pick started (``sequencer/head``), if one is."""
    try:
        return (git_dir / "sequencer" / "head").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def sequencer_unstarted(git_dir: Path) -> bool:
    """``sequencer/`` exists without its ``head``: a cherry-pick killed as it began, before it
    wrote where it starts (it holds ``sequencer/head.lock`` then) and before any pick."""
    seq = git_dir / "sequencer"
    return seq.is_dir() and not (seq / "head").exists()


def sequencer_empty(git_dir: Path) -> bool:
    """``sequencer/`` exists and holds nothing: git made it and was killed before it wrote
    anything, or was killed removing it as the sequence ended. Nothing in it can be lost."""
    seq = git_dir / "sequencer"
    try:
        return seq.is_dir() and not any(seq.iterdir())
    except OSError:
        return False


def sequencer_locks(git_dir: Path) -> list[Path]:
    """Lock files git took inside ``sequencer/`` (``head.lock`` and kin)."""
    return sorted((git_dir / "sequencer").glob("*.lock"))


def reset_hard(git: Git, commit: str) -> None:
    git.run("reset", "--quiet", "--hard", commit)


@dataclass(frozen=True, slots=True)
class ConfigView:
    """Every config value git sees in a repository (all scopes and includes), from one process.

    Keys as ``git config -l`` prints them: section and name lower-cased, a
    subsection as written (``remote.origin.url``, ``branch.Topic.merge``).
    """

    values: Mapping[str, tuple[str, ...]]

    def get(self, key: str) -> str | None:
        found = self.values.get(key)
        return found[-1] if found else None  # the last one wins, as for `git config --get`

    def is_true(self, key: str) -> bool:
        """git's reading of a boolean: a bare key, true/yes/on, or a non-zero number."""
        value = self.get(key)
        if value is None:
            return False
        value = value.strip().lower()
        return value in {"", "true", "yes", "on"} or (value.isdigit() and int(value) != 0)

    def has_section(self, section: str) -> bool:
        """A key of exactly ``section`` (``branch.a`` is not ``branch.a.b``'s subsection)."""
        prefix = f"{section}."
        return any(key.startswith(prefix) and "." not in key[len(prefix) :] for key in self.values)

    def has_remote(self, name: str) -> bool:
        return self.has_section(f"remote.{name}")

    def remote_urls(self) -> dict[str, tuple[str, ...]]:
        """Each remote the config names a URL for, with its URLs (``remote.<name>.url``)."""
        urls = {}
        for key, values in self.values.items():
            name = key.removeprefix("remote.").removesuffix(".url")
            if key.startswith("remote.") and key.endswith(".url") and name:
                urls[name] = values
        return urls

    def names_committer(self, env: Mapping[str, str]) -> bool:
        """git's strict committer check surely passes: a name and an e-mail were given.

        False means "ask git" (``git var``), never "there is none": git may
        still find an identity elsewhere (the password database, the host name).
        """
        # A variable set to "" still wins over config (and then fails git's check).
        if self.is_true("user.useconfigonly"):
            return False  # git then ignores EMAIL and the host name: let it judge
        name = env.get("GIT_COMMITTER_NAME")
        name = name if name is not None else self.get("committer.name") or self.get("user.name")
        email = env.get("GIT_COMMITTER_EMAIL")
        email = (
            email
            if email is not None
            else self.get("committer.email") or self.get("user.email") or env.get("EMAIL")
        )
        # git refuses a name made only of "crud" (ident.c): blanks and ,:;<>"\'
        return bool(email) and any(c > " " and c not in ",:;<>\"\\'" for c in name or "")


def config_view(git: Git) -> ConfigView:
    """``git config -l -z``: every value, for the questions a command asks of one repo."""
    values: dict[str, list[str]] = {}
    for item in git.run("config", "-l", "-z").stdout.split("\0"):
        if item:
            key, _, value = item.partition("\n")
            values.setdefault(key, []).append(value)
    return ConfigView({k: tuple(v) for k, v in values.items()})


def committer_unknown(git: Git, config: ConfigView | None = None) -> GitError | None:
    """git's complaint when it cannot name a committer (no ``user.name``/``user.email``), else None.

    A cherry-pick needs a committer; asking first means a missing identity is
    reported as what it is, before anything is applied. A ``config`` that
    names one answers without a process.
    """
    if config is not None and config.names_committer({**base_env(), **git.env}):
        return None
    try:
        git.run("var", "GIT_COMMITTER_IDENT")
    except GitError as exc:
        return exc
    return None


def is_identity_error(exc: GitError) -> bool:
    text = exc.stderr.lower()
    return (
        "identity unknown" in text
        or "please tell me who you are" in text
        or ("unable to auto-detect email" in text)
    )


# Paths from status are file names, never patterns: a file named "*.py" is that file.
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}


def index_blobs(git: Git, paths: Sequence[str]) -> dict[str, set[str]]:
    """``path -> blobs`` the index holds for ``paths`` (every stage of a conflicted one)."""
    if not paths:
        return {}
    out = git.out("ls-files", "--stage", "-z", "--", *paths, env=_LITERAL)
    found: dict[str, set[str]] = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        if path:
            found.setdefault(path, set()).add(meta.split()[1])
    return found


def tree_blobs(git: Git, rev: str, paths: Sequence[str]) -> dict[str, str]:
    """``path -> blob`` for those of ``paths`` that ``rev`` has."""
    if not paths:
        return {}
    out = git.out("ls-tree", "-r", "-z", rev, "--", *paths, env=_LITERAL)
    found = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        if path:
            found[path] = meta.split()[2]
    return found


def tree_files(git: Git, rev: str) -> dict[str, str]:
    """``path -> blob`` for every file of ``rev``'s tree (gitlinks left out)."""
    out = git.out("ls-tree", "-r", "-z", "--full-tree", rev)
    found = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if path and len(fields) == 3 and fields[1] == "blob":
            found[path] = fields[2]
    return found


HASH_BATCH = 500  # files per hash-object, well below any argv limit


def file_blobs(git: Git, files: Sequence[Path]) -> list[str]:
    """The blob each file's bytes would be stored as, as they are on disk (no filters)."""
    blobs: list[str] = []
    for start in range(0, len(files), HASH_BATCH):
        batch = [str(f) for f in files[start : start + HASH_BATCH]]
        blobs += git.out("hash-object", "--no-filters", "--", *batch).split()
    return blobs


def is_cut_short(git: Git, file: Path, blob: str) -> bool:
    """``file`` holds the start of ``blob``'s bytes: a git killed while writing it left it so.

    git writes each file front to back, so the one a kill interrupts holds a
    prefix of its content; every byte of it is in the blob, and removing it
    loses nothing.
    """
    try:
        written = file.read_bytes()
    except OSError:
        return False
    try:
        return git.blob(blob).startswith(written)
    except GitError:
        return False


def worktree_blobs(git: Git, paths: Sequence[str]) -> dict[str, str]:
    """``path -> blob`` the files at ``paths`` would be stored as (missing files left out)."""
    present = [p for p in paths if os.path.isfile(git.cwd / p)]
    if not present:
        return {}
    return dict(zip(present, git.out("hash-object", "--", *present).split(), strict=True))


def cherry_pick_quit(git: Git) -> GitError | None:
    """Forget a stopped cherry-pick (sequencer and CHERRY_PICK_HEAD), keeping HEAD, index and files.

    None when it ran, else why not (as for :func:`cherry_pick_abort`, a lock
    file in its way is reported although git exits 0).
    """
    return _end_pick(git, "--quit")


def pull(
    git: Git, remote: str, branch: str, *, rebase: bool, timeout: float = FETCH_TIMEOUT
) -> None:
    """``git pull --rebase`` (or ``--ff-only``) ``remote branch`` in the checkout at cwd."""
    mode = "--rebase" if rebase else "--ff-only"
    git.run("pull", "--quiet", mode, "--no-autostash", remote, branch, timeout=timeout)


class FastForward(StrEnum):
    """What ``git merge --ff-only`` did with a branch."""

    MOVED = "moved"  # the branch was behind: it now sits on the ref
    CURRENT = "current"  # the branch already held the ref: nothing changed
    REFUSED = "refused"  # the branch has commits of its own (or git refused): unchanged


def fast_forward(git: Git, ref: str) -> FastForward:
    """``git merge --ff-only ref`` in the checkout at cwd.

    What ``git pull`` runs after its fetch when the branch has nothing of its
    own, without that second fetch: a caller that fetched moments ago already
    holds origin's tip.
    """
    # No auto-maintenance either, as for this tool's fetches: the user's own next git runs it.
    merge = ("merge", "--ff-only", "--no-stat", "--no-autostash", ref)
    res = git.run(*merge, check=False, config=("maintenance.auto=false",))
    if not res.ok:
        return FastForward.REFUSED
    # LC_ALL=C: git's own words for a merge that had nothing to do.
    return FastForward.CURRENT if "Already up to date" in res.stdout else FastForward.MOVED


def rebase_abort(git: Git) -> None:
    git.run("rebase", "--abort", check=False)


def unique_commits(git: Git, tip: str, *, except_branch: str | None) -> int:
    """Commits reachable from ``tip`` and from no branch, tag or remote ref but ``except_branch``."""
    args = ["rev-list", "--count", tip, "--not"]
    if except_branch:
        # --exclude applies to the next --branches, and there it matches the
        # short name (a refs/heads/ pattern silently matches nothing): the
        # branch about to be deleted must not count as "elsewhere".
        args.append(f"--exclude={except_branch}")
    args += ["--branches", "--tags", "--remotes", "--"]
    return int(git.out(*args) or 0)


@dataclass(frozen=True, slots=True)
class ReflogOnly:
    """Commits only one worktree registration's ``HEAD`` reflog keeps (deleted with it)."""

    count: int  # every such commit
    tips: list[str]  # the reflog's entries that hold them all, newest first


def head_reflog_only(git: Git, common: Path, admin: str, *, heads: Sequence[str]) -> ReflogOnly:
    """What the ``HEAD`` reflog of registration ``admin`` alone keeps reachable from the
    tips it shows left behind (:func:`gitfiles.reflog_left_behind`: what a checkout moved
    away from, and HEAD itself; not what an amend, a rebase or a reset replaced).

    Not kept elsewhere means: no ref under refs/, none of ``heads`` (the other
    checkouts' HEADs), no other reflog (a branch's own reflog keeps what an
    amend replaced). ``git`` is anchored at the primary clone. The reflogs are
    read from their files, or through git in a reftable repository, which keeps
    none. Raises :class:`gitfiles.Unsure` when a reflog file cannot be read as
    git wrote it, :class:`DanglingHead` or :class:`GitError` when git cannot
    read them.
    """
    fmt = gitfiles.repo_format(str(common))
    if fmt.reftable:
        mine = gitfiles.reflog_left_behind(_own_head_reflog(git, fmt, admin))
    else:
        log = os.path.join(admin, "logs", "HEAD")
        mine = gitfiles.reflog_left_behind(gitfiles.reflog_file_entries(log, fmt))
    held = [h for h in heads if not gitfiles.is_null_id(h)]
    if set(mine) <= set(held):
        # Nothing left behind but a HEAD some checkout has now (a worktree that
        # never switched away): no other reflog needs reading.
        return ReflogOnly(0, [])
    if fmt.reftable:
        # The primary's HEAD reflog and the shared refs' are rev-list's own to read
        # (--single-worktree --reflog, both sides of every entry); each other
        # worktree's HEAD reflog is walked (what it names less errs towards refusing).
        others = [head_reflog_name(a) for a in gitfiles.worktree_admin_dirs(str(common))]
        logs = list(reflogs(git, fmt, [n for n in others if n != head_reflog_name(admin)]).values())
        read_by_git: tuple[str, ...] = ("--single-worktree", "--reflog")
    else:
        files = gitfiles.reflog_files(str(common), skip=admin)
        logs = [gitfiles.reflog_file_entries(f, fmt) for f in files]
        read_by_git = ()
    kept = [*(c for entries in logs for c in gitfiles.reflog_commits(entries)), *held]
    if not read_by_git and set(mine) <= set(kept):
        # Every tip it left is named elsewhere too (a worktree that only ever
        # worked on its branch: the branch's reflog has each): no rev-list needed.
        return ReflogOnly(0, [])
    # On stdin: a repository's reflogs name thousands of commits. A commit whose
    # object is gone already reaches nothing (--ignore-missing).
    lines = [*mine, *(f"^{c}" for c in kept)]
    out = git.out(
        "rev-list",
        "--ignore-missing",
        "--stdin",
        "--not",
        "--glob=*",
        *read_by_git,
        "--",
        input="\n".join(lines) + "\n",
    )
    unique = set(out.split())
    if not unique:
        return ReflogOnly(0, [])
    entries = list(dict.fromkeys(c for c in reversed(mine) if c in unique))  # newest first
    tips = set(git.out("merge-base", "--independent", *entries).split())
    return ReflogOnly(len(unique), [c for c in entries if c in tips])


class DanglingHead(Exception):
    """A HEAD that names a branch that does not exist: git reads no reflog through it, and
    a reftable repository keeps no file to read that reflog from instead."""

    def __init__(self, ref: str) -> None:
        self.branch = ref.removeprefix("refs/heads/")
        super().__init__(f"its HEAD names {self.branch}, which does not exist")

    @property
    def fix(self) -> str:
        return f"`git branch {self.branch} <commit>` (any commit) lets git read that reflog"


def head_reflog_where(common: Path, admin: str) -> str:
    """Where the HEAD reflog of registration ``admin`` is, for a message: its file, or its
    name in a reftable (which git reads it by)."""
    try:
        reftable = gitfiles.repo_format(str(common)).reftable
    except gitfiles.Unsure:
        reftable = False
    if reftable:
        return f"{head_reflog_name(admin)} in the reftable"
    return os.path.join(admin, "logs", "HEAD")


def head_reflog_name(admin: str) -> str:
    """The name git reads the HEAD reflog of worktree registration ``admin`` by, from
    any checkout of the repository (``git reflog show <name>``)."""
    return f"worktrees/{os.path.basename(admin)}/HEAD"


def reflogs(
    git: Git, fmt: gitfiles.RepoFormat, names: Sequence[str]
) -> dict[str, list[gitfiles.Entry]]:
    """The entries of each reflog ``names`` names, oldest first, as git reads them (one
    process): for a reftable, which keeps no reflog file to read.

    git prints an entry's new id and message, not its old id (``log -g``). The
    old id is taken from the entry before it, or from a checkout's message
    where that names the commit HEAD left (a detached HEAD's, exact where an
    expiry left a gap); the oldest entry's, and that of an entry whose
    neighbour git does not print (a deleted ref, a missing object), is the null
    id. An id left null names less than the reflog keeps: for what *other*
    reflogs keep, that errs towards keeping; :func:`_own_head_reflog` asks for
    the one a removal would lose. A reflog git cannot read through its name (a
    HEAD naming a deleted branch) is not in the answer.
    """
    return {name: _entries(fmt, walk) for name, walk in _walk_reflogs(git, names).items()}


# One reflog as ``log -g`` prints it: entry number (0 the newest) -> (new id, message).
_Walk = dict[int, tuple[str, str]]


def _walk_reflogs(git: Git, names: Sequence[str]) -> dict[str, _Walk]:
    if not names:
        return {}
    out = git.run(
        "log",
        "--walk-reflogs",
        # A name git cannot resolve (a HEAD naming a deleted branch: git reads no
        # reflog through it) is left out, not the end of the whole walk.
        "--ignore-missing",
        "--no-show-signature",
        "--format=%gD%x00%H%x00%gs",
        "--stdin",
        input="".join(f"{n}\n" for n in dict.fromkeys(names)),
    ).stdout
    printed: dict[str, _Walk] = {}
    for line in out.splitlines():
        selector, new, why = line.split("\0", 2)
        name, _, number = selector.rpartition("@{")
        printed.setdefault(name, {})[int(number.removesuffix("}"))] = (new, why)
    return printed


def _entries(fmt: gitfiles.RepoFormat, walk: _Walk) -> list[gitfiles.Entry]:
    entries = []
    for n in sorted(walk, reverse=True):  # oldest first
        new, why = walk[n]
        older = walk.get(n + 1)
        old = _checkout_left(fmt, why) or (older[0] if older else fmt.null_id)
        entries.append((old, new, why))
    return entries


def _checkout_left(fmt: gitfiles.RepoFormat, why: str) -> str | None:
    """The commit a checkout's reflog message names as where HEAD was: a detached HEAD's id."""
    if not why.startswith(gitfiles.CHECKOUT_MOVED):
        return None
    where = why.removeprefix(gitfiles.CHECKOUT_MOVED).partition(" ")[0]
    return where if fmt.is_id(where) else None


def _own_head_reflog(git: Git, fmt: gitfiles.RepoFormat, admin: str) -> list[gitfiles.Entry]:
    """:func:`reflogs` of the HEAD reflog of registration ``admin``, with the old id of its
    oldest entry asked of git when that entry is a checkout that left a branch: once an
    expiry dropped the entries before it, what it left may be kept by it alone.

    :class:`DanglingHead` when git skipped it because the HEAD names no branch
    there is: an empty answer would say "nothing left behind".
    """
    name = head_reflog_name(admin)
    walk = _walk_reflogs(git, [name]).get(name, {})
    if not walk and git.ok("reflog", "exists", name):
        target = git.run("symbolic-ref", "-q", name, check=False).stdout.strip()
        if target.startswith("refs/heads/"):
            raise DanglingHead(target)
        raise GitError(["git", "log", "-g", name], 128, f"git printed no entry of {name}")
    entries = _entries(fmt, walk)
    if not entries or not entries[0][2].startswith(gitfiles.CHECKOUT_MOVED):
        return entries
    if not gitfiles.is_null_id(entries[0][0]):
        return entries  # the message names it
    # <name>@{<n>} one past the oldest entry git printed is that entry's old id (or
    # the new id of one git did not print); git dies "only has <n> entries" when
    # that is the null id: nothing was there before.
    res = git.run("rev-parse", "--verify", f"{name}@{{{max(walk) + 1}}}", check=False)
    if res.ok:
        return [(res.stdout.strip(), *entries[0][1:]), *entries[1:]]
    if "only has" not in res.stderr:
        raise res.as_error()
    return entries


def snapshot_tree(
    worktree: Git,
    index_file: Path,
    *,
    exclude: Sequence[str] = (),
    ignored: Sequence[str] = (),
) -> str:
    """Tree of the worktree's files (untracked included, ignored not) via a private index.

    GIT_INDEX_FILE points at a throw-away file, so the worktree's own index
    (what the user staged) is neither read nor changed. ``exclude`` names
    top-level-relative directories left out (git cannot add a repository
    with no commit, and a nested clone would only become a gitlink).
    ``ignored`` names ignored files that are work all the same (added with
    ``--force``): files only team-router's own info/exclude line hides.
    """
    env = {"GIT_INDEX_FILE": str(index_file)}
    worktree.run("read-tree", "HEAD", env=env)
    skip = [f":(exclude,top,literal){path}" for path in exclude]
    worktree.run("add", "--all", "--", ":/", *skip, env=env)
    if ignored:
        extra = [f":(top,literal){path}" for path in ignored]
        worktree.run("add", "--force", "--", *extra, env=env)
    return worktree.out("write-tree", env=env)


def directory_tree(git: Git, rel: str, index_file: Path) -> str:
    """Tree holding ``rel`` alone (a directory of the work tree), ignored files included.

    Through a private index (``GIT_INDEX_FILE``), started empty: the repo's own
    index is neither read nor changed. For a directory git ignores (a plan dir
    under our ``info/exclude`` line), which no commit of the repo holds.
    """
    env = {"GIT_INDEX_FILE": str(index_file)}
    git.run("read-tree", "--empty", env=env)
    git.run("add", "--force", "--", f":(top,literal){rel}", env=env)
    return git.out("write-tree", env=env)


def write_tree_files(git: Git, tree: str, index_file: Path) -> None:
    """Write the files of ``tree`` into the work tree, never over a file already there.

    Through a private index, so the repo's own index is untouched;
    ``checkout-index`` without ``--force`` keeps an existing file and fails.
    """
    env = {"GIT_INDEX_FILE": str(index_file)}
    git.run("read-tree", tree, env=env)
    git.run("checkout-index", "--all", env=env)


def index_tree(worktree: Git) -> str:
    """Tree of what is staged in the worktree's own index (as ``git stash`` records it).

    Fails (GitError) while the index has unmerged paths: there is no one tree
    to record until the merge is finished or aborted.
    """
    return worktree.out("write-tree")


def read_index(worktree: Git, tree_ish: str) -> None:
    """Make the worktree's index ``tree_ish`` without touching its files."""
    worktree.run("read-tree", f"{tree_ish}^{{tree}}")
    # read-tree leaves no stat data: refresh it so unchanged files do not look
    # modified to the next command (exit 1 just means some files differ).
    worktree.run("update-index", "-q", "--refresh", check=False)


def commit_parents(git: Git, commit: str) -> list[str]:
    """The parents of ``commit``, in order (raises GitError when git cannot say)."""
    return git.out("rev-list", "--parents", "--max-count=1", commit, "--").split()[1:]


def commit_tree(git: Git, tree: str, parents: Sequence[str], message: str) -> str:
    """A new commit of ``tree`` with ``parents`` (in order), on no branch."""
    flags = [flag for parent in parents for flag in ("-p", parent)]
    return git.out("commit-tree", tree, *flags, "-m", message)


# -- repositories inside a worktree: submodules and nested clones ----------------

# git 2.39 refuses `worktree remove` without --force for a worktree holding an
# initialised submodule, whatever its state (builtin/worktree.c).
SUBMODULES_REFUSAL = "working trees containing submodules cannot be moved or removed"
SUBMODULE_TIMEOUT = 120.0  # `submodule update` may have to fetch the new commit


def gitlink_paths(git: Git) -> list[str]:
    """Every gitlink (submodule) path in the index, top-level relative, initialised or not."""
    out = git.run("ls-files", "-z", "--stage").stdout
    return [
        path
        for meta, _, path in (entry.partition("\t") for entry in out.split("\0"))
        if meta.startswith("160000 ")
    ]


def commit_message(git: Git, commit: str) -> str:
    return git.run("log", "-1", "--format=%B", commit, "--").stdout


def absolute_git_dir(git: Git) -> Path:
    """The git dir git uses at cwd (cwd itself when cwd is a git dir)."""
    return Path(os.path.realpath(git.out("rev-parse", "--absolute-git-dir")))


def commits_on_no_remote(git: Git, *, gone: Sequence[str] | None = None) -> int:
    """Commits any ref, HEAD or reflog entry reaches that no live remote's tracking refs do.

    Reflogs count: a commit left behind by leaving a detached HEAD, by an
    amend or a reset, or an older stash entry (``stash@{1}`` lives only in
    the stash's reflog) exists only there, and deleting the repository
    deletes it. A remote whose URL is a local path that is gone holds
    nothing any more: its tracking refs are then the only record
    (``gone``: those remotes, when the caller already asked :func:`gone_remotes`).
    """
    gone = gone_remotes(git) if gone is None else gone
    # An --exclude before --remotes matches the name below refs/remotes/.
    skip = [f"--exclude={name}/*" for name in gone]
    args = ["rev-list", "--count", "--all", "--reflog", "--not", *skip, "--remotes"]
    count = int(git.out(*args, "--") or 0)
    if not count:
        return 0
    # Tags have no remote-tracking refs: a commit only a tag holds is on a remote
    # only if that remote has the tag now. Asked only when something looks unpushed.
    held = [
        oid for name in remote_names(git) if name not in gone for oid in _remote_tags(git, name)
    ]
    if not held:
        return count
    # On stdin, each negated: a repository may have thousands of tags. A remote's tag
    # this repository never fetched is no object here: skipped (--ignore-missing).
    tags = "".join(f"^{oid}\n" for oid in held)
    return int(git.out(*args, "--ignore-missing", "--stdin", "--", input=tags) or 0)


def remote_names(git: Git) -> list[str]:
    """The remotes the repository's config names a URL for."""
    return list(config_view(git).remote_urls())


def _remote_tags(git: Git, remote: str) -> list[str]:
    """The objects ``remote``'s tags point at right now, asked of it (not of fetched tags,
    which a local-only tag of the same name is indistinguishable from); none when it cannot answer."""
    try:
        out = git.out("ls-remote", "--tags", "--refs", remote, timeout=FETCH_TIMEOUT)
    except GitError:
        return []  # not known to hold anything: its tags do not count
    return [line.partition("\t")[0] for line in out.splitlines() if "\t" in line]


def commits_only_head_reaches(git: Git) -> int:
    """Commits the checkout's HEAD reaches that no ref does (work on a detached HEAD)."""
    # --glob=* is every ref under refs/ and, unlike --all, no HEAD.
    # --ignore-missing: an unborn HEAD reaches nothing.
    out = git.out("rev-list", "--count", "--ignore-missing", "HEAD", "--not", "--glob=*", "--")
    return int(out or 0)


def gone_remotes(git: Git) -> list[str]:
    """Remotes whose URL is a local path where nothing exists (``file://`` or a plain path)."""
    gone = []
    for name, urls in config_view(git).remote_urls().items():
        paths = [local_path(url) for url in urls]
        if paths and all(p is not None and not (git.cwd / p).exists() for p in paths):
            gone.append(name)
    return gone


def local_path(url: str) -> str | None:
    """The path a remote URL names on this machine; None for a network (or scp-like) URL."""
    if url.startswith("file://"):
        return url.removeprefix("file://")
    if "://" in url:
        return None
    # git reads `host:path` as ssh unless a slash comes before the first colon.
    head = url.split("/", 1)[0]
    return None if ":" in head else url


def submodule_update(git: Git, paths: Sequence[str]) -> None:
    """Check out the recorded commit in the initialised submodules at ``paths``.

    ``--checkout`` whatever ``submodule.<name>.update`` says: the caller has
    just moved the gitlink and wants the submodule where the superproject
    records it, never a merge, rebase or custom command.
    """
    git.run(
        "submodule",
        "update",
        "--checkout",
        "--recursive",
        "--",
        *paths,
        timeout=SUBMODULE_TIMEOUT,
        env={"GIT_LITERAL_PATHSPECS": "1"},
    )


# How far back the default branch's history is read for the commits a gitlink used to name.
GITLINK_HISTORY = 50


def former_gitlinks(git: Git, path: str, *, limit: int = GITLINK_HISTORY) -> set[str]:
    """The commits HEAD's first-parent history recorded at gitlink ``path`` before it moved.

    Read from ``git log --raw``: each change of the gitlink names its old value.
    """
    out = git.out(
        "log",
        "--first-parent",
        f"--max-count={limit}",
        "--format=",
        "--raw",
        "--no-abbrev",
        "HEAD",
        "--",
        path,
        env={"GIT_LITERAL_PATHSPECS": "1"},
    )
    found = set()
    for line in out.splitlines():
        fields = line.partition("\t")[0].split()
        if len(fields) >= 4 and fields[0] == ":160000" and fields[2].strip("0"):
            found.add(fields[2])
    return found


def update_ref(git: Git, ref: str, new: str, *, old: str | None, message: str) -> None:
    """Move ``ref`` to ``new`` only while it is at ``old`` (None: only while it does not exist).

    git checks the old value under the ref's lock: a ref another process moved
    since it was read is never overwritten unseen (the command fails instead).
    """
    # --create-reflog: the ref's history is kept too (what a reflog can add to
    # what the new commit already holds of the old one).
    git.run("update-ref", "--create-reflog", "-m", message, ref, new, old or "")


def ref_values(git: Git, refs: Sequence[str]) -> dict[str, str]:
    """``full ref name -> commit`` for those of ``refs`` that exist (one process for all)."""
    if not refs:
        return {}
    out = git.out("for-each-ref", "--format=%(refname) %(objectname)", "--", *refs)
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def status_with_branch(git: Git) -> tuple[StatusReport, str | None]:
    """``status`` plus the checked-out branch (None when detached), in one process."""
    out = git.run(
        "status",
        "--porcelain",
        "-z",
        "-b",
        "--untracked-files=all",
        "--ignore-submodules=none",
    ).stdout
    header, _, rest = out.partition("\0")
    return parse_status(rest), _branch_of_header(header)


@dataclass(frozen=True, slots=True)
class PrimaryState:
    """A checkout's dirt, branch and HEAD commit, from one ``status`` (porcelain v2)."""

    status: StatusReport
    branch: str | None  # None when detached
    head: str | None  # None on an unborn branch


def checkout_state(git: Git) -> PrimaryState:
    """``status`` with the branch and the HEAD commit, in one process (porcelain v2 headers)."""
    out = git.run(
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=all",
        "--ignore-submodules=none",
    ).stdout
    return parse_status_v2(out)


def parse_status_v2(out: str) -> PrimaryState:
    tracked: list[str] = []
    untracked: list[str] = []
    branch: str | None = None
    head: str | None = None
    fields = out.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        kind = entry[:2]
        if entry.startswith("# branch.oid "):
            oid = entry.removeprefix("# branch.oid ")
            head = None if oid == "(initial)" else oid
        elif entry.startswith("# branch.head "):
            name = entry.removeprefix("# branch.head ")
            branch = None if name == "(detached)" else name
        elif kind == "? ":
            untracked.append(entry[2:])
        elif kind == "1 ":
            tracked.append(entry.split(" ", 8)[8])
        elif kind == "2 ":
            tracked.append(entry.split(" ", 9)[9])
            i += 1  # a rename/copy carries its source path in the next field
        elif kind == "u ":
            tracked.append(entry.split(" ", 10)[10])
    return PrimaryState(StatusReport(tuple(tracked), tuple(untracked)), branch, head)


@dataclass(frozen=True, slots=True)
class RefTip:
    """Where one ref points: its commit, that commit's tree, and its symref target."""

    commit: str
    tree: str  # the commit's tree ("" when the ref names no commit)
    symref: str  # the symref's target, "" for a plain ref


def ref_tips_with_trees(git: Git, *prefixes: str) -> dict[str, RefTip]:
    """Every ref under ``prefixes`` -> its commit, tree and symref target, in one process."""
    out = git.out(
        "for-each-ref",
        "--format=%(refname)%00%(objectname)%00%(tree)%00%(symref)",
        "--",
        *prefixes,
    )
    tips = {}
    for line in out.splitlines():
        name, sha, tree, target = [*line.split("\0"), "", "", ""][:4]
        tips[name] = RefTip(sha, tree, target)
    return tips


def _branch_of_header(header: str) -> str | None:
    # "## main...origin/main [ahead 1]", "## No commits yet on main", "## HEAD (no branch)"
    text = header.removeprefix("## ")
    if text.startswith("HEAD (no branch)"):
        return None
    text = text.removeprefix("No commits yet on ").removeprefix("Initial commit on ")
    return text.split("...", 1)[0].split(" ", 1)[0] or None


def remote_prune_refs(
    git: Git, remote: str = "origin", *, timeout: float = FETCH_TIMEOUT
) -> list[str]:
    """``git remote prune``; the remote-tracking refs it dropped (``origin/<branch>``)."""
    out = git.out("remote", "prune", remote, timeout=timeout)
    return [line.split("]", 1)[1].strip() for line in out.splitlines() if "[pruned]" in line]


def first_blob(git: Git, specs: Sequence[str]) -> tuple[str, str] | None:
    """The first of ``rev:path`` specs that names a file: (spec, text), in one process."""
    if not specs:
        return None
    res = git.run("cat-file", "--batch", input="".join(f"{s}\n" for s in specs), check=False)
    raw = res.stdout.encode("utf-8", "surrogateescape")
    for spec in specs:
        header, _, raw = raw.partition(b"\n")
        fields = header.split()
        if len(fields) == 3 and fields[1] in {b"blob", b"tree", b"commit", b"tag"}:
            size = int(fields[2])
            body, raw = raw[:size], raw[size + 1 :]
            if fields[1] == b"blob":
                return spec, body.decode("utf-8", "surrogateescape")
    return None


def moved_gitlinks(git: Git, old: str, new: str) -> dict[str, str]:
    """Submodule paths whose recorded commit differs from ``old`` to ``new``: path -> new commit."""
    # A .gitmodules `ignore = all` hides a moved gitlink from diff-tree too.
    out = git.out(
        "diff-tree", "-r", "-z", "--no-renames", "--ignore-submodules=none", old, new, "--"
    )
    fields = out.split("\0")
    moved = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.split()
        if len(parts) == 5 and parts[1] == "160000":
            moved[path] = parts[3]
    return moved


def changed_paths(git: Git, old: str, new: str, *, only: str = "") -> set[str]:
    """Paths (top-level relative) that differ between trees (or commits) ``old`` and ``new``.

    ``only``: git's ``--diff-filter`` letters (``A``: the paths only ``new`` has).
    """
    kinds = [f"--diff-filter={only}"] if only else []
    out = git.out("diff-tree", "-r", "-z", "--no-renames", "--name-only", *kinds, old, new, "--")
    return {p for p in out.split("\0") if p}


def restore_worktree_files(git: Git, source: str) -> None:
    """Make the working tree match ``source`` without touching the index.

    The result shows as uncommitted edits and untracked files, exactly as the
    snapshot found them, not as an extra commit.
    """
    git.run("restore", f"--source={source}", "--worktree", "--", ":/")


# -- pr-cleanup: the remote branch, its deletion, and reclaiming space -----------

RECLAIM_TIMEOUT = 600.0  # gc on a large repository takes minutes, not hours


def remote_branch_tip(
    git: Git, remote: str, branch: str, *, timeout: float = FETCH_TIMEOUT
) -> str | None:
    """The commit ``remote`` has on ``refs/heads/<branch>`` right now (None: it has none).

    Asked of the remote itself, not read from ``refs/remotes/``: a branch
    deleted on the server leaves its tracking ref behind until a prune.
    Raises GitError when the remote cannot be asked.
    """
    ref = f"refs/heads/{branch}"
    out = git.out("ls-remote", "--heads", remote, ref, timeout=timeout)
    for line in out.splitlines():
        sha, _, name = line.partition("\t")
        if name == ref:  # ls-remote patterns match on a suffix: compare exactly
            return sha.strip()
    return None


def push_delete(
    git: Git, remote: str, branch: str, *, expect: str, timeout: float = FETCH_TIMEOUT
) -> None:
    """Delete ``branch`` on ``remote`` only if it still points at ``expect``.

    The lease makes a push someone made since we looked fail the deletion
    instead of being deleted with it.
    """
    ref = f"refs/heads/{branch}"
    git.run(
        "push",
        "--quiet",
        "--no-verify",
        f"--force-with-lease={ref}:{expect}",
        remote,
        f":{ref}",
        timeout=timeout,
    )


# refs/stash's reflog is the stash list itself (stash@{1} is an entry no newer
# stash reaches): an explicit --expire-unreachable would apply to it too and drop
# every stash but the newest (all of them once older than gc.reflogExpire).
# The expiry is therefore given as config, with refs/stash set to never.
KEEP_STASHES = ("gc.refs/stash.reflogExpire=never", "gc.refs/stash.reflogExpireUnreachable=never")


def reflog_expire_unreachable(git: Git) -> None:
    git.run(
        "reflog",
        "expire",
        "--all",
        timeout=RECLAIM_TIMEOUT,
        config=("gc.reflogExpireUnreachable=now", *KEEP_STASHES),
    )


def gc_prune_now(git: Git) -> None:
    git.run("gc", "--quiet", "--prune=now", timeout=RECLAIM_TIMEOUT, config=KEEP_STASHES)


# -- local state: whether a path belongs to a repository ---------------------------


class GitPlace(StrEnum):
    """Where a directory lies, as git itself sees it."""

    OUTSIDE = "outside"
    WORK_TREE = "git-work-tree"
    GIT_DIR = "git-dir"
    UNKNOWN = "git-unknown"  # git found something but would not say (dubious ownership ...)


def git_place(directory: Path) -> GitPlace:
    """Whether ``directory`` lies inside a git work tree or git dir of any repository."""
    # No ceiling and across file systems: a temp dir mounted inside a checkout
    # is still inside it, whatever the caller's environment says about discovery.
    env = {"GIT_CEILING_DIRECTORIES": "", "GIT_DISCOVERY_ACROSS_FILESYSTEM": "1"}
    res = Git(directory, env).run(
        "rev-parse", "--is-inside-work-tree", "--is-inside-git-dir", check=False
    )
    if not res.ok:
        # Only "not a git repository" means outside: any other failure means git
        # found a repository it would not open, which is no proof of absence.
        return GitPlace.OUTSIDE if "not a git repository" in res.stderr else GitPlace.UNKNOWN
    answers = res.stdout.split()
    if answers == ["true", "false"]:
        return GitPlace.WORK_TREE
    if answers == ["false", "true"]:
        return GitPlace.GIT_DIR
    return GitPlace.UNKNOWN


def repository_below(directory: Path) -> Path | None:
    """The first ``.git`` entry or bare git dir found below ``directory`` (symlinks not followed).

    Raises OSError when a directory cannot be read: what is in it is unknown.
    """
    pending = [directory]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.name == ".git":
                    return Path(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    if _looks_like_git_dir(entry.path):
                        return Path(entry.path)
                    pending.append(Path(entry.path))
    return None


def repository_above(directory: Path) -> Path | None:
    """The nearest ``.git`` entry or git dir at or above ``directory``, without asking git.

    Finds what git itself no longer opens: a worktree whose repository was
    moved (its ``.git`` file points at nothing) or a clone whose ``.git`` lost
    its ``HEAD``. Git answers "not a git repository" there, yet the files are
    someone's work.
    """
    current = os.path.realpath(directory)
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return Path(current, ".git")
        if _looks_like_git_dir(current):
            return Path(current)
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _looks_like_git_dir(path: str) -> bool:
    # git's own test (setup.c is_git_directory): HEAD, objects/ and refs/. A
    # bare repository or a separated git dir has no ".git" entry to find.
    return (
        os.path.isfile(os.path.join(path, "HEAD"))
        and os.path.isdir(os.path.join(path, "objects"))
        and os.path.isdir(os.path.join(path, "refs"))
    )


def parse_worktree_list(out: str) -> list[WorktreeEntry]:
    entries: list[WorktreeEntry] = []
    # Records are separated by an empty field (two NULs in a row).
    for record in out.split("\0\0"):
        fields = [f for f in record.split("\0") if f]
        if not fields:
            continue
        info: dict[str, str] = {}
        for f in fields:
            key, _, value = f.partition(" ")
            info[key] = value
        if "worktree" not in info:
            continue
        branch = info.get("branch")
        head = info.get("HEAD")
        entries.append(
            WorktreeEntry(
                path=Path(info["worktree"]),
                head=head if head and not gitfiles.is_null_id(head) else None,  # None: unborn
                branch=branch.removeprefix("refs/heads/") if branch else None,
                bare="bare" in info,
                locked="locked" in info,
                lock_reason=info.get("locked", ""),
                prunable="prunable" in info,
            )
        )
    return entries


def parse_status(out: str) -> StatusReport:
    tracked: list[str] = []
    untracked: list[str] = []
    fields = out.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code == "??":
            untracked.append(path)
        else:
            tracked.append(path)
            if "R" in code or "C" in code:
                i += 1  # a rename/copy carries its source path in the next field
    return StatusReport(tuple(tracked), tuple(untracked))
