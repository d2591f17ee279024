"""The words of reasons said alone (router.teardown.wording says those that nest others).

Mostly the facts a reason's ``parts`` and ``inner`` name: a plan dir and the
run's files in it, a merge proof, what gh said of a PR, how git left a
half-made worktree and why it is kept; what keeps a worktree, who may be working there,
and what stays where it is. Each is
worded here, nesting no other reason's words, so that
:mod:`router.teardown.wording` (which does nest them) can import it and nothing
here imports back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from router.git import TORN_PLACEHOLDER, DanglingHead, OddReflog, layout_words
from router.mounts import unmounted_words
from router.names import protected_reason
from router.plandir.artifacts import PR
from router.processes import process_words
from router.reasons import Reason, Why
from router.topic.containment import uncontained_words
from router.topic.holders import holder_words
from router.topic.removal import blocked_words
from router.topic.runs import PLANS_DIR

Words = Callable[[Why], str]

LISTED = 20  # an unshipped run's files its words name before "and N more"
NAMED = 5  # how many paths or commits a one-line detail names before "and N more" (or "...")


def name_some(items: Iterable[object], limit: int = NAMED) -> str:
    """Up to ``limit`` of ``items``, then how many more."""
    names = [str(i) for i in items]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def first_few(items: Sequence[str]) -> str:
    """Up to :data:`NAMED` of ``items``, then ``...`` when there are more."""
    return ", ".join(items[:NAMED]) + (", ..." if len(items) > NAMED else "")


def files_words(names: Iterable[str]) -> str:
    """An unshipped run's files: up to :data:`LISTED`, then counted."""
    return name_some(names, LISTED)


def artifacts_words(w: Why) -> str:
    """The run's files (``items``) a snapshot keeps."""
    return f"the run's artifacts {files_words(w.items)}"


def short_ref(ref: str) -> str:
    """A branch or remote-tracking ref as people name it (``origin/main``, ``main``)."""
    return ref.removeprefix("refs/remotes/").removeprefix("refs/heads/")


def forks(w: Why) -> str:
    """The fork PRs (``others``) gh listed and the judgement ignored."""
    return f" (fork PR(s) {', '.join(w.others)} ignored)" if w.others else ""


def _gh_words(why: Why) -> str:
    """Why gh could not be asked, in gh's module's words: imported only for such a reason
    (it brings ``subprocess`` and ``typing``, ~10 ms every teardown would pay)."""
    from router.github import trouble_words

    return trouble_words(why)


def _residue(w: Why) -> str:
    force = (
        "`team-router sweep --force` snapshots"
        if w.again == "pr-cleanup"
        else "pass --force to snapshot"
    )
    return (
        f"{w.again} keeps {w.path}: it holds the artifacts of {w.topic}, a run that "
        f"has not shipped (no {PR}): {files_words(w.items)}; {force} them before they go "
        f"(`team-router restore {w.topic}` brings them back), or move them to where the "
        "run goes on"
    )


def _kept_words(w: Why) -> str:
    """What `new` reused, never made, and ``--remove-reused`` would take: a checkout
    (``path``) or a branch."""
    if w.path:
        return (
            f"kept {w.path}: team-router did not create this checkout (`new` reused it); "
            "pass --remove-reused to remove it"
        )
    if w.branch:
        return f"kept {w.branch}: team-router did not create this branch; pass --remove-reused to delete it"
    return w.text  # an older record's, said before these facts were fields


def _foreign(w: Why) -> str:
    """The worktree at ``path`` is on another branch (``others``: it, none when detached) than
    ``branch``; ``flag``: it is the topic's own path, switched (its work goes with that branch)."""
    if not w.path:
        return w.text  # an older record's, said before these facts were fields
    on = w.others[0] if w.others else ""
    if w.flag:
        return (
            f"{w.path} is the topic's worktree, switched to {on}: kept with that "
            f"branch's work (`git -C {w.path} switch {w.branch}`, then teardown again, removes it "
            f"with the topic; or merge {on} first)"
        )
    where = f"on {on}" if on else "on a detached HEAD"
    return f"{w.path} is a worktree {where}, not on {w.branch}: not this topic's, kept"


