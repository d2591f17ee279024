from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.faults import git_logger, git_verbs, run
from helpers.origin import commit_on_origin
from helpers.plans import repos_md
from helpers.repos import branches, git, make_repo, run_cli, status, worktree_paths, write
from helpers.topics import NO_SETUP_DECLARED, TOPIC_ID, multi_topic, new_topic, write_repos_md

NOTES = "## Notes\nKeep   this   text *exactly*.\n"


def worktrees(plan: Path, *args: str):
    return run_cli("worktrees", str(plan), *args, "--json", cwd=plan)


def test_single_mode_reports_the_home_worktree(topic):
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.err
    assert res.json["mode"] == "single"
    assert [r["status"] for r in res.json["repos"]] == ["existing"]
    assert res.json["repos_md_updated"] is False


def test_multi_repo_creates_a_worktree_per_sibling_and_writes_the_section(
    workspace, home_repo, topic
):
    api = make_repo(workspace, "api")
    types = make_repo(workspace, "shared-types")
    write(
        topic.plan_dir / "repos.md",
        repos_md(home_repo, ("api", str(api)), ("shared-types", str(types)), notes=NOTES),
    )
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.err
    repos = res.json["repos"]
    assert [(r["name"], r["status"]) for r in repos] == [
        ("home", "existing"),
        ("api", "created"),
        ("shared-types", "created"),
    ]
    for repo, r in ((api, repos[1]), (types, repos[2])):
        wt = repo / ".claude" / "worktrees" / TOPIC_ID
        assert r["worktree"] == str(wt) and r["branch"] == TOPIC_ID
        assert git(wt, "symbolic-ref", "--short", "HEAD") == TOPIC_ID
        assert git(wt, "rev-parse", "HEAD") == git(repo, "rev-parse", "origin/HEAD")
        assert status(repo) == ""
    text = (topic.plan_dir / "repos.md").read_text()
    assert text.endswith(
        "## Worktrees\n"
        f"- home: {home_repo}/.claude/worktrees/{TOPIC_ID}\n"
        f"- api: {api}/.claude/worktrees/{TOPIC_ID}\n"
        f"- shared-types: {types}/.claude/worktrees/{TOPIC_ID}\n"
    )
    assert res.json["repos_md_updated"] is True
    assert status(home_repo) == ""


def test_write_back_preserves_every_other_byte_and_stays_single_on_rerun(
    workspace, home_repo, topic
):
    api = make_repo(workspace, "api")
    stale = "## Worktrees\n- home: /old/path\n- gone: /old/gone\n\n## After\ntrailing text\n"
    original = repos_md(home_repo, ("api", str(api)), notes=NOTES + stale)
    write(topic.plan_dir / "repos.md", original)
    assert worktrees(topic.plan_dir).code == 0
    first = (topic.plan_dir / "repos.md").read_text()
    head, _, _ = original.partition("## Worktrees")
    assert first.startswith(head)
    assert first.endswith("\n\n## After\ntrailing text\n")
    assert first.count("## Worktrees") == 1
    again = worktrees(topic.plan_dir)
    assert again.json["repos_md_updated"] is False
    assert (topic.plan_dir / "repos.md").read_text() == first


@pytest.mark.parametrize("char", list("\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e"))
def test_a_line_separator_before_the_section_costs_no_line_and_doctor_reads_it(
    workspace, home_repo, topic, char
):
    # str.splitlines breaks on these; markdown-it, whose line numbers find the section, does not.
    api = make_repo(workspace, "api")
    stale = "## Worktrees\n- home: /old/path\n\n## After\ntrailing text\n"
    original = repos_md(home_repo, ("api", str(api)), notes=NOTES + stale).replace(
        "Keep   this", f"Keep{char * 6}this"
    )
    write(topic.plan_dir / "repos.md", original)
    assert worktrees(topic.plan_dir).code == 0
    head, _, _ = original.partition("## Worktrees")
    assert (topic.plan_dir / "repos.md").read_text() == (
        f"{head}## Worktrees\n- home: {home_repo}/.claude/worktrees/{TOPIC_ID}\n"
        f"- api: {api}/.claude/worktrees/{TOPIC_ID}\n\n## After\ntrailing text\n"
    )
    doctor = run_cli("doctor", "--json", cwd=home_repo).json
    assert [f for f in doctor["findings"] if f["kind"] == "worktrees-section"] == []


def test_crlf_repos_md_keeps_its_line_endings(workspace, home_repo, topic):
    api = make_repo(workspace, "api")
    write(topic.plan_dir / "repos.md", "")
    (topic.plan_dir / "repos.md").write_bytes(
        repos_md(home_repo, ("api", str(api)), notes=NOTES).replace("\n", "\r\n").encode()
    )
    assert worktrees(topic.plan_dir).code == 0
    data = (topic.plan_dir / "repos.md").read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert b"## Worktrees\r\n- home: " in data


