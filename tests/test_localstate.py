from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest
from helpers.faults import git_wrapper, spawn
from helpers.origin import declare as on_default
from helpers.repos import branches, commit, git, make_repo, run_cli, write
from helpers.topics import multi_topic, new_topic, ship, teardown


def declare(repo: Path, text: str) -> None:
    """Commit ``.teamteardown`` to main and push it, so origin/main has it."""
    on_default(repo, {".teamteardown": text}, "declare teardown")


def local_state(topic, *flags: str):
    return run_cli("local-state", topic.id, "--json", *flags, cwd=topic.home)


def test_lines_from_the_default_branch_run_from_the_primary_root_with_the_team_env(topic, tmp_path):
    out = tmp_path / "env.txt"
    declare(
        topic.home,
        f'# a comment\n\necho "$PWD|$TEAM_REPO_ROOT|$TEAM_BRANCH|$TEAM_WORKTREE" > {out}\n',
    )
    res = local_state(topic)
    assert res.code == 0, res.out + res.err
    assert res.json["commands"] == [
        {
            "repo": "home",
            "line": f'echo "$PWD|$TEAM_REPO_ROOT|$TEAM_BRANCH|$TEAM_WORKTREE" > {out}',
            "outcome": "ok",
            "exit": 0,
        }
    ]
    assert (
        out.read_text() == f"{topic.home}|{topic.home}|{topic.branch}|{topic.worktrees['home']}\n"
    )
    # The line is printed (on stderr under --json) before it runs, then its outcome.
    assert res.err == f"[home] $ {res.json['commands'][0]['line']}\n[home]   -> ok\n"


def test_text_mode_prints_each_line_on_stdout(topic, tmp_path):
    declare(topic.home, f"touch {tmp_path / 'ran'}\n")
    res = run_cli("local-state", topic.id, cwd=topic.home)
    assert (res.code, res.err) == (0, "")
    assert res.out == (
        f"[home] $ touch {tmp_path / 'ran'}\n"
        "[home]   -> ok\n"
        "home: .teamteardown on origin/main: 1 line(s); 1/1 lines ok; no temp paths recorded\n"
    )
    assert (tmp_path / "ran").exists()


def test_a_teamteardown_on_the_feature_branch_never_runs(topic, tmp_path):
    marker = tmp_path / "pwned"
    commit(topic.worktrees["home"], ".teamteardown", f"touch {marker}\n", "sneaky")
    res = local_state(topic)
    assert res.code == 0
    assert res.json["commands"] == []
    assert res.json["repos"][0]["note"] == "no .teamteardown on main — nothing declared"
    assert not marker.exists()


def test_a_teamteardown_in_the_working_tree_never_runs(topic, tmp_path):
    marker = tmp_path / "pwned"
    write(topic.home / ".teamteardown", f"touch {marker}\n")
    write(topic.worktrees["home"] / ".teamteardown", f"touch {marker}\n")
    res = local_state(topic)
    assert res.code == 0 and res.json["commands"] == []
    assert not marker.exists()


def test_the_copy_on_origin_wins_over_an_unpushed_local_edit(topic, tmp_path):
    declare(topic.home, f"touch {tmp_path / 'origin'}\n")
    commit(topic.home, ".teamteardown", f"touch {tmp_path / 'local'}\n", "local only")
    res = local_state(topic)
    assert res.json["repos"][0]["source"] == "origin/main"
    assert (tmp_path / "origin").exists() and not (tmp_path / "local").exists()


def test_a_line_that_reads_stdin_does_not_swallow_the_rest(topic, tmp_path):
    declare(topic.home, f"cat > {tmp_path / 'stdin.txt'}\ntouch {tmp_path / 'second'}\n")
    res = local_state(topic)
    assert [c["outcome"] for c in res.json["commands"]] == ["ok", "ok"]
    assert (tmp_path / "stdin.txt").read_text() == ""
    assert (tmp_path / "second").exists()


def test_a_failing_line_does_not_stop_the_next(topic, tmp_path):
    declare(topic.home, f"exit 3\ntouch {tmp_path / 'after'}\n")
    res = local_state(topic)
    assert res.code == 1
    assert [(c["outcome"], c["exit"]) for c in res.json["commands"]] == [
        ("failed (exit 3)", 3),
        ("ok", 0),
    ]
    assert (tmp_path / "after").exists()


