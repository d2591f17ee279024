"""`team-router record`: numbering, frontmatter, and refusals that write nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.plans import artifact, repos_md
from helpers.repos import commit, git, make_repo, run_cli, unlock, write
from helpers.topics import new_topic

from router.plandir import artifacts


def record(cwd: Path, *args: str):
    return run_cli("record", *args, "--json", cwd=cwd)


def listing(plan: Path) -> list[str]:
    return sorted(p.name for p in plan.iterdir())


def built(plan: Path) -> str:
    """A commit on the topic's branch in its home worktree: something to ship."""
    return commit(plan.parents[2], "a.py", "a = 1\n", "slice")


def test_verdicts_are_numbered_highest_plus_one_with_their_frontmatter(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "design.md", revision=1)  # the redraft that answers round 1
    for value in ("REQUEST CHANGES", "COMMENT", "APPROVE"):
        res = record(home_repo, "verdict", plan.name, value)
        assert res.code == 0, res.err + res.out
    assert listing(plan) == [
        "design-review-1.md",
        "design-review-2.md",
        "design-review-3.md",
        "design.md",
    ]
    assert res.json["path"] == str(plan / "design-review-3.md")
    fm = artifacts.read_frontmatter(str(plan / "design-review-1.md"))
    assert fm.error is None
    assert {k: fm.fields[k] for k in ("topic", "phase", "verdict")} == {
        "topic": "add-rate-limiting",
        "phase": "design-review",
        "verdict": "REQUEST CHANGES",
    }
    assert "date" in fm.fields


def test_numbering_continues_after_a_gap_and_after_an_unreadable_record(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "design.md")
    write(plan / "design-review-4.md", "not even frontmatter\n")
    res = record(home_repo, "verdict", plan.name, "APPROVE")
    assert res.json["path"] == str(plan / "design-review-5.md")
    assert (plan / "design-review-4.md").read_text() == "not even frontmatter\n"


def test_reviews_are_numbered_and_keep_the_body_file(home_repo, tmp_path):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "plan.md")
    body = write(tmp_path / "findings.md", "- the retry loop never ends\n")
    assert record(home_repo, "review", plan.name, "FAIL", "--body-file", str(body)).code == 0
    res = record(home_repo, "review", str(plan), "PASS")
    assert res.code == 0
    assert listing(plan) == ["plan.md", "review-1.md", "review-2.md"]
    first = (plan / "review-1.md").read_text()
    assert "verdict: FAIL" in first and "phase: review" in first
    assert "- the retry loop never ends" in first
    assert artifacts.inventory(str(plan), plan.name).latest_review.verdict == "PASS"


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("verdict", "LGTM"),
        ("verdict", "PASS"),
        ("review", "APPROVE"),
        ("review", "passed"),
        ("pr", "not a url"),
        ("pr", "https://x/y z"),
        ("temp", "relative/dir"),
        ("temp", "tmp"),
    ],
)
def test_a_value_outside_its_set_is_exit_2_and_writes_nothing(home_repo, kind, value):
    plan = new_topic(home_repo).plan_dir
    before = listing(plan)
    res = record(home_repo, kind, plan.name, value)
    assert res.code == 2
    assert res.json["error"]["code"] == "invalid-value"
    assert listing(plan) == before == []


def test_an_unreadable_body_file_writes_nothing(home_repo, tmp_path):
    plan = new_topic(home_repo).plan_dir
    res = record(
        home_repo, "verdict", plan.name, "APPROVE", "--body-file", str(tmp_path / "nope.md")
    )
    assert (res.code, res.json["error"]["code"]) == (2, "invalid-value")
    assert listing(plan) == []


def test_an_unknown_target_is_no_plan_dir(home_repo):
    new_topic(home_repo)
    res = record(home_repo, "verdict", "2026-01-01-never-made", "APPROVE")
    assert (res.code, res.json["error"]["code"]) == (2, "no-plan-dir")


def test_pr_records_its_url_and_ships_the_topic(home_repo):
    plan = new_topic(home_repo).plan_dir
    built(plan)
    url = "https://github.com/acme/web/pull/42"
    res = record(home_repo, "pr", plan.name, url)
    assert res.code == 0
    fm = artifacts.read_frontmatter(res.json["path"])
    assert (fm.fields["phase"], fm.fields["url"]) == ("pr", url)
    phase = run_cli("phase", plan.name, "--json", cwd=home_repo).json
    assert (phase["resume_at"], phase["step"]) == ("SHIPPED", "teardown")


