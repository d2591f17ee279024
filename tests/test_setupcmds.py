"""The setup-commands stage of creation: ``.worktreesetup`` from the default branch, on real git."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
from helpers.faults import CRASHED, finish, run, spawn
from helpers.origin import declare
from helpers.repos import commit, git, make_repo, run_cli, worktree_paths
from helpers.topics import new_topic, write_repos_md

from router.topic import state

ID = "2026-05-01-add-thing"
DESC = "Add thing"


def _declare(repo: Path, text: str) -> None:
    """``.worktreesetup`` on main, pushed: the default branch declares it."""
    declare(repo, {".worktreesetup": text}, "declare setup")


def _new(repo: Path, *args: str):
    return run_cli("new", DESC, "--id", ID, *args, "--json", cwd=repo)


def _log(repo: Path) -> Path:
    return repo / ".git" / "team-router" / "setup" / f"{ID}.log"


def _worktree(repo: Path) -> Path:
    return repo / ".claude" / "worktrees" / ID


def test_each_line_runs_in_the_new_worktree_with_the_topics_env_and_its_output_is_logged(
    home_repo,
):
    _declare(
        home_repo,
        "# a comment, then a blank line: neither runs\n"
        "\n"
        'echo "$TEAM_REPO_ROOT|$TEAM_BRANCH|$TEAM_WORKTREE|$TEAM_TOPIC|$(pwd)" > env.txt\n'
        "cat > stdin.txt; echo built; echo warned >&2\n",
    )
    res = _new(home_repo)
    assert res.code == 0, res.err
    wt = _worktree(home_repo)
    log = _log(home_repo)
    assert res.json["home"]["setup"] == {
        "status": "done",
        "lines": 2,
        "done": 2,
        "ran": 2,
        "exit": None,
        "line": None,
        "outcome": None,
        "log": str(log),
        "note": "origin/main",
    }
    assert res.json["warnings"] == []
    assert (wt / "env.txt").read_text() == f"{home_repo}|{ID}|{wt}|{ID}|{wt}\n"
    assert (wt / "stdin.txt").read_text() == ""  # stdin is /dev/null
    # Each line is announced on stderr before it runs, its output relayed there.
    err = res.err.splitlines()
    first = err.index(
        '[home] $ echo "$TEAM_REPO_ROOT|$TEAM_BRANCH|$TEAM_WORKTREE|$TEAM_TOPIC|$(pwd)" > env.txt'
    )
    assert err[first + 1 :] == [
        "[home]   -> ok",
        "[home] $ cat > stdin.txt; echo built; echo warned >&2",
        "[home] built",
        "[home] warned",
        "[home]   -> ok",
    ]
    kept = log.read_text().splitlines()
    assert kept[0].startswith("# ") and kept[0].endswith(f".worktreesetup in {wt} ({ID})")
    assert kept[1:] == [
        '$ echo "$TEAM_REPO_ROOT|$TEAM_BRANCH|$TEAM_WORKTREE|$TEAM_TOPIC|$(pwd)" > env.txt',
        "-> ok",
        "$ cat > stdin.txt; echo built; echo warned >&2",
        "built",
        "warned",
        "-> ok",
    ]
    record = state.read_record(home_repo / ".git", ID)
    assert record is not None and "setup-commands" in record.steps
    assert record.setup_state == "done" and len(record.setup_done) == 2


def test_the_text_report_says_what_setup_did(home_repo):
    _declare(home_repo, "true\nfalse\n")
    res = run_cli("new", DESC, "--id", ID, cwd=home_repo)
    assert res.code == 0, res.err
    assert f"  setup: failed (exit 1) at `false` (1/2 done); log: {_log(home_repo)}" in (
        res.out.splitlines()
    )


def test_a_worktreesetup_on_the_topic_branch_never_runs(home_repo, tmp_path):
    """Checking a branch out must not run its code: only the default branch's file counts."""
    marker = tmp_path / "pwned"
    _declare(home_repo, "echo default > from-default.txt\n")
    # The topic's branch exists already (pushed by someone, fetched): its own
    # .worktreesetup would touch the marker.
    git(home_repo, "switch", "-q", "-c", ID)
    commit(home_repo, ".worktreesetup", f"touch {marker}\n", "hostile setup")
    git(home_repo, "switch", "-q", "main")
    res = _new(home_repo)
    assert res.code == 0, res.err
    wt = _worktree(home_repo)
    assert (wt / ".worktreesetup").read_text() == f"touch {marker}\n"  # checked out, not run
    assert not marker.exists()
    assert (wt / "from-default.txt").read_text() == "default\n"
    assert res.json["home"]["setup"]["lines"] == 1


