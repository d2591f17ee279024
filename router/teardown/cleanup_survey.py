"""What pr-cleanup knows of one branch before it acts (DESIGN §11): teardown's facts of the
repo, read for the worktree that has the branch checked out, and origin's tip of it."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

from router import git as g
from router.errors import ErrorCode, RouterError
from router.git import Git, GitError, StatusReport, WorktreeEntry
from router.names import Branch
from router.progress import Echo
from router.reasons import Reason, Why
from router.records import record, replace
from router.teardown.blockers import hidden_work, reused_branch, reused_checkout, with_hidden
from router.teardown.facts import RepoPlan
from router.teardown.localstate import DEFAULT_LINE_TIMEOUT, read_declaration
from router.teardown.merged import Tips
from router.teardown.nested import survey_at
from router.teardown.plan_dir import artifacts_at_stake
from router.teardown.record import TopicRef
from router.teardown.remove import copies_note, included_copies, interrupted_removal
from router.teardown.unshipped import RunArtifacts, run_shipped
from router.topic import state
from router.topic.branches import branch_topic, refuse_protected
from router.topic.runs import PLANS_DIR, plan_dir_link
from router.topic.scope import RepoTarget, topic_temp_paths
from router.topic.workspace import DefaultBranch, Repo, default_branch, find_worktree


class Mode(StrEnum):
    MERGED = "merged"
    ABANDONED = "abandoned"


@record
class CleanupOptions:
    mode: Mode
    delete_remote: bool
    reclaim: bool
    dry_run: bool
    line_timeout: float = DEFAULT_LINE_TIMEOUT
    echo: Echo | None = None
    remove_reused: bool = False  # also remove a checkout and delete a branch `new` reused


AGAIN = "pr-cleanup"  # the command a refusal says to run again


@record
class Survey:
    """The branch as pr-cleanup finds it, read before anything is touched: teardown's facts of
    its repo (``plan``, whose worktree is the one that has the branch checked out), and what
    pr-cleanup alone asks: origin's tip of the branch."""

    plan: RepoPlan
    topic_id: str | None
    temp_paths: tuple[str, ...] | None = None  # the topic's recorded temp paths (home only)
    remote_tip: str | None = None
    remote_error: Why | None = None  # why origin could not be asked
    # A checkout rebasing or bisecting the branch (git lists it detached there), if one is.
    busy: str | None = None

    @property
    def branch(self) -> Branch:
        return Branch(self.plan.target.branch)

    @property
    def default(self) -> DefaultBranch:
        assert self.plan.default is not None  # survey() refuses without one
        return self.plan.default

    @property
    def record(self) -> state.TopicRecord | None:
        return self.plan.target.record

    @property
    def worktree_path(self) -> Path | None:
        return self.plan.worktree

    @property
    def entry(self) -> WorktreeEntry | None:
        """The linked worktree that has the branch checked out."""
        path = self.plan.worktree
        return (
            find_worktree(list(self.plan.entries), path) if path and self.plan.registered else None
        )

    @property
    def in_primary(self) -> bool:
        """The primary clone has the branch checked out (it is never removed)."""
        return bool(self.plan.entries) and self.plan.entries[0].branch == self.branch

    @property
    def tips(self) -> Tips:
        record = self.record
        return Tips(self.plan.tip, self.remote_tip, record.base_commit if record else None)

    def anything_left(self, repo: Repo) -> bool:
        plan = self.topic_id is not None and os.path.lexists(
            repo.primary / PLANS_DIR / self.topic_id
        )
        return bool(self.plan.tip or self.worktree_path or self.remote_tip or plan)


def survey(repo: Repo, branch: Branch, *, ask_remote: bool, remove_reused: bool = False) -> Survey:
    default = default_branch(repo.git)
    if default is None:
        # Refused before the facts, not a blocker of the plan: every fact of the branch is
        # read against the default branch (what is protected, the merge proof, .teamteardown),
        # so without one there is nothing to plan.
        raise RouterError(
            ErrorCode.NO_DEFAULT_BRANCH,
            f"cannot tell the default branch of {repo.primary}; run `git remote set-head origin --auto`",
        )
    refuse_protected(branch, default)
    entries = repo.git.worktree_list()
    topic_id = branch_topic(repo, branch)
    record, notes = _record(repo, topic_id)
    target = RepoTarget(
        # The repo's name in its topic, as teardown prints it; a branch of no topic
        # has only its directory's name.
        record.repo if record is not None else repo.primary.name,
        repo.primary,
        branch,
        None,
        repo,
        record,
        is_home=topic_id is not None and (record is None or record.repo == "home"),
        entries=tuple(entries),
    )
    plan = _facts(repo, target, default, topic_id, remove_reused=remove_reused)
    # The worktree is the topic's too: local state never deletes a temp path inside it.
    plan = replace(plan, target=replace(target, worktree=plan.worktree), notes=tuple(notes))
    remote_tip, remote_error = (
        _remote(repo, branch) if ask_remote else (None, Why(Reason.ORIGIN_NOT_ASKED))
    )
    temps = _temp_paths(repo, topic_id, record, plan.worktree if plan.registered else None)
    busy = g.busy_with_branch(str(repo.common_dir), branch)
    return Survey(plan, topic_id, temps, remote_tip, remote_error, busy)