def test_containment_refuses_each_bad_repo_with_its_reason_and_the_rest_proceed(
    workspace, home_repo, topic, tmp_path
):
    api = make_repo(workspace, "api")
    outside = make_repo(tmp_path / "elsewhere", "far")
    link = workspace / "sneaky"
    os.symlink(outside, link)
    plain = workspace / "plain-dir"
    plain.mkdir()
    items = [
        ("api", str(api)),
        ("far", str(outside)),
        ("sneaky", str(link)),
        ("plain", str(plain)),
        ("ghost", str(workspace / "ghost")),
        ("again", str(api)),
        ("self", str(home_repo)),
    ]
    write(topic.plan_dir / "repos.md", repos_md(home_repo, *items, notes=NOTES))
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.err
    got = {r["name"]: (r["status"], r["reason"]) for r in res.json["repos"]}
    assert got == {
        "home": ("existing", None),
        "api": ("created", None),
        "far": ("refused", "containment"),
        "sneaky": ("refused", "containment"),
        "plain": ("refused", "not-a-repo"),
        "ghost": ("refused", "missing"),
        "again": ("refused", "duplicate"),
        "self": ("refused", "duplicate"),
    }
    assert worktree_paths(outside) == [str(outside)]
    assert not (outside / ".claude").exists() and not (plain / ".claude").exists()
    section = (topic.plan_dir / "repos.md").read_text().split("## Worktrees")[1]
    assert "- api:" in section and "far" not in section and "ghost" not in section


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ("- **name:** api\n  **path:** relative/api\n", 16, "not absolute"),
        ("- **name:** api\n  **role:** no path\n", 15, "no **path:**"),
        ("- **name:** Api_Caps\n  **path:** /x/api\n", 15, "not a slug"),
        (
            "- **name:** api\n  **path:** /x/a\n- **name:** api\n  **path:** /x/b\n",
            17,
            "already used",
        ),
        ("- **name:** home\n  **path:** /x/a\n", 15, "reserved"),
    ],
)
def test_malformed_repos_md_is_exit_2_naming_the_line(home_repo, topic, body, line, words):
    text = repos_md(home_repo, notes=NOTES).replace(
        "## Additional repos\n", "## Additional repos\n" + body
    )
    write(topic.plan_dir / "repos.md", text)
    before = (topic.plan_dir / "repos.md").read_bytes()
    res = worktrees(topic.plan_dir)
    assert res.code == 2
    err = res.json["error"]
    assert err["code"] == "repos-md"
    assert f"line {line}:" in err["message"] and words in err["message"]
    assert (topic.plan_dir / "repos.md").read_bytes() == before


@pytest.mark.parametrize("section", ["home", "additional"])
def test_a_repo_written_as_name_colon_path_is_refused_showing_the_format(
    workspace, home_repo, topic, section
):
    api = make_repo(workspace, "api")
    if section == "home":
        text = f"# Repos\n\n## Home repo\n- web: {home_repo}\n"
        expected = (
            f"repos.md line 4: '## Home repo' names no repo ('web: {home_repo}' is neither a "
            "**name:** nor a **path:**); write it as `- **name:** web` and "
            "`- **path:** /abs/path/web`"
        )
    else:
        text = repos_md(home_repo) + f"- api: {api}\n"
        line = text.splitlines().index(f"- api: {api}") + 1
        expected = (
            f"repos.md line {line}: an additional repo ('api: {api}') has no **name:**; write "
            "each as `- **name:** api` with `  **path:** /abs/path/api` on the next line"
        )
    write(topic.plan_dir / "repos.md", text)
    res = worktrees(topic.plan_dir)
    assert (res.code, res.json["error"]) == (2, {"code": "repos-md", "message": expected})
    assert worktree_paths(api) == [str(api)]


def test_a_repos_md_over_1_mib_is_refused_naming_its_size_before_it_is_parsed(
    workspace, home_repo, topic
):
    api = make_repo(workspace, "api")
    # Valid in every other way: only its size is wrong.
    text = repos_md(home_repo, ("api", str(api)), notes=NOTES) + "filler line\n" * 100_000
    write(topic.plan_dir / "repos.md", text)
    size = (topic.plan_dir / "repos.md").stat().st_size
    assert size > 1024 * 1024
    res = worktrees(topic.plan_dir)
    assert res.code == 2, res.out
    assert res.json["error"]["code"] == "repos-md"
    assert f"{size} bytes" in res.json["error"]["message"]
    assert worktree_paths(api) == [str(api)]
    assert (topic.plan_dir / "repos.md").stat().st_size == size


def test_a_home_path_that_is_not_this_repo_is_refused(workspace, home_repo, topic):
    api = make_repo(workspace, "api")
    write(topic.plan_dir / "repos.md", repos_md(api, notes=NOTES))
    res = worktrees(topic.plan_dir)
    assert res.code == 2 and res.json["error"]["code"] == "repos-md"
    assert "line 11:" in res.json["error"]["message"]
    assert worktree_paths(api) == [str(api)]