def dirt_words(tracked: tuple[str, ...], untracked: tuple[str, ...]) -> str:
    """``N changed tracked file(s): a, b; M untracked file(s): c`` (the parts that apply)."""
    parts = []
    if tracked:
        parts.append(f"{len(tracked)} changed tracked file(s): {name_some(tracked)}")
    if untracked:
        parts.append(f"{len(untracked)} untracked file(s): {name_some(untracked)}")
    return "; ".join(parts)


def _said(w: Why) -> str:
    """A fact nested in another said here (a repository inside, and what it would lose)."""
    return FACTS[w.reason](w)


def nested_losses(w: Why) -> str:
    """The repositories inside (``parts``) and what each would lose; an older record's words
    are in ``text``."""
    return ", ".join(map(_said, w.parts)) if w.parts else w.text


def _nested_work(w: Why) -> str:
    what = "the plan dir" if w.step == "plan-dir" else "the worktree"
    return (
        f"{w.path} holds other repositories whose work exists nowhere else; removing {what} "
        f"would delete it and --force cannot snapshot it: {nested_losses(w)}. Push those commits, or a "
        "tag holding them (`git log --oneline --all --reflog --not --remotes` there lists "
        "them, reflog-only ones included; `git reflog expire --expire-unreachable=now --all` "
        "there drops those no branch holds), commit and push (or discard) those changes, "
        f"or move the repository out of {what}; then run {w.again} again"
    )


def _users(w: Why) -> str:
    """The processes working in a worktree (``parts``); an older record's words in ``items``."""
    return ", ".join(map(_said, w.parts) if w.parts else w.items)


def _dirty(w: Why) -> str:
    # git status does not list the plan dir's files (our info/exclude line): `git add` skips them.
    add = f" (`git add -f` those under {PLANS_DIR}/)" if w.flag else ""
    return (
        f"{w.path} has {dirt_words(w.items, w.others)}; commit them{add}, or pass --force "
        "to snapshot and remove"
    )


def _unmounted_words(w: Why) -> str:
    """How the filesystem shows (``kind``) at ``items[0]``, to be mounted at ``other``; an
    older record's words are in ``text``."""
    if not w.kind:
        return w.text
    return unmounted_words(w.kind, w.items[0], w.other)


def _reflog_unknown(w: Why) -> str:
    """Why the HEAD reflog of ``path`` (at ``ref``) could not be read: its HEAD names a branch
    that does not exist (``branch``), or git's words (``text``); an older record's has the
    fix in ``other``."""
    why, fix = w.text, w.other or "keep those commits on a branch"
    if w.parts:
        why = "; ".join(map(_said, w.parts))
    if w.branch:
        dangling = DanglingHead(w.branch)
        why, fix = str(dangling), w.other or dangling.fix
    return (
        f"what the HEAD reflog of {w.path} ({w.ref}) alone keeps is unknown ({why}): "
        f"{fix}, then run {w.again} again"
    )


def _reflog_only(w: Why) -> str:
    p, shown = w.path, ", ".join(c[:12] for c in w.items[:5])
    return (
        f"the HEAD reflog of {p} is the only record of {w.count} commit(s) (a detached "
        f"HEAD's work, left behind; newest first: {shown}): `git -C {p} branch <name> "
        f"<commit>` keeps each, or `git -C {p} reflog expire --expire-unreachable=now HEAD` "
        f"drops them; then run {w.again} again"
    )


def pr_list_words(w: Why) -> str:
    """Why no PR list: gh unavailable (its words), or (``flag``) its listing failed."""
    return "gh failed while listing the PRs" if w.flag else gh_words(w)


def unusable_words(w: Why) -> str:
    """Why a listed repo cannot be used: its code and the containment's words (``kind``),
    or an older record's words."""
    if not w.kind:
        return w.text
    return f"{w.code}: {uncontained_words(w.kind, w.path, *w.items)}"