def test_a_hanging_line_times_out_and_its_process_group_is_killed(topic, tmp_path):
    pidfile = tmp_path / "bg.pid"
    declare(topic.home, f"sleep 300 & echo $! > {pidfile}; wait\ntouch {tmp_path / 'next'}\n")
    started = time.monotonic()
    res = local_state(topic, "--line-timeout", "0.5")
    assert time.monotonic() - started < 30
    assert [c["outcome"] for c in res.json["commands"]] == ["timeout", "ok"]
    assert res.json["commands"][0]["exit"] is None
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid)
    assert (tmp_path / "next").exists()


def test_a_line_that_leaves_a_child_does_not_hold_the_callers_pipes(topic, tmp_path):
    # An agent host reads team-router's stdout and stderr to EOF: a background
    # child (or a setsid one the timeout's group kill never reaches) that kept
    # the inherited pipes would hold the host until the child ends.
    pids = [tmp_path / "bg.pid", tmp_path / "setsid.pid"]
    declare(
        topic.home,
        f"echo before; sleep 30 & echo $! > {pids[0]}\n"
        f"setsid sleep 30 & echo $! > {pids[1]}; echo after >&2\n",
    )
    proc = spawn("local-state", topic.id, "--json", cwd=topic.home)
    try:
        started = time.monotonic()
        out, err = proc.communicate(timeout=60)  # reads both pipes to EOF
        elapsed = time.monotonic() - started
    finally:
        for pidfile in pids:
            with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
    assert elapsed < 15, f"the caller's pipes stayed open {elapsed:.1f}s"
    assert proc.returncode == 0, out + err
    assert [c["outcome"] for c in json.loads(out)["commands"]] == ["ok", "ok"]
    assert "before" in err and "after" in err  # the lines' output still reaches the caller


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


# -- temp paths --------------------------------------------------------------------


def record_temps(topic, *paths: str) -> None:
    write(topic.plan_dir / "temp-paths", "".join(f"{p}\n" for p in paths))


def test_recorded_temp_paths_under_tmpdir_are_removed_and_others_refused(topic, tmp_path):
    tmp = Path(os.environ["TMPDIR"])
    inside = tmp / "build-cache"
    write(inside / "blob", "x\n")
    outside = tmp_path / "not-temp"
    write(outside / "keep", "x\n")
    target = tmp_path / "linked-target"
    write(target / "keep", "x\n")
    os.symlink(target, tmp / "link")
    os.symlink(target, tmp / "linkdir")
    record_temps(
        topic,
        f"{inside}/",
        str(tmp / "gone"),
        str(outside),
        str(tmp / "link"),
        str(tmp / "linkdir" / "keep"),
        f"{tmp}/a/../../not-temp",
    )
    res = local_state(topic)
    outcomes = {t["path"]: (t["outcome"], t.get("check", "")) for t in res.json["temp_paths"]}
    assert outcomes == {
        f"{inside}/": ("removed", ""),
        str(tmp / "gone"): ("missing", ""),
        str(outside): ("refused", "outside-tmpdir"),
        str(tmp / "link"): ("refused", "symlink"),
        str(tmp / "linkdir" / "keep"): ("refused", "symlink"),
        f"{tmp}/a/../../not-temp": ("refused", "dotdot"),
    }
    assert not inside.exists()
    assert (outside / "keep").exists() and (target / "keep").exists()
    assert res.code == 1  # a refusal is loud