def test_unparseable_frontmatter_is_a_repos_md_error(home_repo, topic):
    write(
        topic.plan_dir / "repos.md", "---\ntopic: [unclosed\n---\n\n## Home repo\n- **path:** /x\n"
    )
    res = worktrees(topic.plan_dir)
    assert res.code == 2 and res.json["error"]["code"] == "repos-md"
    assert "line" in res.json["error"]["message"]


# An additional repo written so that it was not read: `worktrees` made fewer
# worktrees than repos.md listed and said nothing. (text, line named, fix named)
UNREAD_REPOS = {
    "a level-3 heading under the home section": (
        "{home}\n### Additional repos\n- **name:** api\n  **path:** {api}\n",
        13,
        "make it a level-2 heading '## Additional repos'",
    ),
    "a plain line": (
        "{home}\n## Additional repos\napi {api}\n",
        14,
        "`- **name:** api` with `  **path:** /abs/path/api`",
    ),
    "a table": (
        "{home}\n## Additional repos\n| name | path |\n|---|---|\n| api | {api} |\n",
        14,
        "`- **name:** api` with `  **path:** /abs/path/api`",
    ),
    "a table row after a listed repo": (
        "{home}\n## Additional repos\n- **name:** db\n  **path:** {db}\n\n| api | {api} |\n",
        17,
        "`- **name:** api` with `  **path:** /abs/path/api`",
    ),
    "a bullet without the fields": (
        "{home}\n## Additional repos\n- api: {api}\n",
        14,
        "`- **name:** api` with `  **path:** /abs/path/api`",
    ),
}


@pytest.mark.parametrize("shape", list(UNREAD_REPOS), ids=list(UNREAD_REPOS))
def test_a_repo_the_parser_cannot_read_is_refused_not_skipped(workspace, home_repo, topic, shape):
    api, db = make_repo(workspace, "api"), make_repo(workspace, "db")
    template, line, fix = UNREAD_REPOS[shape]
    head = repos_md(home_repo).split("## Additional repos")[0].rstrip("\n")
    text = template.format(home=head, api=api, db=db)
    write(topic.plan_dir / "repos.md", text)
    res = worktrees(topic.plan_dir)
    assert res.code == 2 and res.json["error"]["code"] == "repos-md", res.out
    assert res.json["error"]["message"].startswith(f"repos.md line {line}:")
    assert fix in res.json["error"]["message"]
    # Refused before any repo was touched: no worktree, no branch, repos.md as written.
    assert worktree_paths(api) == [str(api)] and worktree_paths(db) == [str(db)]
    assert branches(api) == ["main"] and branches(db) == ["main"]
    assert (topic.plan_dir / "repos.md").read_text(encoding="utf-8") == text


def test_notes_beside_the_repo_sections_are_read_as_before(workspace, home_repo, topic):
    api = make_repo(workspace, "api")
    extra = (
        "\n<!-- api owns the endpoints -->\n\n---\n\n## Notes\nOne paragraph.\n\n"
        "| a | table |\n\n### Details\ntext\n"
    )
    write(topic.plan_dir / "repos.md", repos_md(home_repo, ("api", str(api)), notes=extra))
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.out + res.err
    assert [r["name"] for r in res.json["repos"]] == ["home", "api"]


def test_name_and_path_without_bold_are_accepted(workspace, home_repo, topic):
    api = make_repo(workspace, "api")
    text = repos_md(home_repo, notes=NOTES).replace(
        "## Additional repos\n", f"## Additional repos\n- name: api\n  path: `{api}`\n"
    )
    write(topic.plan_dir / "repos.md", text)
    res = worktrees(topic.plan_dir)
    assert [(r["name"], r["status"]) for r in res.json["repos"]] == [
        ("home", "existing"),
        ("api", "created"),
    ]


def test_a_blocked_path_in_one_secondary_falls_back_and_the_rest_are_fine(
    workspace, home_repo, topic
):
    api = make_repo(workspace, "api")
    types = make_repo(workspace, "types")
    blocker = write(api / ".claude" / "worktrees" / TOPIC_ID, "a file in the way\n")
    write(
        topic.plan_dir / "repos.md",
        repos_md(home_repo, ("api", str(api)), ("types", str(types)), notes=NOTES),
    )
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.err
    got = {r["name"]: r for r in res.json["repos"]}
    assert got["api"]["status"] == "fallback" and got["api"]["reason"] == "path-taken"
    assert got["api"]["worktree"] == str(api)
    assert got["types"]["status"] == "created"
    assert any("Falling back to main tree" in w and "api" in w for w in res.json["warnings"])
    assert blocker.read_text() == "a file in the way\n"
    assert branches(api) == ["main"]
    assert f"- api: {api}\n" in (topic.plan_dir / "repos.md").read_text()