def test_a_body_file_dash_reads_the_findings_from_stdin(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "design.md")
    res = run_cli(
        "record",
        "verdict",
        plan.name,
        "REQUEST CHANGES",
        "--body-file",
        "-",
        "--json",
        cwd=home_repo,
        stdin="- the design never says what a 429 carries\n",
    )
    assert res.code == 0, res.err + res.out
    assert "- the design never says what a 429 carries" in (plan / "design-review-1.md").read_text()


def test_pr_local_records_every_repos_tip_pushed_or_not_and_ships_without_gh(home_repo, workspace):
    api = make_repo(workspace, "api")
    plan = new_topic(home_repo).plan_dir
    write(plan / "repos.md", repos_md(home_repo, ("api", api)))
    assert run_cli("worktrees", plan.name, "--json", cwd=home_repo).code == 0
    home_wt, api_wt = plan.parents[2], api / ".claude" / "worktrees" / plan.name
    home_tip = commit(home_wt, "a.py", "a = 1\n", "home slice")
    git(home_wt, "push", "-q", "-u", "origin", "HEAD")
    api_tip = commit(api_wt, "b.py", "b = 1\n", "api slice")

    res = record(home_repo, "pr", plan.name, "--local")
    assert res.code == 0, res.err + res.out
    assert (res.json["value"], res.json["local"]) == ("local", True)
    tips = {r["name"]: r for r in res.json["repos"]}
    assert tips["home"] == {
        "name": "home",
        "checkout": str(home_wt),
        "branch": plan.name,
        "tip": home_tip,
        "ahead": 1,
        "pushed": True,
    }
    assert (tips["api"]["tip"], tips["api"]["ahead"], tips["api"]["pushed"]) == (api_tip, 1, False)
    fm = artifacts.read_frontmatter(plan / "pr.md", typed=True)
    assert (fm.data["phase"], fm.data["local"], fm.data["branch"]) == ("pr", True, plan.name)
    assert {r["name"]: r["tip"] for r in fm.data["repos"]} == {"home": home_tip, "api": api_tip}
    # The work is where it was: nothing was pushed, moved or removed.
    assert git(api_wt, "rev-parse", "HEAD") == api_tip and home_wt.is_dir()
    nxt = run_cli("next", plan.name, "--json", cwd=home_repo).json
    assert nxt["resume_at"] == "SHIPPED"
    assert f"team-router record pr {plan.name} <pr-url> --repo <repo-name> --json" in nxt["brief"]
    assert f"team-router teardown {plan.name} --integrate --json" in nxt["brief"]


def test_a_pr_url_recorded_after_a_local_finish_replaces_it(home_repo):
    plan = new_topic(home_repo).plan_dir
    built(plan)
    assert record(home_repo, "pr", plan.name, "--local").code == 0
    url = "https://github.com/acme/web/pull/7"
    assert record(home_repo, "pr", plan.name, url).code == 0
    fm = artifacts.read_frontmatter(str(plan / "pr.md"))
    assert (fm.fields["url"], fm.fields.get("local")) == (url, None)
    assert url in run_cli("next", plan.name, "--json", cwd=home_repo).json["brief"]


@pytest.mark.parametrize("args", [(), ("https://github.com/acme/web/pull/7", "--local")])
def test_pr_needs_exactly_one_of_a_url_and_local_and_writes_nothing(home_repo, args):
    plan = new_topic(home_repo).plan_dir
    res = record(home_repo, "pr", plan.name, *args)
    assert (res.code, res.json["error"]["code"]) == (2, "usage")
    assert listing(plan) == []


def test_temp_paths_are_appended_once(home_repo, tmp_path):
    plan = new_topic(home_repo).plan_dir
    for path in ("/tmp/a-run", "/tmp/b-run", "/tmp/a-run"):
        res = record(home_repo, "temp", plan.name, path)
        assert res.code == 0
    assert (plan / "temp-paths").read_text() == "/tmp/a-run\n/tmp/b-run\n"
    assert res.json["existing"] is True  # the rerun says it was already recorded