@pytest.mark.parametrize("command", ["local-state", "teardown"])
def test_a_temp_path_naming_a_repository_is_refused_and_nothing_is_lost(
    workspace, tmp_path, monkeypatch, command
):
    # The workspace under $TMPDIR, as in CI and agent sandboxes: every recorded
    # path passes the old checks (under the temp dir, no "..", no symlink).
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    topic = ship(multi_topic(workspace, ("api",)))
    home = topic.home
    write(home / "README.md", "stashed work\n")
    git(home, "stash", "-q")
    git(home, "branch", "keep-me")
    other = make_repo(workspace, "other")
    write(other / "build" / "out.o", "x\n")
    write(other / "notes.txt", "mine\n")
    other_wt = tmp_path / "elsewhere" / "other-wt"
    git(other, "worktree", "add", "-q", "-b", "side", str(other_wt))
    nested = make_repo(tmp_path / "holder" / "deep", "clone", origin=False)
    scratch = write(tmp_path / "scratch" / "cache.bin", "x\n").parent
    origins = tmp_path / "origins"
    expected = {
        str(home): "topic-repo",
        f"{home}/": "topic-repo",
        str(workspace): "topic-repo",
        str(home / ".git"): "topic-repo",
        str(home / ".git" / "refs"): "topic-repo",
        str(topic.worktrees["api"]): "topic-repo",
        str(other): "git-work-tree",
        str(other / ".git"): "git-dir",
        str(other / "build"): "git-work-tree",
        str(other / "notes.txt"): "git-work-tree",
        str(other_wt): "git-work-tree",
        str(origins): "contains-git",
        str(origins / "web.git"): "git-dir",
        str(tmp_path / "holder"): "contains-git",
    }
    record_temps(topic, *expected, str(scratch))
    # A caller's discovery limit must not hide the repository a path lies in.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(other))
    if command == "teardown":
        res = teardown(topic)
        temps = res.json["local_state"][0]["temp_paths"]
    else:
        res = local_state(topic)
        temps = res.json["temp_paths"]
    assert res.code == 1, res.out + res.err  # a refusal is loud
    outcomes = {t["path"]: (t["outcome"], t.get("check")) for t in temps}
    want = {p: ("refused", check) for p, check in expected.items()}
    if command == "teardown":  # teardown removed the topic's worktrees first, as it should
        want[str(topic.worktrees["api"])] = ("missing", None)
    assert outcomes == {**want, str(scratch): ("removed", None)}
    assert next(t for t in temps if t["path"] == str(tmp_path / "holder"))["detail"] == str(
        nested / ".git"
    )
    assert not scratch.exists()
    monkeypatch.delenv("GIT_CEILING_DIRECTORIES")
    # Nothing of any repository was lost.
    assert git(home, "stash", "list") and "keep-me" in branches(home)
    assert git(home, "rev-parse", "--verify", "origin/main")
    assert git(topic.repos["api"], "rev-parse", "--verify", "main")
    assert (other / "build" / "out.o").exists() and (other / "notes.txt").read_text() == "mine\n"
    assert git(other_wt, "rev-parse", "--abbrev-ref", "HEAD") == "side"
    assert git(origins / "web.git", "rev-parse", "--verify", "main")
    assert git(nested, "rev-parse", "--verify", "main")
    if command == "local-state":
        assert topic.worktrees["api"].is_dir() and topic.worktrees["home"].is_dir()


def test_tmpdir_with_a_trailing_slash_still_counts(topic, monkeypatch):
    tmp = Path(os.environ["TMPDIR"])
    monkeypatch.setenv("TMPDIR", f"{tmp}//")
    write(tmp / "scratch.txt", "x\n")
    record_temps(topic, str(tmp / "scratch.txt"))
    res = local_state(topic)
    assert res.json["temp_paths"] == [{"path": str(tmp / "scratch.txt"), "outcome": "removed"}]


def test_nothing_declared_is_said(topic):
    res = run_cli("local-state", topic.id, cwd=topic.home)
    assert (res.code, res.err) == (0, "")
    assert res.out == "home: no .teamteardown on main — nothing declared; no temp paths recorded\n"


def test_teardown_reads_temp_paths_before_removing_the_plan_dir_and_runs_the_declaration(
    home_repo, tmp_path
):
    topic = ship(new_topic(home_repo))
    declare(home_repo, f'echo "$TEAM_WORKTREE" > {tmp_path / "wt.txt"}\n')
    scratch = Path(os.environ["TMPDIR"]) / "topic-scratch"
    write(scratch / "x", "x\n")
    record_temps(topic, str(scratch))
    res = teardown(topic)
    assert res.code == 0, res.out
    state = res.json["local_state"][0]
    assert state["commands"][0]["outcome"] == "ok"
    assert state["temp_paths"] == [{"path": str(scratch), "outcome": "removed"}]
    assert (tmp_path / "wt.txt").read_text() == f"{topic.worktrees['home']}\n"
    assert not scratch.exists() and not topic.plan_dir.exists()