def test_strict_rolls_back_everything_this_run_created(workspace, home_repo, topic):
    api = make_repo(workspace, "api")
    types = make_repo(workspace, "types")
    blocker = write(api / ".claude" / "worktrees" / TOPIC_ID, "a file in the way\n")
    original = repos_md(home_repo, ("api", str(api)), ("types", str(types)), notes=NOTES)
    write(topic.plan_dir / "repos.md", original)
    res = worktrees(topic.plan_dir, "--strict")
    assert res.code == 1
    assert res.json["error"]["code"] == "strict-failed"
    assert "api" in res.json["error"]["message"]
    # The refusal still carries the command's own keys (README, JSON contract).
    assert (res.json["id"], res.json["mode"], res.json["plan_dir"]) == (
        TOPIC_ID,
        "multi",
        str(topic.plan_dir),
    )
    assert res.json["repos_md_updated"] is False
    assert [r["name"] for r in res.json["repos"]] == ["home", "api", "types"]
    assert any("Falling back to main tree" in w for w in res.json["warnings"])
    assert blocker.read_text() == "a file in the way\n"
    assert worktree_paths(types) == [str(types)] and branches(types) == ["main"]
    assert not (types / ".claude" / "worktrees" / TOPIC_ID).exists()
    assert run_cli("doctor", "--json", cwd=types).json["findings"] == []  # no stale record
    assert branches(api) == ["main"]
    # The home worktree predates this run and stays; repos.md is not rewritten.
    assert Path(home_repo / ".claude" / "worktrees" / TOPIC_ID).is_dir()
    assert (topic.plan_dir / "repos.md").read_text() == original


def test_strict_passes_when_everything_gets_a_worktree(workspace, home_repo, topic):
    api = make_repo(workspace, "api")
    write(topic.plan_dir / "repos.md", repos_md(home_repo, ("api", str(api)), notes=NOTES))
    res = worktrees(topic.plan_dir, "--strict")
    assert res.code == 0
    assert [r["status"] for r in res.json["repos"]] == ["existing", "created"]


def test_worktrees_finds_the_topic_from_inside_the_home_worktree_without_a_target(home_repo, topic):
    wt = home_repo / ".claude" / "worktrees" / TOPIC_ID
    res = run_cli("worktrees", "--json", cwd=wt)
    assert res.code == 0, res.err
    assert res.json["id"] == TOPIC_ID


def test_an_unknown_plan_dir_is_exit_2(home_repo, topic):
    res = run_cli("worktrees", "2026-05-01-nothing-here", "--json", cwd=home_repo)
    assert res.code == 2 and res.json["error"]["code"] == "no-plan-dir"
    res = run_cli("worktrees", str(home_repo / "not-a-plan-dir"), "--json", cwd=home_repo)
    assert res.code == 2 and res.json["error"]["code"] == "no-plan-dir"


def test_secondary_without_origin_warns_and_uses_its_local_default(workspace, home_repo, topic):
    api = make_repo(workspace, "api", origin=False)
    write(topic.plan_dir / "repos.md", repos_md(home_repo, ("api", str(api)), notes=NOTES))
    res = worktrees(topic.plan_dir)
    assert res.json["repos"][1]["status"] == "created"
    assert any(w.startswith("api: no origin") for w in res.json["warnings"])


def _break_state_dir(repo: Path) -> Path:
    """A file where the records folder goes: writing the record fails with a real OSError.

    (The tests run as root, for whom a chmod blocks nothing.)
    """
    topics = write(repo / ".git" / "team-router" / "topics", "a file in the way\n")
    return topics


def test_strict_rolls_back_every_repo_when_one_fails_with_an_io_error(workspace, home_repo, topic):
    api = make_repo(workspace, "api")
    types = make_repo(workspace, "types")
    broken = _break_state_dir(types)
    original = repos_md(home_repo, ("api", str(api)), ("types", str(types)), notes=NOTES)
    write(topic.plan_dir / "repos.md", original)
    res = worktrees(topic.plan_dir, "--strict")
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "strict-failed"
    assert "types (io-error" in res.json["error"]["message"]
    assert "Traceback" not in res.err
    for repo in (api, types):
        assert worktree_paths(repo) == [str(repo)] and branches(repo) == ["main"]
        assert not (repo / ".claude" / "worktrees" / TOPIC_ID).exists()
        assert status(repo) == ""
    assert broken.read_text() == "a file in the way\n"
    assert (topic.plan_dir / "repos.md").read_text() == original


def test_an_io_error_in_one_secondary_refuses_it_and_the_rest_keep_their_worktrees(
    workspace, home_repo, topic
):
    api = make_repo(workspace, "api")
    types = make_repo(workspace, "types")
    _break_state_dir(types)
    write(
        topic.plan_dir / "repos.md",
        repos_md(home_repo, ("api", str(api)), ("types", str(types)), notes=NOTES),
    )
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.out + res.err
    got = {r["name"]: r for r in res.json["repos"]}
    assert (got["types"]["status"], got["types"]["reason"]) == ("refused", "io-error")
    assert got["api"]["status"] == "created"
    assert worktree_paths(types) == [str(types)] and branches(types) == ["main"]
    assert (api / ".claude" / "worktrees" / TOPIC_ID / ".git").is_file()