def test_record_waits_for_the_topic_lock_then_refuses_and_writes_nothing(home_repo):
    plan = new_topic(home_repo).plan_dir
    common = Path(git(home_repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from router.topic import state\n"
            "with state.held_lock(Path(sys.argv[1]), sys.argv[2], wait=5):\n"
            "    print('held', flush=True); time.sleep(30)\n",
            str(common),
            plan.name,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        res = record(home_repo, "verdict", plan.name, "APPROVE", "--wait", "0.3")
        assert time.monotonic() - start >= 0.3
        assert (res.code, res.json["error"]["code"]) == (1, "locked")
        assert str(holder.pid) in res.json["error"]["message"]
        assert listing(plan) == []
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("value", ["/tmp/.", "/tmp/run/../etc", "/tmp//run", "/"])
def test_a_temp_path_that_is_not_normalized_is_refused_and_nothing_written(home_repo, value):
    plan = new_topic(home_repo).plan_dir
    res = record(home_repo, "temp", plan.name, value)
    assert res.code == 2 and res.json["error"]["code"] == "invalid-value"
    assert not (plan / "temp-paths").exists()


def test_a_temp_path_that_is_not_utf8_is_recorded_as_its_bytes(home_repo):
    # Teardown removes such a path (its bytes, read back with surrogateescape):
    # recording it must not end in a traceback.
    plan = new_topic(home_repo).plan_dir
    raw = b"/tmp/cache-\xff\xfe"
    for value in (raw, b"/tmp/b-run", raw):
        res = record(home_repo, "temp", plan.name, os.fsdecode(value))
        assert res.code == 0, res.out + res.err
    assert (plan / "temp-paths").read_bytes() == raw + b"\n/tmp/b-run\n"
    assert res.json["existing"] is True


@pytest.mark.parametrize("value", ["APPROVE", "REQUEST CHANGES", "COMMENT"])
def test_a_verdict_before_the_redraft_it_is_owed_to_is_refused_and_nothing_written(
    home_repo, value
):
    plan = new_topic(home_repo).plan_dir
    for name in ("task.md", "questions.md", "research.md"):
        artifact(plan, name)
    artifact(plan, "design.md", revision=0)
    assert record(home_repo, "verdict", plan.name, "REQUEST CHANGES").code == 0
    before = {p.name: p.read_bytes() for p in plan.iterdir()}
    res = record(home_repo, "verdict", plan.name, value)
    assert (res.code, res.json["error"]["code"]) == (1, "design-not-revised")
    assert "revision: 1" in res.json["error"]["message"]
    assert {p.name: p.read_bytes() for p in plan.iterdir()} == before
    phase = run_cli("phase", plan.name, "--json", cwd=home_repo).json
    assert (phase["resume_at"], phase["step"]) == ("DESIGN", "redraft")
    artifact(plan, "design.md", revision=1)  # the redraft answers round 1: now it is judged
    res = record(home_repo, "verdict", plan.name, value)
    assert res.code == 0 and res.json["path"] == str(plan / "design-review-2.md")


@pytest.mark.parametrize(
    "second", [("https://github.com/acme/web/pull/8",), ("--local",)], ids=["url", "local"]
)
def test_a_recorded_pr_url_is_never_written_over(home_repo, second):
    plan = new_topic(home_repo).plan_dir
    built(plan)
    url = "https://github.com/acme/web/pull/7"
    assert record(home_repo, "pr", plan.name, url).code == 0
    kept = (plan / "pr.md").read_bytes()
    res = record(home_repo, "pr", plan.name, *second)
    assert (res.code, res.json["error"]["code"]) == (1, "pr-recorded")
    assert url in res.json["error"]["message"] and "delete pr.md" in res.json["error"]["message"]
    assert (plan / "pr.md").read_bytes() == kept and listing(plan) == ["pr.md"]


def test_the_same_pr_url_twice_is_existing_and_the_record_is_untouched(home_repo):
    plan = new_topic(home_repo).plan_dir
    built(plan)
    url = "https://github.com/acme/web/pull/7"
    assert record(home_repo, "pr", plan.name, url).code == 0
    write(plan / "pr.md", (plan / "pr.md").read_text() + "\nFollow-up: CI was flaky.\n")
    kept = (plan / "pr.md").read_bytes()
    res = record(home_repo, "pr", plan.name, url)
    assert (res.code, res.json["existing"], res.json["value"]) == (0, True, url)
    assert (plan / "pr.md").read_bytes() == kept


def test_a_pr_md_record_pr_did_not_write_is_never_written_over(home_repo):
    plan = new_topic(home_repo).plan_dir
    mine = write(plan / "pr.md", "# PR notes\n\nThe reviewers asked for a second PR.\n")
    res = record(home_repo, "pr", plan.name, "https://github.com/acme/web/pull/7")
    assert (res.code, res.json["error"]["code"]) == (1, "pr-recorded")
    assert mine.read_text() == "# PR notes\n\nThe reviewers asked for a second PR.\n"


def test_a_verdict_with_no_design_to_judge_is_refused_and_nothing_written(home_repo):
    plan = new_topic(home_repo).plan_dir
    for name in ("task.md", "questions.md", "research.md"):
        artifact(plan, name)
    before = listing(plan)
    res = record(home_repo, "verdict", plan.name, "APPROVE")
    assert (res.code, res.json["error"]["code"]) == (1, "no-design")
    assert str(plan / "design.md") in res.json["error"]["message"]
    assert listing(plan) == before
    # Recorded, that APPROVE would have passed the first draft unread.
    artifact(plan, "design.md")
    phase = run_cli("phase", plan.name, "--json", cwd=home_repo).json
    assert (phase["resume_at"], phase["step"]) == ("DESIGN", "review")


def test_a_review_with_no_plan_to_judge_against_is_refused_and_nothing_written(home_repo):
    plan = new_topic(home_repo).plan_dir
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(plan, name)
    commit(plan.parents[2], "a.py", "a = 1\n", "a commit before any plan")
    before = listing(plan)
    res = record(home_repo, "review", plan.name, "PASS")
    assert (res.code, res.json["error"]["code"]) == (1, "no-plan")
    assert listing(plan) == before
    # Recorded, that PASS sent the run to PR past the design review, STRUCTURE and PLAN.
    phase = run_cli("phase", plan.name, "--json", cwd=home_repo).json
    assert (phase["resume_at"], phase["step"]) == ("DESIGN", "review")


def test_pr_local_again_never_drops_the_tip_of_a_branch_gone_since(home_repo, workspace):
    """api's worktree and branch were deleted after the local finish: pr.md holds the only
    name of its commits, and recording again would have written `tip: null` over it."""
    api = make_repo(workspace, "api")
    plan = new_topic(home_repo).plan_dir
    write(plan / "repos.md", repos_md(home_repo, ("api", api)))
    assert run_cli("worktrees", plan.name, "--json", cwd=home_repo).code == 0
    api_wt = api / ".claude" / "worktrees" / plan.name
    api_tip = commit(api_wt, "b.py", "b = 1\n", "api slice")
    assert record(home_repo, "pr", plan.name, "--local").code == 0
    before = (plan / "pr.md").read_bytes()
    unlock(api, api_wt)
    git(api, "worktree", "remove", "--force", str(api_wt))
    git(api, "branch", "-D", plan.name)
    res = record(home_repo, "pr", plan.name, "--local")
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "pr-recorded"
    assert f"branch {plan.name} {api_tip}`" in res.json["error"]["message"]
    assert (plan / "pr.md").read_bytes() == before
    git(api, "branch", plan.name, api_tip)  # the fix the message names
    again = record(home_repo, "pr", plan.name, "--local")
    assert again.code == 0, again.out + again.err
    assert {r["name"]: r["tip"] for r in again.json["repos"]}["api"] == api_tip


@pytest.mark.parametrize("value", ["https://github.com/acme/web/pull/7", "--local"])
def test_a_pr_before_anything_was_built_is_refused_and_nothing_written(home_repo, workspace, value):
    api = make_repo(workspace, "api")
    plan = new_topic(home_repo).plan_dir
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(plan, name)
    write(plan / "repos.md", repos_md(home_repo, ("api", api)))
    assert record(home_repo, "verdict", plan.name, "APPROVE").code == 0
    assert run_cli("worktrees", plan.name, "--json", cwd=home_repo).code == 0
    before = {p.name: p.read_bytes() for p in plan.iterdir()}
    res = run_cli("record", "pr", plan.name, value, cwd=home_repo)
    assert (res.code, res.out) == (1, "")
    assert res.err == (
        f"team-router: no repo of {plan.name} has a commit on the topic's branch since the "
        "default branch, so there is nothing to ship; nothing was written. Finish the phase "
        f"`team-router next {plan.name}` names and commit the work, then record the PR "
        "[nothing-built]\n"
    )
    assert {p.name: p.read_bytes() for p in plan.iterdir()} == before
    phase = run_cli("phase", plan.name, "--json", cwd=home_repo).json
    assert phase["resume_at"] == "STRUCTURE"
    # A commit in a secondary repo is something built: the PR is recorded.
    commit(api / ".claude" / "worktrees" / plan.name, "b.py", "b = 1\n", "api slice")
    assert record(home_repo, "pr", plan.name, value).code == 0
    assert run_cli("phase", plan.name, "--json", cwd=home_repo).json["resume_at"] == "SHIPPED"


# -- one PR per repo ---------------------------------------------------------------------


def test_each_repos_pr_is_recorded_under_prs_and_the_first_stays_url(workspace):
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    topic = new_topic(home)
    write(topic.plan_dir / "repos.md", repos_md(home, ("api", api), topic="add-rate-limiting"))
    commit(topic.worktrees["home"], "a.py", "a = 1\n", "slice")
    web_url, api_url = "https://github.com/acme/web/pull/7", "https://github.com/acme/api/pull/3"
    first = record(home, "pr", topic.id, web_url)  # no --repo: the home repo's PR
    assert first.code == 0, first.err + first.out
    assert first.json["prs"] == [{"repo": "home", "url": web_url}]
    second = record(home, "pr", topic.id, api_url, "--repo", "api")
    assert second.code == 0, second.err + second.out
    assert (second.json["existing"], second.json["value"]) == (False, api_url)
    assert second.json["prs"] == [{"repo": "home", "url": web_url}, {"repo": "api", "url": api_url}]
    fm = artifacts.read_frontmatter(topic.plan_dir / "pr.md", typed=True).data
    assert (fm["phase"], fm["url"]) == ("pr", web_url)
    assert fm["prs"] == [{"repo": "home", "url": web_url}, {"repo": "api", "url": api_url}]
    assert artifacts.recorded_prs(topic.plan_dir / "pr.md") == (
        artifacts.RecordedPr("home", web_url),
        artifacts.RecordedPr("api", api_url),
    )
    again = record(home, "pr", topic.id, api_url, "--repo", "api")
    assert (again.code, again.json["existing"]) == (0, True)
    nxt = run_cli("next", topic.id, "--json", cwd=home).json
    assert nxt["resume_at"] == "SHIPPED"
    assert f"team-router -C {api} pr-cleanup {api_url} --json" in nxt["brief"]
    assert f"team-router -C {home} pr-cleanup {web_url} --json" in nxt["brief"]


def test_a_second_url_for_one_repo_is_refused_and_changes_nothing(workspace):
    home = make_repo(workspace, "web")
    api = make_repo(workspace, "api")
    topic = new_topic(home)
    write(topic.plan_dir / "repos.md", repos_md(home, ("api", api), topic="add-rate-limiting"))
    commit(topic.worktrees["home"], "a.py", "a = 1\n", "slice")
    api_url = "https://github.com/acme/api/pull/3"
    assert record(home, "pr", topic.id, api_url, "--repo", "api").code == 0
    kept = (topic.plan_dir / "pr.md").read_bytes()
    res = record(home, "pr", topic.id, "https://github.com/acme/api/pull/4", "--repo", "api")
    assert (res.code, res.json["error"]["code"]) == (1, "pr-recorded")
    assert api_url in res.json["error"]["message"]
    assert (topic.plan_dir / "pr.md").read_bytes() == kept


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("https://github.com/acme/x/pull/1", "--repo", "nope"), "invalid-value"),
        (("--local", "--repo", "home"), "usage"),
    ],
    ids=["unknown-repo", "local-with-repo"],
)
def test_record_pr_refuses_a_repo_the_topic_does_not_have(home_repo, args, code):
    plan = new_topic(home_repo).plan_dir
    res = record(home_repo, "pr", plan.name, *args)
    assert (res.code, res.json["error"]["code"]) == (2, code)
    assert listing(plan) == []


