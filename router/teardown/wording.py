"""The words of a step's reason: every :class:`~router.reasons.Why` said as people read it.

The one place a step's detail is written: steps decide a :class:`Why`, the text
and the JSON's ``detail`` are rendered here from it; so are the refusals that say
a reason (creation's of a half-made worktree), which is why this module sits
below every command (tests/test_boundaries.py's LAYERS). ``planned`` words are the dry
run's (``would …``): what the real run would do, with the reason it would report.
"""

from __future__ import annotations

from router.interrupt import NOT_DONE, name, stopped_words
from router.plandir.artifacts import PR
from router.reasons import Reason, Why
from router.teardown.factwords import (
    FACTS,
    PLANNED_FACTS,
    Words,
    artifacts_words,
    dirt_words,
    forks,
    name_some,
    pr_list_words,
    torn_words,
    unusable_words,
)
from router.topic.workspace import WORKTREES_DIR

EMPTY = "empty (nothing on it since it was cut)"  # an empty branch, as integrate says it


def in_words(why: Why) -> str:
    """``why`` in words: what is said before it, its own words, then its notes (``; ``)."""
    main = (PLANNED if why.planned else WORDS)[why.reason](why)
    return "; ".join([*map(in_words, why.before), main, *map(in_words, why.notes)])


def _missing(w: Why) -> str:
    return f"{w.count} commit(s) of {w.branch} are not on {w.default}: {name_some(w.items)}"


def _unintegrated(w: Why) -> str:
    """The step's refusal (``default`` known), or the plan's, which says the way out."""
    if w.default:
        return f"{_missing(w)}; pass --integrate, or --force to snapshot them"
    ways = (
        f"they are safe on origin/{w.branch} (pushed, as last fetched), so --force removes "
        "only the local copy (after a snapshot); or pass --integrate"
        if w.flag
        else "pass --integrate, or --force to snapshot them"
    )
    return (
        f"{w.count} commit(s) of {w.branch} are on no target branch: {name_some(w.items)}; {ways}"
    )


def _teardown_refused(w: Why) -> str:
    code = w.code or w.text  # an older record's code is its text
    where = f"{code} here" if code else "another repo"
    would = f": {in_words(w.inner[0])}" if w.inner else ""
    return f"not done: teardown refused ({where}){would}"


def _stopped_words(w: Why) -> str:
    """A signal (``signal``) stopped the step part-way (``flag``) or before it started; an
    older record's has the words in ``text``."""
    if w.parts:  # local-state's: what it did before the signal
        return f"{NOT_DONE} ({name(w.signal)}): {_parts(w)}"
    return stopped_words(w.signal, started=w.flag) if w.signal else w.text


def _sweep_words(w: Why) -> str:
    parts = []
    if w.items:
        verb = "would sweep" if w.planned else "swept"
        parts.append(f"{verb} {len(w.items)}: {name_some(w.items)}")
    parts += [_parts(w)] if w.parts or w.text else []  # the run's artifacts kept in refs
    if w.others:
        verb = "would keep" if w.planned else "kept"
        parts.append(f"{verb} {len(w.others)} (see kept): {name_some(w.others)}")
    return "; ".join(parts)


def _mode(w: Why) -> str:
    return "--rebase" if w.flag else "--ff-only"


def _as_fetched(w: Why) -> str:
    """Which tip of origin's was judged (``flag``: this command's own fetch)."""
    return "as this command fetched it" if w.flag else "as last fetched"


def _diverged(w: Why) -> str:
    d = w.default
    return (
        f"{d} has {w.count} commit(s) of its own that origin/{d} lacks, so --ff-only cannot "
        f"move it; rebase them yourself (`git -C {w.path} pull --rebase origin {d}`)"
    )


def _unshipped(w: Why) -> str:
    """Why the run's artifacts stay: the plan dirs (``parts``) of ``topic``, and both ways
    out; without a topic, each directory git no longer knows says its own."""
    parts, topic = _parts(w), w.topic
    if not topic:
        return parts
    force = (
        f"`team-router teardown {topic} --force` snapshots them and takes the topic apart"
        if w.again == "pr-cleanup"
        else "pass --force to snapshot them before they go"
    )
    return (
        f"{topic} has not shipped (no {PR}), and {w.again} would delete the run's artifacts: "
        f"{parts}; finish the run (`team-router next {topic}` says what is left; `team-router "
        f"record pr {topic} <url>` once it has shipped), or {force} "
        f"(`team-router restore {topic}` brings the run back)"
    )


