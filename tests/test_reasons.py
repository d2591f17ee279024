"""A step's reason is a value: every reason has its words, and its payload survives the record."""

from __future__ import annotations

import pytest

from router.reasons import Reason, Why
from router.records import replace
from router.teardown.wording import PLANNED, WORDS, in_words


def test_every_reason_has_words():
    # A reason with no words would fail only when a run reached it: each is worded here.
    assert [r for r in Reason if r not in WORDS and r not in PLANNED] == []


def test_a_reason_with_notes_before_and_after_is_said_in_order():
    why = Why(Reason.UPDATED, default="main", text="").after(
        Why(Reason.SUBMODULES_FOLLOWED, items=("lib",), path="/p")
    )
    why = why.noting(Why(Reason.NOTHING_TO_PRUNE, branch="b"))
    assert in_words(why) == (
        "submodule(s) lib checked out at the commit /p records; "
        "main fast-forwarded to origin/main as this command fetched it; "
        "no origin/b ref: nothing to prune"
    )


def test_more_than_five_items_are_named_then_counted():
    why = Why(Reason.NESTED, items=tuple(f"submodule m{i}" for i in range(7)))
    assert in_words(why) == (
        "the repositories inside, holding nothing unpushed, go with it: submodule m0, "
        "submodule m1, submodule m2, submodule m3, submodule m4 and 2 more"
    )


def test_a_why_round_trips_its_json_with_only_the_fields_it_sets():
    why = Why(Reason.REMOVED, path="/w", ref="refs/x", commit="a" * 40, planned=True).noting(
        Why(Reason.COPIES, text="it held copies")
    )
    data = why.to_json()
    assert data == {
        "reason": "removed",
        "path": "/w",
        "ref": "refs/x",
        "commit": "a" * 40,
        "planned": True,
        "notes": [{"reason": "copies", "text": "it held copies"}],
    }
    assert Why.from_json(data) == why


@pytest.mark.parametrize(
    "data",
    [
        {"reason": "no-such-reason"},
        {"reason": "removed", "path": 3},
        {"reason": "removed", "items": "a"},
        {"reason": "removed", "flag": 1},
        {"reason": "removed", "notes": {}},
        {"reason": "removed", "unknown": "x"},
        ["removed"],
    ],
)
def test_a_why_of_the_wrong_shape_is_refused(data):
    with pytest.raises(ValueError):
        Why.from_json(data)


def test_pr_cleanups_plan_refusals_are_said_as_before_they_were_reasons():
    # The words of pr-cleanup's own refusals did not change when they became reasons.
    said = {
        Why(Reason.IN_PRIMARY, branch="t", path="/p"): (
            "t is checked out in the primary clone /p; switch it to the default branch first "
            "(the primary clone is never removed)"
        ),
        Why(Reason.REBASING, branch="t", path="/w"): (
            "/w is rebasing or bisecting t; finish it or run `git -C /w rebase --abort` "
            "(or `bisect reset`), then rerun (nothing was removed)"
        ),
        Why(Reason.PRIMARY_DIRTY, path="/p", items=("a",), others=("b", "c")).noting(
            Why(Reason.UNTOUCHED)
        ): (
            "the primary clone /p has 1 changed tracked file(s): a; 2 untracked file(s): b, c; "
            "commit or stash them (`git -C /p stash push --include-untracked`), then run this "
            "again; nothing was touched"
        ),
        Why(Reason.UNCOMMITTED, path="/w", others=("x",)): (
            "/w has 1 untracked file(s): x; commit or discard them, nothing was touched"
        ),
        Why(Reason.HELD, topic="t", parts=(Why(Reason.HOLDER, count=7),), flag=True): (
            "t is held by process 7; `team-router release t` first"
        ),
        Why(Reason.NOT_MERGED, branch="t", default="main", text="no proof"): (
            "t is not proven merged into origin/main: no proof; nothing was deleted (merge its "
            "PR first; if it is merged, check that origin/main has every commit of t, then run "
            "this again)"
        ),
        Why(Reason.NOT_MERGED, branch="t", default="main", text="empty", topic="t", flag=True): (
            "t is not proven merged into origin/main: empty; nothing was deleted (nothing was "
            "merged, so there is nothing to clean up after: `team-router teardown t` takes it "
            "apart)"
        ),
        Why(Reason.NO_MERGED_PR, branch="t", text="content merged"): (
            "t: content merged; gh knows no merged PR from this repository, and the content "
            "proof alone does not license deleting it: check that the work is merged, then run "
            "again with --yes; nothing was deleted"
        ),
    }
    assert [in_words(why) for why in said] == list(said.values())


