"""Claude Code's own worktrees through the real client: ``claude -p --worktree NAME`` and the
EnterWorktree / ExitWorktree tools, with team-router's WorktreeCreate / WorktreeRemove hooks.

The model is the scripted stand-in on 127.0.0.1; the client, git and team-router are real.
What the pinned client (tests/e2e/package.json) does, as these tests rely on it:
WorktreeCreate gets ``session_id``, ``transcript_path``, ``cwd`` (the main clone),
``hook_event_name``, ``name`` (and ``prompt_id`` mid-session), with CLAUDE_PROJECT_DIR
set; WorktreeRemove gets ``cwd`` and ``worktree_path`` (the worktree) and no discard
intent; in ``-p`` mode a ``--worktree`` is kept at exit (no WorktreeRemove), and
ExitWorktree with ``action: remove`` runs WorktreeRemove -- for a worktree a hook made,
only with ``discard_changes: true`` (the client cannot verify its state), which it does
not pass on. EnterWorktree (input ``name``: "/"-separated segments of letters, digits,
``.``, ``_``, ``-``) is a deferred tool: not in the first request's tool list, but listed
by the init event and callable. The plugin's WorktreeCreate runs for ``--worktree`` at
start-up too (client 2.1.197 did not). A worktree-isolated subagent's worktree is named
``agent-<agent id>`` and kept when the subagent finishes (no WorktreeRemove).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

from helpers.client import Block, Request, StandIn, result_text, run_client, text
from helpers.origin import commit_on_origin
from helpers.plans import artifact, touch
from helpers.repos import branches, git, run_cli, status, worktree_paths
from test_client_e2e import SUBAGENT, claude, home, scripted  # noqa: F401 (fixtures)

from router.topic import state

TOOLS = "Bash EnterWorktree ExitWorktree"
TIMEOUT = 40
TODAY = dt.date.today().isoformat()


def call(tool_name: str, /, **tool_input: object) -> Block:
    # helpers.client.tool() takes the tool's name as its own first argument, and
    # EnterWorktree's input is called `name` too.
    return {"type": "tool_use", "name": tool_name, "input": tool_input}


def results(standin: StandIn) -> list[str]:
    """Every tool result the client sent back, in order."""
    seen: dict[str, str] = {}
    for request in standin.conversation():
        for block in request.tool_results():
            seen.setdefault(block["tool_use_id"], result_text(block))
    return list(seen.values())


def install_hooks() -> None:
    res = run_cli("install-hooks", "--json")
    assert res.code == 0 and res.json["changed"], res.out + res.err


def test_claude_worktree_is_made_by_the_router(claude: Path, home: Path, home_repo: Path) -> None:  # noqa: F811
    install_hooks()
    ahead = commit_on_origin(home_repo, "news.txt", "origin moved on\n")
    with StandIn(scripted([call("Bash", command="pwd")])) as standin:
        run = run_client(
            claude,
            standin,
            "work here",
            cwd=home_repo,
            home=home,
            allowed_tools=TOOLS,
            extra=("--worktree", "ENG-7-native"),
            timeout=TIMEOUT,
        )
    assert run.code == 0, run.stderr[-2000:]
    worktree = home_repo / ".claude" / "worktrees" / "ENG-7-native"
    assert run.init()["cwd"] == str(worktree)
    assert results(standin) == [str(worktree)]  # the session works in it
    record = state.read_record(home_repo / ".git", "ENG-7-native")
    assert record is not None and record.worktree == str(worktree)
    assert git(worktree, "symbolic-ref", "--short", "HEAD") == "ENG-7-native"
    assert git(worktree, "rev-parse", "HEAD") == ahead  # the fetched origin default
    assert "worktree-ENG-7-native" not in branches(home_repo)  # not the client's own branch
    listed = run_cli("status", "--json", cwd=home_repo).json
    # A worktree the host asked for, listed apart: no /team run until an artifact is written.
    assert listed["topics"] == [] and [h["id"] for h in listed["host_worktrees"]] == [
        "ENG-7-native"
    ]
    # -p mode keeps a --worktree at exit: nothing asked the router to remove it.
    assert str(worktree) in worktree_paths(home_repo)


def test_enter_and_exit_worktree_through_the_plugin_hooks_leave_nothing(
    claude: Path,  # noqa: F811
    home: Path,  # noqa: F811
    home_repo: Path,
) -> None:
    # No user settings: the plugin's hooks.json serves the mid-session switch.
    turns = [
        call("EnterWorktree", name="feature/second-one"),
        call("Bash", command="pwd"),
        # The client cannot verify a worktree a hook made ("Could not verify worktree
        # state"), so it removes one only with discard_changes -- and does not pass that
        # on to the hook: the router's rules alone decide what goes.
        call("ExitWorktree", action="remove", discard_changes=True),
    ]
    with StandIn(scripted(*([t] for t in turns))) as standin:
        run = run_client(
            claude, standin, "go", cwd=home_repo, home=home, allowed_tools=TOOLS, timeout=TIMEOUT
        )
    assert run.code == 0, run.stderr[-2000:]
    entered, pwd, exited = results(standin)
    topic_id = state.list_records(home_repo / ".git")
    assert len(topic_id) == 1 and topic_id[0].endswith("-feature-second-one")
    worktree = home_repo / ".claude" / "worktrees" / topic_id[0]
    assert str(worktree) in entered and pwd == str(worktree)
    assert "removed" in exited, exited
    assert not worktree.exists() and topic_id[0] not in branches(home_repo)
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert list((home_repo / ".claude" / "worktrees").iterdir()) == []
    record = state.read_record(home_repo / ".git", topic_id[0])
    assert record is not None and record.host_removal.outcome == "removed"
    assert status(home_repo) == ""


def test_exit_worktree_removing_a_dirty_worktree_loses_nothing(
    claude: Path,  # noqa: F811
    home: Path,  # noqa: F811
    home_repo: Path,
) -> None:
    install_hooks()  # settings and plugin both register the hooks: they must agree
    turns = [
        call("EnterWorktree", name="ENG-9-dirty"),
        call("Bash", command="echo 'unsaved work' > notes.txt && git add notes.txt"),
        call("ExitWorktree", action="remove", discard_changes=True),
    ]
    with StandIn(scripted(*([t] for t in turns))) as standin:
        run = run_client(
            claude, standin, "go", cwd=home_repo, home=home, allowed_tools=TOOLS, timeout=TIMEOUT
        )
    assert run.code == 0, run.stderr[-2000:]
    worktree = home_repo / ".claude" / "worktrees" / "ENG-9-dirty"
    # The hook kept it and said so: the session is never told "removed" while it stays.
    assert results(standin)[-1] == (
        f"Exited worktree but could not remove it. It is kept at “{worktree}”. "
        f"Session is now back in “{home_repo}”."
    )
    assert (worktree / "notes.txt").read_text() == "unsaved work\n"
    assert "ENG-9-dirty" in branches(home_repo) and str(worktree) in worktree_paths(home_repo)
    record = state.read_record(home_repo / ".git", "ENG-9-dirty")
    assert record is not None and record.host_removal.outcome == "kept"
    assert status(home_repo) == ""


def test_the_pinned_client_also_routes_claude_worktree_through_the_plugin_hook(
    claude: Path,  # noqa: F811
    home: Path,  # noqa: F811
    home_repo: Path,
) -> None:
    # Client 2.1.197 made a --worktree before plugin hooks loaded (hence install-hooks);
    # the pinned client runs the plugin's WorktreeCreate for it (with --plugin-dir and
    # as an installed plugin alike). Should a new pin stop doing so, this says it.
    with StandIn(scripted([call("Bash", command="pwd")])) as standin:
        run = run_client(
            claude,
            standin,
            "work here",
            cwd=home_repo,
            home=home,
            allowed_tools=TOOLS,
            extra=("--worktree", "ENG-7-native"),
            timeout=TIMEOUT,
        )
    assert run.code == 0, run.stderr[-2000:]
    assert sorted(branches(home_repo)) == ["ENG-7-native", "main"]
    assert state.list_records(home_repo / ".git") == ["ENG-7-native"]


def test_a_worktree_isolated_subagent_works_in_a_router_worktree(
    claude: Path,  # noqa: F811
    home: Path,  # noqa: F811
    home_repo: Path,
) -> None:
    def script(request: Request) -> list[Block]:
        answered = sum(1 for m in request.body.get("messages", []) if m["role"] == "assistant")
        if SUBAGENT in request.first_user_text():
            return [call("Bash", command="pwd")] if answered == 0 else [text("subagent done")]
        if answered == 0:
            agent = {"description": "isolated", "prompt": f"{SUBAGENT} look around"}
            agent |= {"subagent_type": "general-purpose", "isolation": "worktree"}
            return [call("Agent", **agent, run_in_background=False)]
        return [text("done")]

    with StandIn(script) as standin:
        run = run_client(
            claude, standin, "go", cwd=home_repo, home=home, allowed_tools="Bash Agent"
        )
    assert run.code == 0, run.stderr[-2000:]
    (topic_id,) = state.list_records(home_repo / ".git")
    # The client names it agent-<agent id>: free text, so <date>-agent-<id>.
    assert topic_id.startswith(TODAY) and "-agent-" in topic_id
    worktree = home_repo / ".claude" / "worktrees" / topic_id
    assert str(worktree) in results(standin)  # the subagent's pwd
    # The pinned client keeps the worktree of a finished subagent (no WorktreeRemove);
    # it is a topic like any other, and teardown takes it apart.
    assert worktree.is_dir()
    res = run_cli("teardown", topic_id, "--json", cwd=home_repo)
    assert res.code == 0, res.out
    assert not worktree.exists() and topic_id not in branches(home_repo)


def a_run_at_research(home_repo: Path) -> str:
    made = run_cli("new", "add rate limiting", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert made.code == 0, made.out
    plan = Path(made.json["plan_dir"])
    for name in ("task.md", "questions.md"):
        touch(artifact(plan, name), 1_000_000_000)  # older than anything the host makes
    return str(made.json["id"])


def test_claude_worktree_never_takes_the_notice_from_the_run(
    claude: Path,  # noqa: F811
    home: Path,  # noqa: F811
    home_repo: Path,
) -> None:
    run_id = a_run_at_research(home_repo)
    with StandIn(scripted([call("Bash", command="pwd")])) as standin:
        run = run_client(
            claude,
            standin,
            "work here",
            cwd=home_repo,
            home=home,
            allowed_tools=TOOLS,
            extra=("--worktree", "feat-x"),
            timeout=TIMEOUT,
        )
    assert run.code == 0, run.stderr[-2000:]
    host_id = f"{TODAY}-feat-x"
    worktree = home_repo / ".claude" / "worktrees" / host_id
    assert results(standin) == [str(worktree)]
    # That session was told whose worktree it works in, and that it is no run to resume.
    told = standin.conversation()[0].messages_text
    assert f"the worktree of topic {host_id}" in told
    assert "interrupted /team run" not in told and "Phase:" not in told

    # Every later session in the primary clone is still told the real run.
    with StandIn(scripted([text("noted")])) as standin:
        later = run_client(claude, standin, "hello", cwd=home_repo, home=home, timeout=TIMEOUT)
    assert later.code == 0, later.stderr[-2000:]
    told = standin.conversation()[0].messages_text
    assert f"Phase: RESEARCH | Id: {run_id}" in told and host_id not in told
    listed = run_cli("status", "--json", cwd=home_repo).json
    assert [t["id"] for t in listed["topics"]] == [run_id]
    assert [(h["id"], h["idle"]) for h in listed["host_worktrees"]] == [(host_id, True)]


def test_a_finished_isolated_subagents_worktree_is_kept_apart_and_swept(
    claude: Path,  # noqa: F811
    home: Path,  # noqa: F811
    home_repo: Path,
) -> None:
    run_id = a_run_at_research(home_repo)

    def script(request: Request) -> list[Block]:
        answered = sum(1 for m in request.body.get("messages", []) if m["role"] == "assistant")
        if SUBAGENT in request.first_user_text():
            return [call("Bash", command="pwd")] if answered == 0 else [text("subagent done")]
        if answered == 0:
            agent = {"description": "isolated", "prompt": f"{SUBAGENT} look around"}
            agent |= {"subagent_type": "general-purpose", "isolation": "worktree"}
            return [call("Agent", **agent, run_in_background=False)]
        return [text("done")]

    with StandIn(script) as standin:
        run = run_client(
            claude, standin, "go", cwd=home_repo, home=home, allowed_tools="Bash Agent"
        )
    assert run.code == 0, run.stderr[-2000:]
    (agent_id,) = [t for t in state.list_records(home_repo / ".git") if t != run_id]
    assert "-agent-" in agent_id
    worktree = home_repo / ".claude" / "worktrees" / agent_id
    assert worktree.is_dir()  # the client never asked to remove it

    # The next session in the primary clone is told the run, and `next` hands out its brief.
    hook = run_cli("hook", "session-start", stdin=json.dumps({"cwd": str(home_repo)}))
    assert f"Phase: RESEARCH | Id: {run_id}" in hook.out and agent_id not in hook.out
    nxt = run_cli("next", "--json", cwd=home_repo)
    assert (nxt.json["id"], nxt.json["request"]) == (run_id, None)
    # Its session is over, so nothing holds it: the sweep does what the client did not.
    res = run_cli("sweep", "--host-worktrees", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert [(h["id"], h["outcome"]) for h in res.json["host_worktrees"]] == [(agent_id, "removed")]
    assert not worktree.exists() and agent_id not in branches(home_repo)
    assert sorted(worktree_paths(home_repo)) == sorted(
        [str(home_repo), str(home_repo / ".claude" / "worktrees" / run_id)]
    )
    assert status(home_repo) == ""


def test_with_the_plugin_and_install_hooks_the_worktree_is_made_once(
    claude: Path,  # noqa: F811
    home: Path,  # noqa: F811
    home_repo: Path,
    tmp_path: Path,
) -> None:
    # Both register WorktreeCreate and the client runs both: the plugin's stands aside
    # (it is the one CLAUDE_PLUGIN_ROOT marks), the settings' makes the worktree.
    install_hooks()
    calls = tmp_path / "calls.log"
    wrapper = tmp_path / "bin" / "team-router"
    wrapper.parent.mkdir()
    real = Path(sys.executable).parent / "team-router"
    wrapper.write_text(
        f'#!/bin/sh\necho "$* plugin=${{CLAUDE_PLUGIN_ROOT:+yes}}" >> {calls}\n'
        f'exec {real} "$@" 2>> {calls}\n'
    )
    wrapper.chmod(0o755)
    with StandIn(scripted([call("Bash", command="pwd")])) as standin:
        run = run_client(
            claude,
            standin,
            "work here",
            cwd=home_repo,
            home=home,
            allowed_tools=TOOLS,
            extra=("--worktree", "ENG-7-native"),
            timeout=TIMEOUT,
            path_first=(wrapper.parent,),
        )
    assert run.code == 0, run.stderr[-2000:]
    worktree = home_repo / ".claude" / "worktrees" / "ENG-7-native"
    assert run.init()["cwd"] == str(worktree)
    settings = home / ".claude" / "settings.json"
    logged = [line for line in calls.read_text().splitlines() if "session-start" not in line]
    assert sorted(logged) == [
        "hook worktree-create plugin=",
        "hook worktree-create plugin=yes",
        f"team-router: the WorktreeCreate hook in {settings} makes it",
    ]
    assert state.list_records(home_repo / ".git") == ["ENG-7-native"]
