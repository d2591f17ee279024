"""`team-router status`: every topic, its resume point, and each repo's worktree, dirt, commits."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.faults import git_logger, git_verbs, run
from helpers.plans import artifact, repos_md, touch
from helpers.repos import commit, git, make_repo, run_cli, write
from helpers.topics import in_place, multi_topic, new_topic


def test_two_topics_in_two_repos(home_repo, workspace):
    api = make_repo(workspace, "api")
    multi = new_topic(home_repo, "add rate limiting").plan_dir
    single = new_topic(home_repo, "fix the footer").plan_dir
    write(multi / "repos.md", repos_md(home_repo, ("api", api)))
    res = run_cli("worktrees", str(multi), "--json", cwd=home_repo)
    assert res.code == 0, res.err + res.out
    api_worktree = next(r["worktree"] for r in res.json["repos"] if r["name"] == "api")
    artifact(multi, "plan.md")
    commit(multi.parent.parent.parent, "src/limit.py", "limit = 10\n", "slice one")
    commit(multi.parent.parent.parent, "src/limit2.py", "limit = 20\n", "slice two")
    write(Path(api_worktree) / "scratch.txt", "uncommitted\n")
    artifact(single, "task.md")

    res = run_cli("status", "--json", cwd=home_repo)
    assert res.code == 0, res.err + res.out
    assert res.json == {
        "ok": True,
        "command": "status",
        "home": str(home_repo),
        "current": single.name,  # the newest run: what `phase` answers in the primary clone
        "host_worktrees": [],
        "topics": [
            {
                "id": multi.name,
                "plan_dir": str(multi),
                "resume_at": "IMPLEMENT",
                "step": "tests",  # commits, but no test-first gate recorded
                "halted": False,
                "repos": [
                    {
                        "name": "home",
                        "worktree": str(multi.parent.parent.parent),
                        "dirty": False,
                        "ahead": 2,
                        "missing": None,
                    },
                    {
                        "name": "api",
                        "worktree": api_worktree,
                        "dirty": True,
                        "ahead": 0,
                        "missing": None,
                    },
                ],
            },
            {
                "id": single.name,
                "plan_dir": str(single),
                "resume_at": "QUESTION",
                "step": None,
                "halted": False,
                "repos": [
                    {
                        "name": "home",
                        "worktree": str(single.parent.parent.parent),
                        "dirty": False,
                        "ahead": 0,
                        "missing": None,
                    },
                ],
            },
        ],
        "warnings": [],
    }


def test_status_text_is_a_table_for_people(home_repo):
    plan = new_topic(home_repo).plan_dir
    res = run_cli("status", cwd=home_repo)
    assert res.code == 0
    assert res.out.splitlines() == [
        f"{plan.name}  resume at QUESTION  <- here",
        f"  plan dir  {plan}",
        f"  home  clean    0 ahead  {plan.parent.parent.parent}",
    ]


def test_a_topic_whose_worktree_was_deleted_by_hand_is_listed_as_next_resumes_it(home_repo):
    kept = new_topic(home_repo, "add caching")
    gone = new_topic(home_repo, "add search")
    commit(gone.worktrees["home"], "search.py", "s = 1\n", "slice")
    shutil.rmtree(gone.worktrees["home"])
    resumed = run_cli("next", gone.id, "--json", cwd=home_repo)
    assert (resumed.code, resumed.json["resume_at"]) == (0, "WORKTREE"), resumed.err

    res = run_cli("status", cwd=home_repo)
    assert (res.code, res.err) == (0, "")
    worktree = gone.worktrees["home"]
    assert res.out.splitlines() == [
        f"{kept.id}  resume at QUESTION  <- here",
        f"  plan dir  {kept.plan_dir}",
        f"  home  clean    0 ahead  {kept.worktrees['home']}",
        f"{gone.id}  resume at WORKTREE",
        f"  plan dir  {resumed.json['plan_dir']}",
        f"  home  -        1 ahead  {worktree} (missing: git still lists it, but its directory is gone)",
    ]
    listed = run_cli("status", "--json", cwd=home_repo).json["topics"]
    assert [(t["id"], t["resume_at"]) for t in listed] == [
        (kept.id, "QUESTION"),
        (gone.id, "WORKTREE"),
    ]
    # Nothing was touched: the branch and its commit are still there.
    assert git(home_repo, "log", "-1", "--format=%s", gone.id).strip() == "slice"


def test_status_reports_a_broken_frontmatter_and_carries_on(home_repo):
    plan = new_topic(home_repo).plan_dir
    write(plan / "task.md", "---\ntopic: : :\n---\n")
    res = run_cli("status", "--json", cwd=home_repo)
    assert res.code == 0
    assert any(w.startswith(str(plan / "task.md")) for w in res.json["warnings"])


def test_status_of_a_repo_without_topics(home_repo):
    res = run_cli("status", "--json", cwd=home_repo)
    assert (res.code, res.json["topics"]) == (0, [])
    text = run_cli("status", cwd=home_repo)
    assert (text.code, text.err) == (0, "")
    assert text.out == f"No topics in {home_repo}; start one with `team-router new`.\n"


def test_status_in_a_secondary_repo_without_topics_names_the_repo_it_ran_in(workspace):
    topic = multi_topic(workspace, ("api",))
    artifact(topic.plan_dir, "pr.md", url="https://github.com/acme/web/pull/7")
    assert run_cli("teardown", topic.id, "--json", cwd=topic.home).code == 0
    api, web = topic.repos["api"], topic.repos["home"]
    res = run_cli("status", cwd=api)
    assert (res.code, res.err) == (0, "")
    assert res.out == (
        f"No topics in {api} (nor in {web}, the home of the topics it was in); start one with "
        "`team-router new`.\n"
    )
    assert run_cli("status", cwd=web).out == (
        f"No topics in {web}; start one with `team-router new`.\n"
    )


def test_a_current_directory_that_was_deleted_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    res = run_cli("status", "--json")
    assert res.code == 1
    assert res.json["error"]["code"] == "not-a-repo"
    message = res.json["error"]["message"]
    res = run_cli("status")
    assert res.code == 1 and res.out == ""
    assert res.err == f"team-router: {message} [not-a-repo]\n"


# -- cost: git answers for the topics with a worktree, not for every topic ------------


def _in_place_topics(repo: Path, first: int, count: int) -> None:
    """``count`` topics whose plan dir is in the primary clone (no worktree, no branch)."""
    for n in range(first, first + count):
        artifact(in_place(repo, f"2026-05-01-topic-number-{n}"), "task.md")


def _git_calls(repo: Path, tmp_path: Path, name: str) -> tuple[int, dict]:
    log = tmp_path / f"{name}.log"
    env = git_logger(tmp_path / f"bin-{name}", log)
    res = run("status", "--json", cwd=repo, env=env)
    assert res.code == 0, res.err
    return sum(git_verbs(log).values()), res.json


def test_status_starts_no_git_process_per_topic_without_a_worktree(home_repo, tmp_path):
    new_topic(home_repo, "add rate limiting")  # one topic with a worktree
    _in_place_topics(home_repo, 0, 5)
    few, first = _git_calls(home_repo, tmp_path, "few")
    _in_place_topics(home_repo, 5, 25)
    many, second = _git_calls(home_repo, tmp_path, "many")
    assert (len(first["topics"]), len(second["topics"])) == (6, 31)
    assert many == few, (few, many)


def test_a_worktree_at_the_default_tip_is_0_ahead_without_asking_git(home_repo, tmp_path):
    # Three topics in worktrees, one with a commit: only that one's count is git's; the
    # others' HEAD names a branch the refs (read once) show at the default branch's tip.
    idle = [new_topic(home_repo, words) for words in ("fix the footer", "tidy the docs")]
    busy = new_topic(home_repo, "add rate limiting")
    commit(busy.worktrees["home"], "src/limit.py", "limit = 10\n", "slice one")
    log = tmp_path / "calls.log"
    res = run("status", "--json", cwd=home_repo, env=git_logger(tmp_path / "bin", log))
    assert res.code == 0, res.err
    ahead = {t["id"]: [r["ahead"] for r in t["repos"]] for t in res.json["topics"]}
    assert ahead == {busy.id: [1], **{t.id: [0] for t in idle}}
    assert git_verbs(log).get("rev-list") == 1


def test_status_counts_commits_of_a_branch_without_a_worktree(home_repo):
    moved, still = "2026-05-01-moved-branch", "2026-05-01-still-branch"
    for topic_id in (moved, still):
        git(home_repo, "branch", topic_id)
        artifact(in_place(home_repo, topic_id), "task.md")
    git(home_repo, "checkout", "-q", moved)
    commit(home_repo, "src/a.py", "a = 1\n", "one")
    commit(home_repo, "src/b.py", "b = 1\n", "two")
    git(home_repo, "checkout", "-q", "main")
    res = run_cli("status", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    repos = {t["id"]: t["repos"] for t in res.json["topics"]}
    assert repos[moved] == [
        {"name": "home", "worktree": None, "dirty": None, "ahead": 2, "missing": None}
    ]
    assert repos[still] == [
        {"name": "home", "worktree": None, "dirty": None, "ahead": 0, "missing": None}
    ]


def test_a_plan_dir_in_the_primary_clone_and_in_a_worktree_is_read_where_phase_reads_it(
    home_repo, workspace
):
    # Both copies' files carry the same mtimes (copied with `cp -p` while merging them by
    # hand, as `new` asks when both hold files): status must pick the copy phase picks.
    topic_id = "ENG-9-merge-by-hand"
    feature = workspace / "zz-feature"
    git(home_repo, "worktree", "add", "-q", "-b", "feature", str(feature))
    in_primary = in_place(home_repo, topic_id)
    in_feature = feature / "docs" / "plans" / topic_id
    for name in ("task.md", "questions.md"):
        touch(artifact(in_primary, name), 2_000_000_000)
    touch(artifact(in_feature, "task.md"), 2_000_000_000)
    phase = run_cli("phase", topic_id, "--json", cwd=home_repo)
    status = run_cli("status", "--json", cwd=home_repo)
    assert phase.code == status.code == 0, phase.err + status.err
    (listed,) = status.json["topics"]
    assert (listed["plan_dir"], listed["resume_at"]) == (
        phase.json["plan_dir"],
        phase.json["resume_at"],
    )
    hook = run_cli("hook", "session-start", stdin=json.dumps({"cwd": str(home_repo)}))
    assert (
        f"Artifact directory: {phase.json['plan_dir']}"
        in json.loads(hook.out)["hookSpecificOutput"]["additionalContext"]
    )


def test_a_topic_that_fell_back_is_listed_before_its_first_artifact(home_repo):
    """`new` fell back to the main tree (a stray directory at the worktree's path): its plan
    dir there stays empty until the questioner writes, and no worktree exists. The record
    `new` wrote says it is a topic; an empty directory with no record is still nobody's."""
    topic_id = "2026-05-01-fell-back"
    write(home_repo / ".claude" / "worktrees" / topic_id / "stray.txt", "not ours\n")
    made = run_cli("new", "Fell back", "--id", topic_id, "--json", cwd=home_repo)
    assert made.code == 0, made.out + made.err
    assert made.json["home"]["status"] == "fallback"
    plan_dir = home_repo / "docs" / "plans" / topic_id
    assert made.json["plan_dir"] == str(plan_dir) and list(plan_dir.iterdir()) == []
    (home_repo / "docs" / "plans" / "2026-05-01-nobodys").mkdir()
    res = run_cli("status", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert [(t["id"], t["plan_dir"]) for t in res.json["topics"]] == [(topic_id, str(plan_dir))]
    phase = run_cli("phase", "--json", cwd=home_repo)
    assert (phase.json["id"], phase.json["resume_at"]) == (topic_id, "QUESTION")


def test_a_repo_that_fell_back_is_shown_working_in_its_main_tree(workspace):
    web, api = make_repo(workspace, "web"), make_repo(workspace, "api")
    topic_id = "2026-05-01-fell-back"
    for repo in (web, api):  # a stray directory at each worktree path: both fall back
        write(repo / ".claude" / "worktrees" / topic_id / "stray.txt", "not ours\n")
    made = run_cli("new", "Fell back", "--id", topic_id, "--json", cwd=web)
    assert made.json["home"]["status"] == "fallback", made.out
    plan = web / "docs" / "plans" / topic_id
    write(plan / "repos.md", repos_md(web, ("api", api), topic="fell-back"))
    done = run_cli("worktrees", topic_id, "--json", cwd=web)
    assert [r["status"] for r in done.json["repos"]] == ["fallback", "fallback"], done.out
    res = run_cli("status", cwd=web)
    assert (res.code, res.err) == (0, "")
    assert res.out == (
        f"{topic_id}  resume at QUESTION  <- here\n"
        f"  plan dir  {plan}\n"
        f"  home  -        0 ahead  works in its main tree {web}\n"
        f"  api   clean    0 ahead  works in its main tree {api}\n"
    )


def test_status_reads_each_record_file_and_each_plans_folder_once(home_repo):
    # Discovery (which topic is current) and the listing read the same records and
    # docs/plans/ folders: the command reads each once, whatever the number of topics.
    for words in ("add rate limiting", "fix the footer", "tidy the docs"):
        artifact(new_topic(home_repo, words).plan_dir, "task.md")
    code = (
        "import collections, json, sys\n"
        "seen = collections.Counter()\n"
        "def audit(event, args):\n"
        "    if event in ('open', 'os.listdir', 'os.scandir') and args and args[0]:\n"
        "        seen[str(args[0])] += 1\n"
        "sys.addaudithook(audit)\n"
        "from router.entry import main\n"
        "code = main(['status', '--json'])\n"
        "print(json.dumps(seen), file=sys.stderr)\n"
        "raise SystemExit(code)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=home_repo, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stderr.splitlines()[-1])
    topics = home_repo / ".git" / "team-router" / "topics"
    records = {p: n for p, n in seen.items() if Path(p).parent == topics}
    plans = {p: n for p, n in seen.items() if p.endswith("docs/plans")}
    assert len(records) == 3 and set(records.values()) == {1}, records
    assert seen[str(topics)] == 1  # which ids have a record: one listing
    assert len(plans) == 4 and set(plans.values()) == {1}, plans  # primary + 3 worktrees


# -- what status read from the artifacts, remembered by file identity --------------------


def _counting_reads(monkeypatch) -> list[str]:
    """Every artifact whose bytes the command reads, by path."""
    from router.plandir import artifacts

    read: list[str] = []
    real = artifacts.read_bytes

    def counted(path: str) -> bytes:
        if path.endswith(".md"):
            read.append(path)
        return real(path)

    monkeypatch.setattr(artifacts, "read_bytes", counted)
    return read


def _settled_at_once(monkeypatch) -> None:
    # A file counts as settled as soon as it is written: the test edits it a status later,
    # never within the clock tick it was written in (what the margin guards against).
    from router.plandir import remembered

    monkeypatch.setattr(remembered, "SETTLED_NS", 0)


def _topic_at_slices(home_repo: Path) -> Path:
    plan = new_topic(home_repo, "add rate limiting").plan_dir
    for name in ("task.md", "questions.md", "research.md", "design.md", "structure.md"):
        artifact(plan, name)
    artifact(plan, "design-review-1.md", verdict="APPROVE")
    artifact(plan, "plan.md")
    artifact(plan, "tests-1.md", verdict="RED")
    return plan


def _topic_states(res) -> list[tuple[str, str, str | None]]:
    assert res.code == 0, res.err + res.out
    return [(t["id"], t["resume_at"], t["step"]) for t in res.json["topics"]]


def test_a_second_status_over_unchanged_topics_reads_no_artifact_bytes(home_repo, monkeypatch):
    _settled_at_once(monkeypatch)
    plan = _topic_at_slices(home_repo)
    read = _counting_reads(monkeypatch)
    first = run_cli("status", "--json", cwd=home_repo)
    assert sorted(read) == sorted(str(p) for p in plan.iterdir() if p.suffix == ".md")
    read.clear()
    second = run_cli("status", "--json", cwd=home_repo)
    assert read == []
    assert second.json == first.json
    assert _topic_states(second) == [(plan.name, "IMPLEMENT", "slices")]


def test_an_artifact_edited_to_the_same_size_and_mtime_is_read_again(home_repo, monkeypatch):
    _settled_at_once(monkeypatch)
    plan = _topic_at_slices(home_repo)
    gate = plan / "tests-1.md"
    before = gate.stat()
    assert _topic_states(run_cli("status", "--json", cwd=home_repo)) == [
        (plan.name, "IMPLEMENT", "slices")
    ]
    # The same size, the same modification time put back: only the change time tells.
    gate.write_text(gate.read_text().replace("verdict: RED", "verdict: BAD"))
    os.utime(gate, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = gate.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    read = _counting_reads(monkeypatch)
    res = run_cli("status", "--json", cwd=home_repo)
    assert read == [str(gate)]
    assert _topic_states(res) == [(plan.name, "IMPLEMENT", "tests")]
    assert f"{gate}: verdict 'BAD' is not one of RED, BROKEN" in res.err + res.out


def test_an_artifact_written_moments_ago_is_read_by_every_status_until_it_settles(
    home_repo, monkeypatch
):
    # Within a tick of the file system's clock a write may leave every stamp as it was:
    # a file that new is not remembered (git's "racily clean" index entries, the same case).
    plan = _topic_at_slices(home_repo)
    run_cli("status", "--json", cwd=home_repo)
    read = _counting_reads(monkeypatch)
    run_cli("status", "--json", cwd=home_repo)
    assert sorted(read) == sorted(str(p) for p in plan.iterdir() if p.suffix == ".md")


def test_a_remembered_file_that_is_not_ours_is_an_empty_memory(home_repo, monkeypatch):
    _settled_at_once(monkeypatch)
    plan = _topic_at_slices(home_repo)
    remembered = home_repo / ".git" / "team-router" / "cache" / "frontmatter.json"
    remembered.parent.mkdir(parents=True)
    remembered.write_text('{"version": 1, "files": {"' + str(plan / "tests-1.md") + '": [1, 2]}}')
    assert _topic_states(run_cli("status", "--json", cwd=home_repo)) == [
        (plan.name, "IMPLEMENT", "slices")
    ]
    read = _counting_reads(monkeypatch)
    run_cli("status", "--json", cwd=home_repo)
    assert read == []  # rewritten from what was read


# -- each topic's whole answer, remembered by the identities of the files it follows from ----


def _counting_assessed(monkeypatch) -> list[str]:
    """Every plan dir whose inventory the command takes (the topics it works out again)."""
    from router.plandir import artifacts

    taken: list[str] = []
    real = artifacts.inventory

    def counted(plan_dir, *args, **kwargs):
        taken.append(str(plan_dir))
        return real(plan_dir, *args, **kwargs)

    monkeypatch.setattr(artifacts, "inventory", counted)
    return taken


def _status_as_worked_out_afresh(home_repo: Path) -> dict:
    """``status --json`` run twice: with what the last one remembered, then with nothing
    remembered; both must agree (a remembered answer is the one the files give now)."""
    remembered = run_cli("status", "--json", cwd=home_repo)
    assert remembered.code == 0, remembered.err + remembered.out
    shutil.rmtree(home_repo / ".git" / "team-router" / "cache")
    afresh = run_cli("status", "--json", cwd=home_repo)
    assert remembered.json == afresh.json
    return remembered.json


def test_a_second_status_works_out_no_topic_whose_files_are_unchanged(home_repo, monkeypatch):
    _settled_at_once(monkeypatch)
    plan = _topic_at_slices(home_repo)
    other = new_topic(home_repo, "fix the footer").plan_dir
    artifact(other, "task.md")
    first = run_cli("status", "--json", cwd=home_repo)
    taken = _counting_assessed(monkeypatch)
    read = _counting_reads(monkeypatch)
    second = run_cli("status", "--json", cwd=home_repo)
    assert (taken, read) == ([], [])
    assert second.json == first.json
    artifact(other, "questions.md")
    third = run_cli("status", "--json", cwd=home_repo)
    assert taken == [str(other)]  # the other topic is still its remembered answer
    assert read == [str(other / "questions.md")]  # and of this one, only the new file is read
    assert _topic_states(third) == [
        (plan.name, "IMPLEMENT", "slices"),
        (other.name, "RESEARCH", None),
    ]


def test_every_change_a_remembered_answer_follows_from_changes_it(
    home_repo, workspace, monkeypatch
):
    _settled_at_once(monkeypatch)
    plan = _topic_at_slices(home_repo)
    worktree = plan.parent.parent.parent
    gate = plan / "tests-1.md"
    states = [_topic_states_of(_status_as_worked_out_afresh(home_repo))]
    # An edited artifact: the same size and modification time, only its change time tells.
    before = gate.stat()
    gate.write_text(gate.read_text().replace("verdict: RED", "verdict: BAD"))
    os.utime(gate, ns=(before.st_atime_ns, before.st_mtime_ns))
    states.append(_topic_states_of(_status_as_worked_out_afresh(home_repo)))
    # A new artifact, then one taken away.
    artifact(plan, "pr.md", local="true")
    states.append(_topic_states_of(_status_as_worked_out_afresh(home_repo)))
    (plan / "pr.md").unlink()
    (plan / "plan.md").unlink()
    states.append(_topic_states_of(_status_as_worked_out_afresh(home_repo)))
    assert states == [
        [(plan.name, "IMPLEMENT", "slices")],
        [(plan.name, "IMPLEMENT", "tests")],
        [(plan.name, "SHIPPED", "teardown")],
        [(plan.name, "PLAN", None)],
    ]
    # A changed record: the repos it names are the topic's.
    api = make_repo(workspace, "api")
    record = home_repo / ".git" / "team-router" / "topics" / f"{plan.name}.json"
    data = json.loads(record.read_text())
    data["repos"] = [*data.get("repos", []), {"name": "api", "path": str(api), "worktree": None}]
    record.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    (topic,) = _status_as_worked_out_afresh(home_repo)["topics"]
    assert [r["name"] for r in topic["repos"]] == ["home", "api"]
    # A worktree removed by hand: its plan dir went with it, git still lists it.
    shutil.rmtree(worktree)
    (topic,) = _status_as_worked_out_afresh(home_repo)["topics"]
    assert (topic["resume_at"], topic["repos"][0]["worktree"]) == ("WORKTREE", None)


def _topic_states_of(answer: dict) -> list[tuple[str, str, str | None]]:
    return [(t["id"], t["resume_at"], t["step"]) for t in answer["topics"]]


def test_a_topic_whose_files_changed_moments_ago_is_worked_out_by_every_status(
    home_repo, monkeypatch
):
    # Within a tick of the file system's clock a write may leave every stamp as it was: an
    # answer that follows from a file that new is not remembered, whichever file it is.
    plan = _topic_at_slices(home_repo)
    run_cli("status", "--json", cwd=home_repo)
    taken = _counting_assessed(monkeypatch)
    run_cli("status", "--json", cwd=home_repo)
    assert taken == [str(plan)]


def test_a_remembered_answer_that_is_not_ours_is_worked_out_again(home_repo, monkeypatch):
    _settled_at_once(monkeypatch)
    plan = _topic_at_slices(home_repo)
    first = run_cli("status", "--json", cwd=home_repo)
    answers = home_repo / ".git" / "team-router" / "cache" / "status.json"
    data = json.loads(answers.read_text())
    ((key, (stamp, value)),) = data["entries"].items()
    for wrong in (
        [*value[:4], [[1, 2, 3, 4]], *value[5:]],  # a repo whose fields are not text
        ["SHIPPED", None, "no", *value[3:]],  # halted is not a bool
        value[:6],  # a field short
    ):
        answers.write_text(json.dumps({"version": 2, "entries": {key: [stamp, wrong]}}))
        taken = _counting_assessed(monkeypatch)
        again = run_cli("status", "--json", cwd=home_repo)
        assert (taken, again.json) == ([str(plan)], first.json)
        monkeypatch.undo()
        _settled_at_once(monkeypatch)