def test_facts_a_reason_is_about_are_said_as_before_they_were_fields():
    # The merge evidence, a lock not put back, a config section that stays, a foreign
    # worktree: their words did not change when their facts became fields.
    tip, head = "a" * 40, "b" * 40
    said = {
        Why(
            Reason.GH_DISAGREES,
            others=("#3",),
            parts=(
                Why(Reason.PR_NOT_MERGED, count=1, text="open"),
                Why(Reason.PR_OTHER_HEAD, count=2, items=(head, tip)),
                Why(Reason.PR_MERGED_ELSEWHERE, count=4, ref="refs/remotes/origin/main"),
            ),
        ): (
            "gh disagrees: PR #1 is open; PR #2 merged bbbbbbbbbbbb, but the branch is at "
            "aaaaaaaaaaaa; PR #4's merge commit is not on origin/main (fork PR(s) #3 ignored)"
        ),
        Why(Reason.GH_NO_PR, branch="t"): (
            "gh knows no PR from this repo's t: the content proof alone decides"
        ),
        Why(Reason.GH_SILENT, text="gh is not installed"): (
            "gh is not installed: the content proof alone decides"
        ),
        Why(Reason.GONE_EVERYWHERE, branch="t"): "t is gone here and on origin",
        Why(Reason.NO_ORIGIN_DEFAULT, default="main"): "origin has no main",
        Why(Reason.CUT_EMPTY, branch="t", commit=tip): (
            "t is empty (nothing on it since it was cut at aaaaaaaaaaaa)"
        ),
        Why(Reason.LOCK_LOST, path="/w", text="fatal: x", other="r"): (
            "it could not be locked again (fatal: x): `git worktree lock --reason 'r' /w` "
            "keeps other tools' cleanup away from it"
        ),
        Why(Reason.CONFIG_KEPT, branch="t", text="fatal: y"): (
            "its config section branch.t stays (fatal: y)"
        ),
        Why(Reason.FOREIGN, path="/w", branch="t"): (
            "/w is a worktree on a detached HEAD, not on t: not this topic's, kept"
        ),
        Why(Reason.COPIES, items=("a", "b"), others=("b",)): (
            "it held copies placed by .worktreeinclude: a, b (edited since copied, not kept: b)"
        ),
        Why(Reason.PICKED, count=1, default="main", path="/p").noting(
            Why(Reason.SUBMODULES_MOVED, items=("lib",))
        ): (
            "cherry-picked 1 commit(s) onto main in /p (not pushed: push main when you are "
            "ready); submodule(s) lib checked out at their new commit"
        ),
        Why(
            Reason.PRIMARY_BUSY,
            path="/p",
            parts=(
                Why(Reason.PRIMARY_OPERATION, path="/p", text="cherry-pick").noting(
                    Why(Reason.WAY_OUT_OPERATION, path="/p", text="cherry-pick")
                ),
            ),
        ): (
            "cannot cherry-pick in /p: a cherry-pick is in progress there; finish it (`git -C "
            "/p cherry-pick --continue`), end it keeping the commits it made (`git -C /p "
            "cherry-pick --quit`), or undo it (`git -C /p cherry-pick --abort`)"
        ),
        Why(Reason.BUSY, flag=True, parts=(Why(Reason.PRIMARY_NO_DEFAULT, default="main"),)): (
            "fetched only: the primary clone was not updated because it has no local main"
        ),
        Why(
            Reason.BUSY,
            planned=True,
            parts=(
                Why(Reason.PRIMARY_ELSEWHERE, default="main").noting(
                    Why(Reason.WAY_OUT_SWITCH, path="/p", default="main")
                ),
            ),
        ): (
            "would fetch only: it is on a detached HEAD, not main; switch back with "
            "`git -C /p switch main`"
        ),
        Why(
            Reason.PRIMARY_BUSY,
            path="/p",
            parts=(
                Why(Reason.PRIMARY_CHANGES, items=("a", "b")).noting(
                    Why(Reason.WAY_OUT_STASH, path="/p")
                ),
            ),
        ): (
            "cannot cherry-pick in /p: it has uncommitted changes (a, b); commit or stash them "
            "(`git -C /p stash push --include-untracked`)"
        ),
        Why(Reason.UPDATED, default="main").noting(
            Why(Reason.SUBMODULES_LEFT, items=("lib",), path="/p", text="fatal: z")
        ): (
            "main fast-forwarded to origin/main as this command fetched it; git submodule "
            "update failed (fatal: z), so lib show as changed in /p: run `git submodule "
            "update` there"
        ),
    }
    assert [in_words(why) for why in said] == list(said.values())


_HOLDER = Why(Reason.HOLDER, count=8)
_TIP = "a" * 40
_UNSEEN = Why(Reason.UNSEEN_FILES)
# The paths a removal could not delete, as an older record keeps them in words.
_STUCK = (
    "a (Operation not permitted: /w/a is immutable or append-only (`lsattr -d /w/a` shows it; "
    "`chattr -i -a /w/a` clears it)); m (a mount point (Device or resource busy): unmount it "
    "(`umount /w/m`)); r (on a read-only filesystem mounted at /ro: unmount it or mount it "
    "read-write); x (Permission denied); y (Permission denied); and 2 more"
)


def _unmounted(shows: str, point: str) -> str:
    return (
        f"/w is not there because its filesystem is not mounted ({shows}); kept: mount it at "
        f"{point}, then run teardown again (if it is really gone, `git worktree remove /w` first)"
    )


_STACK = (
    "main (protected: it is the default branch (main)); b (checked out in /w; run `team-router "
    "pr-cleanup b --abandon` there); e (git failed)"
)
_LOSSES = (
    "submodule lib (2 commit(s) on none of its remote-tracking refs; remote origin points at "
    "a path that no longer exists; 1 untracked file(s): a), nested repository c (git does not "
    "see files there: move them out of the worktree), submodule git dir /g/modules/m (git "
    "reads it as `git --git-dir=/g/modules/m --work-tree=/g/modules/m`), clone d (git does "
    "not recognise it as a repository), clone e (git could not inspect it (fatal: x)), clone "
    "f (its linked worktree(s) /o, /p would lose their repository)"
)
_GC = (
    "`git gc --prune=now` could delete the objects a git there is writing (a commit under "
    "way, on no branch yet), so nothing was expired: run this again with --reclaim once "
    "they are done"
)

