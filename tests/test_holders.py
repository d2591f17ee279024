"""Holders: pid + start time + session; stale ones are dropped when read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.repos import run_cli
from helpers.topics import TOPIC_ID

from router import processes
from router.topic import holders


@pytest.fixture
def sleeper():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _common(repo: Path) -> Path:
    return repo / ".git"


def _files(repo: Path) -> list[Path]:
    folder = holders.holders_dir(_common(repo), TOPIC_ID)
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_hold_records_pid_start_time_and_session(topic, sleeper):
    res = run_cli(
        "hold",
        TOPIC_ID,
        "--pid",
        str(sleeper.pid),
        "--session",
        "abc-123",
        "--json",
        cwd=topic.home,
    )
    assert res.code == 0, res.err + res.out
    [written] = res.json["holders"]
    stat = Path(f"/proc/{sleeper.pid}/stat").read_text()
    assert written["pid"] == sleeper.pid
    assert written["start_time"] == stat.rpartition(")")[2].split()[19]
    assert written["session"] == "abc-123"
    [path] = _files(topic.home)
    assert json.loads(path.read_text())["pid"] == sleeper.pid
    assert [h.pid for h in holders.live_holders(_common(topic.home), TOPIC_ID)] == [sleeper.pid]


def test_a_holder_whose_process_is_gone_is_dropped_when_read(topic, sleeper):
    assert run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), cwd=topic.home).code == 0
    assert len(_files(topic.home)) == 1
    sleeper.kill()
    sleeper.wait()
    assert holders.live_holders(_common(topic.home), TOPIC_ID) == []
    assert _files(topic.home) == []


def test_a_zombie_holder_is_stale(topic, sleeper):
    assert run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), cwd=topic.home).code == 0
    sleeper.kill()
    # Not reaped yet: the pid still exists, as a zombie, but the session is over.
    for _ in range(250):
        if Path(f"/proc/{sleeper.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
            break
        time.sleep(0.02)
    else:
        pytest.fail("the killed process never became a zombie")
    assert holders.live_holders(_common(topic.home), TOPIC_ID) == []
    sleeper.wait()


def test_a_reused_pid_does_not_keep_a_holder_alive(topic, sleeper):
    real = holders.make_holder(sleeper.pid)
    impostor = holders.Holder(sleeper.pid, str(int(real.start_time) - 1), None, real.host, 0.0)
    path = holders.register(_common(topic.home), TOPIC_ID, impostor)
    assert os.path.exists(path)
    assert holders.live_holders(_common(topic.home), TOPIC_ID) == []
    assert not os.path.exists(path)


def test_a_holder_from_another_host_is_kept_because_it_cannot_be_checked(topic):
    far = holders.Holder(999_999_999, "1", None, "another-machine", 0.0)
    holders.register(_common(topic.home), TOPIC_ID, far)
    assert holders.live_holders(_common(topic.home), TOPIC_ID) == [far]


def test_holders_excluding_leaves_out_the_given_pid(topic, sleeper):
    holders.register(_common(topic.home), TOPIC_ID, holders.make_holder(sleeper.pid))
    holders.register(_common(topic.home), TOPIC_ID, holders.make_holder(os.getpid()))
    others = holders.holders_excluding(_common(topic.home), TOPIC_ID, {os.getpid()})
    assert [h.pid for h in others] == [sleeper.pid]
    assert len(holders.live_holders(_common(topic.home), TOPIC_ID)) == 2


@pytest.mark.parametrize("junk", ["{nope", "[" * 100_000 + "]" * 100_000], ids=["broken", "deep"])
def test_a_holder_file_that_does_not_parse_is_kept_and_not_trusted(topic, junk):
    folder = holders.holders_dir(_common(topic.home), TOPIC_ID)
    folder.mkdir(parents=True)
    bad = folder / "1-x-y.json"
    bad.write_text(junk, encoding="utf-8")
    assert holders.live_holders(_common(topic.home), TOPIC_ID) == []
    assert bad.read_text(encoding="utf-8") == junk
    res = run_cli("doctor", "--repair", "--json", cwd=topic.home)
    kinds = {(f["kind"], f["path"], f["repaired"]) for f in res.json["findings"]}
    assert ("holder-corrupt", str(bad), False) in kinds
    assert bad.exists()


def test_release_by_pid_drops_only_that_holder(topic, sleeper):
    assert run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), cwd=topic.home).code == 0
    assert run_cli("hold", TOPIC_ID, "--pid", str(os.getpid()), cwd=topic.home).code == 0
    res = run_cli("release", TOPIC_ID, "--pid", str(sleeper.pid), "--json", cwd=topic.home)
    assert res.code == 0, res.err
    assert [h["pid"] for h in res.json["holders"]] == [sleeper.pid]
    assert [h.pid for h in holders.live_holders(_common(topic.home), TOPIC_ID)] == [os.getpid()]


def test_release_by_session_drops_that_sessions_holders(topic, sleeper):
    assert (
        run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), "--session", "s1", cwd=topic.home).code
        == 0
    )
    assert (
        run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), "--session", "s2", cwd=topic.home).code
        == 0
    )
    res = run_cli("release", TOPIC_ID, "--session", "s1", "--json", cwd=topic.home)
    assert res.code == 0
    assert [h.session for h in holders.live_holders(_common(topic.home), TOPIC_ID)] == ["s2"]


def test_release_with_nothing_to_release_says_so(topic):
    res = run_cli("release", TOPIC_ID, "--pid", "4242", "--json", cwd=topic.home)
    assert res.code == 0
    assert res.json["holders"] == []
    assert any("nothing released" in w for w in res.json["warnings"])


def test_hold_of_a_dead_pid_is_bad_input_and_writes_nothing(topic, sleeper):
    sleeper.kill()
    sleeper.wait()
    res = run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), "--json", cwd=topic.home)
    assert res.code == 2
    assert res.json["error"]["code"] == "no-such-process"
    assert _files(topic.home) == []


@pytest.mark.parametrize("pid", ["99999999999999999999", "4294967296"])
def test_hold_of_a_pid_past_the_c_range_is_bad_input_not_a_traceback(topic, pid):
    res = run_cli("hold", TOPIC_ID, "--pid", pid, "--json", cwd=topic.home)
    assert res.code == 2, res.err
    assert res.json["error"]["code"] == "no-such-process"
    assert _files(topic.home) == []


@pytest.mark.parametrize("session", ["", "a b", "../x", "x" * 129, "s;rm -rf /"])
def test_hold_refuses_a_session_id_outside_the_allowlist(topic, session):
    res = run_cli("hold", TOPIC_ID, "--session", session, "--json", cwd=topic.home)
    assert res.code == 2
    assert res.json["error"]["code"] == "invalid-session"
    assert _files(topic.home) == []


def test_hold_of_an_unknown_topic_is_bad_input(topic):
    res = run_cli("hold", "2026-05-01-nothing-here", "--json", cwd=topic.home)
    assert res.code == 2
    assert _files(topic.home) == []


def test_hold_by_default_names_the_calling_session_past_a_sh_c_wrapper(topic):
    """The holder is the process that ran ``sh -c "team-router hold"``, not the shell."""
    exe = Path(sys.executable).with_name("team-router")
    script = f"'{exe}' -C '{topic.home}' hold {TOPIC_ID} --json; true"  # "; true": sh cannot exec directly
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    [written] = json.loads(proc.stdout)["holders"]
    assert written["pid"] == os.getpid()


def test_hold_by_default_from_an_interactive_like_parent_names_that_parent(topic):
    exe = Path(sys.executable).with_name("team-router")
    proc = subprocess.run(
        [str(exe), "-C", str(topic.home), "hold", TOPIC_ID, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["holders"][0]["pid"] == os.getpid()


def test_release_after_the_plan_dir_is_gone_still_finds_the_topic_by_id(topic, sleeper):
    import shutil

    assert run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), cwd=topic.home).code == 0
    shutil.rmtree(topic.home / ".claude/worktrees" / TOPIC_ID / "docs")
    res = run_cli("release", TOPIC_ID, "--pid", str(sleeper.pid), "--json", cwd=topic.home)
    assert res.code == 0, res.out
    assert holders.live_holders(_common(topic.home), TOPIC_ID) == []


def test_stale_holders_are_reported_by_doctor_and_dropped_by_repair(topic, sleeper):
    assert run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), cwd=topic.home).code == 0
    [path] = _files(topic.home)
    sleeper.kill()
    sleeper.wait()
    report = run_cli("doctor", "--json", cwd=topic.home).json
    assert ("stale-holder", str(path), False) in {
        (f["kind"], f["path"], f["repaired"]) for f in report["findings"]
    }
    assert path.exists()  # a report changes nothing
    repaired = run_cli("doctor", "--repair", "--json", cwd=topic.home).json
    assert ("stale-holder", str(path), True) in {
        (f["kind"], f["path"], f["repaired"]) for f in repaired["findings"]
    }
    assert not path.exists()


def test_the_holders_module_imports_nothing_heavy():
    code = (
        "import sys, router.topic.holders; "
        "print(sorted(m for m in ('typer', 'jinja2', 'filelock', 'markdown_it', 'dataclasses',"
        " 'pathlib', 'tempfile', 'hashlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- teardown and holders ---------------------------------------------------------------


def test_teardown_refuses_while_another_live_holder_exists_and_removes_nothing(topic, sleeper):
    assert run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), cwd=topic.home).code == 0
    worktree = topic.home / ".claude/worktrees" / TOPIC_ID
    res = run_cli("teardown", TOPIC_ID, "--json", cwd=topic.home)
    assert res.code == 1
    assert res.json["error"]["code"] == "held"
    assert f"process {sleeper.pid}" in res.json["error"]["message"]
    assert worktree.is_dir() and (worktree / "docs/plans" / TOPIC_ID).is_dir()
    assert (
        TOPIC_ID
        in subprocess.run(
            ["git", "-C", str(topic.home), "branch", "--list", TOPIC_ID],
            capture_output=True,
            text=True,
        ).stdout
    )


def test_teardown_force_overrides_a_live_holder_and_says_so(topic, sleeper):
    assert run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), cwd=topic.home).code == 0
    res = run_cli("teardown", TOPIC_ID, "--force", "--json", cwd=topic.home)
    assert res.code == 0, res.out
    assert any("--force" in w and f"process {sleeper.pid}" in w for w in res.json["warnings"])
    assert not (topic.home / ".claude/worktrees" / TOPIC_ID).exists()


def test_teardown_is_not_blocked_by_the_calling_sessions_own_holder(topic):
    # Default pid: the session above this process, which is also above the teardown.
    held = run_cli("hold", TOPIC_ID, "--json", cwd=topic.home)
    assert held.code == 0
    assert held.json["holders"][0]["pid"] in processes.ancestors()
    res = run_cli("teardown", TOPIC_ID, "--json", cwd=topic.home)
    assert res.code == 0, res.out
    assert not any("holds it" in w for w in res.json["warnings"])
    assert not (topic.home / ".claude/worktrees" / TOPIC_ID).exists()


def test_teardown_drops_a_stale_holder_instead_of_refusing(topic, sleeper):
    assert run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), cwd=topic.home).code == 0
    sleeper.kill()
    sleeper.wait()
    res = run_cli("teardown", TOPIC_ID, "--json", cwd=topic.home)
    assert res.code == 0, res.out
    assert _files(topic.home) == []


# -- the session-start hook registers the host session -------------------------------------

HOOK_COMMAND = json.loads(
    (Path(__file__).parent.parent / "hooks/hooks.json").read_text(encoding="utf-8")
)["hooks"]["SessionStart"][0]["hooks"][0]["command"]


def _hook_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_the_session_start_hook_registers_the_host_session_as_a_holder(topic):
    """Run exactly the hooks.json command through sh, as the host does; we are the host."""
    payload = json.dumps({"cwd": str(topic.home), "session_id": "0f3c-session"})
    proc = subprocess.run(
        ["sh", "-c", HOOK_COMMAND],
        input=payload,
        capture_output=True,
        text=True,
        env=_hook_env(),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"Id: {TOPIC_ID}" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    [holder] = holders.live_holders(_common(topic.home), TOPIC_ID)
    assert (holder.pid, holder.session) == (os.getpid(), "0f3c-session")
    assert holder.start_time == processes.process_start_time(os.getpid())


def test_a_session_registered_by_the_hook_in_another_host_blocks_teardown(topic):
    host = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            "subprocess.run(['sh', '-c', sys.argv[1]], input=sys.argv[2], text=True,"
            " capture_output=True)\n"
            "print('registered', flush=True)\n"
            "time.sleep(60)\n",
            HOOK_COMMAND,
            json.dumps({"cwd": str(topic.home), "session_id": "other-host-session"}),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=_hook_env(),
    )
    try:
        assert host.stdout.readline().strip() == "registered"
        res = run_cli("teardown", TOPIC_ID, "--json", cwd=topic.home)
        assert res.code == 1
        assert res.json["error"]["code"] == "held"
        assert "other-host-session" in res.json["error"]["message"]
        assert (topic.home / ".claude/worktrees" / TOPIC_ID).is_dir()
    finally:
        host.kill()
        host.wait()
    # The host is gone: its holder is stale, and teardown proceeds.
    assert run_cli("teardown", TOPIC_ID, "--json", cwd=topic.home).code == 0
    assert not (topic.home / ".claude/worktrees" / TOPIC_ID).exists()


def test_the_hook_ignores_a_session_id_outside_the_allowlist(topic):
    payload = json.dumps({"cwd": str(topic.home), "session_id": "../../etc/passwd"})
    proc = subprocess.run(
        ["sh", "-c", HOOK_COMMAND],
        input=payload,
        capture_output=True,
        text=True,
        env=_hook_env(),
        check=False,
    )
    assert proc.returncode == 0
    [holder] = holders.live_holders(_common(topic.home), TOPIC_ID)
    assert holder.session is None
    assert [p.parent for p in _files(topic.home)] == [
        holders.holders_dir(_common(topic.home), TOPIC_ID)
    ]


def test_pr_cleanup_in_a_secondary_refuses_while_another_session_holds_the_topic(
    workspace, sleeper
):
    """``hold`` writes the holder at the topic's home, wherever it runs: pr-cleanup in the
    secondary must look there too, or it takes apart the worktree that session works in."""
    from helpers.repos import branches, git
    from helpers.topics import merged_in_secondary, snapshot_of

    topic = merged_in_secondary(workspace)
    api, api_wt = topic.repos["api"], topic.worktrees["api"]
    held = run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), "--session", "s-9", cwd=api_wt)
    assert held.code == 0, held.out + held.err
    assert [h.pid for h in holders.live_holders(_common(topic.home), TOPIC_ID)] == [sleeper.pid]
    # The dry run plans what the real run does: it says the same refusal (its fetch
    # moves origin's refs, nothing else).
    res = run_cli("pr-cleanup", TOPIC_ID, "--delete-remote", "--dry-run", "--json", cwd=api)
    assert (res.code, res.json["error"]["code"], res.json["dry_run"]) == (1, "held", True)
    before = snapshot_of(api), snapshot_of(api_wt), git(api, "ls-remote", "origin")
    res = run_cli("pr-cleanup", TOPIC_ID, "--delete-remote", "--json", cwd=api)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "held"
    assert f"process {sleeper.pid} (session s-9)" in res.json["error"]["message"]
    assert (snapshot_of(api), snapshot_of(api_wt), git(api, "ls-remote", "origin")) == before
    # The session ended: its holder is stale, and the same command cleans up.
    sleeper.kill()
    sleeper.wait()
    res = run_cli("pr-cleanup", TOPIC_ID, "--json", cwd=api)
    assert res.code == 0, res.out + res.err
    assert not api_wt.exists() and TOPIC_ID not in branches(api)


def test_hold_in_a_secondary_after_the_plan_dir_is_gone_writes_the_holder_at_the_home(
    workspace, sleeper
):
    """Restored after a teardown (no plan dir any more), the topic is still held at its home:
    teardown reads its holders there, whichever repo the session runs ``hold`` in."""
    from helpers.repos import write
    from helpers.topics import multi_topic

    topic = multi_topic(workspace, ("api",))
    api_wt = topic.worktrees["api"]
    write(api_wt / "draft.txt", "not committed\n")
    assert run_cli("teardown", TOPIC_ID, "--force", cwd=topic.home).code == 0
    restored = run_cli("restore", TOPIC_ID, "--json", cwd=topic.home)
    assert restored.code == 0, restored.out + restored.err
    [back] = [r for r in restored.json["repos"] if r["name"] == "api"]
    back_wt = Path(back["worktree"])
    assert (back_wt / "draft.txt").read_text() == "not committed\n"
    held = run_cli("hold", TOPIC_ID, "--pid", str(sleeper.pid), "--json", cwd=back_wt)
    assert held.code == 0, held.out + held.err
    assert held.json["repo"] == str(topic.home)
    assert [h.pid for h in holders.live_holders(_common(topic.home), TOPIC_ID)] == [sleeper.pid]
    res = run_cli("teardown", TOPIC_ID, "--json", cwd=topic.home)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "held"
    assert f"process {sleeper.pid}" in res.json["error"]["message"]
    assert (back_wt / "draft.txt").read_text() == "not committed\n"
    res = run_cli("release", TOPIC_ID, "--pid", str(sleeper.pid), "--json", cwd=back_wt)
    assert res.code == 0 and holders.live_holders(_common(topic.home), TOPIC_ID) == []