def test_a_failed_line_runs_once_and_a_second_teardown_exits_0(home_repo, tmp_path):
    topic = ship(new_topic(home_repo))
    count = tmp_path / "count.txt"
    declare(home_repo, f"echo ran >> {count}\nexit 3\n")
    outside = write(tmp_path / "keep-me.txt", "x\n")
    record_temps(topic, str(outside))  # refused on every run: outside the temp dir
    first = teardown(topic)
    assert first.code == 1, first.out
    step = next(s for s in first.json["repos"][0]["steps"] if s["name"] == "local-state")
    assert step["outcome"] == "failed"
    assert [c["outcome"] for c in first.json["local_state"][0]["commands"]] == [
        "ok",
        "failed (exit 3)",
    ]
    again = teardown(topic)
    assert again.code == 0, again.out
    step = next(s for s in again.json["repos"][0]["steps"] if s["name"] == "local-state")
    assert step["outcome"] == "skipped"
    assert f"`team-router local-state {topic.id}` runs it again" in step["detail"]
    assert count.read_text() == "ran\n"  # the lines did not run a second time
    assert outside.exists()
    # Asked for explicitly, they run again (and still report the failure).
    explicit = local_state(topic)
    assert explicit.code == 1
    assert count.read_text() == "ran\nran\n"


def test_a_dot_path_naming_the_temp_dir_itself_is_refused_never_removed(topic):
    tmp = Path(os.environ["TMPDIR"])
    other = write(tmp / "another-session" / "state.json", "{}\n")
    sub = write(tmp / "build" / "out.o", "x\n")
    dotted = [f"{tmp}/.", f"{tmp}/./", f"{tmp}/build/.", f"{tmp}//build"]
    record_temps(topic, *dotted)
    res = local_state(topic)
    assert res.code == 1
    assert res.json["temp_paths"] == [
        {"path": p, "outcome": "refused", "check": "not-normalized"} for p in dotted
    ]
    assert other.read_text() == "{}\n" and sub.read_text() == "x\n"


@pytest.mark.parametrize("origin", [True, False])
def test_a_teamteardown_integrated_from_the_branch_never_runs(workspace, tmp_path, origin):
    from helpers.repos import make_repo

    home = make_repo(workspace, "web", origin=origin)
    topic = new_topic(home)
    marker = tmp_path / "pwned"
    commit(topic.worktrees["home"], ".teamteardown", f"touch {marker}\n", "declare from the branch")
    res = teardown(topic, "--integrate")
    assert res.code == 0, res.out + res.err
    assert git(home, "show", "main:.teamteardown") == f"touch {marker}"  # it was integrated
    assert res.json["local_state"][0]["commands"] == []
    assert not marker.exists()


def test_a_topic_created_again_after_its_teardown_runs_its_local_state_again(home_repo, tmp_path):
    log = tmp_path / "ran.log"
    declare(home_repo, f"echo ran >> {log}\n")
    topic = new_topic(home_repo)
    assert teardown(topic).code == 0
    assert log.read_text() == "ran\n"
    again = new_topic(home_repo, topic.id)  # the same id, a new worktree
    assert again.worktrees["home"].is_dir()
    res = teardown(again)
    assert res.code == 0, res.out
    assert [c["outcome"] for c in res.json["local_state"][0]["commands"]] == ["ok"]
    assert log.read_text() == "ran\nran\n"
    assert not again.worktrees["home"].exists()
    third = teardown(again)
    assert third.code == 0 and log.read_text() == "ran\nran\n"