def _removed(w: Why) -> str:
    snap = f"; its work is in {w.ref} ({w.commit[:12]})" if w.ref else ""
    held = f", {artifacts_words(w)} included" if w.ref and w.items else ""
    return f"removed {w.path}{snap}{held}"


def _remove_planned(w: Why) -> str:
    snap = " after writing a snapshot" if w.flag else ""
    held = f" holding {artifacts_words(w)}" if w.items else ""
    return f"would remove {w.path}{snap}{held}"


def _half_removed(w: Why) -> str:
    what = "removing" if w.flag else "finishing the removal of"
    blocked = _not_deleted(w)
    stuck = f"cannot delete {blocked}" if blocked else ""
    named = f"{name_some(w.items)} appeared there meanwhile: kept" if w.items else ""
    fix = "once that is cleared," if blocked else f"move them out of {w.path}, then"
    return (
        f"{what} {w.path} stopped half-way: {'; '.join(x for x in (stuck, named) if x)}; "
        f"the rest is deleted, and the record keeps what the removal judged; {fix} "
        f"run {w.again} again to finish the removal"
    )


def _not_deleted(w: Why) -> str:
    """The paths a removal could not delete (``parts``, the first of ``count``); an older
    record's words are in ``text``."""
    if not w.parts:
        return w.text
    more = f"; and {w.count - len(w.parts)} more" if w.count > len(w.parts) else ""
    return "; ".join(map(in_words, w.parts)) + more


def _parts(w: Why) -> str:
    """What a reason is about (``parts``), each in its own words; a :class:`Why` made before
    those facts were fields (an older record's) holds their words in ``text``."""
    return "; ".join(map(in_words, w.parts)) if w.parts else w.text


def _holders(w: Why) -> str:
    """The sessions holding a topic (``parts``); an older record's words are in ``text``."""
    return ", ".join(map(in_words, w.parts)) if w.parts else w.text


def _way_out_operation(w: Why) -> str:
    """The commands that end a stopped operation (``text``), the one that keeps its commits
    included: a cherry-pick or revert sequence can be left without its ``*_HEAD`` (a conflict
    committed by hand, or a git killed as it finished): ``--abort`` then rewinds every commit
    the sequence made, ``--quit`` keeps them."""
    cmd = f"git -C {w.path} {w.text}"
    if w.text == "bisect":
        return f"end it with `{cmd} reset`"
    if w.text in {"cherry-pick", "revert"}:
        return (
            f"finish it (`{cmd} --continue`), end it keeping the commits it made "
            f"(`{cmd} --quit`), or undo it (`{cmd} --abort`)"
        )
    return f"finish it, or undo it with `{cmd} --abort`"


def _deleted(w: Why) -> str:
    if not w.flag:
        return f"deleted {w.branch} ({_parts(w)})"
    held = f"; its commits stay reachable from {w.ref}" if w.ref else ""
    return f"deleted {w.branch} (--force{held})"


def _snapshot_failed(w: Why) -> str:
    kept = w.branch or ("the plan dir" if w.flag else "the worktree")
    return f"{_parts(w)}; {kept} is kept"


def _pull_failed(w: Why) -> str:
    d = w.default
    left = f"; left to you: {_diverged(w)}" if w.count else ""
    return f"git pull {_mode(w)} origin {d} failed ({w.text}); aborted, {d} left as it was{left}"


def _pull_failed_planned(w: Why) -> str:
    d = w.default
    if not w.flag:
        return f"would fail and be left to you: {_diverged(w)}"
    return (
        f"would fail and be left to you: git pull --rebase origin {d} would stop at a conflict "
        f"({d}'s {w.count} commit(s) of its own and origin/{d} change the same lines)"
    )


