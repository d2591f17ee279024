"""Every command's whole output, text and --json, for its main scenarios: tests/golden/*.txt.

Each test is one scenario on real git (a local bare origin) and one golden file,
``tests/golden/<scenario>.txt``, holding every command it ran with its exit code, stdout and
stderr in full (``helpers.golden`` says what is normalised: the temporary directory, object
ids, the pid, today's date). ``pytest tests/test_golden.py --update-golden`` rewrites them
all; review the diff as you would a change of wording.

What is pinned where. The tests of each command (test_init, test_new, test_worktrees,
test_status, test_phases, test_next, test_record, test_teardown, test_unshipped, test_cleanup,
test_snapshot, test_sweep, test_doctor, test_hook, test_cli) still assert the phrase each is
about; the whole outputs of these scenarios are pinned here:

- init (text, --json, a second run): ``init``; new in one repo (text, --json): ``new-one-repo``;
  new plus worktrees in three repos, then worktrees again (reused, --json): ``new-three-repos``;
- phase, next and status of a fresh topic and of one mid-pipeline, text and --json:
  ``phase-next-status-fresh``, ``phase-next-status-mid-pipeline``; a gate's record:
  ``record``;
- teardown --dry-run (text, --json) and teardown of a merged topic: ``teardown-merged``; of
  a topic in three repos, one squash-merged: ``teardown-three-repos``; the refusal of an
  unshipped run (text, --json, nothing removed): ``teardown-unshipped``; the session-start
  hook's notice in a topic's worktree, its primary clone and a repo without topics:
  ``hook-session-start``;
- pr-cleanup --dry-run (text, --json) and pr-cleanup after a merge, gh faked:
  ``pr-cleanup-merged``; teardown --force then restore, text and --json: ``restore``;
- sweep (--dry-run, then for real, then again: only what it keeps): ``sweep``; doctor of a healthy topic
  and of one whose worktree vanished: ``doctor``;
- --help of the top level, of every group and of every command: ``help``;
- bad input (exit 2), text and its --json envelope: ``usage-error``;
- hold a topic, teardown refused while it is held, release (text, --json): ``hold-release``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from helpers.fakegh import hide_gh, install_fake_gh, make_github_repo, pr
from helpers.golden import Transcript
from helpers.origin import merge_on_origin, push_branch
from helpers.plans import artifact, repos_md
from helpers.repos import branches, commit, git, make_repo, write
from helpers.topics import TOPIC_ID, multi_topic, new_topic, ship

from router.cli.spec import walk


def test_init(transcript: Transcript, home_repo: Path) -> None:
    transcript.run("init", cwd=home_repo)
    transcript.run("init", "--json", cwd=home_repo)
    transcript.check()


def test_new_one_repo(transcript: Transcript, home_repo: Path) -> None:
    transcript.run("new", "Add rate limiting", "--date", "2026-05-01", cwd=home_repo)
    transcript.run("new", "Fix the login page", "--date", "2026-05-01", "--json", cwd=home_repo)
    transcript.check()


def test_new_three_repos(transcript: Transcript, workspace: Path) -> None:
    home = make_repo(workspace, "web")
    api, db = make_repo(workspace, "api"), make_repo(workspace, "db")
    res = transcript.run("new", "Add rate limiting", "--date", "2026-05-01", cwd=home)
    plan = home / ".claude" / "worktrees" / TOPIC_ID / "docs" / "plans" / TOPIC_ID
    assert res.code == 0 and plan.is_dir(), res.out + res.err
    write(plan / "repos.md", repos_md(home, ("api", api), ("db", db)))
    transcript.note("repos.md written: home web, secondaries api and db")
    transcript.run("worktrees", str(plan), cwd=home)
    transcript.run("worktrees", str(plan), "--json", cwd=home)
    transcript.check()


def _phase_next_status(transcript: Transcript, repo: Path) -> None:
    for command in ("phase", "next", "status"):
        transcript.run(command, cwd=repo)
        transcript.run(command, "--json", cwd=repo)


def test_phase_next_status_fresh(transcript: Transcript, home_repo: Path) -> None:
    topic = new_topic(home_repo)
    transcript.note(f"new {topic.id}: nothing written in its plan dir yet")
    _phase_next_status(transcript, topic.worktrees["home"])
    transcript.check()


def test_phase_next_status_mid_pipeline(transcript: Transcript, home_repo: Path) -> None:
    topic = new_topic(home_repo)
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(topic.plan_dir, name)
    artifact(topic.plan_dir, "design-review-1.md", verdict="APPROVE")
    artifact(topic.plan_dir, "structure.md")
    commit(topic.worktrees["home"], "limits.py", "LIMIT = 10\n", "first slice")
    transcript.note(
        "task, questions, research, design (approved), structure written; one commit made"
    )
    _phase_next_status(transcript, topic.worktrees["home"])
    transcript.check()


def test_record(transcript: Transcript, home_repo: Path) -> None:
    topic = new_topic(home_repo)
    for name in ("task.md", "questions.md", "research.md"):
        artifact(topic.plan_dir, name)
    artifact(topic.plan_dir, "design.md", revision=1)
    transcript.note("task, questions, research and design written")
    transcript.run("record", "verdict", topic.id, "REQUEST CHANGES", cwd=home_repo)
    transcript.run("record", "verdict", topic.id, "APPROVE", "--json", cwd=home_repo)
    transcript.run("phase", topic.id, cwd=home_repo)
    transcript.check()


def test_teardown_merged(transcript: Transcript, home_repo: Path) -> None:
    topic = ship(new_topic(home_repo))
    wt = topic.worktrees["home"]
    commit(wt, "one.py", "one\n", "first")
    commit(wt, "two.py", "two\n", "second")
    push_branch(wt, topic.branch)
    merge_on_origin(home_repo, topic.branch, how="merge")
    # A dry run does not fetch (it says so): fetched first, as its warning asks, its plan is
    # the one the teardown then carries out.
    git(home_repo, "fetch", "-q", "origin")
    transcript.note(
        "two commits pushed and merged on origin (a merge commit), then fetched; pr.md written"
    )
    transcript.run("teardown", topic.id, "--dry-run", cwd=home_repo)
    transcript.run("teardown", topic.id, "--dry-run", "--json", cwd=home_repo)
    res = transcript.run("teardown", topic.id, cwd=home_repo)
    assert res.code == 0
    assert not wt.exists() and topic.branch not in branches(home_repo)
    transcript.run("teardown", topic.id, "--json", cwd=home_repo)
    transcript.check()


def test_teardown_three_repos(transcript: Transcript, workspace: Path) -> None:
    topic = ship(multi_topic(workspace, ("api", "db")))
    api_wt = topic.worktrees["api"]
    commit(api_wt, "api.py", "a = 1\n", "api work")
    push_branch(api_wt, topic.branch)
    merge_on_origin(topic.repos["api"], topic.branch, how="squash")
    git(topic.repos["api"], "fetch", "-q", "origin")
    transcript.note(
        "web (home), api and db; api's one commit pushed, squash-merged on origin and fetched;"
        " pr.md written"
    )
    transcript.run("teardown", topic.id, "--dry-run", cwd=topic.home)
    res = transcript.run("teardown", topic.id, "--json", cwd=topic.home)
    assert res.code == 0
    assert not any(wt.exists() for wt in topic.worktrees.values())
    transcript.check()


def test_hook_session_start(transcript: Transcript, workspace: Path) -> None:
    topic = new_topic(make_repo(workspace, "web"))
    quiet = make_repo(workspace, "api")
    for cwd in (topic.worktrees["home"], topic.home, quiet):
        transcript.run("hook", "session-start", stdin=json.dumps({"cwd": str(cwd)}))
    transcript.check()


def test_teardown_unshipped(transcript: Transcript, home_repo: Path) -> None:
    topic = new_topic(home_repo)
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(topic.plan_dir, name)
    transcript.note("a run stopped at DESIGN: four artifacts, no commit, no pr.md")
    transcript.run("teardown", topic.id, cwd=home_repo)
    transcript.run("teardown", topic.id, "--json", cwd=home_repo)
    # Refused: nothing was removed.
    assert topic.worktrees["home"].is_dir() and topic.branch in branches(home_repo)
    assert sorted(p.name for p in topic.plan_dir.iterdir()) == [
        "design.md",
        "questions.md",
        "research.md",
        "task.md",
    ]
    transcript.check()


def test_pr_cleanup_merged(
    transcript: Transcript, workspace: Path, tmp_path: Path, monkeypatch
) -> None:
    web = make_github_repo(workspace, "web")
    topic = ship(new_topic(web, "Add rate limiting", topic_id=TOPIC_ID))
    wt = topic.worktrees["home"]
    commit(wt, "limits.py", "LIMIT = 10\n", "add limits")
    commit(wt, "test_limits.py", "assert True\n", "test limits")
    push_branch(wt, TOPIC_ID)
    head = git(web, "rev-parse", f"refs/heads/{TOPIC_ID}")
    merge = merge_on_origin(web, TOPIC_ID, how="merge")
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(12, TOPIC_ID, head, merge_commit=merge),))
    transcript.note("two commits pushed; PR 12 merged on origin (a merge commit); gh faked")
    transcript.run("pr-cleanup", "12", "--dry-run", cwd=web)
    transcript.run("pr-cleanup", "12", "--dry-run", "--json", cwd=web)
    res = transcript.run("pr-cleanup", "12", cwd=web)
    assert res.code == 0 and not wt.exists()
    transcript.check()


def test_restore(transcript: Transcript, home_repo: Path, tmp_path: Path, monkeypatch) -> None:
    hide_gh(tmp_path, monkeypatch)
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    commit(wt, "lib.py", "v = 1\n", "unpushed work")
    write(wt / "lib.py", "v = 2  # edited, not committed\n")
    write(wt / "new" / "idea.py", "print('untracked')\n")
    transcript.note("an unpushed commit, an uncommitted edit, an untracked file")
    transcript.run("teardown", topic.id, "--force", cwd=home_repo)
    transcript.run("restore", topic.id, cwd=home_repo)
    assert (wt / "lib.py").read_text() == "v = 2  # edited, not committed\n"
    transcript.run("teardown", topic.id, "--force", "--json", cwd=home_repo)
    transcript.run("restore", topic.id, "--json", cwd=home_repo)
    assert (wt / "new" / "idea.py").is_file()
    transcript.check()


def test_sweep(transcript: Transcript, home_repo: Path) -> None:
    base = home_repo / ".claude" / "worktrees"
    write(base / "gone-topic" / "tmp" / "lsp.log", "log\n")
    write(base / "gone-topic" / ".omc" / "s.json", "{}\n")
    (base / "empty").mkdir(parents=True)
    write(base / "unexpected" / "src" / "main.py", "print('keep me')\n")
    live = base / "live-one"
    git(home_repo, "worktree", "add", "-q", "-b", "live-one", str(live))
    transcript.note(
        "under .claude/worktrees: residue (gone-topic, empty), a source file, a live worktree"
    )
    transcript.run("sweep", "--dry-run", cwd=home_repo)
    transcript.run("sweep", "--dry-run", "--json", cwd=home_repo)
    transcript.run("sweep", cwd=home_repo)
    transcript.run("sweep", "--json", cwd=home_repo)
    assert (base / "unexpected" / "src" / "main.py").is_file() and live.is_dir()
    transcript.check()


def test_doctor(transcript: Transcript, home_repo: Path) -> None:
    topic = new_topic(home_repo)
    transcript.run("doctor", cwd=home_repo)
    transcript.run("doctor", "--json", cwd=home_repo)
    wt = topic.worktrees["home"]
    git(home_repo, "worktree", "unlock", str(wt))
    for path in sorted(wt.rglob("*"), reverse=True):
        path.unlink() if path.is_file() or path.is_symlink() else path.rmdir()
    wt.rmdir()
    transcript.note("the topic's worktree deleted by hand (unlocked first)")
    transcript.run("doctor", cwd=home_repo)
    transcript.run("doctor", "--json", cwd=home_repo)
    transcript.check()


def test_help(transcript: Transcript) -> None:
    transcript.run("--help")
    for node in walk():
        transcript.run(*node.path, "--help")
    transcript.check()


def test_usage_error(transcript: Transcript, home_repo: Path) -> None:
    transcript.run("record", "verdict", cwd=home_repo)
    transcript.run("record", "verdict", "--json", cwd=home_repo)
    transcript.run("new", "Add rate limiting", "--date", "May 1st", cwd=home_repo)
    transcript.run("new", "Add rate limiting", "--date", "May 1st", "--json", cwd=home_repo)
    transcript.run("teardown", "no-such-topic", "--json", cwd=home_repo)
    transcript.check()


def test_the_normaliser_rewrites_only_what_varies(tmp_path: Path) -> None:
    from helpers.golden import Normaliser

    full, other = "a" * 7 + "1" * 33, "b2" * 20
    normalise = Normaliser(tmp_path)
    text = (
        f"from {full[:7]} at {tmp_path}/ws: {full}, then {other}; pid {os.getpid()}, PR #12, "
        f"branch 2026-05-01-add-rate-limiting, 1234567 rows, deadbeef-cafe"
    )
    assert normalise(text) == (
        "from <sha:1> at <tmp>/ws: <sha:1>, then <sha:2>; pid <pid>, PR #12, "
        "branch 2026-05-01-add-rate-limiting, 1234567 rows, deadbeef-cafe"
    )
    # Numbers hold across the sections of one transcript.
    assert normalise(f"{other[:9]} {full}") == "<sha:2> <sha:1>"


def test_hold_release(transcript: Transcript, home_repo: Path) -> None:
    topic = ship(new_topic(home_repo))
    # Another live session holds the topic (a session's own hold never keeps it from itself).
    session = subprocess.Popen(["sleep", "120"])
    try:
        pid = str(session.pid)
        transcript.name_process(session.pid, "<session>")
        transcript.note(f"pr.md written; another live session (pid {pid}) holds the topic")
        transcript.run("hold", topic.id, "--pid", pid, "--session", "s-1", cwd=home_repo)
        transcript.run("hold", topic.id, "--pid", pid, "--json", cwd=home_repo)
        res = transcript.run("teardown", topic.id, cwd=home_repo)
        assert res.code == 1 and topic.worktrees["home"].is_dir()
        transcript.run("release", topic.id, "--session", "s-1", cwd=home_repo)
        transcript.run("release", topic.id, "--pid", pid, "--json", cwd=home_repo)
        transcript.run("release", topic.id, "--pid", pid, cwd=home_repo)
    finally:
        session.kill()
        session.wait()
    transcript.check()