def test_a_worktreesetup_only_on_the_topic_branch_runs_nothing(home_repo, tmp_path):
    marker = tmp_path / "pwned"
    git(home_repo, "switch", "-q", "-c", ID)
    commit(home_repo, ".worktreesetup", f"touch {marker}\n", "hostile setup")
    git(home_repo, "switch", "-q", "main")
    res = _new(home_repo)
    assert res.code == 0, res.err
    assert not marker.exists()
    assert res.json["home"]["setup"]["status"] == "none"
    assert res.json["home"]["setup"]["note"] == "no .worktreesetup on main — nothing declared"
    assert not _log(home_repo).exists()


def test_no_worktreesetup_is_none_and_runs_nothing(home_repo):
    res = _new(home_repo)
    assert res.code == 0, res.err
    assert res.json["home"]["setup"]["status"] == "none"
    record = state.read_record(home_repo / ".git", ID)
    assert record is not None and "setup-commands" in record.steps


def test_a_failed_line_stops_the_rest_keeps_the_worktree_and_the_rerun_runs_only_what_is_left(
    home_repo,
):
    _declare(
        home_repo,
        "echo one >> ran.txt\n"
        "test -e ready || exit 3; echo two >> ran.txt\n"
        "echo three >> ran.txt\n",
    )
    res = _new(home_repo)
    wt = _worktree(home_repo)
    assert res.code == 0, res.err
    assert res.json["home"]["status"] == "created"
    setup = res.json["home"]["setup"]
    assert (setup["status"], setup["exit"], setup["done"], setup["ran"]) == ("failed", 3, 1, 2)
    assert setup["line"] == "test -e ready || exit 3; echo two >> ran.txt"
    assert setup["outcome"] == "failed (exit 3)"
    assert res.json["warnings"] == [
        f"home: setup: failed (exit 3) at `test -e ready || exit 3; echo two >> ran.txt` "
        f"(.worktreesetup on origin/main, 1/3 lines done); the worktree {wt} is kept; its "
        f"output is in {_log(home_repo)}. Fix the line on the default branch or what it needs, "
        "then run the same command again: it runs that line and the ones after it"
    ]
    assert str(wt) in worktree_paths(home_repo)
    assert (wt / "ran.txt").read_text() == "one\n"

    (wt / "ready").touch()
    again = _new(home_repo)
    assert again.code == 0, again.err
    assert again.json["home"]["status"] == "existing"
    setup = again.json["home"]["setup"]
    assert (setup["status"], setup["done"], setup["ran"]) == ("done", 3, 2)
    assert (wt / "ran.txt").read_text() == "one\ntwo\nthree\n"  # "one" ran once

    third = _new(home_repo)
    assert third.json["home"]["setup"]["status"] == "done"
    assert third.json["home"]["setup"]["ran"] == 0
    assert (wt / "ran.txt").read_text() == "one\ntwo\nthree\n"


def test_a_line_past_its_timeout_is_killed_and_reported(home_repo):
    _declare(home_repo, "sleep 30\necho never > after.txt\n")
    started = time.monotonic()
    res = _new(home_repo, "--line-timeout", "0.5")
    assert time.monotonic() - started < 20
    assert res.code == 0, res.err
    setup = res.json["home"]["setup"]
    assert (setup["status"], setup["outcome"], setup["exit"]) == ("failed", "timeout", None)
    assert not (_worktree(home_repo) / "after.txt").exists()


def test_no_setup_skips_the_stage(home_repo):
    _declare(home_repo, "echo ran > ran.txt\n")
    res = _new(home_repo, "--no-setup")
    assert res.code == 0, res.err
    assert res.json["home"]["setup"]["status"] == "skipped"
    assert res.json["home"]["setup"]["note"] == "--no-setup"
    assert not (_worktree(home_repo) / "ran.txt").exists()
    # The worktree was made without setup: a later run does not start it behind the user's back.
    again = _new(home_repo)
    assert again.json["home"]["setup"]["status"] == "skipped"
    assert not (_worktree(home_repo) / "ran.txt").exists()


