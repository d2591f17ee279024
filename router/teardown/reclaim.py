"""``--reclaim`` (DESIGN §11): space the cleanup freed is given back, repo-wide, on request."""

from __future__ import annotations

import os

from router import git as g
from router.errors import ErrorCode
from router.git import GitError
from router.reasons import Reason, Why
from router.teardown.blockers import holding_parts
from router.teardown.steps import (
    Decision,
    Step,
    StepResult,
    acting,
    done,
    failed,
    refused,
    settled,
    skipped,
)
from router.topic import state
from router.topic.target import home_repo
from router.topic.workspace import Repo


def decide_reclaim(repo: Repo, *, asked: bool) -> Decision:
    """``--reclaim``: expire unreachable reflogs and ``gc --prune=now``, only while nobody else
    may be writing into the object store."""
    if not asked:
        return settled(skipped(Step.RECLAIM, Why(Reason.NOT_ASKED)))
    working = _working_elsewhere(repo)
    if working:
        held = Why(Reason.HELD_ELSEWHERE, parts=working)
        return settled(refused(Step.RECLAIM, ErrorCode.HELD, held))

    def reclaim() -> StepResult:
        try:
            g.reflog_expire_unreachable(repo.git)
            g.gc_prune_now(repo.git)
        except GitError as exc:
            failure = Why(Reason.RECLAIM_FAILED, text=exc.first_line)
            return failed(Step.RECLAIM, failure, exc.code)
        return done(Step.RECLAIM, Why(Reason.RECLAIMED))

    return acting(reclaim, Step.RECLAIM, Why(Reason.RECLAIMED))


def _working_elsewhere(repo: Repo) -> tuple[Why, ...]:
    """Who else may be writing into this repository's object store (none: no one).

    Another live session holding one of its topics, and any process but this
    one and its callers whose working directory or open file lies in one of its
    checkouts or its git dir: a shell running `git commit`, an agent that never
    registered. Holders alone would miss those.
    """
    return (*_other_sessions(repo), *_other_processes(repo))


def _other_sessions(repo: Repo) -> tuple[Why, ...]:
    from router.topic.holders import Holder, holder_words, other_holders, topics_with_holders

    held = [(repo.common_dir, topic_id) for topic_id in topics_with_holders(repo.common_dir)]
    # A topic this repo is a secondary of keeps its holders at its home (DESIGN §10).
    for topic_id in state.secondary_homes(repo.common_dir):
        home = home_repo(repo, topic_id)
        if home.common_dir != repo.common_dir:
            held.append((home.common_dir, topic_id))
    found = {
        (holder.pid, holder.session or "")
        for common_dir, topic_id in held
        for holder in other_holders(common_dir, topic_id)
    }
    named = sorted(found, key=lambda h: holder_words(*h))  # in the order of their words
    return holding_parts((Holder(pid, None, session) for pid, session in named), elsewhere=True)


def _other_processes(repo: Repo) -> tuple[Why, ...]:
    from router.processes import process_name, processes_using, requesters

    places = [os.path.realpath(e.path) for e in repo.git.worktree_list() if not e.bare]
    places.append(os.path.realpath(repo.common_dir))
    users = processes_using(list(dict.fromkeys(places)), excluding=requesters())
    if users is None:
        return (Why(Reason.NO_PROC, path=str(repo.primary)),)
    return tuple(
        Why(Reason.PROCESS_IN, count=pid, text=process_name(pid), path=place)
        for place, pids in sorted(users.items())
        for pid in sorted(pids)
    )