# Each reason whose facts were words built elsewhere, in ``text``: the words of its facts,
# and of the same reason as a record written before them kept it (its words in ``text``).
SAID_FROM_FACTS = [
    (
        Why(Reason.TEARDOWN_REFUSED, code="dirty-worktree"),
        {"reason": "teardown-refused", "text": "dirty-worktree"},
        "not done: teardown refused (dirty-worktree here)",
    ),
    (
        Why(Reason.TEARDOWN_REFUSED),
        {"reason": "teardown-refused"},
        "not done: teardown refused (another repo)",
    ),
    (
        Why(Reason.STOPPED, signal=2),
        {"reason": "stopped", "text": "not done: interrupted (Ctrl-C): a rerun does it"},
        "not done: interrupted (Ctrl-C): a rerun does it",
    ),
    (
        Why(Reason.STOPPED, signal=15, flag=True),
        {
            "reason": "stopped",
            "text": "not done: interrupted (SIGTERM): stopped part-way; a rerun finishes it",
        },
        "not done: interrupted (SIGTERM): stopped part-way; a rerun finishes it",
    ),
    (
        Why(Reason.HELD_BACK, step="integrate", flag=True),
        {"reason": "held-back", "step": "integrate", "text": "failed"},
        "not done: integrate failed",
    ),
    (
        Why(Reason.HELD_BACK, step="remove"),
        {"reason": "held-back", "step": "remove", "text": "refused"},
        "not done: remove refused",
    ),
    (
        Why(Reason.HELD, topic="t", parts=(Why(Reason.HOLDER, count=7, text="s1"), _HOLDER)),
        {"reason": "held", "topic": "t", "text": "process 7 (session s1), process 8"},
        "t is held by process 7 (session s1), process 8; release it or pass --force",
    ),
    (
        Why(
            Reason.HELD_ELSEWHERE,
            parts=(
                Why(Reason.HOLDER, count=7, text="s1", flag=True),
                Why(Reason.PROCESS_IN, count=9, text="vim", path="/w"),
            ),
        ),
        {
            "reason": "held-elsewhere",
            "text": "process 7 (session s1) holds a topic of this repository; "
            "process 9 (vim) in /w",
        },
        f"process 7 (session s1) holds a topic of this repository; process 9 (vim) in /w; {_GC}",
    ),
    (
        Why(Reason.HELD_ELSEWHERE, parts=(Why(Reason.NO_PROC, path="/p"),)),
        {
            "reason": "held-elsewhere",
            "text": "this system has no /proc, so nothing shows that no other process works in /p",
        },
        f"this system has no /proc, so nothing shows that no other process works in /p; {_GC}",
    ),
    (
        Why(Reason.NO_PR_LIST, flag=True),
        {"reason": "no-pr-list", "text": "gh failed while listing the PRs"},
        "gh failed while listing the PRs: no PR can be closed",
    ),
    (
        Why(
            Reason.PRS_NOT_CLOSED,
            items=("#1", "#2", "#3"),
            parts=(
                Why(Reason.PR_NOT_CLOSED, count=1, text="HTTP 403"),
                Why(Reason.PR_NOT_CLOSED, count=3, text="timeout"),
            ),
        ),
        {
            "reason": "prs-not-closed",
            "items": ["#1", "#2", "#3"],
            "text": "#1 (HTTP 403); #3 (timeout)",
        },
        "closing #1, #2, #3: could not close #1 (HTTP 403); #3 (timeout)",
    ),
    (
        Why(
            Reason.PRS_NOT_CLOSED,
            items=("#1", "#2"),
            parts=(
                Why(
                    Reason.PR_NOT_CLOSED,
                    count=2,
                    parts=(
                        Why(
                            Reason.GH_UNAVAILABLE,
                            kind="failed",
                            command="pr close",
                            text="HTTP 403",
                        ),
                    ),
                ),
            ),
        ),
        {
            "reason": "prs-not-closed",
            "items": ["#1", "#2"],
            "text": "#2 (gh pr close failed: HTTP 403)",
        },
        "closing #1, #2: could not close #2 (gh pr close failed: HTTP 403)",
    ),
    (
        Why(
            Reason.REMOTE_UNINTEGRATED,
            branch="t",
            parts=(Why(Reason.REMOTE_NOT_FETCHED, commit=_TIP),),
        ),
        {
            "reason": "remote-unintegrated",
            "branch": "t",
            "text": "it is at aaaaaaaaaaaa, which this clone has not fetched",
        },
        "origin's t is kept: it is at aaaaaaaaaaaa, which this clone has not fetched",
    ),
    (
        Why(
            Reason.REMOTE_UNINTEGRATED,
            branch="t",
            parts=(Why(Reason.REMOTE_NOT_MERGED, commit=_TIP),),
        ),
        {
            "reason": "remote-unintegrated",
            "branch": "t",
            "text": "it is at aaaaaaaaaaaa, which is not proven merged",
        },
        "origin's t is kept: it is at aaaaaaaaaaaa, which is not proven merged",
    ),
    (
        Why(
            Reason.REMOTE_UNINTEGRATED,
            branch="t",
            parts=(Why(Reason.REMOTE_AHEAD, commit=_TIP, branch="t"),),
        ),
        {
            "reason": "remote-unintegrated",
            "branch": "t",
            "text": "it is at aaaaaaaaaaaa, with commits this clone's t and its snapshot lack",
        },
        "origin's t is kept: it is at aaaaaaaaaaaa, with commits this clone's t and its "
        "snapshot lack",
    ),
    (
        Why(Reason.CAME_BACK_KEPT, path="/w", kind="unexpected-files", items=("a", "b")),
        {"reason": "came-back-kept", "path": "/w", "text": "unexpected-files", "items": ["a", "b"]},
        "/w came back (unexpected-files: a, b): kept for you to look at",
    ),
    (
        Why(Reason.SYMLINKED, path="/p/docs/plans/t", items=("/p/docs",)),
        {"reason": "symlinked", "path": "/p/docs/plans/t", "text": "/p/docs"},
        "/p/docs/plans/t is reached through a symlink (/p/docs): kept",
    ),
    (
        Why(Reason.REFLOG_UNKNOWN, path="/w", ref="/a/logs/HEAD", branch="gone", again="teardown"),
        {
            "reason": "reflog-unknown",
            "path": "/w",
            "ref": "/a/logs/HEAD",
            "text": "its HEAD names gone, which does not exist",
            "other": "`git branch gone <commit>` (any commit) lets git read that reflog",
            "again": "teardown",
        },
        "what the HEAD reflog of /w (/a/logs/HEAD) alone keeps is unknown (its HEAD names gone, "
        "which does not exist): `git branch gone <commit>` (any commit) lets git read that "
        "reflog, then run teardown again",
    ),
    (
        Why(Reason.REFLOG_UNKNOWN, path="/w", ref="r", text="fatal: x", again="teardown"),
        {
            "reason": "reflog-unknown",
            "path": "/w",
            "ref": "r",
            "text": "fatal: x",
            "other": "keep those commits on a branch",
            "again": "teardown",
        },
        "what the HEAD reflog of /w (r) alone keeps is unknown (fatal: x): keep those commits on a "
        "branch, then run teardown again",
    ),
    (
        Why(
            Reason.NESTED_WORK,
            path="/w",
            again="teardown",
            step="remove",
            parts=(
                Why(
                    Reason.NESTED_REPO,
                    kind="submodule",
                    path="lib",
                    parts=(
                        Why(Reason.UNPUSHED, count=2),
                        Why(Reason.REMOTES_GONE, items=("origin",)),
                        Why(Reason.CHANGES, others=("a",)),
                    ),
                ),
                Why(Reason.NESTED_REPO, kind="nested repository", path="c", parts=(_UNSEEN,)),
                Why(
                    Reason.NESTED_REPO,
                    kind="submodule git dir",
                    path="/g/modules/m",
                    parts=(Why(Reason.MODULE_DIR, path="/g/modules/m"),),
                ),
                Why(
                    Reason.NESTED_REPO,
                    kind="clone",
                    path="d",
                    parts=(Why(Reason.NOT_A_REPOSITORY),),
                ),
                Why(
                    Reason.NESTED_REPO,
                    kind="clone",
                    path="e",
                    parts=(Why(Reason.NOT_INSPECTED, text="fatal: x"),),
                ),
                Why(
                    Reason.NESTED_REPO,
                    kind="clone",
                    path="f",
                    parts=(Why(Reason.ORPHANS, items=("/o", "/p")),),
                ),
            ),
        ),
        {
            "reason": "nested-work",
            "path": "/w",
            "again": "teardown",
            "step": "remove",
            "text": _LOSSES,
        },
        "/w holds other repositories whose work exists nowhere else; removing the worktree "
        f"would delete it and --force cannot snapshot it: {_LOSSES}. Push those commits, or a "
        "tag holding them (`git log --oneline --all --reflog --not --remotes` there lists "
        "them, reflog-only ones included; `git reflog expire --expire-unreachable=now --all` "
        "there drops those no branch holds), commit and push (or discard) those changes, "
        "or move the repository out of the worktree; then run teardown again",
    ),
    (
        Why(
            Reason.STACK_KEPT,
            items=("c",),
            others=("d",),
            parts=(
                Why(
                    Reason.STACK_BRANCH_KEPT,
                    branch="main",
                    inner=(Why(Reason.PROTECTED_BRANCH, branch="main", default="main"),),
                ),
                Why(
                    Reason.STACK_BRANCH_KEPT,
                    branch="b",
                    inner=(Why(Reason.STACK_CHECKED_OUT, branch="b", path="/w"),),
                ),
                Why(
                    Reason.STACK_BRANCH_KEPT,
                    branch="e",
                    inner=(Why(Reason.NOT_SURVEYED, text="git failed"),),
                ),
            ),
        ),
        {"reason": "stack-kept", "items": ["c"], "others": ["d"], "text": _STACK},
        f"deleted c (d already gone); kept {_STACK}: every kept one is named with its cause",
    ),
    (
        Why(
            Reason.STACK_KEPT,
            planned=True,
            parts=(
                Why(
                    Reason.STACK_BRANCH_KEPT,
                    branch="release/1",
                    inner=(Why(Reason.PROTECTED_BRANCH, branch="release/1", default="main"),),
                ),
            ),
        ),
        {
            "reason": "stack-kept",
            "planned": True,
            "text": "release/1 (protected: release/* branches are protected)",
        },
        "would delete none; would keep release/1 (protected: release/* branches are protected): "
        "every kept one is named with its cause",
    ),
    (
        Why(
            Reason.RAN,
            parts=(
                Why(
                    Reason.DECLARED, path=".teamteardown", default="origin/main", flag=True, count=2
                ),
                Why(Reason.LINES_RUN, items=("ok", "failed")),
                Why(Reason.TEMP_PATHS, items=("removed", "missing", "removed")),
            ),
        ),
        {
            "reason": "ran",
            "text": ".teamteardown on origin/main: 2 line(s); 1/2 lines ok; temp paths: 2 removed, "
            "1 missing",
        },
        ".teamteardown on origin/main: 2 line(s); 1/2 lines ok; temp paths: 2 removed, 1 missing",
    ),
    (
        Why(
            Reason.RAN,
            planned=True,
            parts=(
                Why(Reason.DECLARED, path=".teamteardown", default="main", flag=True, count=1),
                Why(Reason.WOULD_RUN, text="make clean"),
                Why(Reason.TEMP_PATHS, items=("removed",), flag=True),
            ),
        ),
        {
            "reason": "ran",
            "planned": True,
            "text": ".teamteardown on main: 1 line(s); would run: make clean; temp paths: 1 would "
            "be removed",
        },
        ".teamteardown on main: 1 line(s); would run: make clean; temp paths: 1 would be removed",
    ),
    (
        Why(
            Reason.NOTHING_DECLARED,
            parts=(
                Why(Reason.DECLARED, path=".teamteardown", default="main at aaaaaaaaaaaa"),
                Why(Reason.NO_TEMP_PATHS),
            ),
        ),
        {
            "reason": "nothing-declared",
            "text": "no .teamteardown on main at aaaaaaaaaaaa — nothing declared; no temp paths "
            "recorded",
        },
        "no .teamteardown on main at aaaaaaaaaaaa — nothing declared; no temp paths recorded",
    ),
    (
        Why(Reason.NOTHING_DECLARED, parts=(Why(Reason.DECLARED, path=".teamteardown"),)),
        {"reason": "nothing-declared", "text": "no default branch known — nothing declared"},
        "no default branch known — nothing declared",
    ),
    (
        Why(
            Reason.STOPPED,
            signal=2,
            parts=(
                Why(Reason.DECLARED, path=".teamteardown", default="main", flag=True, count=3),
                Why(Reason.LINES_RUN, items=("ok", "interrupted")),
                Why(Reason.LINES_LEFT, count=2),
            ),
        ),
        {
            "reason": "stopped",
            "text": "not done: interrupted (Ctrl-C): .teamteardown on main: 3 line(s); 1/2 lines "
            "ok; interrupted: 2 line(s) not run to the end; temp paths not removed",
        },
        "not done: interrupted (Ctrl-C): .teamteardown on main: 3 line(s); 1/2 lines ok; "
        "interrupted: 2 line(s) not run to the end; temp paths not removed",
    ),
    (
        Why(
            Reason.PICK_UNDONE,
            path="/p",
            branch="t",
            default="main",
            parts=(Why(Reason.PICK_QUIT), Why(Reason.CHANGES_DROPPED, items=("a", "b"))),
        ),
        {
            "reason": "pick-undone",
            "path": "/p",
            "branch": "t",
            "default": "main",
            "text": "ended its cherry-pick, keeping the commits it had picked; dropped its "
            "half-applied changes (a, b)",
        },
        "/p: the cherry-pick of t onto main was interrupted: ended its cherry-pick, keeping the "
        "commits it had picked; dropped its half-applied changes (a, b); its commits are judged "
        "again",
    ),
    (
        Why(
            Reason.PICK_UNDONE,
            path="/p",
            branch="t",
            default="main",
            parts=(Why(Reason.PICK_ABORTED),),
        ),
        {
            "reason": "pick-undone",
            "path": "/p",
            "branch": "t",
            "default": "main",
            "text": "aborted its cherry-pick",
        },
        "/p: the cherry-pick of t onto main was interrupted: aborted its cherry-pick; its commits "
        "are judged again",
    ),
    (
        Why(Reason.PICK_UNDONE, path="/p", branch="t", default="main"),
        {
            "reason": "pick-undone",
            "path": "/p",
            "branch": "t",
            "default": "main",
            "text": "nothing was left half-done",
        },
        "/p: the cherry-pick of t onto main was interrupted: nothing was left half-done; its "
        "commits are judged again",
    ),
    (
        Why(
            Reason.NOT_MOUNTED,
            path="/w",
            kind="link-missing",
            items=("/m",),
            other="/n",
            again="teardown",
        ),
        {
            "reason": "not-mounted",
            "path": "/w",
            "text": "/m links to /n, which is missing",
            "other": "/n",
            "again": "teardown",
        },
        _unmounted("/m links to /n, which is missing", "/n"),
    ),
    (
        Why(
            Reason.NOT_MOUNTED,
            path="/w",
            kind="missing",
            items=("/m",),
            other="/m",
            again="teardown",
        ),
        {
            "reason": "not-mounted",
            "path": "/w",
            "text": "/m is missing",
            "other": "/m",
            "again": "teardown",
        },
        _unmounted("/m is missing", "/m"),
    ),
    (
        Why(
            Reason.NOT_MOUNTED, path="/w", kind="fstab", items=("/m",), other="/m", again="teardown"
        ),
        {
            "reason": "not-mounted",
            "path": "/w",
            "text": "/etc/fstab mounts a filesystem at /m, and none is",
            "other": "/m",
            "again": "teardown",
        },
        _unmounted("/etc/fstab mounts a filesystem at /m, and none is", "/m"),
    ),
    (
        Why(
            Reason.NOT_MOUNTED,
            path="/w",
            kind="automount",
            items=("/m",),
            other="/m",
            again="teardown",
        ),
        {
            "reason": "not-mounted",
            "path": "/w",
            "text": "/m is an automount point its filesystem was not brought to",
            "other": "/m",
            "again": "teardown",
        },
        _unmounted("/m is an automount point its filesystem was not brought to", "/m"),
    ),
    (
        Why(
            Reason.NOT_MOUNTED, path="/w", kind="empty", items=("/m",), other="/m", again="teardown"
        ),
        {
            "reason": "not-mounted",
            "path": "/w",
            "text": "/m is an empty directory where the worktree's disk was mounted",
            "other": "/m",
            "again": "teardown",
        },
        _unmounted("/m is an empty directory where the worktree's disk was mounted", "/m"),
    ),
    (
        Why(
            Reason.NOT_MOUNTED,
            path="/w",
            kind="other-disk",
            items=("/m",),
            other="/m",
            again="teardown",
        ),
        {
            "reason": "not-mounted",
            "path": "/w",
            "text": "/m is a directory on another disk than the worktree's where the worktree's disk was mounted",
            "other": "/m",
            "again": "teardown",
        },
        _unmounted(
            "/m is a directory on another disk than the worktree's where the worktree's disk was mounted",
            "/m",
        ),
    ),
    (
        Why(Reason.ORIGIN_UNKNOWN, parts=(Why(Reason.ORIGIN_MISSING),)),
        {"reason": "origin-unknown", "text": "no origin"},
        "origin could not be asked (no origin): not touched",
    ),
    (
        Why(Reason.ORIGIN_UNKNOWN, parts=(Why(Reason.ORIGIN_NOT_ASKED),)),
        {"reason": "origin-unknown", "text": "not asked (dry run)"},
        "origin could not be asked (not asked (dry run)): not touched",
    ),
    (
        Why(Reason.ORIGIN_UNKNOWN, parts=(Why(Reason.GIT_SAID, text="fatal: x"),)),
        {"reason": "origin-unknown", "text": "fatal: x"},
        "origin could not be asked (fatal: x): not touched",
    ),
    (
        Why(Reason.ORIGIN_UNKNOWN),
        {"reason": "origin-unknown"},
        "origin could not be asked: not pruned",
    ),
    (
        Why(
            Reason.CAME_BACK_FAILED,
            path="/w",
            parts=(Why(Reason.OS_ERROR, text="Permission denied", path="/w/a"),),
        ),
        {"reason": "came-back-failed", "path": "/w", "text": "Permission denied: /w/a"},
        "/w came back and could not be removed: Permission denied: /w/a",
    ),
    (
        Why(
            Reason.CAME_BACK_FAILED,
            path="/w",
            parts=(Why(Reason.NOT_PUT_BACK, path="/w.aside", text="File exists"),),
        ),
        {
            "reason": "came-back-failed",
            "path": "/w",
            "text": "written to while swept, kept at /w.aside (File exists)",
        },
        "/w came back and could not be removed: written to while swept, kept at /w.aside "
        "(File exists)",
    ),
    (
        Why(
            Reason.CAME_BACK_FAILED,
            path="/w",
            parts=(
                Why(
                    Reason.NOT_SNAPSHOTTED,
                    parts=(
                        Why(
                            Reason.PLAN_DIR_NOT_SNAPSHOTTED, path="/w/docs/plans/t", text="fatal: x"
                        ),
                    ),
                ),
            ),
        ),
        {
            "reason": "came-back-failed",
            "path": "/w",
            "text": "snapshot of /w/docs/plans/t failed: fatal: x; kept",
        },
        "/w came back and could not be removed: snapshot of /w/docs/plans/t failed: fatal: x; kept",
    ),
    (
        Why(
            Reason.CAME_BACK_FAILED,
            path="/w",
            parts=(Why(Reason.NOT_SNAPSHOTTED, parts=(Why(Reason.NO_PRIMARY_CLONE),)),),
        ),
        {
            "reason": "came-back-failed",
            "path": "/w",
            "text": "no primary clone to keep a snapshot in; kept",
        },
        "/w came back and could not be removed: no primary clone to keep a snapshot in; kept",
    ),
    (
        Why(
            Reason.REFLOG_UNKNOWN,
            path="/w",
            ref="r",
            again="teardown",
            parts=(Why(Reason.ODD_REFLOG, path="/c/logs/refs/heads/x", flag=True),),
        ),
        {
            "reason": "reflog-unknown",
            "path": "/w",
            "ref": "r",
            "text": "/c/logs/refs/heads/x cannot be read",
            "other": "keep those commits on a branch",
            "again": "teardown",
        },
        "what the HEAD reflog of /w (r) alone keeps is unknown (/c/logs/refs/heads/x cannot be "
        "read): keep those commits on a branch, then run teardown again",
    ),
    (
        Why(
            Reason.REFLOG_UNKNOWN,
            path="/w",
            ref="r",
            again="teardown",
            parts=(Why(Reason.ODD_REFLOG, path="/c/logs/HEAD"),),
        ),
        {
            "reason": "reflog-unknown",
            "path": "/w",
            "ref": "r",
            "text": "/c/logs/HEAD has a line git would not write",
            "other": "keep those commits on a branch",
            "again": "teardown",
        },
        "what the HEAD reflog of /w (r) alone keeps is unknown (/c/logs/HEAD has a line git "
        "would not write): keep those commits on a branch, then run teardown again",
    ),
    (
        Why(
            Reason.REFLOG_UNKNOWN,
            path="/w",
            ref="r",
            again="teardown",
            parts=(Why(Reason.UNREAD_LAYOUT, kind="extensions-line", path="/c"),),
        ),
        {
            "reason": "reflog-unknown",
            "path": "/w",
            "ref": "r",
            "text": "/c/config has an [extensions] line not read here",
            "other": "keep those commits on a branch",
            "again": "teardown",
        },
        "what the HEAD reflog of /w (r) alone keeps is unknown (/c/config has an [extensions] "
        "line not read here): keep those commits on a branch, then run teardown again",
    ),
    (
        Why(Reason.REPO_UNUSABLE, code="missing", kind="missing", path="/ws/api"),
        {"reason": "repo-unusable", "text": "missing: /ws/api does not exist"},
        "repo not usable: missing: /ws/api does not exist",
    ),
    (
        Why(
            Reason.REPO_UNUSABLE,
            code="containment",
            kind="linked-elsewhere",
            path="/ws/api",
            items=("/else/api", "/ws"),
        ),
        {
            "reason": "repo-unusable",
            "text": "containment: /ws/api is a linked worktree of /else/api, which is not "
            "beside the home repo in /ws; list a sibling clone instead",
        },
        "repo not usable: containment: /ws/api is a linked worktree of /else/api, which is not "
        "beside the home repo in /ws; list a sibling clone instead",
    ),
    (
        Why(Reason.GH_SILENT, parts=(Why(Reason.GH_UNAVAILABLE, kind="not-installed"),)),
        {"reason": "gh-silent", "text": "gh unavailable: gh is not installed or not on PATH"},
        "gh unavailable: gh is not installed or not on PATH: the content proof alone decides",
    ),
    (
        Why(
            Reason.NO_PR_LIST,
            parts=(
                Why(
                    Reason.GH_UNAVAILABLE,
                    kind="not-authenticated",
                    other="ghe.example.com",
                    parts=(
                        Why(Reason.GH_UNAVAILABLE, kind="failed", command="auth status", count=4),
                    ),
                ),
            ),
        ),
        {
            "reason": "no-pr-list",
            "text": "gh unavailable: gh is not authenticated for ghe.example.com "
            "(gh auth status failed: exit 4)",
        },
        "gh unavailable: gh is not authenticated for ghe.example.com (gh auth status failed: "
        "exit 4): no PR can be closed",
    ),
    (
        Why(
            Reason.GH_SILENT,
            parts=(Why(Reason.GH_UNAVAILABLE, kind="failed", command="pr list", text="HTTP 403"),),
        ),
        {"reason": "gh-silent", "text": "gh unavailable: gh pr list failed: HTTP 403"},
        "gh unavailable: gh pr list failed: HTTP 403: the content proof alone decides",
    ),
    (
        Why(
            Reason.GH_SILENT,
            parts=(Why(Reason.GH_UNAVAILABLE, kind="cannot-run", text="Permission denied"),),
        ),
        {"reason": "gh-silent", "text": "gh unavailable: gh could not run: Permission denied"},
        "gh unavailable: gh could not run: Permission denied: the content proof alone decides",
    ),
    (
        Why(
            Reason.IN_USE,
            path="/w",
            again="teardown",
            parts=(
                Why(Reason.PROCESS, count=9, text="vim"),
                Why(Reason.PROCESS, count=12, text="?"),
            ),
        ),
        {
            "reason": "in-use",
            "path": "/w",
            "items": ["process 9 (vim)", "process 12 (?)"],
            "again": "teardown",
        },
        "/w is in use by process 9 (vim), process 12 (?) (its working directory or an open "
        "file is there): removing the worktree would pull the directory out from under it; "
        "close it (exit the shell, quit the editor, stop the server), then run teardown again",
    ),
    (
        Why(
            Reason.NESTED,
            parts=(
                Why(Reason.NESTED_REPO, kind="submodule", path="lib"),
                Why(Reason.NESTED_REPO, kind="nested repository", path="vendor/x"),
            ),
        ),
        {"reason": "nested", "items": ["submodule lib", "nested repository vendor/x"]},
        "the repositories inside, holding nothing unpushed, go with it: submodule lib, "
        "nested repository vendor/x",
    ),
    (
        Why(
            Reason.SNAPSHOT_FAILED,
            parts=(Why(Reason.SNAPSHOT_NOT_WRITTEN, path="/w", text="fatal: x"),),
        ),
        {"reason": "snapshot-failed", "text": "snapshot of /w failed: fatal: x"},
        "snapshot of /w failed: fatal: x; the worktree is kept",
    ),
    (
        Why(
            Reason.SNAPSHOT_FAILED,
            flag=True,
            parts=(Why(Reason.SNAPSHOT_NOT_WRITTEN, path="/p/docs/plans/t", text="[Errno 28] x"),),
        ),
        {
            "reason": "snapshot-failed",
            "flag": True,
            "text": "snapshot of /p/docs/plans/t failed: [Errno 28] x",
        },
        "snapshot of /p/docs/plans/t failed: [Errno 28] x; the plan dir is kept",
    ),
    (
        Why(
            Reason.SNAPSHOT_FAILED,
            branch="b",
            parts=(Why(Reason.SNAPSHOT_NOT_WRITTEN, branch="b", text="fatal: y"),),
        ),
        {"reason": "snapshot-failed", "branch": "b", "text": "snapshot of b failed: fatal: y"},
        "snapshot of b failed: fatal: y; b is kept",
    ),
    (
        Why(
            Reason.SNAPSHOT_FAILED,
            branch="b",
            parts=(Why(Reason.TREE_UNREADABLE, branch="b", commit=_TIP),),
        ),
        {
            "reason": "snapshot-failed",
            "branch": "b",
            "text": "cannot read the tree of b (aaaaaaaaaaaa)",
        },
        "cannot read the tree of b (aaaaaaaaaaaa); b is kept",
    ),
    (
        Why(Reason.SNAPSHOT_FAILED, parts=(Why(Reason.UNMERGED_INDEX, path="/w"),)),
        {
            "reason": "snapshot-failed",
            "text": "snapshot of /w failed: its index has unmerged paths (a merge, rebase or "
            "cherry-pick is in progress there); finish or abort it, then run teardown again",
        },
        "snapshot of /w failed: its index has unmerged paths (a merge, rebase or cherry-pick "
        "is in progress there); finish or abort it, then run teardown again; the worktree is kept",
    ),
    (
        Why(
            Reason.CAME_BACK_FAILED,
            path="/w",
            parts=(
                Why(
                    Reason.NOT_SNAPSHOTTED,
                    parts=(Why(Reason.SNAPSHOT_NOT_WRITTEN, path="/w/docs/plans/t", text="z"),),
                ),
            ),
        ),
        {
            "reason": "came-back-failed",
            "path": "/w",
            "parts": [
                {
                    "reason": "not-snapshotted",
                    "parts": [
                        {"reason": "refusal", "text": "snapshot of /w/docs/plans/t failed: z"}
                    ],
                }
            ],
        },
        "/w came back and could not be removed: snapshot of /w/docs/plans/t failed: z; kept",
    ),
    (
        Why(
            Reason.HALF_REMOVED,
            path="/w",
            again="teardown",
            count=7,
            parts=(
                Why(
                    Reason.NOT_DELETED,
                    path="a",
                    text="Operation not permitted",
                    kind="immutable",
                    other="/w/a",
                ),
                Why(
                    Reason.NOT_DELETED,
                    path="m",
                    text="Device or resource busy",
                    kind="mount-point",
                    other="/w/m",
                ),
                Why(
                    Reason.NOT_DELETED,
                    path="r",
                    text="Read-only file system",
                    kind="read-only",
                    other="/ro",
                ),
                Why(Reason.NOT_DELETED, path="x", text="Permission denied"),
                Why(Reason.NOT_DELETED, path="y", text="Permission denied"),
            ),
        ),
        {"reason": "half-removed", "path": "/w", "again": "teardown", "text": _STUCK},
        f"finishing the removal of /w stopped half-way: cannot delete {_STUCK}; the rest is "
        "deleted, and the record keeps what the removal judged; once that is cleared, run "
        "teardown again to finish the removal",
    ),
    (
        Why(Reason.HALF_REMOVED, path="/w", again="teardown", flag=True, items=("new.txt",)),
        {
            "reason": "half-removed",
            "path": "/w",
            "again": "teardown",
            "flag": True,
            "items": ["new.txt"],
        },
        "removing /w stopped half-way: new.txt appeared there meanwhile: kept; the rest is "
        "deleted, and the record keeps what the removal judged; move them out of /w, then run "
        "teardown again to finish the removal",
    ),
]


@pytest.mark.parametrize(("why", "older", "words"), SAID_FROM_FACTS)
def test_a_reasons_facts_and_an_older_records_words_say_the_same(why, older, words):
    assert in_words(why) == words
    assert in_words(Why.from_json(older)) == words
    # Only words from outside stay in ``text``, as the older record had them; no built ones.
    assert why.to_json().get("text") in (None, older.get("text"))
    assert Why.from_json(why.to_json()) == why


@pytest.mark.parametrize(
    ("kind", "older"),
    [
        ("commondir", "its commondir file is missing or empty"),
        ("placeholder", "its HEAD is still git's placeholder (the null id)"),
    ],
)
def test_a_torn_registration_is_said_from_what_is_torn_as_an_older_record_said_it(kind, older):
    made = Why(Reason.NOT_CREATING)
    why = Why(Reason.HALF_MADE_TORN, repo="r", path="/w", items=("/a",), kind=kind, inner=(made,))
    assert in_words(why) == in_words(replace(why, kind="", text=older))
    assert older in in_words(why)