def _failing_post_checkout(repo: Path) -> Path:
    """What a missing git-lfs (or husky) leaves behind: a post-checkout hook that exits 1."""
    hook = write(
        repo / ".git" / "hooks" / "post-checkout",
        "#!/bin/sh\necho 'git-lfs was not found on your path' >&2\nexit 1\n",
    )
    hook.chmod(0o755)
    return hook


def test_a_failing_post_checkout_hook_is_rolled_back_whole_and_a_rerun_after_the_fix_creates(
    workspace, home_repo, topic
):
    api = make_repo(workspace, "api")
    hook = _failing_post_checkout(api)
    write(topic.plan_dir / "repos.md", repos_md(home_repo, ("api", str(api)), notes=NOTES))
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.out + res.err
    got = {r["name"]: r for r in res.json["repos"]}
    assert (got["api"]["status"], got["api"]["reason"]) == ("fallback", "add-failed")
    assert any("git-lfs was not found" in w for w in res.json["warnings"])
    # git had registered the worktree and created the branch before the hook ran.
    assert worktree_paths(api) == [str(api)]
    assert branches(api) == ["main"]
    assert not (api / ".claude" / "worktrees" / TOPIC_ID).exists()
    assert not (api / ".git" / "worktrees").exists() or not any(
        (api / ".git" / "worktrees").iterdir()
    )
    assert status(api) == ""

    hook.unlink()  # git-lfs installed
    again = worktrees(topic.plan_dir)
    assert again.code == 0, again.out + again.err
    got = {r["name"]: r for r in again.json["repos"]}
    assert got["api"]["status"] == "created", got["api"]
    wt = api / ".claude" / "worktrees" / TOPIC_ID
    assert git(wt, "symbolic-ref", "--short", "HEAD") == TOPIC_ID
    assert f"- api: {wt}\n" in (topic.plan_dir / "repos.md").read_text()


