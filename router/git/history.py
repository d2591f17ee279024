"""History: ancestry, merge bases, commit ranges and what a commit records."""

from __future__ import annotations

from collections.abc import Callable

from router.git.answers import about_refs
from router.git.run import Runner
from router.names import Sha
from router.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")


@record
class CherryEntry:
    """One line of ``git cherry``: a commit and whether upstream has its patch."""

    sha: Sha
    present: bool  # True when an equivalent patch is already upstream ("-")


class HistoryMethods(Runner):
    """Ancestry and commit ranges."""

    __slots__ = ()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self._about(
            ("is-ancestor", ancestor, descendant),
            lambda: self.ok("merge-base", "--is-ancestor", ancestor, descendant),
        )

    def _about(self, question: tuple[str, ...], ask: Callable[[], T]) -> T:
        """Remembered when every revision asked about is a full ref or an object id."""
        return self._recall(question, ask) if about_refs(*question[1:]) else ask()

    def count_commits(self, range_: str) -> int:
        return self._about(
            ("count", range_), lambda: int(self.out("rev-list", "--count", range_, "--") or 0)
        )

    def cherry(self, upstream: str, head: str) -> list[CherryEntry]:
        """``git cherry upstream head``: commits of head and whether upstream has their patch."""
        return self._about(("cherry", upstream, head), lambda: self._cherry(upstream, head))

    def _cherry(self, upstream: str, head: str) -> list[CherryEntry]:
        out = self.out("cherry", upstream, head)
        entries = []
        for line in out.splitlines():
            sign, _, sha = line.partition(" ")
            entries.append(CherryEntry(Sha(sha.strip()), sign == "-"))
        return entries


def unique_commits(git: HistoryMethods, tip: str, *, except_branch: str | None) -> int:
    """Commits reachable from ``tip`` and from no branch, tag or remote ref but ``except_branch``."""
    args = ["rev-list", "--count", tip, "--not"]
    if except_branch:
        # --exclude applies to the next --branches, and there it matches the
        # short name (a refs/heads/ pattern silently matches nothing): the
        # branch about to be deleted must not count as "elsewhere".
        args.append(f"--exclude={except_branch}")
    args += ["--branches", "--tags", "--remotes", "--"]
    return int(git.out(*args) or 0)


def commits_only_head_reaches(git: HistoryMethods) -> int:
    """Commits the checkout's HEAD reaches that no ref does (work on a detached HEAD)."""
    # --glob=* is every ref under refs/ and, unlike --all, no HEAD.
    # --ignore-missing: an unborn HEAD reaches nothing.
    out = git.out("rev-list", "--count", "--ignore-missing", "HEAD", "--not", "--glob=*", "--")
    return int(out or 0)


def commit_parents(git: HistoryMethods, commit: str) -> list[str]:
    """The parents of ``commit``, in order (raises GitError when git cannot say)."""
    return git.out("rev-list", "--parents", "--max-count=1", commit, "--").split()[1:]


def commit_message(git: HistoryMethods, commit: str) -> str:
    return git.run("log", "-1", "--format=%B", commit, "--").stdout


def log_subjects(git: HistoryMethods, rev: str, *, limit: int) -> list[str]:
    """The subjects of the last ``limit`` commits reachable from ``rev``, newest first."""
    out = git.out("log", f"--max-count={limit}", "--format=%s", "--end-of-options", rev, "--")
    return [line for line in out.splitlines() if line]


# How far back the default branch's history is read for the commits a gitlink used to name.
GITLINK_HISTORY = 50


def former_gitlinks(git: HistoryMethods, path: str, *, limit: int = GITLINK_HISTORY) -> set[str]:
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
