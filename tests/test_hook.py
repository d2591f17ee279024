"""`team-router hook session-start`: the output contract, and silence on every bad input."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.plans import artifact
from helpers.repos import git, make_repo, run_cli, write
from helpers.topics import Topic, in_place, new_topic

import router.topic.discovery


def entry_point() -> list[str]:
    exe = Path(sys.executable).with_name("team-router")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "router.entry"]


def hook(cwd: Path, stdin: str | bytes | None, **kw) -> subprocess.CompletedProcess:
    """The installed entry point, run as the host runs it."""
    return subprocess.run(
        [*entry_point(), "hook", "session-start"],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=30,
        **kw,
    )


def context_of(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1, proc.stdout
    data = json.loads(lines[0])
    assert list(data) == ["hookSpecificOutput"]
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return data["hookSpecificOutput"]["additionalContext"]


HALTED = (
    "The review loop halted after 5 rounds without a passing verdict: ask the user how to "
    "proceed before resuming.\n"
)


def resume_notice(topic_id: str, plan_dir: Path, phase: str, *, halted: bool = False) -> str:
    """The whole notice for an interrupted run of ``topic_id`` that resumes at ``phase``."""
    return (
        "team-router found an interrupted /team run in this repository.\n"
        f"Phase: {phase} | Id: {topic_id}\n"
        f"Artifact directory: {plan_dir}\n"
        f"{HALTED if halted else ''}"
        "To resume it, re-invoke /team (/team-router:team when another plugin also answers to "
        f"/team): the pipeline continues at the {phase} phase from the artifacts above "
        f"(`team-router next {topic_id}` prints what that phase must produce). Do not start the "
        "run over."
    )


def at_research(topic: Topic) -> str:
    """The notice for ``questioned_topic``: task and questions written, RESEARCH next."""
    return resume_notice(topic.id, topic.plan_dir, "RESEARCH")


def assert_silent(proc: subprocess.CompletedProcess) -> None:
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


def test_from_the_home_repo_the_notice_names_phase_id_and_artifact_directory(
    home_repo, questioned_topic
):
    payload = json.dumps({"cwd": str(home_repo), "session_id": "abc-123", "source": "startup"})
    text = context_of(hook(home_repo, payload.encode()))
    assert text == at_research(questioned_topic)


def test_from_inside_the_worktree_the_notice_is_the_same(home_repo, questioned_topic, tmp_path):
    inside = questioned_topic.plan_dir.parent.parent.parent / "src"
    inside.mkdir()
    payload = json.dumps({"cwd": str(inside)}).encode()
    text = context_of(hook(tmp_path, payload))
    assert text == at_research(questioned_topic)


def test_without_a_cwd_in_the_payload_the_process_directory_is_used(home_repo, questioned_topic):
    for stdin in (b"{}", b"", b"not json at all {", b"[1, 2]", b'{"cwd": 7}'):
        text = context_of(hook(home_repo, stdin))
        assert text == at_research(questioned_topic), stdin


def test_a_halted_run_says_so(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "plan.md")
    for n in range(1, 6):
        artifact(plan, f"review-{n}.md", verdict="FAIL")
    text = context_of(hook(home_repo, b""))
    assert text == resume_notice(plan.name, plan, "IMPLEMENT", halted=True)


def test_a_shipped_run_is_not_called_interrupted_and_the_notice_says_how_to_finish(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "pr.md", url="https://github.com/acme/web/pull/7")
    assert context_of(hook(home_repo, b"")).splitlines() == [
        "team-router: the /team run in this repository has shipped (its pr.md records the PR, "
        "or the work kept without one); there is nothing to resume.",
        f"Phase: SHIPPED | Id: {plan.name}",
        f"Artifact directory: {plan}",
        "To finish it once the PR is merged, run /pr-cleanup with the PR's number or branch "
        "(/team-router:pr-cleanup when another plugin also answers to it), or "
        f"`team-router teardown {plan.name}`; either keeps anything that would lose work. "
        "Do not start the run over.",
    ]


@pytest.mark.parametrize(
    "stdin",
    [b"", b"garbage \x00\xff", b"{", b"null", b'{"cwd": null}', b'{"session_id": 5}'],
    ids=["empty", "garbage", "truncated", "null", "null-cwd", "odd-session"],
)
def test_outside_any_repo_it_is_silent_whatever_stdin_holds(tmp_path, stdin):
    assert_silent(hook(tmp_path, stdin))


def test_a_cwd_that_does_not_exist_is_silent(home_repo, questioned_topic, tmp_path):
    payload = json.dumps({"cwd": str(tmp_path / "gone" / "away")}).encode()
    assert_silent(hook(home_repo, payload))


def test_a_repo_without_topics_is_silent(home_repo):
    assert_silent(hook(home_repo, json.dumps({"cwd": str(home_repo)}).encode()))


def test_no_git_on_path_is_silent(home_repo, questioned_topic, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    assert_silent(hook(home_repo, json.dumps({"cwd": str(home_repo)}).encode(), env=env))


def test_an_unusual_layout_still_gets_its_notice_through_git(workspace):
    repo = make_repo(workspace, "odd")
    git(repo, "config", "core.worktree", str(repo))
    artifact(in_place(repo, "2026-05-01-odd-layout"), "task.md")
    text = context_of(hook(repo, b""))
    plan = repo / "docs" / "plans" / "2026-05-01-odd-layout"
    assert text == resume_notice("2026-05-01-odd-layout", plan, "QUESTION")


def test_any_unexpected_exception_is_silent_and_exit_0(home_repo, questioned_topic, monkeypatch):
    def explode(cwd):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(router.topic.discovery, "locate", explode)
    res = run_cli("hook", "session-start", cwd=home_repo, stdin=json.dumps({"cwd": str(home_repo)}))
    assert (res.code, res.out, res.err) == (0, "", "")


def test_in_process_the_payload_is_read_from_an_in_memory_stdin(home_repo, questioned_topic):
    res = run_cli("hook", "session-start", stdin=json.dumps({"cwd": str(home_repo)}))
    assert res.code == 0
    text = json.loads(res.out)["hookSpecificOutput"]["additionalContext"]
    assert text == at_research(questioned_topic)


def test_a_terminal_stdin_does_not_block(home_repo, questioned_topic):
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.run(
            [*entry_point(), "hook", "session-start"],
            cwd=home_repo,
            stdin=terminal,
            capture_output=True,
            timeout=20,
        )
    finally:
        os.close(controller)
        os.close(terminal)
    assert f"Id: {questioned_topic.id}" in context_of(proc)


def test_a_stdin_left_open_after_its_json_does_not_block(home_repo, questioned_topic):
    proc = subprocess.Popen(
        [*entry_point(), "hook", "session-start"],
        cwd=home_repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        proc.stdin.write(json.dumps({"cwd": str(home_repo)}).encode())
        proc.stdin.flush()
        start = time.monotonic()
        out = proc.stdout.read()  # EOF on stdout: the hook finished with stdin still open
        assert time.monotonic() - start < 10
        assert proc.wait(timeout=10) == 0
    finally:
        proc.stdin.close()
        proc.kill()
    assert (
        f"Id: {questioned_topic.id}" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    )


def test_the_hook_imports_neither_typer_nor_jinja2_nor_yaml(home_repo, questioned_topic):
    code = "from router.entry import main; raise SystemExit(main(['hook', 'session-start']))"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=home_repo,
        input=b"{}",
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0
    assert f"Id: {questioned_topic.id}".encode() in proc.stdout
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in proc.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "router" in imported  # the measurement itself works
    assert not imported & {"typer", "click", "jinja2", "yaml", "markdown_it", "filelock", "rich"}


def test_hook_help_goes_through_the_cli():
    res = run_cli("hook", "--help")
    assert res.code == 0
    assert "session-start" in res.out


def test_minus_c_names_the_session_directory_when_the_host_sends_no_cwd(
    home_repo, questioned_topic, tmp_path, monkeypatch
):
    monkeypatch.chdir(
        tmp_path
    )  # not a repository: only -C can lead to the questioned_topic.plan_dir
    res = run_cli("hook", "session-start", cwd=home_repo, stdin="{}")
    assert res.code == 0
    text = json.loads(res.out)["hookSpecificOutput"]["additionalContext"]
    assert text == at_research(questioned_topic)


def test_without_a_cwd_in_the_payload_claude_project_dir_names_the_project(
    home_repo, questioned_topic, tmp_path
):
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(home_repo)}
    for stdin in (b"{}", b""):
        # Started outside any repository, as a host may start its hooks.
        text = context_of(hook(tmp_path, stdin, env=env))
        assert text == at_research(questioned_topic), stdin
    # The payload's own cwd still wins over the variable.
    payload = json.dumps({"cwd": str(tmp_path)}).encode()
    assert_silent(hook(tmp_path, payload, env=env))


SESSION_START_MISUSES = {
    "-C names a file": (["-C", "{file}"], []),
    "-C names nothing": (["-C", "{missing}"], []),
    "-C is empty": (["-C", ""], []),
    "--json before the command": (["--json"], []),
    "an option it does not know": ([], ["--from-a-newer-version"]),
    "-C after the command": ([], ["-C", "{home}"]),
}


@pytest.mark.parametrize(
    ("before", "after"), SESSION_START_MISUSES.values(), ids=SESSION_START_MISUSES.keys()
)
def test_a_session_start_that_cannot_work_prints_nothing_and_exits_0(
    home_repo, questioned_topic, tmp_path, before, after
):
    names = {
        "file": str(write(tmp_path / "a-file", "not a directory\n")),
        "missing": str(tmp_path / "missing"),
        "home": str(home_repo),
    }
    args = [a.format(**names) for a in (*before, "hook", "session-start", *after)]
    payload = json.dumps({"cwd": str(home_repo)}).encode()
    proc = subprocess.run(
        [*entry_point(), *args], cwd=home_repo, input=payload, capture_output=True, timeout=30
    )
    assert (proc.returncode, proc.stdout) == (0, b""), proc.stderr
    (note,) = proc.stderr.decode().splitlines()
    assert note.startswith("team-router: hook session-start: ") and note.endswith("; no notice")
    assert "Traceback" not in note


def test_worktree_create_with_a_bad_minus_c_still_fails_so_the_host_stops(home_repo, tmp_path):
    # Unlike session-start, a create hook that cannot make the worktree must fail loudly.
    payload = json.dumps({"cwd": str(home_repo), "name": "probe"}).encode()
    proc = subprocess.run(
        [*entry_point(), "-C", str(tmp_path / "missing"), "hook", "worktree-create"],
        cwd=home_repo,
        input=payload,
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"[usage]" in proc.stderr
    assert git(home_repo, "worktree", "list", "--porcelain").count("worktree ") == 1