def _updated(w: Why) -> str:
    d = w.default
    if not w.command:
        return f"{d} fast-forwarded to origin/{d} as this command fetched it{w.text}"
    how = "rebased onto" if w.flag else "fast-forwarded to"
    return f"{w.command} origin {d}: {d} {how} origin/{d}{w.text}"


def _updated_planned(w: Why) -> str:
    d = w.default
    if not w.command:
        return f"would fast-forward {d} to origin/{d}"
    own = f" ({d} has {w.count} commit(s) of its own)" if w.count else ""
    return f"would run {w.command} origin {d}{own}"


def _busy(w: Why) -> str:
    how = "fetched only" if w.flag else "origin could not be fetched"
    return f"{how}: the primary clone was not updated because {_parts(w)}"


def _removed_untracked(w: Why) -> str:
    held = f"; {artifacts_words(w)} are in {w.ref} ({w.commit[:12]})" if w.ref else ""
    return f"removed {w.path} (untracked){held}"


def _removed_untracked_planned(w: Why) -> str:
    held = f" after writing a snapshot holding {artifacts_words(w)}" if w.items else ""
    return f"would remove {w.path} (untracked){held}"


def _git_failed(w: Why) -> str:
    return f"{w.command or 'git'} failed: {w.text}"


def _interrupted_pick(w: Why) -> str:
    return f"{w.path}: the cherry-pick of {w.branch} onto {w.default} was interrupted"


def _no_identity(w: Why) -> str:
    p = w.path
    return (
        f"git cannot name a committer in {p} ({w.text.removeprefix('fatal: ')}), so nothing was "
        f'cherry-picked; set one with `git -C {p} config user.name "Your Name"` and '
        f"`git -C {p} config user.email you@example.com` (or `git config --global ...`), "
        "then run teardown again"
    )


def _not_merged(w: Why) -> str:
    """pr-cleanup's refusal without a merge proof; never suggests --abandon (the merge may not
    have reached origin yet). ``flag``: the branch holds nothing, so teardown is the way."""
    fix = (
        f"merge its PR first; if it is merged, check that origin/{w.default} has every "
        f"commit of {w.branch}, then run this again"
    )
    if w.flag:
        teardown = f"`team-router teardown {w.topic}`" if w.topic else "teardown"
        fix = (
            f"nothing was merged, so there is nothing to clean up after: {teardown} takes it apart"
        )
    return (
        f"{w.branch} is not proven merged into origin/{w.default}: {_parts(w)}; "
        f"nothing was deleted ({fix})"
    )


def _copies_words(w: Why) -> str:
    """The .worktreeinclude copies (``items``) a removal deletes, the edited ones (``others``)."""
    if not w.items:
        return w.text  # an older record's, said before these facts were fields
    edited = f" (edited since copied, not kept: {name_some(w.others)})" if w.others else ""
    return f"it held copies placed by .worktreeinclude: {name_some(w.items)}{edited}"


def _stack_names(w: Why) -> str:
    """The stacked branches deleted (``items``), and those found already gone (``others``)."""
    names = ", ".join(w.items) or "none"
    return names + (f" ({', '.join(w.others)} already gone)" if w.others else "")


def _half_made(w: Why) -> str:
    """Creation's refusal of the half-made worktree at ``path``: ``inner`` is how git left it
    half-made, then why it is not undone (a process still using it, or anything else)."""
    made, kept = w.inner
    said = f"{w.repo}: {w.path} is a worktree `git worktree add` left half-made ({in_words(made)})"
    remove = f"`git -C {w.primary} worktree remove --force --force {w.path}`"
    if kept.reason in {Reason.ADD_RUNNING, Reason.LOCK_LEFT}:
        return (
            f"{said}, and {in_words(kept)}; wait until no git command runs there, then run this "
            f"again (if none does, run {remove} first)"
        )
    return (
        f"{said} and {in_words(kept)}; copy out anything you need from it, then run {remove} "
        "and run this again"
    )