def test_worktrees_strict_refuses_a_failed_line_and_keeps_every_worktree(workspace, home_repo):
    api = make_repo(workspace, "api")
    _declare(api, "test -e ready || exit 4\necho set > set.txt\n")
    topic = new_topic(home_repo, DESC, topic_id=ID)
    plan = topic.plan_dir
    write_repos_md(topic, {"api": api})
    res = run_cli("worktrees", ID, "--strict", "--json", cwd=home_repo)
    api_wt = _worktree(api)
    assert res.code == 1, res.out
    error = res.json["error"]
    assert error["code"] == "strict-failed"
    assert error["message"] == (
        f"--strict: a .worktreesetup line failed in api (failed (exit 4) at `test -e ready || "
        f"exit 4`, log {_log(api)}); every worktree is kept. Fix the line on the default branch "
        "(or what it needs), then run `team-router worktrees` again: it runs the failed line and "
        "the ones after it"
    )
    assert str(api_wt) in worktree_paths(api)
    assert str(_worktree(home_repo)) in worktree_paths(home_repo)
    assert str(api_wt) in (plan / "repos.md").read_text()  # recorded before refusing

    (api_wt / "ready").touch()
    again = run_cli("worktrees", ID, "--strict", "--json", cwd=home_repo)
    assert again.code == 0, again.out
    assert [r["setup"]["status"] for r in again.json["repos"]] == ["none", "done"]
    assert (api_wt / "set.txt").read_text() == "set\n"


def test_a_kill_before_the_lines_run_is_resumed_by_the_rerun(home_repo):
    _declare(home_repo, "echo ran >> ran.txt\n")
    crashed = run("new", DESC, "--id", ID, "--json", cwd=home_repo, crash_at="setup-commands")
    assert crashed.code == CRASHED, crashed.err
    wt = _worktree(home_repo)
    assert not (wt / "ran.txt").exists()
    again = _new(home_repo)
    assert again.code == 0, again.err
    assert again.json["home"]["setup"]["status"] == "done"
    assert (wt / "ran.txt").read_text() == "ran\n"


def _wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"never appeared: {path}"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_kill_during_a_slow_line_is_resumed_by_the_rerun(home_repo, tmp_path, signum):
    started, fast = tmp_path / "started", tmp_path / "fast"
    slow = (
        f"if [ ! -e {fast} ]; then sleep 30 & echo $! > {started}.tmp; mv {started}.tmp {started}; "
        "wait; fi; echo slow >> ran.txt"
    )
    _declare(home_repo, f"echo first >> ran.txt\n{slow}\necho last >> ran.txt\n")
    proc = spawn("new", DESC, "--id", ID, "--json", cwd=home_repo, new_group=True)
    _wait_for(started)
    sleeper = int(started.read_text())
    os.killpg(proc.pid, signum)
    killed = finish(proc, timeout=60)
    expected = 128 + signum if signum == signal.SIGTERM else -signum
    assert killed.code == expected, killed.err
    wt = _worktree(home_repo)
    assert (wt / "ran.txt").read_text() == "first\n"
    record = state.read_record(home_repo / ".git", ID)
    assert record is not None and record.setup_done == ("echo first >> ran.txt",)
    assert record.setup_state == "pending"
    # SIGTERM: the command killed its line's group itself. SIGKILL: the line, in a
    # session of its own, outlived it; the rerun stops it before running it again.
    deadline = time.monotonic() + 10
    while signum == signal.SIGTERM and _alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)  # killed with its group as the command stopped: gone in a moment
    assert _alive(sleeper) is (signum == signal.SIGKILL)

    fast.touch()
    again = _new(home_repo)
    assert again.code == 0, again.err
    setup = again.json["home"]["setup"]
    assert (setup["status"], setup["ran"]) == ("done", 2)
    assert not _alive(sleeper)
    assert (wt / "ran.txt").read_text() == "first\nslow\nlast\n"
    stopped = [w for w in again.json["warnings"] if "a killed run left running" in w]
    assert len(stopped) == (signum == signal.SIGKILL)