def _fallen_back(home_repo: Path) -> Path:
    write(home_repo / ".claude", "a file where the directory goes\n")
    res = run_cli("new", "Add rate limiting", "--id", FALLBACK_ID, "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    blocker = home_repo / ".claude" / "worktrees"
    assert res.json == {
        "ok": True,
        "command": "new",
        "id": FALLBACK_ID,
        "topic": "add-rate-limiting",
        "branch": FALLBACK_ID,
        "plan_dir": str(home_repo / "docs" / "plans" / FALLBACK_ID),
        "home": {
            "name": "home",
            "repo": str(home_repo),
            "worktree": str(home_repo),
            "status": "fallback",
            "base": None,
            "on_existing_branch": False,
            "submodules": [],
            "copied": None,
            "sparse": None,
            "setup": None,
        },
        "warnings": [
            f"Worktree creation failed in home (path-taken: cannot create {blocker} (Not a "
            "directory): a file is in the way; move it). Falling back to main tree for that repo."
        ],
    }
    plan = home_repo / "docs" / "plans" / FALLBACK_ID
    write(plan / "task.md", "# Task\n")
    (home_repo / ".claude").unlink()  # the cause, fixed
    return plan


FALLBACK_ID = "2026-05-01-add-rate-limiting"


def test_after_the_cause_of_a_fallback_is_fixed_a_rerun_creates_the_worktree(home_repo):
    _fallen_back(home_repo)
    res = run_cli("worktrees", FALLBACK_ID, "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    wt = home_repo / ".claude" / "worktrees" / FALLBACK_ID
    moved = wt / "docs" / "plans" / FALLBACK_ID
    assert res.json == {
        "ok": True,
        "command": "worktrees",
        "id": FALLBACK_ID,
        "mode": "single",
        "plan_dir": str(moved),
        "repos": [
            {
                "name": "home",
                "path": str(home_repo),
                "worktree": str(wt),
                "branch": FALLBACK_ID,
                "status": "created",
                "reason": None,
                "submodules": [],
                "copied": None,
                "sparse": None,
                "setup": NO_SETUP_DECLARED,
            }
        ],
        "repos_md_updated": False,
        "warnings": [],
    }
    assert (moved / "task.md").read_text() == "# Task\n"  # the plan dir moved, not lost
    assert status(home_repo) == "" and not (home_repo / "docs").exists()
    phase = run_cli("phase", FALLBACK_ID, "--json", cwd=home_repo).json
    assert (phase["plan_dir"], phase["resume_at"]) == (str(moved), "QUESTION")


def test_a_fallen_back_main_tree_holding_other_work_stays_in_place(home_repo):
    plan = _fallen_back(home_repo)
    write(home_repo / "src" / "limits.py", "LIMIT = 10\n")  # work done in the main tree
    res = run_cli("worktrees", FALLBACK_ID, "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    home = res.json["repos"][0]
    assert (home["status"], home["reason"], home["worktree"]) == (
        "fallback",
        "in-place",
        str(home_repo),
    )
    assert res.json["plan_dir"] == str(plan)
    assert res.json["warnings"] == [
        "home: the plan dir lives in the main tree (the home worktree fell back at `new`), which "
        "also holds uncommitted changes (src/limits.py); a worktree would strand that work "
        "there, so home stays in the main tree (commit or move that work, then run this again "
        "for a worktree)"
    ]
    assert (plan / "task.md").is_file() and (home_repo / "src" / "limits.py").is_file()
    assert not (home_repo / ".claude" / "worktrees" / FALLBACK_ID).exists()
    assert worktree_paths(home_repo) == [str(home_repo)]


def test_new_run_again_after_the_fix_also_moves_the_plan_dir_into_the_worktree(home_repo):
    _fallen_back(home_repo)
    res = run_cli("new", "Add rate limiting", "--id", FALLBACK_ID, "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    wt = home_repo / ".claude" / "worktrees" / FALLBACK_ID
    moved = wt / "docs" / "plans" / FALLBACK_ID
    assert (res.json["home"]["status"], res.json["plan_dir"]) == ("created", str(moved))
    assert (moved / "task.md").read_text() == "# Task\n"
    assert status(home_repo) == "" and not (home_repo / "docs").exists()


def test_a_refused_home_leaves_every_secondary_as_it_was(workspace, home_repo, topic):
    # The home repo's step runs alongside the others: its refusal must still
    # leave no secondary worktree, branch or record behind.
    api = make_repo(workspace, "api")
    types = make_repo(workspace, "types")
    original = repos_md(home_repo, ("api", str(api)), ("types", str(types)), notes=NOTES)
    write(topic.plan_dir / "repos.md", original)
    home_wt = home_repo / ".claude" / "worktrees" / TOPIC_ID
    git(home_wt, "checkout", "-q", "--detach")
    res = worktrees(topic.plan_dir)
    assert res.code == 1
    assert res.json["error"]["code"] == "default-branch-worktree"
    for repo in (api, types):
        assert worktree_paths(repo) == [str(repo)] and branches(repo) == ["main"]
        assert not (repo / ".claude" / "worktrees" / TOPIC_ID).exists()
        assert run_cli("doctor", "--json", cwd=repo).json["findings"] == []
    assert (topic.plan_dir / "repos.md").read_text() == original
    # The fix the refusal names, then a rerun gives every repo its worktree.
    git(home_wt, "checkout", "-q", TOPIC_ID)
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.err
    assert [r["status"] for r in res.json["repos"]] == ["existing", "created", "created"]


def test_a_secondary_costs_six_git_processes(tmp_path, workspace, home_repo, topic):
    # Where the location, fetch, worktree list, add and verify each need their
    # own process, HEAD, the topic's branch and origin/HEAD are one lookup.
    from helpers.faults import git_wrapper, run

    api = make_repo(workspace, "api")
    write(topic.plan_dir / "repos.md", repos_md(home_repo, ("api", str(api)), notes=NOTES))
    log = tmp_path / "git.log"
    env = git_wrapper(tmp_path / "bin", "", f'echo "$*" >> \'{log}\'\nexec "$REAL_GIT" "$@"')
    proc = run("worktrees", "--json", cwd=topic.plan_dir, env=env)
    assert proc.code == 0, proc.err
    assert [r["status"] for r in proc.json["repos"]] == ["existing", "created"]
    calls = [line for line in log.read_text().splitlines() if f"-C {api}" in line]
    assert len(calls) <= 6, "\n".join(calls)


def test_worktrees_imports_no_template_engine_markdown_parser_thread_pool_or_yaml(
    workspace, home_repo, topic
):
    # Each costs more than the work it would do here: jinja2 for the write-back,
    # markdown-it for a plain repos.md, concurrent.futures (logging, traceback,
    # textwrap) for the threads, yaml for a flat frontmatter.
    import subprocess
    import sys

    api = make_repo(workspace, "api")
    write(topic.plan_dir / "repos.md", repos_md(home_repo, ("api", str(api)), notes=NOTES))
    args = ["-C", str(topic.plan_dir), "worktrees"]
    code = (
        f"import sys\nfrom router.entry import main\ncode = main({args!r})\n"
        "for name in ('jinja2', 'yaml', 'markdown_it', 'concurrent.futures', 'tempfile'):\n"
        "    assert name not in sys.modules, f'{name} was imported'\n"
        "raise SystemExit(code)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "repos.md ## Worktrees updated" in proc.stdout


def test_the_checkouts_of_several_repos_run_one_process_each_and_one_alone_uses_every_core(
    workspace, tmp_path
):
    # Several at once keep the cores busy themselves: a worker pool each on
    # top would only add processes. A single checkout (`new`) uses them all.
    home = make_repo(workspace, "web")
    log = tmp_path / "git.log"
    env = git_logger(tmp_path / "bin", log)
    made = run("new", "x", "--id", TOPIC_ID, "--json", cwd=home, env=env)
    assert made.code == 0, made.out + made.err
    adds = [line for line in log.read_text().splitlines() if " worktree add " in line]
    assert len(adds) == 1 and "checkout.workers=0" in adds[0], adds
    topic = new_topic(home)
    write_repos_md(topic, {n: make_repo(workspace, n) for n in ("api", "db")})
    log.unlink()
    res = run("worktrees", topic.id, "--json", cwd=home, env=env)
    assert res.code == 0, res.out + res.err
    adds = [line for line in log.read_text().splitlines() if " worktree add " in line]
    assert len(adds) == 2 and all("checkout.workers=1" in a for a in adds), adds


def test_a_rerun_with_every_worktree_made_fetches_nothing_and_a_new_repo_still_fetches(
    workspace, tmp_path
):
    topic = multi_topic(workspace, ("api",))
    log = tmp_path / "git.log"
    env = git_logger(tmp_path / "bin", log)
    again = run("worktrees", topic.id, "--json", cwd=topic.home, env=env)
    assert again.code == 0, again.out + again.err
    assert {r["status"] for r in again.json["repos"]} == {"existing"}
    assert git_verbs(log) == {}
    # A repo added to repos.md later is cut from origin as it is now: fetched first.
    db = make_repo(workspace, "db")
    newer = commit_on_origin(db, "NEWER.md", "on origin only\n")
    write_repos_md(topic, {"api": topic.repos["api"], "db": db})
    log.unlink(missing_ok=True)  # no git ran at all: everything was read from files
    grown = run("worktrees", topic.id, "--json", cwd=topic.home, env=env)
    assert grown.code == 0, grown.out + grown.err
    fetched = [line for line in log.read_text().splitlines() if " fetch " in f" {line} "]
    assert len(fetched) == 1 and str(db) in fetched[0], fetched
    assert git(db, "rev-parse", topic.branch) == newer


def test_a_created_secondary_costs_two_git_processes(workspace, tmp_path):
    # Per repo it creates: fetch and worktree add. HEAD, the branch, origin/HEAD
    # and the worktree list are read from git's files (the plain layout), and
    # so is the home worktree's (made by `new`) and the repo `-C` names.
    home = make_repo(workspace, "web")
    topic = new_topic(home)
    names = ("api", "db", "auth")
    write_repos_md(topic, {n: make_repo(workspace, n) for n in names})
    log = tmp_path / "git.log"
    res = run("worktrees", topic.id, "--json", cwd=home, env=git_logger(tmp_path / "bin", log))
    assert res.code == 0, res.out + res.err
    assert [r["status"] for r in res.json["repos"]] == ["existing", "created", "created", "created"]
    verbs = git_verbs(log)
    assert verbs["fetch"] == len(names)
    # Their setup stage learns from each new checkout (cut at the default branch's commit)
    # that no .worktreesetup is declared: no git process for it.
    assert verbs == {"fetch": len(names), "worktree": len(names)}, dict(verbs)


@pytest.mark.parametrize("step", ("setup", "record"))
def test_a_rerun_killed_after_it_made_the_worktree_still_moves_the_fallen_back_plan_dir(
    home_repo, step
):
    _fallen_back(home_repo)
    crashed = run("worktrees", FALLBACK_ID, "--json", cwd=home_repo, crash_at=step)
    assert crashed.code == 137, crashed.err
    again = run_cli("worktrees", FALLBACK_ID, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    moved = home_repo / ".claude" / "worktrees" / FALLBACK_ID / "docs" / "plans" / FALLBACK_ID
    assert again.json["plan_dir"] == str(moved)
    assert (moved / "task.md").read_text() == "# Task\n"
    assert status(home_repo) == "" and not (home_repo / "docs").exists()


def test_new_run_again_after_a_kill_that_made_the_worktree_still_moves_the_plan_dir(home_repo):
    _fallen_back(home_repo)
    args = ("new", "Add rate limiting", "--id", FALLBACK_ID, "--json")
    assert run(*args, cwd=home_repo, crash_at="record").code == 137
    again = run_cli(*args, cwd=home_repo)
    assert again.code == 0, again.out + again.err
    moved = home_repo / ".claude" / "worktrees" / FALLBACK_ID / "docs" / "plans" / FALLBACK_ID
    assert (again.json["home"]["status"], again.json["plan_dir"]) == ("existing", str(moved))
    assert (moved / "task.md").read_text() == "# Task\n"
    assert status(home_repo) == "" and not (home_repo / "docs").exists()


def test_a_fallen_back_plan_dir_never_replaces_one_the_branch_already_holds(home_repo):
    plan = _fallen_back(home_repo)
    wt = home_repo / ".claude" / "worktrees" / FALLBACK_ID
    side = home_repo.parent / "side"
    git(home_repo, "worktree", "add", "-q", "-b", FALLBACK_ID, str(side), "main")
    write(side / "docs" / "plans" / FALLBACK_ID / "notes.md", "committed notes\n")
    git(side, "add", "-f", "docs")
    git(side, "commit", "-q", "-m", "plan notes")
    git(home_repo, "worktree", "remove", str(side))
    res = run_cli("worktrees", FALLBACK_ID, "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert res.json["repos"][0]["status"] == "created"
    assert res.json["plan_dir"] == str(plan)
    assert "holds files too" in res.json["warnings"][-1]
    assert (plan / "task.md").read_text() == "# Task\n"
    assert (wt / "docs" / "plans" / FALLBACK_ID / "notes.md").read_text() == "committed notes\n"


def test_a_fallen_back_topic_whose_worktrees_rerun_fails_again_keeps_its_request(home_repo):
    # new falls back (a post-checkout hook git-lfs left), `worktrees` tries again
    # before the fix and falls back too: the same `new`, once fixed, is still
    # this topic (not a `-2` beside the plan dir left in the main tree).
    hook = _failing_post_checkout(home_repo)
    args = ("new", "Add rate limiting", "--date", "2026-05-01", "--json")
    assert run_cli(*args, cwd=home_repo).json["home"]["status"] == "fallback"
    write(home_repo / "docs" / "plans" / FALLBACK_ID / "task.md", "# Task\n")
    again = run_cli("worktrees", FALLBACK_ID, "--json", cwd=home_repo)
    assert again.json["repos"][0]["status"] == "fallback"
    hook.unlink()
    res = run_cli(*args, cwd=home_repo)
    assert res.code == 0, res.out + res.err
    moved = home_repo / ".claude" / "worktrees" / FALLBACK_ID / "docs" / "plans" / FALLBACK_ID
    assert (res.json["id"], res.json["home"]["status"]) == (FALLBACK_ID, "created")
    assert res.json["plan_dir"] == str(moved)
    assert (moved / "task.md").read_text() == "# Task\n"


@pytest.mark.parametrize("ahead", [8, 1])
def test_a_job_whose_worktree_looks_made_reads_its_files_once(workspace, monkeypatch, ahead):
    # ``ahead``: how many jobs may fetch ahead of their turn (1: api comes after them).
    from router.create import pipeline

    topic = multi_topic(workspace, ("api",))
    looked: list[str] = []
    real = pipeline._looks_made

    def counted(job: pipeline.Job) -> bool:
        looked.append(job.name)
        return real(job)

    monkeypatch.setattr(pipeline, "_looks_made", counted)
    monkeypatch.setattr(pipeline, "MAX_PARALLEL", ahead)
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.out + res.err
    assert [r["status"] for r in res.json["repos"]] == ["existing", "existing"]
    assert sorted(looked) == ["api", "home"]


def test_a_rerun_after_each_worktree_switched_branch_keeps_them_and_the_worktrees_section(
    workspace,
):
    # The rerun took each switched worktree for someone else's path: every repo
    # fell back, and the ## Worktrees section was rewritten to the main trees.
    topic = multi_topic(workspace, ("api",))
    section = (topic.plan_dir / "repos.md").read_text()
    for name, wt in topic.worktrees.items():
        git(wt, "switch", "-q", "-c", f"{name}-spike")
    res = worktrees(topic.plan_dir)
    assert res.code == 0, res.err
    assert [(r["name"], r["status"], r["branch"], r["worktree"]) for r in res.json["repos"]] == [
        (name, "existing", f"{name}-spike", str(wt)) for name, wt in topic.worktrees.items()
    ]
    assert res.json["plan_dir"] == str(topic.plan_dir)
    assert res.json["repos_md_updated"] is False
    assert (topic.plan_dir / "repos.md").read_text() == section
    for name, wt in topic.worktrees.items():
        assert f"`git -C {wt} switch {topic.branch}`" in "\n".join(res.json["warnings"])
        assert status(topic.repos[name]) == "" and not (topic.repos[name] / "docs").exists()


def test_worktrees_of_a_topic_whose_plan_dir_is_gone_is_no_plan_dir_and_changes_nothing(
    workspace,
):
    topic = multi_topic(workspace, ("api",))
    api_wt = topic.worktrees["api"]
    write(api_wt / "draft.txt", "api work\n")
    shutil.rmtree(topic.plan_dir)
    before = {n: (worktree_paths(p), branches(p)) for n, p in topic.repos.items()}
    res = run_cli("worktrees", topic.id, cwd=topic.home)
    assert res.code == 2
    assert res.out == ""
    assert res.err == (
        f"team-router: {topic.plan_dir} does not exist; it holds the topic's repos.md, which "
        "says which repos to set up; restore it, or `team-router new DESCRIPTION --id "
        f"{topic.id}` makes it again (empty); then run this again [no-plan-dir]\n"
    )
    assert {n: (worktree_paths(p), branches(p)) for n, p in topic.repos.items()} == before
    assert (api_wt / "draft.txt").read_text() == "api work\n"
    assert not topic.plan_dir.exists()