WORDS: dict[Reason, Words] = {
    Reason.GIT_FAILED: _git_failed,
    Reason.IO_FAILED: lambda w: w.text,
    Reason.STOPPED: _stopped_words,
    Reason.HELD_BACK: lambda w: (
        f"not done: {w.step} {w.text or ('failed' if w.flag else 'refused')}"
    ),
    # integrate
    Reason.BRANCH_GONE: lambda w: f"branch {w.branch} is gone: nothing to integrate",
    Reason.KEPT_UNMERGED: lambda w: (
        f"{w.branch} is kept, with its {w.count} commit(s) not on the default branch"
    ),
    Reason.KEPT_BRANCH: lambda w: f"nothing to integrate: {w.branch} is kept",
    Reason.NO_DEFAULT_BRANCH: lambda w: (
        f"{w.path}: cannot tell the default branch"
        if w.flag
        else f"{w.path}: the default branch is unknown"
    ),
    Reason.EMPTY: lambda w: f"nothing to integrate: {w.branch} is {EMPTY}",
    Reason.MERGED: lambda w: f"nothing to integrate: {w.branch} is merged ({_parts(w)})",
    Reason.INTEGRATED: lambda w: (
        f"nothing to integrate: every patch of {w.branch} is on {w.default}"
    ),
    Reason.UNINTEGRATED: _unintegrated,
    Reason.UNINTEGRATED_FORCED: lambda w: f"{_missing(w)}; --force: they go into a snapshot ref",
    Reason.PICKED: lambda w: (
        f"cherry-picked {w.count} commit(s) onto {w.default} in {w.path} "
        f"(not pushed: push {w.default} when you are ready){w.text}"  # older records: text
    ),
    Reason.PRIMARY_BUSY: lambda w: f"cannot cherry-pick in {w.path}: {_parts(w)}",
    Reason.PICK_INTERRUPTED: lambda w: (
        f"the cherry-pick onto {w.default} in {w.path} was interrupted ({w.text}); "
        "run teardown again: it undoes the half-done pick first"
    ),
    Reason.PICK_NOT_UNDONE: lambda w: (
        f"cherry-pick onto {w.default} in {w.path} stopped ({w.text}) and could not be undone "
        f"yet ({w.other}); run teardown again once that is fixed: it undoes the half-done "
        "pick first"
    ),
    Reason.PICK_LOCKED: lambda w: (
        f"cherry-pick onto {w.default} stopped: {w.text}; aborted, {w.default} is unchanged"
    ),
    Reason.CONFLICT: lambda w: (
        f"cherry-pick of {w.commit[:12]} onto {w.default} failed ({w.text}); "
        f"aborted, {w.default} is unchanged"
    ),
    Reason.NO_IDENTITY: _no_identity,
    Reason.PICK_UNDONE: lambda w: (
        f"{_interrupted_pick(w)}: {_parts(w) or w.text or 'nothing was left half-done'}; its "
        "commits are judged again"
    ),
    Reason.PICK_NOT_ENDED: lambda w: (
        f"{_interrupted_pick(w)}, and neither `git cherry-pick --abort` nor `--quit` ended it; "
        f"run `git -C {w.path} cherry-pick --quit` (it keeps the commits already picked), "
        "then run teardown again"
    ),
    Reason.PICK_FOREIGN: lambda w: (
        f"{_interrupted_pick(w)}, and {name_some(w.items)} hold changes that are not from it: "
        f"kept; save them (`git -C {w.path} stash push --include-untracked`), then run "
        "teardown again"
    ),
    Reason.PICK_STUCK: lambda w: (
        f"{_interrupted_pick(w)}, and {'undoing' if w.flag else 'ending'} it stopped: {w.text}"
    ),
    Reason.GIT_RUNNING: lambda w: (
        f"{w.path}: a git still holds {name_some(w.items)}; wait for it to finish "
        "(if no git command is running there, remove the lock), then run teardown again"
    ),
    # remove, verify-gone
    Reason.NO_WORKTREE: lambda w: f"no worktree has {w.branch} checked out: already gone",
    Reason.NOTHING_TO_RECHECK: lambda w: (
        f"no worktree has {w.branch} checked out: nothing to re-check"
    ),
    Reason.NO_WORKTREE_RECORDED: lambda w: "no worktree recorded",
    Reason.PRIMARY_CLONE: lambda w: f"{w.path} is the primary clone: never removed",
    Reason.NOT_REGISTERED: lambda w: (
        f"{w.path} is not a registered worktree: "
        + ("left to verify-gone and sweep" if w.flag else "already gone")
    ),
    Reason.REMOVED: _removed,
    Reason.FINISHED: lambda w: f"removed {w.path} (finished a removal that was interrupted)",
    Reason.REMOVAL_STOPPED: lambda w: f"removed {w.path} (git worktree remove stopped: {w.text})",
    Reason.INTERRUPTED: lambda w: (
        f"git worktree remove {w.path} was interrupted ({w.text}); "
        f"run {w.again} again to finish the removal"
    ),
    Reason.HALF_REMOVED: _half_removed,
    Reason.WRITTEN_SINCE: lambda w: (
        f"removing {w.path} was interrupted, and {name_some(w.items)} were written there since "
        f"(they are not what the removal judged): kept; move them out of {w.path}, then run "
        f"{w.again} again to finish the removal"
    ),
    Reason.UNSHIPPED: _unshipped,
    Reason.SNAPSHOT_FAILED: _snapshot_failed,
    Reason.WORKTREE_KEPT: lambda w: "the worktree is kept",
    Reason.STILL_REGISTERED: lambda w: f"{w.path} is still a registered worktree",
    Reason.GONE: lambda w: f"{w.path} is gone",
    Reason.OUTSIDE: lambda w: f"{w.path} came back outside {WORKTREES_DIR}: kept",
    Reason.CAME_BACK: lambda w: (
        f"{w.path} came back (a late writer) holding the artifacts of a run that has not "
        f"shipped: removed; {_parts(w)}"
        if w.flag
        else f"{w.path} came back (a late writer) holding only residue: removed"
    ),
    Reason.CAME_BACK_FAILED: lambda w: f"{w.path} came back and could not be removed: {_parts(w)}",
    Reason.NOT_SNAPSHOTTED: lambda w: f"{_parts(w)}; kept",
    Reason.CAME_BACK_UNSHIPPED: lambda w: f"{w.path} came back; {_parts(w)}",
    Reason.CAME_BACK_KEPT: lambda w: (
        f"{w.path} came back ({w.kind or w.text}: {name_some(w.items)}): kept for you to look at"
    ),
    # branch
    Reason.ALREADY_GONE: lambda w: f"{w.branch} is already gone",
    Reason.PRIMARY_HOLDS: lambda w: f"{w.branch} stays while the primary clone holds the work",
    Reason.CHECKED_OUT: lambda w: (
        f"{w.branch} is checked out in {w.path}: kept"
        if w.path
        else f"{w.branch} is checked out in a worktree ({w.text}): kept"
    ),
    Reason.DELETED: _deleted,
    Reason.HOLDS_UNINTEGRATED: lambda w: (
        f"{w.branch} holds {w.count} commit(s) not on the default branch; kept"
    ),
    # update-default
    Reason.UNKNOWN_DEFAULT: lambda w: "the default branch is unknown: nothing to update",
    Reason.NO_ORIGIN: lambda w: "no origin: nothing to update",
    Reason.UP_TO_DATE: lambda w: (
        f"{w.default} already holds origin/{w.default} {_as_fetched(w)}: nothing to pull"
    ),
    Reason.UPDATED: _updated,
    Reason.PULL_FAILED: _pull_failed,
    Reason.BUSY: _busy,
    Reason.LEFT_EARLIER: lambda w: (
        f"not done: left to you by an earlier run: {w.default} could not be updated to "
        f"origin/{w.default}; update it yourself "
        f"(`git -C {w.path} pull --rebase origin {w.default}`)"
    ),
    Reason.SUBMODULES_FOLLOWED: lambda w: (
        f"submodule(s) {name_some(w.items)} checked out at the commit {w.path} records"
    ),
    # the primary clone cannot move its default branch now, and the way out
    Reason.PRIMARY_OPERATION: lambda w: f"a {w.text} is in progress there",
    Reason.PRIMARY_CHANGES: lambda w: f"it has uncommitted changes ({name_some(w.items)})",
    Reason.PRIMARY_ELSEWHERE: lambda w: (
        f"it is on {w.branch or 'a detached HEAD'}, not {w.default}"
    ),
    Reason.PRIMARY_NO_DEFAULT: lambda w: f"it has no local {w.default}",
    Reason.WAY_OUT_OPERATION: _way_out_operation,
    Reason.WAY_OUT_STASH: lambda w: (
        f"commit or stash them (`git -C {w.path} stash push --include-untracked`)"
    ),
    Reason.WAY_OUT_SWITCH: lambda w: f"switch back with `git -C {w.path} switch {w.default}`",
    Reason.SUBMODULES_MOVED: lambda w: (
        f"submodule(s) {name_some(w.items)} checked out at their new commit"
    ),
    Reason.SUBMODULES_LEFT: lambda w: (
        f"git submodule update failed ({w.text}), so {name_some(w.items)} show as changed "
        f"in {w.path}: run `git submodule update` there"
    ),
    Reason.SUBMODULES_FAILED: lambda w: (
        f"git submodule update failed ({w.text}), so {name_some(w.items)} show as changed "
        f"in {w.path} and it was not updated: run `git submodule update` there"
    ),
    Reason.PRUNED: lambda w: f"origin no longer has {w.branch}: pruned origin/{w.branch}",
    Reason.NOT_PRUNED: lambda w: (
        f"origin still has {w.branch}: refs/remotes/origin/{w.branch} stays"
        if w.flag
        else f"origin still has {w.branch}: not pruned"
    ),
    Reason.NOTHING_TO_PRUNE: lambda w: f"no origin/{w.branch} ref: nothing to prune",
    Reason.PRUNE_FAILED: lambda w: f"git remote prune origin failed ({w.text})",
    Reason.UNREACHABLE: lambda w: "origin was not reachable: not pruned",
    # plan-dir
    Reason.NOT_A_TOPIC: lambda w: f"{w.branch} is not a topic id: no plan dir",
    Reason.NOT_HOME: lambda w: "home repo only",
    Reason.NO_PLAN_DIR: lambda w: f"no {w.path}/ in the primary clone",
    Reason.NOT_PLAIN: lambda w: f"{w.path} is not a plain directory: kept",
    Reason.SYMLINKED: lambda w: (
        f"{w.path} is reached through a symlink ({w.items[0] if w.items else w.text}): kept"
    ),
    Reason.UNTRACKED_UNKNOWN: lambda w: (
        f"git ls-files {w.path} failed, so it is not known to be untracked: kept"
    ),
    Reason.TRACKED: lambda w: f"{w.path}/ is tracked ({w.count} file(s)): kept",
    Reason.UNREADABLE: lambda w: f"cannot read {w.text} in {w.path}: kept",
    Reason.REMOVED_UNTRACKED: _removed_untracked,
    Reason.REMOVE_FAILED: lambda w: f"removing {w.path} failed: {w.text}",
    # the plan's refusals, a refused teardown's steps
    Reason.CHECK_FAILED: lambda w: f"{w.repo}: checking the repo failed: {w.text}",
    Reason.HELD: lambda w: (
        f"{w.topic} is held by {_holders(w)}; `team-router release {w.topic}` first"
        if w.flag
        else f"{w.topic} is held by {_holders(w)}; release it or pass --force"
    ),
    Reason.DETACHED_COMMITS: lambda w: (
        f"{w.path} is on a detached HEAD holding {w.count} commit(s) no branch has; "
        "put them on a branch, or pass --force to snapshot them"
    ),
    Reason.TEARDOWN_REFUSED: _teardown_refused,
    Reason.UNCHECKED: lambda w: "not known until the repo can be checked",
    # sweep
    Reason.NO_RESIDUE: lambda w: f"no residue under {w.path}",
    Reason.SWEPT: _sweep_words,
    Reason.RESIDUE_KEPT: _sweep_words,
    Reason.RESIDUE_STUCK: lambda w: f"could not remove residue: {name_some(w.items)}",
    # local-state
    Reason.ALREADY_RAN: lambda w: (
        "already ran in an earlier teardown or pr-cleanup of this topic "
        f"(`team-router local-state {w.topic}` runs it again)"
    ),
    Reason.NOTHING_DECLARED: _parts,
    Reason.RAN: _parts,
    # pr-cleanup's remote-branch, prune and reclaim
    Reason.ORIGIN_UNKNOWN: lambda w: (
        f"origin could not be asked ({_parts(w)}): not touched"
        if w.parts or w.text
        else "origin could not be asked: not pruned"
    ),
    Reason.REMOTE_GONE: lambda w: f"origin has no {w.branch}: already gone",
    Reason.REMOTE_KEPT: lambda w: (
        f"origin still has {w.branch} ({w.commit[:12]}); pass --delete-remote to delete it"
    ),
    Reason.REMOTE_UNINTEGRATED: lambda w: f"origin's {w.branch} is kept: {_parts(w)}",
    Reason.REMOTE_DELETE_FAILED: lambda w: (
        f"deleting origin's {w.branch} failed ({w.text}); it is kept"
    ),
    Reason.REMOTE_DELETED: lambda w: f"deleted {w.branch} on origin (was {w.commit[:12]})",
    Reason.TRACKING_STAYS: lambda w: (
        f"refs/remotes/origin/{w.branch} stays and keeps the branch's commits reachable"
    ),
    Reason.NOT_ASKED: lambda w: (
        "not asked (--reclaim expires unreachable reflogs and runs gc --prune=now)"
    ),
    Reason.HELD_ELSEWHERE: lambda w: (
        f"{_parts(w)}; `git gc --prune=now` could delete the objects a git there is writing "
        "(a commit under way, on no branch yet), so nothing was expired: run this again with "
        "--reclaim once they are done"
    ),
    Reason.RECLAIM_FAILED: lambda w: f"reclaiming space failed ({w.text})",
    Reason.RECLAIMED: lambda w: "expired unreachable reflog entries and ran git gc --prune=now",
    # pr-cleanup --abandon's snapshot and stack
    Reason.NOTHING_TO_KEEP: lambda w: f"{w.branch} is already gone: nothing to keep",
    Reason.TIP_KEPT: lambda w: f"{w.branch}'s work is kept in {w.ref} ({w.commit[:12]})",
    Reason.STACK_UNKNOWN: lambda w: "gh could not list the stacked PRs: no other branch is deleted",
    Reason.NO_STACK: lambda w: "no branch is stacked on this one",
    Reason.STACK_DELETED: lambda w: (
        f"deleted {_stack_names(w)} here and on origin (each tip kept in its snapshot ref)"
    ),
    Reason.STACK_KEPT: lambda w: (
        f"deleted {_stack_names(w)}; kept {_parts(w)}: every kept one is named with its cause"
    ),
    Reason.STACK_BRANCH_KEPT: lambda w: f"{w.branch} ({in_words(w.inner[0])})",
    # pr-cleanup's close-prs, and a repo that cannot be used
    Reason.NO_PR_LIST: lambda w: f"{pr_list_words(w)}: no PR can be closed",
    Reason.NO_OPEN_PR: lambda w: "no open PR for this branch (already closed, or none)",
    Reason.PRS_CLOSED: lambda w: f"closed {', '.join(w.items)} (children before parents)",
    Reason.PRS_NOT_CLOSED: lambda w: f"closing {', '.join(w.items)}: could not close {_parts(w)}",
    Reason.REPO_UNUSABLE: lambda w: f"repo not usable: {unusable_words(w)}",
    # pr-cleanup's own plan refusals
    Reason.IN_PRIMARY: lambda w: (
        f"{w.branch} is checked out in the primary clone {w.path}; switch it to the "
        "default branch first (the primary clone is never removed)"
    ),
    Reason.REBASING: lambda w: (
        f"{w.path} is rebasing or bisecting {w.branch}; finish it or run `git -C "
        f"{w.path} rebase --abort` (or `bisect reset`), then rerun (nothing was removed)"
    ),
    Reason.PRIMARY_DIRTY: lambda w: (
        f"the primary clone {w.path} has {dirt_words(w.items, w.others)}; commit or stash them "
        f"(`git -C {w.path} stash push --include-untracked`), then run this again"
    ),
    Reason.UNCOMMITTED: lambda w: (
        f"{w.path} has {dirt_words(w.items, w.others)}; commit or discard them, nothing was touched"
    ),
    Reason.NOT_MERGED: _not_merged,
    Reason.NO_MERGED_PR: lambda w: (
        f"{w.branch}: {_parts(w)}; gh knows no merged PR from this repository, and the content "
        "proof alone does not license deleting it: check that the work is merged, then run "
        "again with --yes; nothing was deleted"
    ),
    # notes
    Reason.COPIES: _copies_words,
    Reason.NESTED: lambda w: (
        "the repositories inside, holding nothing unpushed, go with it: "
        f"{name_some(map(in_words, w.parts) if w.parts else w.items)}"
    ),
    Reason.PLAN_DIR_KEPT: lambda w: "the plan dir is kept",
    Reason.UNTOUCHED: lambda w: "nothing was touched",
    Reason.HALF_MADE: _half_made,
    Reason.HALF_MADE_TORN: lambda w: (
        f"{w.repo}: {w.path} is a worktree whose git registration {w.items[0]} a killed `git "
        f"worktree add` left torn ({torn_words(w.kind) if w.kind else w.text}), so git no "
        "longer sees it, and "
        f"{in_words(w.inner[0])}; nothing was touched. Copy out anything you need from "
        f"{w.path}, then run `rm -rf {w.path} {w.items[0]}` and run this again"
    ),
    Reason.HALF_MADE_RESTORE: lambda w: (
        f"{w.path} is a worktree a killed restore's `git worktree add` left before it checked "
        f"anything out, and {in_words(w.inner[0])}; kept. Move them out of {w.path}, then run "
        f"`team-router restore {w.branch}` again"
    ),
    Reason.GH_DISAGREES: lambda w: f"gh disagrees: {_parts(w)}{forks(w)}",
    **FACTS,
}

