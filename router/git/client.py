"""``Git``: git anchored to one directory, with every concept's questions on one handle.

Each concept's methods live in their concept's module (refs, worktrees, status,
history, objects, remotes and config), and importing them all costs ~35 ms
(``subprocess``, ``dataclasses``, a dozen records). A command that only asks
where a checkout is (``phase``) must not pay for that, so the handle starts
with the layout methods alone and takes a concept in among its bases the first
time one of its methods is asked for (:func:`_take_in`). Once every concept is
in, its attributes resolve exactly as the composed class's below do
(a test holds the two against each other); type checkers see
that composed class.
"""

from __future__ import annotations

import _thread

from router.git.layout import LayoutMethods

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from router.git.history import HistoryMethods
    from router.git.objects import ObjectMethods
    from router.git.refs import RefMethods
    from router.git.remote import RemoteMethods
    from router.git.status import StatusMethods
    from router.git.worktrees import WorktreeMethods

# The concepts in the order of the composed class's bases: (module, class).
CONCEPTS = (
    ("refs", "RefMethods"),
    ("worktrees", "WorktreeMethods"),
    ("status", "StatusMethods"),
    ("history", "HistoryMethods"),
    ("objects", "ObjectMethods"),
    ("remote", "RemoteMethods"),
)

# Every attribute a concept's class defines (its own, or a base's that the layout
# methods lack: config is remote's), by the module that brings it in.
METHODS = {
    "refs": (
        "current_branch checked_out_branch head head_commit rev_parse _rev_parse commits _commits"
        " existing_refs _for_each_ref_names ref_tips _ref_tips branch_exists local_branches"
        " _local_branches check_ref_format_branch branch_delete branch_delete_at"
    ),
    "worktrees": (
        "worktree_list _worktree_list worktree_add worktree_lock worktree_unlock worktree_remove"
        " lists_worktree _registration"
    ),
    "status": (
        "gitlinks added_in_index untracked_under status status_started ls_files ignored_untracked"
        " staged_paths"
    ),
    "history": "is_ancestor _is_ancestor known_ancestry count_commits cherry _cherry",
    "objects": "blob tree_of _tree_of merge_tree _merge_tree",
    "remote": (
        "has_remote remote_url fetch start_fetch config_get _config_get remove_config_section"
        " drop_branch_config"
    ),
}
_CONCEPT_OF = {name: module for module, names in METHODS.items() for name in names.split()}
_taking_in = _thread.allocate_lock()


if TYPE_CHECKING:

    class Git(
        RefMethods, WorktreeMethods, StatusMethods, HistoryMethods, ObjectMethods, RemoteMethods
    ):
        """git anchored to one directory (``git -C <cwd>``), by concept: where am I (layout),
        refs, worktrees, status, history, objects, remotes and config."""

        __slots__ = ()

else:

    class Git(LayoutMethods):
        """git anchored to one directory (``git -C <cwd>``), by concept: where am I (layout),
        refs, worktrees, status, history, objects, remotes and config (each taken in on
        first use)."""

        __slots__ = ()

        def __getattr__(self, name: str) -> object:
            # Called only when the usual lookup fails: a concept not taken in yet (or
            # taken in by another thread since this one looked).
            module = _CONCEPT_OF.get(name)
            if module is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            _take_in(module)
            return object.__getattribute__(self, name)


def _take_in(module: str) -> None:
    """Add ``module``'s concept to Git's bases (in the composed order), once."""
    name = dict(CONCEPTS)[module]
    concept = getattr(__import__(f"router.git.{module}", fromlist=[name]), name)
    order = [cls for _module, cls in CONCEPTS]
    with _taking_in:
        if concept in Git.__bases__:
            return
        taken = {*Git.__bases__, concept} - {LayoutMethods}
        Git.__bases__ = (*sorted(taken, key=lambda c: order.index(c.__name__)), LayoutMethods)


def init_repo(path: Path, *, branch: str, bare: bool = False) -> Git:
    """``git init`` a new repository at ``path`` on ``branch``; the Git anchored there."""
    path.mkdir(parents=True, exist_ok=True)
    # -b, not init.defaultBranch: a fresh machine may have no config at all.
    Git(path).run("init", "--quiet", "-b", branch, *(["--bare"] if bare else []))
    return Git(path)