def test_local_state_dry_run_runs_no_line_and_removes_no_temp_path(topic, tmp_path):
    marker = tmp_path / "ran"
    declare(topic.home, f"touch {marker}\n")
    scratch = write(Path(os.environ["TMPDIR"]) / "scratch" / "x", "x\n")
    record_temps(topic, str(scratch.parent))
    res = local_state(topic, "--dry-run")
    assert res.code == 0, res.out + res.err
    # The real run's outcome, marked planned: the JSON says what would happen, as the text does.
    planned = [{"path": str(scratch.parent), "outcome": "removed", "planned": True}]
    assert res.json == {
        "ok": True,
        "command": "local-state",
        "id": topic.id,
        "commands": [],
        "temp_paths": planned,
        "repos": [
            {
                "name": "home",
                "source": "origin/main",
                "declared": True,
                "note": ".teamteardown on origin/main: 1 line(s)",
                "commands": [],
                "temp_paths": planned,
                "notes": [f"would run: touch {marker}"],
                "interrupted": False,
            }
        ],
        "dry_run": True,
        "warnings": [],
    }
    assert not marker.exists() and scratch.exists()
    text = run_cli("local-state", topic.id, "--dry-run", cwd=topic.home)
    assert (text.code, text.err) == (0, "")
    assert text.out == (
        f"home: .teamteardown on origin/main: 1 line(s); would run: touch {marker}; temp paths: "
        f"1 would be removed\n  temp path {scratch.parent}: would be removed\n"
    )
    assert not marker.exists() and scratch.exists()


def test_a_temp_path_that_is_not_utf8_is_handled_not_a_traceback(topic):
    tmp = os.fsencode(os.environ["TMPDIR"])
    raw = tmp + b"/cache-\xff\xfe"
    os.mkdir(raw)
    (topic.plan_dir / "temp-paths").write_bytes(raw + b"\n")
    res = teardown(ship(topic))
    assert res.code == 0, res.out + res.err
    assert [t["outcome"] for t in res.json["local_state"][0]["temp_paths"]] == ["removed"]
    assert not os.path.lexists(raw)


def test_a_failed_step_or_line_gives_ok_false_an_error_code_and_message(topic, tmp_path):
    declare(topic.home, f"exit 3\ntouch {tmp_path / 'after'}\n")
    res = local_state(topic)
    assert res.code == 1 and res.json["ok"] is False
    assert res.json["error"]["code"] == "local-state-failed"
    assert "`exit 3` failed (exit 3)" in res.json["error"]["message"]
    torn = teardown(topic)
    assert torn.code == 1 and torn.json["ok"] is False
    assert torn.json["error"]["code"] == "step-failed"
    assert torn.json["error"]["message"].startswith("home: local-state failed: ")


def test_local_state_waits_for_every_repos_worktree_to_be_gone(workspace, tmp_path, monkeypatch):
    # The home repo finishes its git steps first: the api repo's `git worktree
    # remove` takes a second longer (the real removal, late). The home's local
    # state must still see the topic as the teardown leaves it.
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the workspace is under it, as in CI
    topic = ship(multi_topic(workspace, ("api",)))
    api_worktree = topic.worktrees["api"]
    seen = tmp_path / "seen.txt"
    declare(topic.home, f"test -e {api_worktree} && echo present > {seen} || echo gone > {seen}\n")
    record_temps(topic, str(api_worktree))
    slow = 'case "$*" in *"/api/"*) sleep 1 ;; esac\nexec "$REAL_GIT" "$@"'
    monkeypatch.setenv("PATH", git_wrapper(tmp_path / "bin", "worktree remove", slow)["PATH"])
    res = teardown(topic)
    assert res.code == 0, res.out + res.err
    home_state = res.json["local_state"][0]
    assert home_state["temp_paths"] == [{"path": str(api_worktree), "outcome": "missing"}]
    assert seen.read_text() == "gone\n"
    assert not api_worktree.exists()
    assert git(topic.repos["api"], "rev-parse", "--verify", "main")  # and nothing else went


def test_a_temp_path_inside_a_work_tree_git_cannot_open_is_refused(topic, tmp_path):
    # A worktree whose repository was moved (its .git file points at nothing)
    # and a clone whose .git lost its HEAD: git answers "not a git repository"
    # for both, yet the files in them are someone's work.
    tmp = Path(os.environ["TMPDIR"])
    other = make_repo(tmp_path / "src", "other", origin=False)
    moved_wt = tmp / "moved-wt"
    git(other, "worktree", "add", "-q", "-b", "side", str(moved_wt))
    notes = write(moved_wt / "src" / "notes.txt", "uncommitted work\n")
    other.rename(tmp_path / "src" / "other-moved")
    damaged = make_repo(tmp, "damaged", origin=False)
    (damaged / ".git" / "HEAD").unlink()
    draft = write(damaged / "docs" / "draft.md", "mine\n")
    paths = [str(moved_wt / "src"), str(notes), str(damaged / "docs"), str(draft)]
    record_temps(topic, *paths)
    res = local_state(topic)
    assert res.code == 1, res.out + res.err
    assert [t["outcome"] for t in res.json["temp_paths"]] == ["refused"] * 4, res.json
    assert notes.read_text() == "uncommitted work\n" and draft.read_text() == "mine\n"


