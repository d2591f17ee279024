"""Doctor's checks of the topic records, their branches, lock owners and holder files."""

from __future__ import annotations

import os
from pathlib import Path

from router.doctor.findings import Kind, Problem, as_topic_id, new_finding, with_detail
from router.doctor.repairs import (
    delete_orphan_branch,
    drop_lock_owner,
    drop_record,
    drop_stale_holder,
    orphan_branch_kept,
    record_kept,
)
from router.git import WorktreeEntry
from router.mounts import worktree_unmounted
from router.topic import holders, journal, state
from router.topic.workspace import Repo


def readable_records(repo: Repo) -> list[state.TopicRecord]:
    found = []
    for topic_id in state.list_records(repo.common_dir):
        record = state.read_record_or_none(repo.common_dir, topic_id)  # corrupt: its own check
        if record is not None:
            found.append(record)
    return found


def orphan_branch_problems(repo: Repo, entries: list[WorktreeEntry]) -> list[Problem]:
    held = {e.branch for e in entries if e.branch}
    found = []
    for record in readable_records(repo):
        branch = record.branch
        if not record.branch_created or branch in held or not repo.git.branch_exists(branch):
            continue
        finding = new_finding(repo, Kind.ORPHAN_BRANCH, f"refs/heads/{branch}", "", record.id)
        detail = "branch this tool created; no worktree has it checked out"
        tip = repo.git.rev_parse(f"refs/heads/{branch}")
        kept = orphan_branch_kept(repo, branch, tip, record) if tip is not None else ""
        if kept:
            found.append(Problem(with_detail(finding, f"{detail}; {kept}")))
        else:
            found.append(Problem(with_detail(finding, detail), delete_orphan_branch(repo, branch)))
    return found


def record_problems(repo: Repo, entries: list[WorktreeEntry]) -> list[Problem]:
    found = []
    for topic_id in state.list_records(repo.common_dir):
        path = state.record_path(repo.common_dir, topic_id)
        try:
            record = state.read_record(repo.common_dir, topic_id)
        except state.RecordCorrupt as exc:
            detail = f"{exc.reason}; not trusted, not deleted: fix or move it by hand"
            found.append(Problem(new_finding(repo, Kind.RECORD_CORRUPT, path, detail, topic_id)))
            continue
        if record is None:
            continue
        found += _record_checks(repo, record, path)
    for aside in state.corrupt_records(repo.common_dir):
        topic = as_topic_id(aside.name.partition(".json")[0])
        detail = "a record that did not parse, set aside when a new one was written; inspect it, then delete it by hand"
        found.append(Problem(new_finding(repo, Kind.RECORD_CORRUPT, aside, detail, topic)))
    return found


def _record_checks(repo: Repo, record: state.TopicRecord, path: Path) -> list[Problem]:
    if record.torn_down:
        # Teardown keeps the record, marked complete, so a second teardown still
        # knows the topic and exits 0: that is a tombstone, not an inconsistency.
        return []
    if record.worktree is None:
        creating = journal.find(record, journal.Operation.CREATE)
        if creating is not None:
            detail = (
                f"creation stopped after {creating.step!r}; run the same `team-router new` or "
                "`team-router worktrees` again to finish it"
            )
            return [Problem(new_finding(repo, Kind.RECORD_INCOMPLETE, path, detail, record.id))]
        return []
    worktree = Path(record.worktree)
    if os.path.realpath(worktree) == str(repo.primary) or os.path.lexists(worktree):
        return []
    unmounted = worktree_unmounted(repo.common_dir, worktree)
    if unmounted is not None:
        # Not gone: its branch and record are still the topic's (teardown refuses too).
        detail = (
            f"its worktree {worktree} is not there because its filesystem is not mounted "
            f"({unmounted.why}); kept: mount it at {unmounted.point}"
        )
        return [Problem(new_finding(repo, Kind.RECORD_DIR_GONE, path, detail, record.id))]
    detail = f"its worktree {worktree} is gone"
    finding = new_finding(repo, Kind.RECORD_DIR_GONE, path, detail, record.id)
    kept = record_kept(repo, record, scanning=True)
    if kept:
        return [Problem(with_detail(finding, f"{detail}; {kept}"))]
    return [Problem(finding, drop_record(repo, record))]


def stale_lock_problems(repo: Repo) -> list[Problem]:
    found = []
    for owner in state.lock_owners(repo.common_dir):
        if not owner.stale:
            continue
        detail = f"owner file of process {owner.pid}, which is gone (a crashed run)"
        finding = new_finding(repo, Kind.STALE_LOCK, owner.path, detail, as_topic_id(owner.name))
        found.append(Problem(finding, drop_lock_owner(owner), lock=owner.name))
    return found


def holder_problems(repo: Repo) -> list[Problem]:
    found = []
    for topic_id in holders.topics_with_holders(repo.common_dir):
        for item in holders.read_all(repo.common_dir, topic_id):
            if item.holder is None:
                detail = f"holder file {item.problem}; not trusted, not deleted"
                found.append(
                    Problem(new_finding(repo, Kind.HOLDER_CORRUPT, item.path, detail, topic_id))
                )
            elif not holders.is_live(item.holder):
                detail = f"{holders.describe(item.holder)} is gone"
                finding = new_finding(repo, Kind.STALE_HOLDER, item.path, detail, topic_id)
                found.append(Problem(finding, drop_stale_holder(item.path)))
    return found