def gh_words(w: Why) -> str:
    """Why gh could not be asked: its part (``gh-unavailable``), or an older record's words."""
    return "; ".join(map(_said, w.parts)) if w.parts else w.text


def torn_words(kind: str) -> str:
    """What makes a worktree's registration torn (git/files.py's torn_registration)."""
    if kind == TORN_PLACEHOLDER:
        return "its HEAD is still git's placeholder (the null id)"
    return f"its {kind} file is missing or empty"


def _declaration_note(w: Why) -> str:
    from router.declared import declaration_note  # only a local-state says one

    return declaration_note(w.path, w.default, w.flag, w.count)


def temp_said(outcome: str, *, planned: bool) -> str:
    """A temp path's outcome in words, in the conditional when planned: every text says it so."""
    return f"would be {outcome}" if planned else str(outcome)


def _temp_paths_words(w: Why) -> str:
    """``temp paths: 2 removed, 1 missing``: each outcome (``items``) counted, in order."""
    counts: dict[str, int] = {}
    for outcome in w.items:
        said = temp_said(outcome, planned=w.flag)
        counts[said] = counts.get(said, 0) + 1
    return "temp paths: " + ", ".join(f"{n} {k}" for k, n in counts.items())


_ALONE = "the content proof alone decides"

FACTS: dict[Reason, Words] = {
    # an unshipped run's files, where they are and where a snapshot keeps them
    Reason.ARTIFACTS: lambda w: f"{w.path} holds {files_words(w.items)}",
    Reason.RESIDUE: _residue,
    Reason.ARTIFACTS_KEPT: lambda w: f"{artifacts_words(w)} are in {w.ref} ({w.commit[:12]})",
    # a merge proof
    Reason.ANCESTOR: lambda w: f"its tip is an ancestor of {short_ref(w.ref)}",
    Reason.PATCHES: lambda w: f"every patch is on {short_ref(w.ref)}",
    Reason.SQUASH: lambda w: f"its squashed change is already on {short_ref(w.ref)}",
    Reason.NOTHING_SINCE_CUT: lambda w: "empty: nothing on it since it was cut",
    # pr-cleanup's evidence of a merge: the content proof (or why there is none), then gh
    Reason.GONE_EVERYWHERE: lambda w: f"{w.branch} is gone here and on origin",
    Reason.NO_ORIGIN_DEFAULT: lambda w: f"origin has no {w.default}",
    Reason.CUT_EMPTY: lambda w: (
        f"{w.branch} is empty (nothing on it since it was cut at {w.commit[:12]})"
    ),
    Reason.NO_CONTENT_PROOF: lambda w: f"no content proof on {short_ref(w.ref)}",
    Reason.GH_SILENT: lambda w: f"{gh_words(w)}: {_ALONE}",
    Reason.GH_UNAVAILABLE: lambda w: f"gh unavailable: {_gh_words(w)}",
    Reason.GH_NO_PR: lambda w: f"gh knows no PR from this repo's {w.branch}{forks(w)}: {_ALONE}",
    Reason.GH_AGREES: lambda w: f"gh agrees: PR #{w.count} merged this head{forks(w)}",
    Reason.PR_NOT_MERGED: lambda w: f"PR #{w.count} is {w.text}",
    Reason.PR_OTHER_HEAD: lambda w: (
        f"PR #{w.count} merged {w.items[0][:12]}, but the branch is at {w.items[1][:12]}"
    ),
    Reason.PR_MERGED_ELSEWHERE: lambda w: (
        f"PR #{w.count}'s merge commit is not on {short_ref(w.ref)}"
    ),
    # what keeps a worktree
    Reason.NESTED_WORK: _nested_work,
    Reason.NESTED_REPO: lambda w: (
        f"{w.kind} {w.path}" + (f" ({'; '.join(map(_said, w.parts))})" if w.parts else "")
    ),
    Reason.NOT_A_REPOSITORY: lambda w: "git does not recognise it as a repository",
    Reason.NOT_INSPECTED: lambda w: f"git could not inspect it ({w.text})",
    Reason.ORPHANS: lambda w: (
        f"its linked worktree(s) {', '.join(w.items)} would lose their repository"
    ),
    Reason.UNPUSHED: lambda w: f"{w.count} commit(s) on none of its remote-tracking refs",
    Reason.REMOTES_GONE: lambda w: (
        f"remote {', '.join(w.items)} points at a path that no longer exists"
    ),
    Reason.CHANGES: lambda w: dirt_words(w.items, w.others),
    Reason.UNSEEN_FILES: lambda w: "git does not see files there: move them out of the worktree",
    Reason.MODULE_DIR: lambda w: f"git reads it as `git --git-dir={w.path} --work-tree={w.path}`",
    Reason.NOT_MOUNTED: lambda w: (
        f"{w.path} is not there because its filesystem is not mounted ({_unmounted_words(w)}); "
        f"kept: mount it at {w.other}, then run {w.again} again (if it is "
        f"really gone, `git worktree remove {w.path}` first)"
    ),
    Reason.LOCKED: lambda w: (
        f"{w.path} is locked{f' ({w.text})' if w.text else ''}; unlock it or pass --force"
    ),
    Reason.DIRTY: _dirty,
    Reason.REFLOG_UNKNOWN: _reflog_unknown,
    Reason.REFLOG_ONLY: _reflog_only,
    Reason.IN_USE: lambda w: (
        f"{w.path} is in use by {_users(w)} (its working directory or an open file is "
        "there): removing the worktree would pull the directory out from under it; close it "
        f"(exit the shell, quit the editor, stop the server), then run {w.again} again"
    ),
    # why origin's branch is kept
    Reason.REMOTE_NOT_FETCHED: lambda w: (
        f"it is at {w.commit[:12]}, which this clone has not fetched"
    ),
    Reason.REMOTE_NOT_MERGED: lambda w: f"it is at {w.commit[:12]}, which is not proven merged",
    Reason.REMOTE_AHEAD: lambda w: (
        f"it is at {w.commit[:12]}, with commits this clone's {w.branch} and its snapshot lack"
    ),
    Reason.PR_NOT_CLOSED: lambda w: (
        f"#{w.count} ({'; '.join(map(_gh_words, w.parts)) if w.parts else w.text})"
    ),
    # why a stacked branch is kept
    Reason.PROTECTED_BRANCH: lambda w: f"protected: {protected_reason(w.branch, w.default)}",
    Reason.STACK_CHECKED_OUT: lambda w: (
        f"checked out in {w.path}; run `team-router pr-cleanup {w.branch} --abandon` there"
    ),
    Reason.NOT_SURVEYED: lambda w: w.text,
    # local-state: the declaration, its lines, the temp paths
    Reason.DECLARED: lambda w: _declaration_note(w),
    Reason.LINES_RUN: lambda w: f"{w.items.count('ok')}/{len(w.items)} lines ok",
    Reason.WOULD_RUN: lambda w: f"would run: {w.text}",
    Reason.LINES_LEFT: lambda w: (
        f"interrupted: {w.count} line(s) not run to the end; temp paths not removed"
    ),
    Reason.NO_TEMP_PATHS: lambda w: "no temp paths recorded",
    Reason.TEMP_PATHS: _temp_paths_words,
    # what undoing a killed pick of ours did
    Reason.PICK_ABORTED: lambda w: "aborted its cherry-pick",
    Reason.PICK_QUIT: lambda w: "ended its cherry-pick, keeping the commits it had picked",
    Reason.CHANGES_DROPPED: lambda w: f"dropped its half-applied changes ({name_some(w.items)})",
    Reason.ODD_REFLOG: lambda w: str(OddReflog(w.path, unreadable=w.flag)),
    Reason.UNREAD_LAYOUT: lambda w: layout_words(w.kind, w.path),
    # why origin could not be asked
    Reason.ORIGIN_MISSING: lambda w: "no origin",
    Reason.ORIGIN_NOT_ASKED: lambda w: "not asked (dry run)",
    Reason.GIT_SAID: lambda w: w.text,
    # why a directory the sweep took for residue could not be removed
    Reason.OS_ERROR: lambda w: f"{w.text}: {w.path}",
    Reason.NOT_PUT_BACK: lambda w: f"written to while swept, kept at {w.path} ({w.text})",
    Reason.NO_PRIMARY_CLONE: lambda w: "no primary clone to keep a snapshot in",
    Reason.PLAN_DIR_NOT_SNAPSHOTTED: lambda w: f"snapshot of {w.path} failed: {w.text}",
    Reason.REFUSAL: lambda w: w.text,
    Reason.NOT_DELETED: lambda w: f"{w.path} ({blocked_words(w.text, w.kind, w.other)})",
    # why a snapshot could not be written
    Reason.SNAPSHOT_NOT_WRITTEN: lambda w: f"snapshot of {w.path or w.branch} failed: {w.text}",
    Reason.UNMERGED_INDEX: lambda w: (
        f"snapshot of {w.path} failed: its index has unmerged paths (a merge, rebase or "
        "cherry-pick is in progress there); finish or abort it, then run teardown again"
    ),
    Reason.TREE_UNREADABLE: lambda w: f"cannot read the tree of {w.branch} ({w.commit[:12]})",
    # who may be working there
    Reason.HOLDER: lambda w: (
        holder_words(w.count, w.text) + (" holds a topic of this repository" if w.flag else "")
    ),
    Reason.PROCESS_IN: lambda w: f"{process_words(w.count, w.text)} in {w.path}",
    Reason.PROCESS: lambda w: process_words(w.count, w.text),
    Reason.NO_PROC: lambda w: (
        f"this system has no /proc, so nothing shows that no other process works in {w.path}"
    ),
    # what stays where it is, and why
    Reason.KEPT: _kept_words,
    Reason.FOREIGN: _foreign,
    # git's first line in ``text`` (an older record's has the whole words there)
    Reason.LOCK_LOST: lambda w: (
        f"it could not be locked again ({w.text}): `git worktree lock --reason "
        f"'{w.other}' {w.path}` keeps other tools' cleanup away from it"
        if w.path
        else w.text
    ),
    Reason.CONFIG_KEPT: lambda w: (
        f"its config section branch.{w.branch} stays ({w.text})" if w.branch else w.text
    ),
    # a half-made `git worktree add` (router.create): how git left it, and why it is kept
    Reason.ADD_LOCKED: lambda w: f"git left it locked ({w.text})",
    Reason.ADD_UNFINISHED: lambda w: "the record shows its `git worktree add` never finished",
    Reason.NO_HEAD: lambda w: "it has no HEAD",
    Reason.NOT_A_CHECKOUT: lambda w: "git does not recognise it as a checkout",
    Reason.NO_INDEX: lambda w: "its files were never checked out (no index)",
    Reason.NOT_CREATING: lambda w: (
        "this topic's record does not show a creation by team-router still under way"
    ),
    Reason.BRANCH_MOVED: lambda w: f"branch {w.branch!r} has commits since it was created",
    Reason.LOCKED_ELSEWHERE: lambda w: "it is locked, not by team-router",
    Reason.OTHER_GITDIR: lambda w: f"git's registration names another worktree ({w.path})",
    Reason.THROUGH_SYMLINK: lambda w: "it is reached through a symlink",
    Reason.NOT_ITS_FILES: lambda w: (
        f"it holds files that are not its branch's ({first_few(w.items)})"
    ),
    Reason.ADD_RUNNING: lambda w: f"process(es) {', '.join(w.items)} still use it",
    Reason.LOCK_LEFT: lambda w: (
        f"git's lock file {w.path} is in it and no process list shows it is stale"
    ),
}

# A dry run's words for a fact it names: what the real run would do.
PLANNED_FACTS: dict[Reason, Words] = {
    Reason.ARTIFACTS_KEPT: lambda w: f"would first write {artifacts_words(w)} to {w.ref}",
}
