"""Every checkout of every repo of a topic answers as its home repo does (DESIGN §8)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.plans import artifact
from helpers.repos import run_cli
from helpers.topics import ship
from test_hook import context_of, hook

from router.topic import state


def _checkouts(questioned_multi_topic) -> dict[str, Path]:
    return {
        "secondary primary": questioned_multi_topic.repos["api"],
        "secondary worktree": questioned_multi_topic.worktrees["api"],
        "inside the secondary worktree": _subdir(questioned_multi_topic.worktrees["api"]),
    }


def _subdir(root: Path) -> Path:
    inside = root / "src" / "deep"
    inside.mkdir(parents=True, exist_ok=True)
    return inside


@pytest.mark.parametrize("command", ["phase", "next", "status"])
def test_every_checkout_of_a_secondary_answers_as_the_home_does(questioned_multi_topic, command):
    home = run_cli(command, "--json", cwd=questioned_multi_topic.home)
    assert home.code == 0, home.out + home.err
    if command != "status":
        assert home.json["resume_at"] == "RESEARCH"
        assert home.json["plan_dir"] == str(questioned_multi_topic.plan_dir)
    for where, cwd in _checkouts(questioned_multi_topic).items():
        got = run_cli(command, "--json", cwd=cwd)
        assert (got.code, got.json) == (0, home.json), where


@pytest.mark.parametrize("command", ["phase", "next"])
def test_a_named_topic_from_a_secondary_is_the_homes_topic(questioned_multi_topic, command):
    home = run_cli(command, questioned_multi_topic.id, "--json", cwd=questioned_multi_topic.home)
    for where, cwd in _checkouts(questioned_multi_topic).items():
        got = run_cli(command, questioned_multi_topic.id, "--json", cwd=cwd)
        assert (got.code, got.json) == (0, home.json), where
        # Never a plan dir inside the secondary repo, which does not exist.
        assert not (Path(cwd) / "docs" / "plans" / questioned_multi_topic.id).exists()


def test_the_session_start_hook_gives_the_homes_notice_in_a_secondary(
    questioned_multi_topic, tmp_path
):
    expected = context_of(
        hook(tmp_path, json.dumps({"cwd": str(questioned_multi_topic.home)}).encode())
    )
    assert f"Artifact directory: {questioned_multi_topic.plan_dir}" in expected.splitlines()
    for where, cwd in _checkouts(questioned_multi_topic).items():
        got = hook(tmp_path, json.dumps({"cwd": str(cwd)}).encode())
        assert context_of(got) == expected, where


def test_a_secondary_record_names_its_home(questioned_multi_topic):
    record = state.read_record(
        questioned_multi_topic.repos["api"] / ".git", questioned_multi_topic.id
    )
    assert record is not None and record.repo == "api"
    assert record.home == str(questioned_multi_topic.home)


def test_a_secondary_record_written_before_it_knew_its_home_learns_it_on_the_next_worktrees(
    questioned_multi_topic,
):
    path = state.record_path(
        questioned_multi_topic.repos["api"] / ".git", questioned_multi_topic.id
    )
    data = json.loads(path.read_text(encoding="utf-8"))
    old = {k: v for k, v in data.items() if k not in {"home", "schema"}}
    path.write_text(json.dumps(old), encoding="utf-8")
    before = run_cli("phase", "--json", cwd=questioned_multi_topic.worktrees["api"])
    assert before.json.get("plan_dir") != str(
        questioned_multi_topic.plan_dir
    )  # nothing names the home yet
    assert (
        run_cli(
            "worktrees", questioned_multi_topic.id, "--json", cwd=questioned_multi_topic.home
        ).code
        == 0
    )
    got = run_cli("phase", "--json", cwd=questioned_multi_topic.worktrees["api"])
    assert got.json["resume_at"] == "RESEARCH" and got.json["plan_dir"] == str(
        questioned_multi_topic.plan_dir
    )


def test_next_json_names_each_warning_once(questioned_multi_topic):
    artifact(
        questioned_multi_topic.plan_dir, "plan.md"
    )  # IMPLEMENT: both the phase and the brief need the repos
    state.record_path(questioned_multi_topic.home / ".git", questioned_multi_topic.id).write_text(
        "{junk", encoding="utf-8"
    )
    got = run_cli("next", "--json", cwd=questioned_multi_topic.home)
    assert got.code == 0, got.out + got.err
    corrupt = [w for w in got.json["warnings"] if "not trusted" in w]
    assert len(corrupt) == 1, got.json["warnings"]
    assert len(got.json["warnings"]) == len(set(got.json["warnings"]))


def test_a_secondary_with_a_home_that_is_gone_answers_for_itself(questioned_multi_topic, tmp_path):
    moved = tmp_path / "web-moved"
    subprocess.run(["mv", str(questioned_multi_topic.home), str(moved)], check=True)
    got = run_cli("phase", "--json", cwd=questioned_multi_topic.repos["api"])
    assert got.code != 0 or got.json["plan_dir"] != str(questioned_multi_topic.plan_dir)
    assert "Traceback" not in got.err


@pytest.mark.parametrize("plan_dir_gone", [False, True])
def test_teardown_from_a_secondary_plans_the_whole_topic_as_the_home_does(
    questioned_multi_topic, plan_dir_gone
):
    ship(questioned_multi_topic)  # a finished run: both plan the teardown that would go ahead
    if plan_dir_gone:
        # After the plan dir is gone only the home record knows the topic's repos.
        subprocess.run(["rm", "-rf", str(questioned_multi_topic.plan_dir)], check=True)
    home = run_cli(
        "teardown",
        questioned_multi_topic.id,
        "--dry-run",
        "--json",
        cwd=questioned_multi_topic.home,
    )
    assert home.code == 0, home.out + home.err
    assert [r["name"] for r in home.json["repos"]] == ["home", "api"]
    got = run_cli(
        "teardown",
        questioned_multi_topic.id,
        "--dry-run",
        "--json",
        cwd=questioned_multi_topic.repos["api"],
    )
    assert (got.code, got.json) == (0, home.json)