# -- the test-first gate and the verifier ---------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "values", "prefix"),
    [("tests", ("BROKEN", "red"), "tests"), ("verify", ("FAIL", "pass"), "verify")],
)
def test_the_gate_and_the_verifier_are_numbered_records_with_their_body(
    home_repo, tmp_path, kind, values, prefix
):
    plan = new_topic(home_repo).plan_dir
    refused = record(home_repo, kind, plan.name, values[0])
    assert (refused.code, refused.json["error"]["code"]) == (1, "no-plan")
    assert listing(plan) == []
    artifact(plan, "plan.md")
    notes = write(tmp_path / "out.md", "home: `pytest -q`: 2 failed (AssertionError)\n")
    for value in values:
        res = record(home_repo, kind, plan.name, value, "--body-file", str(notes))
        assert res.code == 0, res.err + res.out
    assert listing(plan) == sorted([f"{prefix}-1.md", f"{prefix}-2.md", "plan.md"])
    fm = artifacts.read_frontmatter(plan / f"{prefix}-2.md", typed=True)
    assert (fm.data["phase"], fm.data["verdict"]) == (kind, values[1].upper())
    assert "2 failed (AssertionError)" in (plan / f"{prefix}-2.md").read_text()
    bad = record(home_repo, kind, plan.name, "MAYBE")
    assert (bad.code, bad.json["error"]["code"]) == (2, "invalid-value")
    assert listing(plan) == sorted([f"{prefix}-1.md", f"{prefix}-2.md", "plan.md"])
