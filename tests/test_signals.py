"""Ctrl-C, SIGTERM and SIGHUP: real signals to a process group the test started.

A ``git`` first on PATH runs the real git, then signals its whole group (the
``team-router`` that called it and itself, see ``helpers.faults.git_signaller``),
as a terminal's Ctrl-C or a closed terminal's SIGHUP reaches every process in
the foreground. Nothing a signal stops may be read as an answer, and every
command ends with what it did and what is left, exit 128 + the signal.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from helpers.fakegh import hide_gh, install_fake_gh, make_github_repo, pr
from helpers.faults import finish, git_signaller, git_wrapper, run, spawn
from helpers.origin import commit_on_origin, merge_on_origin
from helpers.repos import (
    branches,
    commit,
    git,
    lock_reason,
    make_repo,
    own_lock,
    run_cli,
    status,
    worktree_paths,
    write,
)
from helpers.topics import multi_topic, new_topic, steps_of, teardown, write_repos_md

from router.teardown.snapshot import snapshot_ref
from router.topic import state
from router.topic.record import TeardownMark

# The read of a snapshot ref that exists (rev_parse's form): the forced branch
# step, and pr-cleanup --abandon's snapshot step, read it after the worktree's
# snapshot was written, to see whether that one already keeps the branch.
SNAPSHOT_READ = "--end-of-options refs/team-router/snapshots/"


def _uncommitted_work(wt: Path) -> str:
    """A commit of the branch's own, an edit on top and an untracked file; the commit."""
    sha = commit(wt, "a.py", "a = 1\n", "first")
    write(wt / "a.py", "a = 2  # not committed\n")
    write(wt / "notes.txt", "untracked\n")
    return sha


def _assert_holds_the_uncommitted_work(repo: Path, rev: str, sha: str) -> None:
    assert git(repo, "rev-parse", f"{rev}^1") == sha
    assert git(repo, "show", f"{rev}:a.py") == "a = 2  # not committed"
    assert git(repo, "show", f"{rev}:notes.txt") == "untracked"


def _failing_snapshot_read(bin_dir: Path, once: Path) -> dict[str, str]:
    """``git`` whose first read of an existing snapshot ref fails (exit 128), as a broken read would."""
    return git_wrapper(
        bin_dir,
        SNAPSHOT_READ,
        f'out=$("$REAL_GIT" "$@")\nrc=$?\n'
        f"if [ \"$rc\" = 0 ] && [ ! -e '{once}' ]; then : > '{once}'; "
        'echo "fatal: unable to read the ref" >&2; exit 128; fi\n'
        '[ -n "$out" ] && printf "%s\\n" "$out"\nexit $rc',
    )


READ_FAULTS = {
    "ctrl-c": lambda bin_dir, once: git_signaller(
        bin_dir, SNAPSHOT_READ, signal.SIGINT, once=once, only_if_ok=True
    ),
    "failed-read": _failing_snapshot_read,
}


