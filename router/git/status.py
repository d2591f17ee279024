"""A checkout's state: changed and untracked files, its index, the branch it has."""

from __future__ import annotations

import os
from pathlib import Path

from router.git import files as gitfiles
from router.git.layout import LayoutMethods
from router.names import Branch, Sha
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.git.run import Running


@record
class StatusReport:
    """``git status --porcelain``: tracked paths with changes, then untracked ones."""

    tracked: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()

    @property
    def dirty(self) -> bool:
        return bool(self.tracked or self.untracked)


# Every change git sees, untracked files one by one and submodules' own changes too.
_STATUS = ("status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignore-submodules=none")


class StartedStatus:
    """A checkout's :meth:`StatusMethods.status` under way (:meth:`StatusMethods.status_started`)."""

    __slots__ = ("_git", "_running")

    def __init__(self, git: StatusMethods, running: Running) -> None:
        self._git, self._running = git, running

    def report(self) -> StatusReport:
        """The checkout's changes, once its git ended; raises GitError as :meth:`status` does."""
        out = self._running.wait().stdout
        return with_unlooked(self._git, parse_status_v2(out).status)

    def stop(self, exc: BaseException) -> None:
        """The caller stopped (``exc``) before asking: its git ends as :meth:`Running.stop` says."""
        self._running.stop(exc)


class StatusMethods(LayoutMethods):
    """What the checkout at cwd holds beside its HEAD commit."""

    __slots__ = ()

    def gitlinks(self, git_dir: Path | None = None) -> list[str]:
        """Every gitlink (submodule) path in the index, top-level relative, initialised or not.

        With ``git_dir`` (the checkout's own), an index that surely holds none
        (read from its file) answers without asking git.
        """
        from router.git.indexfile import may_hold_gitlinks

        if git_dir is not None and not may_hold_gitlinks(str(git_dir)):
            return []
        out = self.run("ls-files", "-z", "--stage").stdout
        return [
            path
            for meta, _, path in (entry.partition("\t") for entry in out.split("\0"))
            if meta.startswith("160000 ")
        ]

    def added_in_index(self) -> list[str]:
        """Paths staged as new files: in the index, not in HEAD (renames not followed)."""
        out = self.run(
            "diff", "--cached", "--no-renames", "--name-only", "-z", "--diff-filter=A", "HEAD", "--"
        ).stdout
        return [p for p in out.split("\0") if p]

    def untracked_under(self, directory: str) -> list[str]:
        """Untracked files and directories under ``directory`` that no ``.gitignore`` ignores.

        Only the ``.gitignore`` files count: ``info/exclude`` and
        ``core.excludesFile`` are not read, so a path only those hide is listed.
        """
        out = self.run(
            "ls-files", "-z", "--others", "--exclude-per-directory=.gitignore", "--", directory
        ).stdout
        return [p for p in out.split("\0") if p]

    def status(self) -> StatusReport:
        """Tracked changes and untracked files, reported separately.

        core.fsmonitor is disabled (in :meth:`Git.run`): another checkout's
        fsmonitor daemon may be stale or absent, and status must reflect the disk.
        """
        return self.status_started().report()

    def status_started(self) -> StartedStatus:
        """:meth:`status` with its git started now, to run while the caller works on:
        :meth:`StartedStatus.report` reads its answer."""
        return StartedStatus(self, self.start(*_STATUS))

    def ls_files(self, path: str) -> list[str] | None:
        """Tracked files under ``path``; None when the check itself failed."""
        res = self.run("ls-files", "-z", "--", path, check=False)
        if not res.ok:
            return None
        return [p for p in res.stdout.split("\0") if p]

    def ignored_untracked(self) -> list[str]:
        """Untracked paths git ignores, relative to the top level; a folder ends in ``/``.

        A folder whose every file is ignored (``node_modules/``) comes as itself,
        not file by file: git need not walk it, and the caller walks it once.
        Files inside such a folder may be listed too.
        """
        out = self.run(
            "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"
        ).stdout
        return [p for p in out.split("\0") if p]

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


@record
class PrimaryState:
    """A checkout's dirt, branch and HEAD commit, from one ``status`` (porcelain v2)."""

    status: StatusReport
    branch: Branch | None  # None when detached
    head: Sha | None  # None on an unborn branch


def checkout_state(git: StatusMethods) -> PrimaryState:
    """``status`` with the branch and the HEAD commit, in one process (porcelain v2 headers)."""
    out = git.run(
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=all",
        "--ignore-submodules=none",
    ).stdout
    found = parse_status_v2(out)
    return PrimaryState(with_unlooked(git, found.status), found.branch, found.head)


def with_unlooked(git: StatusMethods, report: StatusReport) -> StatusReport:
    """``report`` with the tracked files git was told not to look at that were edited.

    An assume-unchanged or skip-worktree entry is trusted by ``git status``, which
    never reads its file: an edit there is work all the same, and a checkout
    holding one is not clean (``git worktree remove`` would delete it).
    """
    from router.git.indexfile import unlooked_changes

    git_dir = gitfiles.checkout_git_dir(git.cwd)
    found = None if git_dir is None else unlooked_changes(str(git.cwd), str(git_dir))
    if found is None:
        found = _unlooked_by_git(git)
    if not found:
        return report
    return StatusReport(tuple(dict.fromkeys([*report.tracked, *sorted(found)])), report.untracked)


def _unlooked_by_git(git: StatusMethods) -> list[str]:
    """:func:`with_unlooked`'s files as git lists its flags (an index not read here)."""
    from router.git.indexfile import differs_from_blob

    out = git.run("ls-files", "-v", "-s", "-z").stdout
    found = []
    for line in out.split("\0"):
        meta, _, path = line.partition("\t")
        parts = meta.split()
        if len(parts) != 4 or not (parts[0].islower() or parts[0] == "S"):
            continue  # git looks at it (its own answer covers it), or not a file's line
        full = os.path.join(git.cwd, path)
        algorithm = "sha256" if len(parts[2]) == 64 else "sha1"
        if os.path.lexists(full) and differs_from_blob(full, int(parts[1], 8), parts[2], algorithm):
            found.append(path)
    return found


def parse_status_v2(out: str) -> PrimaryState:
    tracked: list[str] = []
    untracked: list[str] = []
    branch: Branch | None = None
    head: Sha | None = None
    fields = out.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        kind = entry[:2]
        if entry.startswith("# branch.oid "):
            oid = entry.removeprefix("# branch.oid ")
            head = None if oid == "(initial)" else Sha(oid)
        elif entry.startswith("# branch.head "):
            name = entry.removeprefix("# branch.head ")
            branch = None if name == "(detached)" else Branch(name)
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
