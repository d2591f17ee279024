"""Keeping what the worktrees' submodules borrow: pin what moved since the last time.

The decision between :mod:`router.git.borrowing` (which borrowers moved, read
from files) and :mod:`router.git.submodules` (the pins, made with git), so the
commands a pipeline runs at every step and the session-start hook load git's
side only when something moved.
"""

from __future__ import annotations

from router.git.borrowing import borrowers_to_keep, unwalked_warning

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def keep_borrowed_objects(common_dirs: Sequence[str]) -> list[str]:
    """Pin, in each repository's primary, what its worktrees' submodules' HEAD and branches
    stand on (:func:`router.git.submodules.keep_borrowed`), for those that moved since: a warning for
    each that could not be, and for each git could not walk at the state it is still at.

    Run by the commands a pipeline runs at every step and the session-start
    hook, so an agent's new commits in a submodule are kept from the primary's
    ``git gc`` soon after. Read from files: git runs only for a moved one. One
    git could not walk is not walked again until it moves, but is named again
    from its stamp at every call, in the words of the failure: whichever command
    met it first (the hook shows no warnings), the user still hears of it.
    """
    warnings: list[str] = []
    for common in dict.fromkeys(common_dirs):
        moved, unwalked = borrowers_to_keep(common)
        warnings += [unwalked_warning(git_dir, said) for git_dir, said in unwalked]
        if moved:
            # Only now: the pinning runs git (the hook's path never loads it otherwise).
            from router.git.submodules import keep_borrowers

            warnings += keep_borrowers(moved)
    return warnings