def _facts(
    repo: Repo,
    target: RepoTarget,
    default: DefaultBranch,
    topic_id: str | None,
    *,
    remove_reused: bool,
) -> RepoPlan:
    """teardown's facts of the repo, read for the branch's one worktree (and a removal of ours
    a kill interrupted, which the remove step finishes: its deletions are nobody's work)."""
    branch, record = target.branch, target.record
    topic = topic_ref(topic_id, record)
    # -D and every later step only for a branch whose name matches byte for byte.
    tip = (
        repo.git.rev_parse(f"refs/heads/{branch}") if branch in repo.git.local_branches() else None
    )
    entry = next((e for e in target.entries[1:] if e.branch == branch), None)  # type: ignore[index]
    worktree = Path(entry.path) if entry else _unfinished_removal(repo, topic, record)
    removing = interrupted_removal(repo, topic, worktree)
    kept_worktree, kept_branch = (
        (None, None)
        if remove_reused
        else _reused(repo, branch, entry, record, exact=tip is not None)
    )
    # A kept checkout is not removed: its changes lose nothing, and refuse nothing.
    there = entry is not None and os.path.isdir(entry.path) and not removing and not kept_worktree
    config = g.config_view(repo.git)
    plan = RepoPlan(
        target,
        default,
        worktree,
        registered=entry is not None,
        entries=target.entries or (),
        # Counted as teardown counts them: untracked files only our exclude line hides too.
        status=with_hidden(Git(worktree).status(), hidden_work(worktree, topic_id))
        if there and worktree
        else StatusReport(),
        tip=tip,
        has_origin=config.has_remote("origin"),
        declaration=read_declaration(repo.git, default, record.declared_at if record else None),
        copies=copies_note(repo.primary, worktree, included_copies(record, worktree))
        if entry and worktree
        else None,
        # What an interrupted removal of ours would still delete, and a directory
        # deleted by hand leaves its submodules' git dirs in the registration.
        nested=survey_at(repo.common_dir, worktree, live=os.path.isdir(worktree) and not removing)
        if worktree and not kept_worktree
        else (),
        kept_worktree=kept_worktree,
        kept_branch=kept_branch,
        config=config,
        status_read=there,
        removing=removing,
    )
    shipped = topic_id is not None and run_shipped(repo.primary, topic_id, worktree)
    plan = replace(plan, shipped=shipped)
    return replace(plan, unshipped=tuple(run_at_stake(repo, topic_id, plan)))


def _unfinished_removal(
    repo: Repo, topic: TopicRef | None, record: state.TopicRecord | None
) -> Path | None:
    """The topic's worktree, no longer registered, that a removal of ours left half-way (None: none)."""
    if topic is None or record is None or record.worktree is None:
        return None
    path = Path(record.worktree)
    return path if os.path.lexists(path) and interrupted_removal(repo, topic, path) else None


def _reused(
    repo: Repo,
    branch: str,
    worktree: WorktreeEntry | None,
    record: state.TopicRecord | None,
    *,
    exact: bool,
) -> tuple[Why | None, Why | None]:
    """Why a topic's checkout and branch stay: `new` reused the user's own (teardown's rule).

    Only a topic's: a branch no record names is the user's to clean up, wherever
    its worktree is.
    """
    if record is None:
        return None, None
    checkout = reused_checkout(repo, Path(worktree.path)) if worktree is not None else None
    return checkout, reused_branch(branch, record) if exact else None


def topic_ref(topic_id: str | None, record: state.TopicRecord | None) -> TopicRef | None:
    """The topic whose record marks a removal in progress: only one team-router made (it has a record)."""
    if topic_id is None or record is None:
        return None
    return TopicRef(topic_id, record.repo)


def _record(repo: Repo, topic_id: str | None) -> tuple[state.TopicRecord | None, list[str]]:
    if topic_id is None:
        return None, []
    warnings: list[str] = []
    return state.read_record_or_none(repo.common_dir, topic_id, warnings), warnings


def _temp_paths(
    repo: Repo,
    topic_id: str | None,
    record: state.TopicRecord | None,
    worktree: Path | None,
) -> tuple[str, ...] | None:
    """The topic's recorded temp paths (home repo only), read before the plan dir goes."""
    if topic_id is None or (record is not None and record.repo != "home"):
        return None
    roots = [worktree] if worktree else []
    # Behind a link it is not this repository's plan dir: nothing is read there.
    ours = [r for r in [*roots, repo.primary] if plan_dir_link(str(r), topic_id) is None]
    return topic_temp_paths(record, *(root / PLANS_DIR / topic_id for root in ours))


def _remote(repo: Repo, branch: str) -> tuple[str | None, Why | None]:
    """origin's tip of ``branch`` (None: it has none), or why origin could not be asked."""
    if not repo.git.has_remote("origin"):
        return None, Why(Reason.ORIGIN_MISSING)
    try:
        return g.remote_branch_tip(repo.git, "origin", branch), None
    except GitError as exc:
        return None, Why(Reason.GIT_SAID, text=exc.first_line)


def run_at_stake(repo: Repo, topic_id: str | None, plan: RepoPlan) -> list[RunArtifacts]:
    """The artifacts of an unshipped run this cleanup would delete (a worktree it keeps, or whose
    removal of ours a kill interrupted, holds none it deletes)."""
    if topic_id is None:
        return []
    removed = None if plan.kept_worktree or plan.removing else plan.worktree
    return artifacts_at_stake(repo, topic_id, removed, shipped=plan.shipped)[1]
