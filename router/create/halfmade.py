"""What a killed or interrupted creation left at the worktree's path, and undoing it.

A rerun of `new`/`worktrees` meets what an earlier run left half-made (a registration
without its files, a claim without its add, an undo cut short): the states here tell
our own leftovers from anything else, which is refused and kept.
"""

from __future__ import annotations

import os
from pathlib import Path

from router import git as g
from router.create import ouradd
from router.create.creation import Creation
from router.errors import ErrorCode, RouterError
from router.git import Git, WorktreeEntry
from router.topic import journal, worktreelock
from router.topic.workspace import find_worktree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.reasons import Why


class HalfMade(Creation):
    """The half-made states a creation's rerun undoes or refuses."""

    def _undo_half_made(self, entries: list[WorktreeEntry]) -> bool:
        """Roll back the worktree a killed ``git worktree add`` of ours left half-made.

        git registers the worktree (locked, reason "initializing"), points its
        HEAD at the branch, then checks the files out and unlocks it: killed in
        between, it leaves a checkout with no files or no index, where
        ``git status`` shows every file deleted and a commit would delete them
        all. Reusing that as ``existing`` would hand the agent that checkout.
        Only a creation this tool's record shows still under way, holding no
        file but what git's checkout wrote, is removed (and made again by the
        caller); anything else is refused with the fix. True when rolled back.
        """
        entry = find_worktree(entries, self.path)
        linked = ouradd.symlink_in(self.path, self.repo.primary)
        if entry is None or not self.path.is_dir() or linked:
            return False
        made = self._half_made(entry)
        if made is None:
            return False
        tip = self.commits[self._branch_ref]
        add = self._our_add(tip)
        kept = ouradd.not_ours(add) or ouradd.work_in_half_made(add) or ouradd.in_use(add)
        if kept is not None:
            from router.reasons import Reason, Why
            from router.teardown.wording import in_words  # lazy: only a refusal says it

            why = Why(
                Reason.HALF_MADE,
                repo=self.job.name,
                path=str(self.path),
                primary=str(self.repo.primary),
                inner=(made, kept),
            )
            raise RouterError(ErrorCode.HALF_MADE_WORKTREE, in_words(why))
        # Only git's partial checkout is in it: the directory first (git cannot
        # remove a worktree whose .git file it cannot read), then the registration.
        # That takes git's own lock files in the registration with it (the
        # checkout's index.lock, left by the kill). team-router never removes a
        # git lock a user may need, and this is none: it lies inside a
        # registration our record shows we were creating, of a worktree holding
        # nothing but git's checkout, that no process has open (ouradd.in_use), and
        # it goes with the whole registration; a lock can only guard that.
        import shutil  # lazy, like every undo's: a run that creates pays ~3 ms for it

        shutil.rmtree(self.path)
        self.git.worktree_remove(self.path, force=True)
        record = self.record
        if record is not None and record.branch_created and tip == record.base_commit:
            # Cut by the killed run and never moved: made again at a fresh base.
            self.git.branch_delete(self.branch)
            self.commits[self._branch_ref] = None
        from router.teardown.wording import in_words

        self.warnings.append(
            f"{self.job.name}: removed the half-made worktree a killed run left at {self.path} "
            f"({in_words(made)}) and created it again"
        )
        return True

    def _refuse_half_removed(self) -> None:
        """Never hand back a worktree a killed teardown (or pr-cleanup) was removing.

        What git had not deleted yet is still there, and its deletions show as
        changes: an agent would work in it, and a commit would put the
        deletions on the branch. The teardown that marked the removal finishes it.
        """
        removing = journal.find(self.record, journal.Operation.REMOVE, self.path)
        if removing is None or not os.path.lexists(self.path):
            return  # nothing left at the path: the mark goes when the path is claimed again
        topic = self.job.topic.id
        raise RouterError(
            ErrorCode.REMOVAL_INTERRUPTED,
            f"{self.job.name}: {self.path} is a worktree a teardown (or pr-cleanup) of {topic} "
            f"was removing when it was killed; run `team-router teardown {topic}` to finish "
            "the removal, then run this again",
        )

    def _our_add(self, tip: str | None) -> ouradd.OurAdd:
        """This run's creation at our path, as the shared "ours" rule judges it."""
        return ouradd.OurAdd(self.repo, self.path, self.job.topic.id, self.branch, self.record, tip)

    def _undo_torn_registration(self) -> None:
        """Remove our worktree whose git registration a killed ``git worktree add`` left torn.

        git cannot use a registration missing its ``gitdir``, ``commondir`` or
        ``HEAD`` (:func:`router.git.files.torn_registration`): ``git worktree
        list`` leaves it out (or fails, for an empty ``commondir``), so the
        path would look taken and the repo would fall back to its main tree.
        An add killed while writing those files leaves that, and so does one
        whose own clean-up on a signal (it deletes the registration's files one
        by one, then the checkout) was cut short by a SIGKILL: then the
        checkout is whole, and its ``.git`` still points here. Ours, it is
        removed and the caller creates the worktree again: the record shows
        this topic's creation under way, a lock left in it is ours (or git's
        "initializing"), a ``gitdir`` left names our path, and the path holds
        nothing but git's checkout of the branch and our (file-free) plan dir.
        Anything else at our path is refused (``half-made-worktree``) and kept.
        """
        admin = ouradd.registration(self._our_add(None))
        why = g.torn_registration(admin) if admin.is_dir() else ""
        if not why or admin.parent != self.repo.common_dir / "worktrees":
            return
        add = self._our_add(self.commits[self._branch_ref])
        problem = ouradd.torn_problem(add, admin)
        if problem is not None:
            if not os.path.lexists(self.path):
                return  # nothing at our path: git makes the worktree beside it
            from router.reasons import Reason, Why
            from router.teardown.wording import in_words

            torn = Why(
                Reason.HALF_MADE_TORN,
                repo=self.job.name,
                path=str(self.path),
                items=(str(admin),),
                kind=why,
                inner=(problem,),
            )
            raise RouterError(ErrorCode.HALF_MADE_WORKTREE, in_words(torn))
        from router.teardown.factwords import torn_words

        if ouradd.undo_torn(add, admin):
            self.commits[self._branch_ref] = None
        self.warnings.append(
            f"{self.job.name}: removed the half-made worktree a killed run left at {self.path}, "
            f"whose git registration is torn, unreadable to git ({admin}: {torn_words(why)}), and "
            "created it again"
        )

    def _half_made(self, entry: WorktreeEntry) -> Why | None:
        """Why git's registration at our path is not a finished checkout, or None."""
        from router.reasons import Reason, Why  # only a worktree already at our path is judged

        if entry.locked and entry.lock_reason == g.ADD_IN_PROGRESS:
            return Why(Reason.ADD_LOCKED, text=g.ADD_IN_PROGRESS)
        record = self.record
        if (
            worktreelock.own_lock(entry)
            and record
            and journal.find(record, journal.Operation.CREATE)
            and "add" not in record.steps
        ):
            return Why(Reason.ADD_UNFINISHED)
        if entry.head is None:  # an unborn branch, or a HEAD git has not set up yet
            return Why(Reason.NO_HEAD)
        index = Git(self.path).index_file()
        if index is None:
            return Why(Reason.NOT_A_CHECKOUT)
        if not index.exists() and g.tree_files(self.git, entry.head):
            return Why(Reason.NO_INDEX)
        return None

    def _recorded_elsewhere(self, entries: list[WorktreeEntry]) -> Path | None:
        """The checkout an earlier run reused for the topic, while git still has it there.

        Without this, the same ``new`` run again from another directory would
        give the topic a second worktree (and a second plan dir).
        """
        if self.record is None or not self.record.worktree:
            return None
        path = Path(self.record.worktree)
        if os.path.realpath(path) in {str(self.repo.primary), os.path.realpath(self.path)}:
            return None
        entry = find_worktree(entries, path)
        if entry is None or entry.branch is None or entry.branch != self.record.branch:
            return None
        return path if (path / ".git").is_file() else None

    def _our_empty_claim(self) -> bool:
        """An empty directory our own earlier run claimed and then died on (crash resume)."""
        return (
            self.record is not None
            and "claim" in self.record.steps
            and self.path.is_dir()
            and not self.path.is_symlink()
            and not any(self.path.iterdir())
        )

    def _our_cut_shortundo_created(self) -> bool:
        """Empty our path of what a killed run's ``git worktree add`` left unregistered; True when done.

        git stopped by a signal undoes its add: the registration first, then the
        files it wrote. Killed in the middle of that (a SIGKILL right after the
        SIGTERM, as a service manager sends them), it leaves part of its checkout
        at our path with no registration naming it. The record is the journal
        that says it is ours: our claim, and no finished add. Only git's own
        files may be there (its checkout of the branch, its ``.git`` file), and
        no process may still use them; anything else keeps the path taken.
        """
        record = self.record
        if record is None or not journal.find(record, journal.Operation.CREATE):
            return False
        if "add" in record.steps:
            return False
        if not self.path.is_dir() or g.registration_of(str(self.repo.common_dir), str(self.path)):
            return False
        tip = self.commits[self._branch_ref] or record.base_commit
        add = self._our_add(tip)
        if tip is None or ouradd.not_ours(add) is not None or ouradd.kept_by(add) is not None:
            return False
        import shutil  # lazy, like every undo's

        shutil.rmtree(self.path)
        self.path.mkdir()
        self.warnings.append(
            f"{self.job.name}: removed what a killed run's `git worktree add` left at "
            f"{self.path} (git's own files, no registration) and created the worktree again"
        )
        return True