# The dry run's words for a step it stops before: what the real run would do.
PLANNED: dict[Reason, Words] = {
    Reason.PRS_CLOSED: lambda w: f"would close {', '.join(w.items)}",
    Reason.TIP_KEPT: lambda w: f"would keep {w.branch}'s tip in a snapshot ref",
    Reason.STACK_DELETED: lambda w: (
        f"would snapshot and delete {', '.join(w.items)} here and on origin"
    ),
    Reason.STACK_KEPT: lambda w: (
        f"would delete {', '.join(w.items) or 'none'}; would keep {_parts(w)}: every kept one is "
        "named with its cause"
    ),
    Reason.SWEPT: _sweep_words,
    Reason.RESIDUE_KEPT: _sweep_words,
    # The report's summary is already the dry run's: "would run: <line>" for each declared
    # line, "temp paths: N would be removed". A "would run:" before it would also sit in front
    # of the declaration's note, even "nothing declared".
    Reason.RAN: _parts,
    Reason.PICKED: lambda w: f"would cherry-pick {w.count} commit(s) onto {w.default}",
    Reason.REMOVED: _remove_planned,
    Reason.FINISHED: lambda w: f"would finish removing {w.path} (its removal was interrupted)",
    Reason.GONE: lambda w: f"would re-check that {w.path} is gone",
    Reason.DELETED: lambda w: (
        f"would delete {w.branch} once a snapshot ref holds its commits"
        if w.flag
        else f"would delete {w.branch}"
    ),
    Reason.UP_TO_DATE: lambda w: (
        f"would leave {w.default} as it is: it already holds origin/{w.default} {_as_fetched(w)}"
    ),
    Reason.UPDATED: _updated_planned,
    Reason.PULL_FAILED: _pull_failed_planned,
    Reason.BUSY: lambda w: f"would fetch only: {_parts(w)}",
    Reason.SUBMODULES_FOLLOWED: lambda w: "would have " + WORDS[Reason.SUBMODULES_FOLLOWED](w),
    Reason.PRUNED: lambda w: (
        f"would prune refs/remotes/origin/{w.branch} once origin has no {w.branch}"
        if w.flag
        else f"would prune origin/{w.branch} if origin no longer has it"
    ),
    Reason.REMOTE_DELETED: lambda w: f"would delete {w.branch} on origin (at {w.commit[:12]})",
    Reason.RECLAIMED: lambda w: (
        "would expire unreachable reflog entries and run git gc --prune=now"
    ),
    Reason.REMOVED_UNTRACKED: _removed_untracked_planned,
    **PLANNED_FACTS,
}