@pytest.mark.parametrize("sep", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028"])
def test_a_recorded_path_holding_a_line_separator_other_than_newline_stays_one_path(topic, sep):
    # str.splitlines() also breaks at these: "$TMPDIR/work<sep>junk" read back
    # as two lines would remove "$TMPDIR/work", which nobody recorded.
    tmp = Path(os.environ["TMPDIR"])
    unrecorded = write(tmp / "work" / "keep.txt", "not a temp path\n")
    odd = write(tmp / f"work{sep}junk" / "x", "x\n").parent
    assert run_cli("record", "temp", topic.id, str(odd), cwd=topic.home).code == 0
    assert run_cli("record", "temp", topic.id, str(tmp / "other"), cwd=topic.home).code == 0
    again = run_cli("record", "temp", topic.id, str(odd), "--json", cwd=topic.home)
    assert again.json["existing"] is True
    res = local_state(topic)
    assert res.json["temp_paths"] == [
        {"path": str(odd), "outcome": "removed"},
        {"path": str(tmp / "other"), "outcome": "missing"},
    ], res.json
    assert unrecorded.read_text() == "not a temp path\n" and not odd.exists()


def test_a_tmpdir_that_is_a_link_to_the_root_is_unusable_like_tmpdir_slash(
    topic, tmp_path, monkeypatch
):
    root_link = tmp_path / "tmp-is-root"
    os.symlink("/", root_link)
    monkeypatch.setenv("TMPDIR", str(root_link))
    keep = write(tmp_path / "documents" / "thesis.tex", "mine\n")
    recorded = f"{root_link}{keep.parent}"  # "$TMPDIR/..." naming a directory of the user
    record_temps(topic, recorded)
    res = local_state(topic)
    assert res.json["temp_paths"] == [
        {"path": recorded, "outcome": "refused", "check": "tmpdir-unusable"}
    ]
    assert res.code == 1 and keep.read_text() == "mine\n"


def test_a_directory_swapped_for_a_link_after_the_checks_is_not_followed(
    topic, tmp_path, monkeypatch
):
    # Between the checks and the removal, another user of the shared temp dir
    # turns a directory of the recorded path into a link to someone's files.
    from router.teardown import localstate

    tmp = Path(os.environ["TMPDIR"])
    write(tmp / "shared" / "build" / "out.o", "x\n")
    victim = write(tmp_path / "home-docs" / "build" / "thesis.tex", "mine\n")
    real_check = localstate.check_not_git

    def check_then_swap(path, guarded):
        found = real_check(path, guarded)
        (tmp / "shared").rename(tmp / "shared-moved")
        os.symlink(victim.parent.parent, tmp / "shared")
        return found

    monkeypatch.setattr(localstate, "check_not_git", check_then_swap)
    record_temps(topic, str(tmp / "shared" / "build"))
    res = local_state(topic)
    assert victim.read_text() == "mine\n"
    assert res.json["temp_paths"] == [
        {"path": str(tmp / "shared" / "build"), "outcome": "refused", "check": "symlink"}
    ]
    assert res.code == 1


@pytest.mark.parametrize("step", ["remove", "local-state"])
def test_a_teamteardown_integrated_from_the_branch_never_runs_on_the_rerun_after_a_crash(
    workspace, tmp_path, step
):
    # No origin: the declaration comes from the local main, which --integrate
    # has moved by the time a killed teardown is run again.
    from helpers.faults import CRASHED, run

    home = make_repo(workspace, "web", origin=False)
    topic = new_topic(home)
    marker = tmp_path / "pwned"
    commit(topic.worktrees["home"], ".teamteardown", f"touch {marker}\n", "declare from the branch")
    args = ("teardown", topic.id, "--integrate", "--json")
    crashed = run(*args, cwd=home, crash_at=step)
    assert crashed.code == CRASHED, crashed.out + crashed.err
    assert git(home, "show", "main:.teamteardown") == f"touch {marker}"  # integrated
    again = run(*args, cwd=home)
    assert again.code == 0, again.out + again.err
    assert not marker.exists()
    # Nor when asked for by hand afterwards: main holds the branch's copy now.
    explicit = run_cli("local-state", topic.id, "--json", cwd=home)
    assert explicit.code == 0, explicit.out + explicit.err
    assert explicit.json["commands"] == [] and not marker.exists()


def test_a_topic_created_again_reads_the_declaration_as_origin_has_it_now(home_repo, tmp_path):
    # The first teardown --integrate pinned .teamteardown at origin/main as it
    # was; the topic made again later runs the declaration origin has since.
    log = tmp_path / "ran.log"
    declare(home_repo, f"echo first >> {log}\n")
    topic = new_topic(home_repo)
    commit(topic.worktrees["home"], "feature.txt", "work\n", "the topic's work")
    assert teardown(topic, "--integrate").code == 0
    assert log.read_text() == "first\n"
    declare(home_repo, f"echo second >> {log}\n")
    again = new_topic(home_repo, topic.id)  # the same id, a new worktree
    res = teardown(again)
    assert res.code == 0, res.out + res.err
    assert log.read_text() == "first\nsecond\n"


def test_a_failing_line_names_its_code_in_the_human_output(topic, tmp_path):
    declare(topic.home, f"exit 3\ntouch {tmp_path / 'after'}\n")
    res = run_cli("local-state", topic.id, cwd=topic.home)
    assert res.code == 1
    assert res.out == (
        "[home] $ exit 3\n"
        "[home]   -> failed (exit 3)\n"
        f"[home] $ touch {tmp_path / 'after'}\n"
        "[home]   -> ok\n"
        "home: .teamteardown on origin/main: 2 line(s); 1/2 lines ok; no temp paths recorded\n"
    )
    assert res.err == ("team-router: home: `exit 3` failed (exit 3) [local-state-failed]\n")
    assert (tmp_path / "after").exists()


def _on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """team-router run with stdout and stderr on one terminal, as a user sees it."""
    import pty
    import subprocess

    from helpers.faults import argv

    main, secondary = pty.openpty()
    proc = subprocess.Popen(
        argv(*args, cwd=cwd),
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
        env={**os.environ, "NO_COLOR": "1"},
    )
    os.close(secondary)
    chunks = []
    with contextlib.suppress(OSError):  # EIO once the last writer closed the terminal
        while data := os.read(main, 65536):
            chunks.append(data)
    os.close(main)
    return proc.wait(timeout=120), b"".join(chunks).decode().replace("\r\n", "\n")


def test_parallel_repos_lines_and_their_output_never_share_a_terminal_line(workspace):
    topic = ship(multi_topic(workspace, ("api", "types")))
    for name, repo in topic.repos.items():
        declare(repo, "".join(f"printf '{name} wrote {n}'\n" for n in range(5)))
    code, out = _on_a_terminal(["teardown", topic.id], topic.home)
    assert code == 0, out
    relayed = [line for line in out.splitlines() if "wrote" in line or "-> ok" in line]
    echoed = re.compile(r"\[(home|api|types)\] (\$ printf '\1 wrote \d'|\1 wrote \d|  -> ok)")
    assert [line for line in relayed if not echoed.fullmatch(line)] == []
    progress = [line for line in out.splitlines() if re.match(r"\[\d", line)]
    assert len(progress) == 3
    assert all(re.fullmatch(r"\[[123]/3\] teardown (home|api|types): done", p) for p in progress)
    for name in topic.repos:
        mine = [line for line in relayed if line.startswith(f"[{name}] ")]
        assert mine == [
            text
            for n in range(5)
            for text in (
                f"[{name}] $ printf '{name} wrote {n}'",
                f"[{name}] {name} wrote {n}",
                f"[{name}]   -> ok",
            )
        ]