@pytest.mark.parametrize("fault", sorted(READ_FAULTS))
def test_a_failed_snapshot_read_in_the_forced_branch_step_never_replaces_the_worktree_snapshot(
    home_repo, tmp_path, fault
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    sha = _uncommitted_work(wt)
    env = READ_FAULTS[fault](tmp_path / "bin", tmp_path / "fired")
    first = run("teardown", topic.id, "--force", "--json", cwd=home_repo, env=env, new_group=True)
    assert (tmp_path / "fired").exists()  # the fault was met, in the branch step
    ref = snapshot_ref(topic.branch)
    _assert_holds_the_uncommitted_work(home_repo, ref, sha)  # the worktree's, not a branch-only one
    branch_step = steps_of(first.json, "home")["branch"]
    assert branch_step["outcome"] == "failed"
    assert topic.branch in branches(home_repo)  # kept: the step did not know what it would lose
    if fault == "ctrl-c":
        assert first.code == 130, first.out + first.err
        assert first.json["error"] == {
            "code": "interrupted",
            "message": "interrupted (Ctrl-C): stopped home at branch, after remove; "
            "run the same command again to finish",
        }
        assert branch_step["detail"] == (
            "not done: interrupted (Ctrl-C): stopped part-way; a rerun finishes it"
        )
    else:
        assert first.code == 1, first.out + first.err
        assert "unable to read the ref" in branch_step["detail"]

    again = teardown(topic, "--force")
    assert again.code == 0, again.out + again.err
    _assert_holds_the_uncommitted_work(home_repo, ref, sha)
    restored = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert restored.code == 0, restored.out + restored.err
    assert (wt / "a.py").read_text() == "a = 2  # not committed\n"
    assert (wt / "notes.txt").read_text() == "untracked\n"


@pytest.mark.parametrize("fault", sorted(READ_FAULTS))
def test_a_failed_snapshot_read_in_pr_cleanup_abandon_never_replaces_the_worktree_snapshot(
    home_repo, tmp_path, monkeypatch, fault
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    sha = _uncommitted_work(wt)
    hide_gh(tmp_path, monkeypatch)  # no PR to close: the git part alone
    env = READ_FAULTS[fault](tmp_path / "bin", tmp_path / "fired")
    args = ("pr-cleanup", topic.branch, "--abandon", "--yes", "--json")
    first = run(*args, cwd=home_repo, env=env, new_group=True)
    assert (tmp_path / "fired").exists()
    ref = snapshot_ref(topic.branch)
    _assert_holds_the_uncommitted_work(home_repo, ref, sha)
    step = {s["name"]: s for s in first.json["steps"]}["snapshot"]
    assert step["outcome"] == "failed"
    assert topic.branch in branches(home_repo)
    assert first.code == (130 if fault == "ctrl-c" else 1), first.out + first.err

    again = run_cli(*args, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    _assert_holds_the_uncommitted_work(home_repo, ref, sha)
    restored = run_cli("restore", topic.id, "--json", cwd=home_repo)
    assert restored.code == 0, restored.out + restored.err
    assert (wt / "a.py").read_text() == "a = 2  # not committed\n"
    assert (wt / "notes.txt").read_text() == "untracked\n"


def test_a_branch_snapshot_written_over_a_worktree_snapshot_keeps_it_as_its_third_parent(
    home_repo, tmp_path, monkeypatch
):
    # The worktree's snapshot (edits included) is there; then the branch gets a
    # commit that snapshot does not hold, and is abandoned: the new snapshot holds both.
    topic = new_topic(home_repo)
    sha = _uncommitted_work(topic.worktrees["home"])
    assert teardown(topic, "--force").code == 0
    ref = snapshot_ref(topic.branch)
    worktree_snapshot = git(home_repo, "rev-parse", ref)
    git(home_repo, "branch", topic.branch, sha)
    later = git(home_repo, "commit-tree", f"{sha}^{{tree}}", "-p", sha, "-m", "later")
    git(home_repo, "update-ref", f"refs/heads/{topic.branch}", later)
    hide_gh(tmp_path, monkeypatch)
    res = run_cli("pr-cleanup", topic.branch, "--abandon", "--yes", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert topic.branch not in branches(home_repo)
    assert git(home_repo, "rev-parse", f"{ref}^1") == later
    assert git(home_repo, "rev-parse", f"{ref}^3") == worktree_snapshot
    _assert_holds_the_uncommitted_work(home_repo, f"{ref}^3", sha)
    # The second parent is still the index, as restore reads it: it stages nothing.
    assert git(home_repo, "rev-parse", f"{ref}^2^{{tree}}") == git(
        home_repo, "rev-parse", f"{later}^{{tree}}"
    )


def test_a_snapshot_another_run_wrote_meanwhile_is_never_overwritten(home_repo, tmp_path):
    # Between the forced removal's read of the snapshot ref and its update-ref,
    # another process writes a snapshot there: the update is refused, the worktree kept.
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    _uncommitted_work(wt)
    ref = snapshot_ref(topic.branch)
    theirs = git(home_repo, "commit-tree", "main^{tree}", "-p", "main", "-m", "another run's")
    env = git_wrapper(
        tmp_path / "bin",
        "-m team-router snapshot of",
        f'"$REAL_GIT" "$@"\nrc=$?\n"$REAL_GIT" -C \'{home_repo}\' update-ref {ref} {theirs}\n'
        "exit $rc",
    )
    res = run("teardown", topic.id, "--force", "--json", cwd=home_repo, env=env)
    assert res.code == 1, res.out + res.err
    remove = steps_of(res.json, "home")["remove"]
    assert remove["outcome"] == "refused" and remove["code"] == "snapshot-failed"
    assert remove["detail"].endswith("the worktree is kept")
    assert git(home_repo, "rev-parse", ref) == theirs
    assert (wt / "a.py").read_text() == "a = 2  # not committed\n"
    assert (wt / "notes.txt").read_text() == "untracked\n"


# -- every command that works in units reports what it did and what is left ------------------


def test_ctrl_c_during_restore_names_the_repo_it_stopped_at_and_the_rerun_restores_all(
    workspace, tmp_path
):
    topic = multi_topic(workspace, ("api",))
    for wt in topic.worktrees.values():
        write(wt / "notes.txt", "untracked\n")
    assert teardown(topic, "--force").code == 0
    env = git_signaller(tmp_path / "bin", "restore --source=", signal.SIGINT, once=tmp_path / "x")
    first = run("restore", topic.id, "--json", cwd=topic.home, env=env, new_group=True)
    assert first.code == 130, first.out + first.err
    data = first.json
    assert [(r["name"], r["status"], r["detail"]) for r in data["repos"]] == [
        (
            "home",
            "interrupted",
            "not done: interrupted (Ctrl-C): stopped part-way; a rerun finishes it",
        ),
        ("api", "interrupted", "not done: interrupted (Ctrl-C): a rerun does it"),
    ]
    assert data["error"] == {
        "code": "interrupted",
        "message": "interrupted (Ctrl-C): stopped at home, before any repo was restored; "
        "run the same command again to finish",
    }
    assert not topic.worktrees["api"].exists()  # no repo started after the signal

    again = run_cli("restore", topic.id, "--json", cwd=topic.home)
    assert again.code == 0, again.out + again.err
    assert [r["status"] for r in again.json["repos"]] == ["restored", "restored"]
    for wt in topic.worktrees.values():
        assert (wt / "notes.txt").read_text() == "untracked\n"


def test_ctrl_c_during_pr_cleanup_prints_each_step_done_and_left_then_the_rerun_finishes(
    home_repo, tmp_path, monkeypatch
):
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "work")
    git(wt, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    merge_on_origin(home_repo, topic.branch, how="merge")
    hide_gh(tmp_path, monkeypatch)
    env = git_signaller(tmp_path / "bin", "worktree remove", signal.SIGINT, once=tmp_path / "x")
    first = run("pr-cleanup", topic.branch, cwd=home_repo, env=env, new_group=True)
    assert first.code == 130, first.out + first.err
    lines = first.out.splitlines()
    assert lines[0] == f"pr-cleanup of {topic.branch} (mode: merged)"
    assert lines[2:] == [
        "  remove         failed   not done: interrupted (Ctrl-C): stopped part-way; "
        "a rerun finishes it",
        *(
            f"  {name:<14} skipped  not done: interrupted (Ctrl-C): a rerun does it"
            for name in (
                "verify-gone",
                "update-default",
                "branch",
                "remote-branch",
                "prune",
                "reclaim",
                "plan-dir",
                "local-state",
            )
        ),
        f"interrupted (Ctrl-C): stopped {topic.branch} at remove, before any step was done; "
        "run the same command again to finish [interrupted]",
    ]
    assert topic.branch in branches(home_repo)

    again = run_cli("pr-cleanup", topic.branch, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert not wt.exists() and topic.branch not in branches(home_repo)


def _vanished_topic(repo: Path, topic_id: str) -> Path:
    """A topic whose worktree directory was deleted by hand: doctor --repair unregisters it."""
    wt = new_topic(repo, topic_id=topic_id).worktrees["home"]
    shutil.rmtree(wt)
    return wt


def test_ctrl_c_during_doctor_repair_reports_what_was_repaired_and_what_was_not(
    home_repo, tmp_path
):
    first_wt = _vanished_topic(home_repo, "2026-05-01-first")
    second_wt = _vanished_topic(home_repo, "2026-05-01-second")
    env = git_signaller(
        tmp_path / "bin", f"worktree remove -- {second_wt}", signal.SIGINT, once=tmp_path / "x"
    )
    first = run("doctor", "--repair", "--json", cwd=home_repo, env=env, new_group=True)
    assert first.code == 130, first.out + first.err
    found = {f["path"]: f for f in first.json["findings"]}
    assert found[str(first_wt)]["repaired"] is True
    assert found[str(second_wt)]["repaired"] is False
    assert found[str(second_wt)]["detail"].endswith(
        "; not done: interrupted (Ctrl-C): stopped part-way; a rerun finishes it"
    )
    repaired = sum(f["repaired"] for f in first.json["findings"])
    left = len(first.json["findings"]) - repaired
    assert first.json["error"] == {
        "code": "interrupted",
        "message": f"interrupted (Ctrl-C): stopped after {repaired} repair(s), {left} finding(s) "
        "not repaired; run the same command again to finish",
    }

    again = run_cli("doctor", "--repair", "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert all(f["repaired"] for f in again.json["findings"]), again.json["findings"]
    assert run_cli("doctor", "--json", cwd=home_repo).json["findings"] == []
    assert worktree_paths(home_repo) == [str(home_repo)]


# -- SIGTERM and SIGHUP are handled as Ctrl-C is -----------------------------------------------


def _slow_line(repo: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A .teamteardown line that starts a 30 s sleep (unless ``fast`` exists); its marker files.

    ``started`` holds the sleep's pid; ``finished`` appears only if the line ran to the end.
    """
    started, finished, fast = tmp_path / "started", tmp_path / "finished", tmp_path / "fast"
    line = (
        f"if [ ! -e {fast} ]; then sleep 30 & echo $! > {started}.tmp; "
        f"mv {started}.tmp {started}; wait; fi; echo ran >> {finished}"
    )
    commit(repo, ".teamteardown", line + "\n", "declare teardown")
    git(repo, "push", "-q", "origin", "main")
    return started, finished, fast


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize(
    ("signum", "command"),
    [(signal.SIGTERM, "teardown"), (signal.SIGHUP, "teardown"), (signal.SIGHUP, "local-state")],
    ids=["sigterm-teardown", "sighup-teardown", "sighup-local-state"],
)
def test_sigterm_or_sighup_kills_the_running_line_and_the_rerun_runs_it_once(
    home_repo, tmp_path, signum, command
):
    topic = new_topic(home_repo)
    started, finished, fast = _slow_line(home_repo, tmp_path)
    proc = spawn(command, topic.id, "--json", cwd=home_repo, new_group=True)
    _wait_for(started)
    sleeper = int(started.read_text())
    os.killpg(proc.pid, signum)  # what a closed terminal (SIGHUP) or `kill` (SIGTERM) does
    done = finish(proc, timeout=60)
    name = signal.Signals(signum).name
    assert done.code == 128 + signum, done.out + done.err
    assert done.json["ok"] is False and done.json["error"]["code"] == "interrupted"
    assert done.json["error"]["message"].startswith(f"interrupted ({name}): ")
    deadline = time.monotonic() + 10
    while _alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(sleeper)  # the line's process group went with the command
    assert not finished.exists()

    fast.touch()
    again = run_cli(command, topic.id, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert finished.read_text() == "ran\n"  # run again, once, never beside the first


def _wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"never appeared: {path}"
        time.sleep(0.05)


def test_a_gh_killed_by_a_signal_stops_pr_cleanup_and_is_never_read_as_gh_unavailable(
    workspace, tmp_path
):
    # Read as "gh is not available", the content proof alone would decide and the
    # branch would go; a gh the signal killed answered nothing, and the command stops.
    web = make_github_repo(workspace, "web")
    topic = new_topic(web)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "work")
    git(wt, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    merge_on_origin(web, topic.branch, how="merge")
    gh = write(tmp_path / "gh-bin" / "gh", "#!/bin/sh\nkill -TERM $$\n")
    gh.chmod(0o755)
    res = run(
        "pr-cleanup",
        topic.branch,
        "--json",
        cwd=web,
        env={"PATH": f"{gh.parent}:{os.environ['PATH']}"},
    )
    assert res.code == 143, res.out + res.err
    assert res.json["error"] == {
        "code": "interrupted",
        "message": "interrupted (SIGTERM); run the same command again to finish",
    }
    assert wt.is_dir() and topic.branch in branches(web)


def test_a_closed_terminal_stops_teardown_with_129_kills_the_line_and_the_rerun_runs_it_once(
    home_repo, tmp_path
):
    # The terminal is gone (its pty closed): every write to it fails (EIO), and the
    # SIGHUP that follows must still stop the command as Ctrl-C would, quietly.
    import pty
    import subprocess

    from helpers.faults import argv

    topic = new_topic(home_repo)
    started, finished, fast = _slow_line(home_repo, tmp_path)
    terminal, tty = pty.openpty()
    proc = subprocess.Popen(
        argv("teardown", topic.id, cwd=home_repo),
        stdin=subprocess.DEVNULL,
        stdout=tty,
        stderr=tty,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    os.close(tty)
    _wait_for(started)
    sleeper = int(started.read_text())
    os.close(terminal)
    os.killpg(proc.pid, signal.SIGHUP)
    assert proc.wait(timeout=60) == 128 + signal.SIGHUP
    deadline = time.monotonic() + 10
    while _alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(sleeper) and not finished.exists()

    fast.touch()
    again = run_cli("teardown", topic.id, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert finished.read_text() == "ran\n"


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["sigint", "sigterm", "sighup"]
)
def test_a_signal_while_repos_are_made_in_parallel_waits_for_those_under_way_and_exits_128_plus_n(
    workspace, tmp_path, signum
):
    # The main thread is waiting for the workers (lib's `git worktree add`, slow
    # and deaf to the signal, as a git that finished its work before the signal
    # reached it) when api's git signals the whole group. The signal must never
    # raise inside that wait: the command stops once lib's item is done, with
    # one line and no traceback, and the rerun makes every worktree.
    topic = new_topic(make_repo(workspace, "web"))
    notes = write(topic.worktrees["home"] / "notes.txt", "mine\n")
    lib, api = make_repo(workspace, "lib"), make_repo(workspace, "api")
    write_repos_md(topic, {"lib": lib, "api": api})
    lib_started, lib_done = tmp_path / "lib-add-started", tmp_path / "lib-add-done"
    name = signal.Signals(signum).name.removeprefix("SIG")
    body = (
        'case " $* " in *"/lib/"*)\n'
        f"  trap '' INT TERM HUP; touch '{lib_started}'; sleep 1\n"
        f'  "$REAL_GIT" "$@"; rc=$?; touch \'{lib_done}\'; exit $rc ;;\nesac\n'
        f"while [ ! -e '{lib_started}' ]; do sleep 0.02; done\n"
        f'"$REAL_GIT" "$@"; rc=$?\nkill -{name} 0\nexit $rc'
    )
    env = git_wrapper(tmp_path / "bin", "worktree add", body)
    args = ("worktrees", str(topic.plan_dir), "--json")
    done = run(*args, cwd=topic.home, env=env, new_group=True)
    assert done.code == 128 + signum, done.out + done.err
    assert "Traceback" not in done.err and len(done.err.splitlines()) <= 1, done.err
    assert done.json["ok"] is False and done.json["error"]["code"] == "interrupted"
    assert lib_done.exists()  # lib's item under way finished before the command ended

    again = run(*args, cwd=topic.home)
    assert again.code == 0, again.out + again.err
    made = {r["name"]: r for r in again.json["repos"]}
    for repo_name, primary in (("lib", lib), ("api", api)):
        wt = primary / ".claude/worktrees" / topic.id
        assert made[repo_name]["worktree"] == str(wt), made[repo_name]
        assert status(wt) == "" and worktree_paths(primary) == [str(primary), str(wt)]
        assert git(wt, "rev-parse", "--abbrev-ref", "HEAD") == topic.id
        assert lock_reason(primary, wt) == own_lock(topic.id)
    assert notes.read_text() == "mine\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_signal_during_new_s_checkout_lets_git_undo_its_add_and_the_rerun_creates(
    home_repo, tmp_path, signum
):
    # The group's signal reaches git mid-checkout: git undoes its add (the
    # registration, then the files it wrote). Killed in the middle of that, it
    # left files at the topic's path that no registration named, and the rerun
    # fell back to the main tree (path-taken) beside them.
    for n in range(500):
        write(home_repo / f"f{n:03}.txt", "x\n" * 50)
    git(home_repo, "add", ".")
    git(home_repo, "commit", "-qm", "many files")
    git(home_repo, "push", "-q", "origin", "main")
    name = signal.Signals(signum).name.removeprefix("SIG")
    # Once git has written its first file, the group gets the signal.
    body = (
        'for a; do [ "$prev" = "--" ] && [ -z "$wt" ] && wt="$a"; prev="$a"; done\n'
        f'( while [ ! -e "$wt/f000.txt" ]; do sleep 0.005; done; kill -{name} 0 ) &\n'
        'exec "$REAL_GIT" "$@"'
    )
    env = git_wrapper(tmp_path / "bin", "worktree add", body)
    args = ("new", "Add thing", "--date", "2026-05-01", "--json")
    stopped = run(*args, cwd=home_repo, env=env, new_group=True)
    assert stopped.code == 128 + signum, stopped.out + stopped.err
    wt = home_repo / ".claude/worktrees/2026-05-01-add-thing"
    assert not wt.exists() and worktree_paths(home_repo) == [str(home_repo)]  # all undone

    again = run_cli(*args, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["status"] == "created", again.json
    assert again.json["home"]["worktree"] == str(wt)
    assert status(wt) == "" and (wt / "f499.txt").read_text() == "x\n" * 50
    assert status(home_repo) == ""


def test_sigterm_in_pr_cleanups_default_branch_step_leaves_the_record_under_way_for_the_rerun(
    workspace, tmp_path, monkeypatch
):
    # The signal stops update-default, the one step whose failure is left to the user:
    # the record must read it neither as the user's nor the cleanup as complete, or
    # status and phase call the run done and the rerun never updates main.
    web = make_github_repo(workspace, "web")
    topic = new_topic(web)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "work")
    git(wt, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    head = git(web, "rev-parse", topic.branch)
    merge = merge_on_origin(web, topic.branch, how="merge")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, topic.branch, head, merge_commit=merge),))
    env = git_signaller(tmp_path / "bin", "merge --ff-only", signal.SIGTERM, once=tmp_path / "x")
    first = run("pr-cleanup", topic.branch, "--json", cwd=web, env=env, new_group=True)
    assert first.code == 143, first.out + first.err
    assert (tmp_path / "x").exists()  # the signal came after git's merge, in update-default
    assert first.json["error"]["message"] == (
        f"interrupted (SIGTERM): stopped {topic.branch} at update-default, after remove, "
        "verify-gone; run the same command again to finish"
    )
    record = state.read_record(web / ".git", topic.id)
    assert record is not None and record.teardown == TeardownMark(
        done=("remove", "verify-gone"), complete=False, left=()
    )
    listed = run_cli("status", "--json", cwd=web).json
    assert listed["current"] == topic.id
    assert [t["id"] for t in listed["topics"]] == [topic.id]
    phase = run_cli("phase", "--json", cwd=web)
    assert (phase.code, phase.json["id"]) == (0, topic.id)
    # Nothing lost: the branch keeps its commit; the worktree went in the remove step, as planned.
    assert git(web, "rev-parse", topic.branch) == head
    assert not wt.exists()

    again = run_cli("pr-cleanup", topic.branch, "--json", cwd=web)
    assert again.code == 0, again.out + again.err
    assert steps_of_cleanup(again.json)["update-default"]["outcome"] == "done"
    assert git(web, "rev-parse", "main") == merge  # the commit is on main before its branch went
    assert topic.branch not in branches(web)
    record = state.read_record(web / ".git", topic.id)
    assert record is not None and record.teardown is not None and record.teardown.complete
    assert "update-default" in record.teardown.done
    assert run_cli("status", "--json", cwd=web).json["topics"] == []
    assert run_cli("phase", "--json", cwd=web).json["error"]["code"] == "no-topic"


def steps_of_cleanup(data: dict) -> dict[str, dict]:
    return {s["name"]: s for s in data["steps"]}


def test_sigterm_in_teardowns_default_branch_step_is_never_left_to_the_user(home_repo, tmp_path):
    # A step the signal stopped is the rerun's to finish: recorded as the user's, the
    # rerun would skip it and main would stay behind origin.
    topic = new_topic(home_repo)
    tip = commit_on_origin(home_repo, "b.py", "b = 1\n")
    env = git_signaller(tmp_path / "bin", "merge --ff-only", signal.SIGTERM, once=tmp_path / "x")
    first = run("teardown", topic.id, "--json", cwd=home_repo, env=env, new_group=True)
    assert first.code == 143, first.out + first.err
    assert (tmp_path / "x").exists()  # the signal came after git's merge, in update-default
    assert steps_of(first.json, "home")["update-default"]["outcome"] == "failed"
    record = state.read_record(home_repo / ".git", topic.id)
    assert record is not None and record.teardown is not None
    assert (record.teardown.complete, record.teardown.left) == (False, ())

    again = teardown(topic)
    assert again.code == 0, again.out + again.err
    assert steps_of(again.json, "home")["update-default"]["outcome"] == "done"
    assert git(home_repo, "rev-parse", "main") == tip
    record = state.read_record(home_repo / ".git", topic.id)
    assert record is not None and record.teardown is not None and record.teardown.complete


def _assert_resumes_at_the_cleanup(repo: Path, topic_id: str, plan_dir: Path) -> None:
    """Every answer of where the run resumes says: finish the teardown, never make it again."""
    phase = run_cli("phase", "--json", cwd=repo)
    assert phase.code == 0, phase.out + phase.err
    assert phase.json == {
        "ok": True,
        "command": "phase",
        "warnings": [],
        "id": topic_id,
        "plan_dir": str(plan_dir),
        "resume_at": "SHIPPED",
        "step": "teardown",
        "halted": False,
        "completed": [],
    }
    brief = run_cli("next", "--json", cwd=repo).json
    assert (brief["resume_at"], brief["step"], brief["expects"]) == ("SHIPPED", "teardown", [])
    assert f"team-router teardown {topic_id} --json" in brief["brief"]
    assert "pr-cleanup" in brief["brief"] and "stopped part-way" in brief["brief"]
    assert "team-router new" not in brief["brief"] and "is open" not in brief["brief"]
    listed = run_cli("status", "--json", cwd=repo).json
    row = {t["id"]: t for t in listed["topics"]}[topic_id]
    assert (row["resume_at"], row["step"]) == ("SHIPPED", "teardown"), row
    notice = run_cli("hook", "session-start", cwd=repo, stdin=json.dumps({"cwd": str(repo)}))
    context = notice.json["hookSpecificOutput"]["additionalContext"]
    assert f"Phase: SHIPPED | Id: {topic_id}" in context, context
    assert f"`team-router teardown {topic_id}`" in context and "/pr-cleanup" in context
    assert "team-router new" not in context and "WORKTREE" not in context


def test_a_pr_cleanup_a_signal_stopped_resumes_at_shipped_and_its_rerun_finishes(
    workspace, tmp_path, monkeypatch
):
    # Its remove step took the worktree and the plan dir with it: no file is left to
    # say the run shipped, and the answer was WORKTREE (`new --id`, make it again).
    web = make_github_repo(workspace, "web")
    topic = new_topic(web)
    wt = topic.worktrees["home"]
    commit(wt, "a.py", "a = 1\n", "work")
    git(wt, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    head = git(web, "rev-parse", topic.branch)
    merge = merge_on_origin(web, topic.branch, how="merge")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, topic.branch, head, merge_commit=merge),))
    env = git_signaller(tmp_path / "bin", "merge --ff-only", signal.SIGTERM, once=tmp_path / "x")
    first = run("pr-cleanup", topic.branch, "--json", cwd=web, env=env, new_group=True)
    assert first.code == 143, first.out + first.err
    assert not wt.exists() and git(web, "rev-parse", topic.branch) == head

    _assert_resumes_at_the_cleanup(web, topic.id, topic.plan_dir)

    again = run_cli("pr-cleanup", topic.branch, "--json", cwd=web)
    assert again.code == 0, again.out + again.err
    assert git(web, "rev-parse", "main") == merge  # the commit is on main before its branch went
    assert run_cli("status", "--json", cwd=web).json["topics"] == []