def test_a_leftover_note_whose_group_id_names_another_process_now_stops_nothing(
    home_repo, tmp_path
):
    """A killed run's line ended by itself long ago and its process group's id was given to
    another process, a group of its own (a shell's job, an editor): the rerun never signals
    that group, and runs its line."""
    import subprocess

    started, fast = tmp_path / "started", tmp_path / "fast"
    slow = (
        f"if [ ! -e {fast} ]; then sleep 30 & echo $! > {started}.tmp; mv {started}.tmp {started}; "
        "wait; fi; echo slow >> ran.txt"
    )
    _declare(home_repo, f"echo first >> ran.txt\n{slow}\n")
    proc = spawn("new", DESC, "--id", ID, "--json", cwd=home_repo, new_group=True)
    _wait_for(started)
    pgid = os.getpgid(int(started.read_text()))
    os.killpg(proc.pid, signal.SIGKILL)
    assert finish(proc, timeout=60).code == -signal.SIGKILL
    _kill_groups([pgid])  # the line ended by itself, long before the rerun
    deadline = time.monotonic() + 10
    while _group(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    note = home_repo / ".git" / "team-router" / "setup" / f"{ID}.running"
    kept = note.read_text()
    assert kept.split("@")[0].strip() == str(pgid)
    # Its id names another process group now (pid reuse; made here as a group of the
    # test's own session, as a shell's job is): the note is read as the killed run left it.
    other = subprocess.Popen(["sleep", "60"], process_group=0)
    try:
        note.write_text(kept.replace(str(pgid), str(other.pid), 1))
        fast.touch()
        again = _new(home_repo)
        assert again.code == 0, again.err
        setup = again.json["home"]["setup"]
        assert (setup["status"], setup["ran"]) == ("done", 1)
        assert again.json["warnings"] == []
        assert other.poll() is None, "the rerun signalled a process group that is not its line's"
        assert (_worktree(home_repo) / "ran.txt").read_text() == "first\nslow\n"
        assert not note.exists()
    finally:
        other.kill()
        other.wait()


def _group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _alive(int(entry)):
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                if fields[2] == str(pgid):
                    found.append(int(entry))
    return found


def _kill_groups(pgids: list[int]) -> None:
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


def test_a_kill_before_a_line_is_noted_leaves_no_copy_of_it_running(home_repo, tmp_path):
    """The line's group is noted before any of it runs: a kill in between runs none of it."""
    starts, fast = tmp_path / "starts", tmp_path / "fast"
    _declare(home_repo, f"echo $$ >> {starts}; [ -e {fast} ] || sleep 30; echo ran >> ran.txt\n")
    try:
        crashed = run("new", DESC, "--id", ID, "--json", cwd=home_repo, crash_at="note-setup-line")
        assert crashed.code == CRASHED, crashed.err
        time.sleep(0.5)  # what the killed run started has had its moment to run
        fast.touch()
        again = _new(home_repo)
        assert again.code == 0, again.err
        setup = again.json["home"]["setup"]
        assert (setup["status"], setup["ran"]) == ("done", 1)
        shells = [int(pid) for pid in starts.read_text().split()]
        assert len(shells) == 1  # the rerun's: the killed run's copy never ran
        assert not any(_group(pid) for pid in shells)
        assert (_worktree(home_repo) / "ran.txt").read_text() == "ran\n"
    finally:
        _kill_groups([int(pid) for pid in starts.read_text().split()] if starts.exists() else [])


FREEZER = Path("/sys/fs/cgroup/freezer")


@pytest.fixture
def frozen_cgroup(tmp_path):
    """A cgroup-v1 freezer group: a process frozen there outlives SIGKILL until thawed."""
    group = FREEZER / f"team-router-test-{os.getpid()}-{tmp_path.name}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"no writable cgroup-v1 freezer to make a process outlive SIGKILL ({exc})")
    try:
        yield group
    finally:
        (group / "freezer.state").write_text("THAWED\n")
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        group.rmdir()


def test_a_leftover_line_that_outlives_sigkill_is_never_run_beside(
    home_repo, tmp_path, frozen_cgroup
):
    started, fast = tmp_path / "started", tmp_path / "fast"
    slow = (
        f"if [ ! -e {fast} ]; then sleep 30 & echo $! > {started}.tmp; mv {started}.tmp {started}; "
        "wait; fi; echo slow >> ran.txt"
    )
    _declare(home_repo, f"echo first >> ran.txt\n{slow}\n")
    proc = spawn("new", DESC, "--id", ID, "--json", cwd=home_repo, new_group=True)
    _wait_for(started)
    pgid = os.getpgid(int(started.read_text()))
    os.killpg(proc.pid, signal.SIGKILL)
    assert finish(proc, timeout=60).code == -signal.SIGKILL
    # The killed run's line stuck as on a disk that does not answer: SIGKILL waits for it.
    for pid in _group(pgid):
        (frozen_cgroup / "cgroup.procs").write_text(f"{pid}\n")
    (frozen_cgroup / "freezer.state").write_text("FROZEN\n")
    fast.touch()
    wt = _worktree(home_repo)

    stuck = _new(home_repo)
    assert stuck.code == 0, stuck.err
    setup = stuck.json["home"]["setup"]
    assert (setup["status"], setup["outcome"], setup["ran"]) == ("failed", "interrupted", 0)
    assert (wt / "ran.txt").read_text() == "first\n"  # not run again beside its stuck copy
    assert _group(pgid)
    assert stuck.json["warnings"] == [
        f"home: setup: the line a killed run left running (process group {pgid}) still runs "
        "after SIGTERM and SIGKILL, so no line runs beside it now. Once it is gone "
        f"(`kill -KILL -{pgid}`; a process stuck on a disk goes when the disk answers), run the "
        "same command again",
        f"home: setup: interrupted at `{slow}` (.worktreesetup on origin/main, 1/2 lines done); "
        f"the worktree {wt} is kept; its output is in {_log(home_repo)}. Fix the line on the "
        "default branch or what it needs, then run the same command again: it runs that line "
        "and the ones after it",
    ]

    # The disk answers: the SIGKILL it held goes through, and the rerun runs the line.
    (frozen_cgroup / "freezer.state").write_text("THAWED\n")
    again = _new(home_repo)
    assert again.code == 0, again.err
    assert (again.json["home"]["setup"]["status"], again.json["home"]["setup"]["ran"]) == (
        "done",
        1,
    )
    assert not _group(pgid)
    assert (wt / "ran.txt").read_text() == "first\nslow\n"
    assert again.json["warnings"] == []


def test_init_offers_a_commented_worktreesetup_example_that_runs_nothing_as_it_is(home_repo):
    res = run_cli("init", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    example = home_repo / ".git" / "team-router" / "examples" / ".worktreesetup.example"
    text = example.read_text()
    assert text.startswith("# .worktreesetup — what to run in a new worktree")
    assert all(not ln or ln.startswith("#") for ln in text.splitlines())
    # Copied into the repo as it is, it declares nothing to run.
    _declare(home_repo, text)
    made = _new(home_repo)
    assert made.code == 0, made.err
    assert made.json["home"]["setup"]["status"] == "done"
    assert made.json["home"]["setup"]["lines"] == 0


def test_init_write_examples_puts_the_worktreesetup_example_beside_the_teardown_one(home_repo):
    res = run_cli("init", "--write-examples", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    written = (home_repo / ".worktreesetup.example").read_text()
    assert written.startswith("# .worktreesetup — what to run in a new worktree")
    assert (home_repo / ".teamteardown.example").is_file()
    assert [a for a in res.json["actions"] if a.startswith(".worktreesetup.example")] == [
        ".worktreesetup.example: written (review it, then commit it to the default branch: until "
        "then the main tree is not clean, and teardown refuses)"
    ]


def test_a_worktreesetup_copied_in_by_worktreeinclude_never_runs(home_repo, tmp_path):
    """Only the default branch declares: a file that reaches the worktree another way is not read."""
    marker = tmp_path / "pwned"
    commit(home_repo, ".gitignore", "/.worktreesetup\n", "ignore a local setup file")
    commit(home_repo, ".worktreeinclude", ".worktreesetup\n", "copy it into worktrees")
    git(home_repo, "push", "-q", "origin", "main")
    (home_repo / ".worktreesetup").write_text(f"touch {marker}\n")  # ignored, in the main tree
    res = _new(home_repo)
    assert res.code == 0, res.err
    assert (_worktree(home_repo) / ".worktreesetup").read_text() == f"touch {marker}\n"  # copied
    assert not marker.exists()
    assert res.json["home"]["setup"]["status"] == "none"
    assert res.json["home"]["setup"]["note"] == "no .worktreesetup on main — nothing declared"
