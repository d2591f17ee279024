"""The git layer: the only code that runs git, grouped by git concept.

Callers get typed results (``WorktreeEntry``, ``StatusReport``), never raw
text, and import what they use from here (``from router.git import Git``).
The modules behind it:

- ``run``: the one place a git process starts (environment, signals, errors);
- ``answers``: git's answers remembered while a command gathers its facts
  (:func:`remembered`), forgotten at every change made through ``run`` and at
  :func:`forget`; the rule that makes a remembered answer never a stale one
  is written there;
- ``files``: git's files read without git where the layout is the plain one,
  private: a fact read from them is exported here, and the package decides
  where a fact is read from (the session-start hook loads nothing else);
- ``objectfiles``: git's objects (loose and in packs) read without git, as
  private as ``files``: each object is hashed again and checked against its
  id, so an answer read there is the object git would give, or git is asked;
- ``layout``: where am I (a checkout's top level, git dir and common dir);
- ``refs``, ``reflog``, ``worktrees``, ``status``, ``history``, ``objects``,
  ``config``, ``remote``, ``sparse``: one git concept each; ``checkout``: what changes a
  checkout (cherry-pick, merge, reset, restore); ``submodules``: a new worktree's
  submodules checked out from the primary's objects; ``locks``: lock files left behind;
  ``unread``: why ``files`` does not read a repository, in kinds and words;
- ``client``: ``Git``, one directory's git with every concept's methods.

Importing this package costs nothing: each name is imported from its module
when first used, so a command that only reads git's files never loads the
modules that run git.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from router.git.answers import forget as forget
    from router.git.answers import remembered as remembered
    from router.git.borrowing import borrowers_to_keep as borrowers_to_keep
    from router.git.checkout import FastForward as FastForward
    from router.git.checkout import cherry_pick as cherry_pick
    from router.git.checkout import cherry_pick_abort as cherry_pick_abort
    from router.git.checkout import cherry_pick_head as cherry_pick_head
    from router.git.checkout import cherry_pick_quit as cherry_pick_quit
    from router.git.checkout import fast_forward as fast_forward
    from router.git.checkout import operation_in_progress as operation_in_progress
    from router.git.checkout import pull as pull
    from router.git.checkout import read_index as read_index
    from router.git.checkout import rebase_abort as rebase_abort
    from router.git.checkout import reset_hard as reset_hard
    from router.git.checkout import restore_worktree_files as restore_worktree_files
    from router.git.checkout import sequencer_empty as sequencer_empty
    from router.git.checkout import sequencer_locks as sequencer_locks
    from router.git.checkout import sequencer_start as sequencer_start
    from router.git.checkout import sequencer_unstarted as sequencer_unstarted
    from router.git.checkout import submodule_update as submodule_update
    from router.git.checkout import write_tree_files as write_tree_files
    from router.git.client import Git as Git
    from router.git.client import init_repo as init_repo
    from router.git.config import ConfigView as ConfigView
    from router.git.config import committer_unknown as committer_unknown
    from router.git.config import config_view as config_view
    from router.git.config import is_identity_error as is_identity_error
    from router.git.files import ANY_OBJECT_ID as ANY_OBJECT_ID
    from router.git.files import SETTLED_NS as SETTLED_NS
    from router.git.files import TORN_PLACEHOLDER as TORN_PLACEHOLDER
    from router.git.files import Unsure as Unsure
    from router.git.files import branches_present as branches_present
    from router.git.files import busy_with_branch as busy_with_branch
    from router.git.files import checked_out_branches as checked_out_branches
    from router.git.files import checkout_branch as checkout_branch
    from router.git.files import checkout_git_dir as checkout_git_dir
    from router.git.files import declares_submodules as declares_submodules
    from router.git.files import find_git_dir as find_git_dir
    from router.git.files import gitdir_pointer as gitdir_pointer
    from router.git.files import index_device as index_device
    from router.git.files import placeholder_head as placeholder_head
    from router.git.files import plain_checkouts as plain_checkouts
    from router.git.files import registration_file as registration_file
    from router.git.files import registration_of as registration_of
    from router.git.files import registrations as registrations
    from router.git.files import torn_registration as torn_registration
    from router.git.files import worktree_admin_dirs as worktree_admin_dirs
    from router.git.history import CherryEntry as CherryEntry
    from router.git.history import commit_message as commit_message
    from router.git.history import commit_parents as commit_parents
    from router.git.history import commits_only_head_reaches as commits_only_head_reaches
    from router.git.history import former_gitlinks as former_gitlinks
    from router.git.history import log_subjects as log_subjects
    from router.git.history import unique_commits as unique_commits
    from router.git.indexfile import IndexCopy as IndexCopy
    from router.git.indexfile import IndexEntry as IndexEntry
    from router.git.indexfile import checkout_index as checkout_index
    from router.git.indexfile import index_entries as index_entries
    from router.git.indexfile import index_paths as index_paths
    from router.git.indexfile import is_indexed_file as is_indexed_file
    from router.git.indexfile import unwatched_entries as unwatched_entries
    from router.git.keep import keep_borrowed_objects as keep_borrowed_objects
    from router.git.layout import GitPlace as GitPlace
    from router.git.layout import RepoLayout as RepoLayout
    from router.git.layout import absolute_git_dir as absolute_git_dir
    from router.git.layout import git_place as git_place
    from router.git.layout import repository_above as repository_above
    from router.git.layout import repository_below as repository_below
    from router.git.locks import left_lock_warnings as left_lock_warnings
    from router.git.locks import left_locks as left_locks
    from router.git.objects import changed_paths as changed_paths
    from router.git.objects import commit_all as commit_all
    from router.git.objects import commit_tree as commit_tree
    from router.git.objects import directory_tree as directory_tree
    from router.git.objects import file_blobs as file_blobs
    from router.git.objects import files_below as files_below
    from router.git.objects import first_blob as first_blob
    from router.git.objects import gc_prune_now as gc_prune_now
    from router.git.objects import index_blobs as index_blobs
    from router.git.objects import index_tree as index_tree
    from router.git.objects import is_cut_short as is_cut_short
    from router.git.objects import moved_gitlinks as moved_gitlinks
    from router.git.objects import reflog_expire_unreachable as reflog_expire_unreachable
    from router.git.objects import snapshot_tree as snapshot_tree
    from router.git.objects import tree_blobs as tree_blobs
    from router.git.objects import tree_files as tree_files
    from router.git.objects import worktree_blobs as worktree_blobs
    from router.git.reflog import DanglingHead as DanglingHead
    from router.git.reflog import OddReflog as OddReflog
    from router.git.reflog import branch_created_at as branch_created_at
    from router.git.reflog import head_reflog_name as head_reflog_name
    from router.git.reflog import head_reflog_only as head_reflog_only
    from router.git.reflog import head_reflog_where as head_reflog_where
    from router.git.refs import RefTip as RefTip
    from router.git.refs import update_ref as update_ref
    from router.git.remote import add_remote as add_remote
    from router.git.remote import commits_on_no_remote as commits_on_no_remote
    from router.git.remote import gone_remotes as gone_remotes
    from router.git.remote import push as push
    from router.git.remote import push_delete as push_delete
    from router.git.remote import remote_branch_tip as remote_branch_tip
    from router.git.remote import remote_prune_refs as remote_prune_refs
    from router.git.run import GitError as GitError
    from router.git.run import GitMissing as GitMissing
    from router.git.run import Running as Running
    from router.git.sparse import check_out_sparse as check_out_sparse
    from router.git.sparse import missing_dirs as missing_dirs
    from router.git.sparse import set_sparse_cone as set_sparse_cone
    from router.git.sparse import sparse_cone as sparse_cone
    from router.git.status import StatusReport as StatusReport
    from router.git.status import checkout_state as checkout_state
    from router.git.submodules import Borrowed as Borrowed
    from router.git.submodules import Gitlink as Gitlink
    from router.git.submodules import MissingCommit as MissingCommit
    from router.git.submodules import Unkept as Unkept
    from router.git.submodules import borrow_module as borrow_module
    from router.git.submodules import borrow_pin as borrow_pin
    from router.git.submodules import borrow_pins as borrow_pins
    from router.git.submodules import borrowed_sources as borrowed_sources
    from router.git.submodules import checkout_borrowed as checkout_borrowed
    from router.git.submodules import checkout_finished as checkout_finished
    from router.git.submodules import declared_gitlinks as declared_gitlinks
    from router.git.submodules import detached_head as detached_head
    from router.git.submodules import drop_borrow_pin as drop_borrow_pin
    from router.git.submodules import forget_unfinished_checkout as forget_unfinished_checkout
    from router.git.submodules import initialised_names as initialised_names
    from router.git.submodules import keep_borrowed as keep_borrowed
    from router.git.submodules import keep_borrowers as keep_borrowers
    from router.git.submodules import module_dir as module_dir
    from router.git.submodules import pin_borrower as pin_borrower
    from router.git.submodules import pinned_borrower as pinned_borrower
    from router.git.submodules import primary_module as primary_module
    from router.git.submodules import unkept as unkept
    from router.git.unread import layout_words as layout_words
    from router.git.worktrees import ADD_IN_PROGRESS as ADD_IN_PROGRESS
    from router.git.worktrees import SUBMODULES_REFUSAL as SUBMODULES_REFUSAL
    from router.git.worktrees import WorktreeEntry as WorktreeEntry

# Where each public name lives, for the import on first use (:func:`__getattr__`):
# the names each module exports, as the TYPE_CHECKING imports above name them.
_EXPORTS = {
    "answers": "forget remembered",
    "borrowing": "borrowers_to_keep",
    "checkout": (
        "FastForward cherry_pick cherry_pick_abort cherry_pick_head cherry_pick_quit"
        " fast_forward operation_in_progress pull read_index rebase_abort reset_hard"
        " restore_worktree_files sequencer_empty sequencer_locks sequencer_start"
        " sequencer_unstarted submodule_update write_tree_files"
    ),
    "client": "Git init_repo",
    "config": "ConfigView committer_unknown config_view is_identity_error",
    "files": (
        "ANY_OBJECT_ID SETTLED_NS TORN_PLACEHOLDER Unsure branches_present"
        " busy_with_branch checked_out_branches checkout_branch checkout_git_dir"
        " declares_submodules find_git_dir gitdir_pointer index_device placeholder_head"
        " plain_checkouts registration_file registration_of registrations"
        " torn_registration worktree_admin_dirs"
    ),
    "history": (
        "CherryEntry commit_message commit_parents commits_only_head_reaches"
        " former_gitlinks log_subjects unique_commits"
    ),
    "indexfile": (
        "IndexCopy IndexEntry checkout_index index_entries index_paths is_indexed_file"
        " unwatched_entries"
    ),
    "keep": "keep_borrowed_objects",
    "layout": "GitPlace RepoLayout absolute_git_dir git_place repository_above repository_below",
    "locks": "left_lock_warnings left_locks",
    "objects": (
        "changed_paths commit_all commit_tree directory_tree file_blobs files_below first_blob"
        " gc_prune_now index_blobs index_tree is_cut_short moved_gitlinks"
        " reflog_expire_unreachable snapshot_tree tree_blobs tree_files worktree_blobs"
    ),
    "reflog": (
        "DanglingHead OddReflog branch_created_at head_reflog_name head_reflog_only"
        " head_reflog_where"
    ),
    "refs": "RefTip update_ref",
    "remote": (
        "add_remote commits_on_no_remote gone_remotes push push_delete remote_branch_tip"
        " remote_prune_refs"
    ),
    "run": "GitError GitMissing Running",
    "sparse": "check_out_sparse missing_dirs set_sparse_cone sparse_cone",
    "status": "StatusReport checkout_state",
    "submodules": (
        "Borrowed Gitlink MissingCommit Unkept borrow_module borrow_pin borrow_pins"
        " borrowed_sources checkout_borrowed checkout_finished declared_gitlinks"
        " detached_head drop_borrow_pin forget_unfinished_checkout initialised_names"
        " keep_borrowed keep_borrowers module_dir pin_borrower pinned_borrower"
        " primary_module unkept"
    ),
    "unread": "layout_words",
    "worktrees": "ADD_IN_PROGRESS SUBMODULES_REFUSAL WorktreeEntry",
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names.split()}


def __getattr__(name: str) -> object:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'router.git' has no attribute {name!r}")
    # __import__, not importlib: the session-start hook must not pay for importlib's own imports.
    value = getattr(__import__(f"router.git.{module}", fromlist=[name]), name)
    globals()[name] = value  # asked once
    return value
