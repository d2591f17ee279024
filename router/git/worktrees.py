"""Worktrees: the list git keeps, and adding, locking and removing one."""

from __future__ import annotations

import os
from pathlib import Path

from router import interrupt
from router.git import files as gitfiles
from router.git.answers import forget
from router.git.layout import LayoutMethods
from router.git.run import GitError
from router.names import Branch, Sha, cast
from router.records import record


@record
class WorktreeEntry:
    """One entry of ``git worktree list --porcelain`` (or the same read from git's files)."""

    path: Path
    head: Sha | None  # None for a worktree on an unborn branch
    branch: Branch | None  # short name; None when detached
    bare: bool = False
    locked: bool = False
    lock_reason: str = ""
    prunable: bool = False


# git >= 2.32 parallel checkout: 0 is one worker per core. The checkout is
# most of the cost of creating a worktree; callers that already create several
# worktrees at once pass 1, since their threads keep the cores busy.
ALL_CORES = 0


# The reason `git worktree add` locks a worktree with while it creates it
# (LC_ALL=C); git removes the lock when the checkout is done, so a kill leaves it.
ADD_IN_PROGRESS = "initializing"


# git 2.39 refuses `worktree remove` without --force for a worktree holding an
# initialised submodule, whatever its state (builtin/worktree.c).
SUBMODULES_REFUSAL = "working trees containing submodules cannot be moved or removed"


class WorktreeMethods(LayoutMethods):
    """The repository's worktrees, read from git's files where the layout is plain."""

    __slots__ = ()

    def worktree_list(self) -> list[WorktreeEntry]:
        """``git worktree list --porcelain -z``; the first entry is the main worktree.

        For a checkout top level in the plain layout, the same list read from
        git's files (:func:`gitfiles.listed_worktrees`); otherwise git is asked.
        """
        return self._recall(("worktree list",), self._worktree_list)

    def _worktree_list(self) -> list[WorktreeEntry]:
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
                        cast("Sha | None", head),
                        cast("Branch | None", branch),
                        locked=reason is not None,
                        lock_reason=reason or "",
                        prunable=prunable,
                    )
                    for path, head, branch, reason, prunable in listed
                ]
        out = self.run("worktree", "list", "--porcelain", "-z").stdout
        return parse_worktree_list(out)

    def worktree_add(
        self,
        path: Path,
        branch: str,
        *,
        base: str | None,
        workers: int = ALL_CORES,
        lock_reason: str | None = None,
        checkout: bool = True,
    ) -> None:
        """Add a worktree: with ``base`` create ``branch`` there, else attach the existing branch.

        ``checkout`` False: ``--no-checkout``, no file written and no index yet
        (a sparse worktree sets its cone first, :mod:`router.git.sparse`).

        ``lock_reason``: the worktree is locked with it from the moment git
        registers it (``--lock --reason`` writes the reason where git would
        otherwise write "initializing"), so it is never unlocked for a moment.
        """
        # --no-track: a branch cut from origin/HEAD must not take origin/main as
        # its upstream, or a later pull/push in the worktree would target main.
        new = ["--no-track", "-b", branch] if base is not None else []
        lock = ["--lock", "--reason", lock_reason] if lock_reason is not None else []
        start = [base] if base is not None else [branch]
        bare = [] if checkout else ["--no-checkout"]
        add = ["worktree", "add", "--quiet", *bare, *new, *lock, "--", str(path), *start]
        self.run(*add, config=[f"checkout.workers={workers}"])

    def worktree_lock(self, path: Path, reason: str) -> None:
        """``git worktree lock --reason``: other tools' cleanup (``git worktree prune``) skips it."""
        self.run("worktree", "lock", "--reason", reason, "--", str(path))

    def worktree_unlock(self, path: Path) -> None:
        """``git worktree unlock``: the registration's ``locked`` file removed.

        In the plain layout it is removed here, as git removes it (git's
        ``unlock`` is that one unlink), and a worktree not locked fails as
        git fails; otherwise git does it.
        """
        plain = self._plain_layout()
        admin = gitfiles.registration_of(plain[2], str(path)) if plain is not None else None
        if admin is None:
            self.run("worktree", "unlock", "--", str(path))
            return
        interrupt.check()  # as before any git: a signal stops the command first
        argv = ["git", "-C", str(self.cwd), "worktree", "unlock", "--", str(path)]
        try:
            os.unlink(os.path.join(admin, "locked"))
        except FileNotFoundError:
            raise GitError(argv, 128, f"fatal: '{path}' is not locked") from None
        except OSError as exc:
            raise GitError(argv, 128, f"fatal: failed to delete '{admin}/locked': {exc}") from None
        finally:
            forget()  # the worktree list changed (or may have)

    def worktree_remove(self, path: Path, *, force: bool, keep_locked: bool = False) -> None:
        """``git worktree remove``; ``force`` also removes a locked one unless ``keep_locked``.

        Without ``force`` git's own check refuses a worktree with changes: its
        internal ``git status`` must list untracked files whatever the user's
        ``status.showUntrackedFiles`` says (with ``no`` it would remove them).
        The pins that kept, in the primary's submodule git dirs, what the
        worktree's submodules borrowed are dropped once git removed it (read
        before: git deletes the borrowers with the registration); a removal
        git refuses keeps them all.
        """
        from router.git.submodules import borrowed_sources, drop_borrow_pins

        args = ["worktree", "remove"]
        if force:
            # Twice: a locked worktree needs -f -f (callers decide about locks first).
            args += ["--force"] if keep_locked else ["--force", "--force"]
        borrowed = borrowed_sources(Path(admin)) if (admin := self._registration(path)) else []
        self.run(*args, "--", str(path), config=["status.showUntrackedFiles=all"])
        drop_borrow_pins(borrowed)

    def lists_worktree(self, path: Path) -> bool:
        """Whether ``git worktree list`` names ``path`` (its directory may be gone)."""
        return self._registration(path) is not None

    def _registration(self, path: Path) -> str | None:
        """The admin dir of the worktree at ``path``, read from git's files; None when none."""
        plain = self._plain_layout()
        common = plain[2] if plain is not None else str(self.common_dir())
        return gitfiles.registration_of(common, str(path))


def parse_worktree_list(out: str) -> list[WorktreeEntry]:
    entries: list[WorktreeEntry] = []
    # Records are separated by an empty field (two NULs in a row).
    for block in out.split("\0\0"):
        fields = [f for f in block.split("\0") if f]
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
                head=Sha(head) if head and not gitfiles.is_null_id(head) else None,  # None: unborn
                branch=Branch(branch.removeprefix("refs/heads/")) if branch else None,
                bare="bare" in info,
                locked="locked" in info,
                lock_reason=info.get("locked", ""),
                prunable="prunable" in info,
            )
        )
    return entries
