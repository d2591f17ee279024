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
- hold a topic, teardown refused while it is held, release (text, --json): ``hold-release``;
- new --sparse, its rerun and a bad cone: ``new-sparse``; new with a submodule, a
  .worktreeinclude and a .worktreesetup (done, failed, --no-setup): ``new-setup-include-submodules``;
  new refused (a bad id, a linked worktree on the default branch, outside a repo) and a path
  taken by someone's file, then no room for its plan dir either (the fallback's warning
  before the refusal): ``new-refused``; worktrees refused (no plan dir, a malformed
  repos.md, --strict) and its fallback and refused repos: ``worktrees-refused``;
- install-hooks (--dry-run, install, again, --uninstall) and a settings file it cannot merge:
  ``install-hooks``; hook worktree-create and worktree-remove (made, again, removed, kept for
  its work, snapshotted on discard, a payload they cannot use): ``hook-worktree-create-remove``;
- local-state (--dry-run, a failing line, a temp path, an unknown topic): ``local-state``;
- teardown --dry-run and teardown of a worktree holding work: ``teardown-dirty``;
- pr-cleanup --abandon (--dry-run, without --yes, with it, again): ``pr-cleanup-abandon``;
  pr-cleanup of a branch not merged (--dry-run too): ``pr-cleanup-not-merged``;
- restore refused (the path taken, no snapshot): ``restore-refused``; record refused (no
  design, nothing built, a bad verdict): ``record-refused``; phase, next and status with no
  topic: ``phase-refused``;
- next and status of interrupted runs (a questioner stopped half way, a halted design loop,
  a worktree deleted by hand, --until): ``next-status-interrupted``;
- teardown of a fresh topic (text names every step, --json): ``teardown-fresh``; teardown
  --integrate (--dry-run too): ``teardown-integrate``; next from the primary clone:
  ``phase-next-status-fresh``;
- record tests, review, verify, temp and pr: ``record-gates``; record pr --local over two
  repos: ``record-pr-local``; init --write-examples --allow-agent: ``init-options``; doctor
  --repair (what it repairs, what it keeps), then phase, next, status and the hook of the run it
  left without a worktree, and the `new --id` that makes it again: ``doctor-repair``; status and sweep
  --host-worktrees of the host's own worktrees: ``sweep-host-worktrees``; the narrated
  demo, text and --json: ``demo``;
- a secondary repo's worktree deleted by hand, then its registration pruned: phase, next,
  status, the hook and doctor in both cases: ``secondary-worktree-deleted``;
- hold and release refused (a pid not running, a bad session, an unknown topic):
  ``hold-release-refused``; sweep refused by residue holding an unshipped run's artifacts
  (--dry-run, text, --json): ``sweep-refused``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from helpers.fakegh import hide_gh, install_fake_gh, make_github_repo, pr
from helpers.golden import Transcript
from helpers.killtrials import submodule_tree
from helpers.origin import declare, include, merge_on_origin, push_branch
from helpers.plans import artifact, repos_md
from helpers.repos import branches, commit, git, make_repo, run_cli, write
from helpers.sessions import asked_for
from helpers.topics import (
    TOPIC_ID,
    Topic,
    create_payload,
    multi_topic,
    new_topic,
    remove_payload,
    ship,
    teardown,
    two_commits,
)

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
    transcript.note("next from the primary clone: the same topic, the same brief")
    transcript.run("next", cwd=home_repo)
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


def test_teardown_fresh(transcript: Transcript, home_repo: Path) -> None:
    topic = new_topic(home_repo)
    transcript.note(f"new {topic.id}: nothing on its branch, nothing in its plan dir")
    transcript.run("teardown", topic.id, cwd=home_repo)
    assert not topic.worktrees["home"].exists()
    again = new_topic(home_repo, "add caching")
    transcript.run("teardown", again.id, "--json", cwd=home_repo)
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
    # What the machine measures or chooses: how long, and how files were copied.
    measured = 'copied 1 file by reflink in 0.05 s; "method": "bytes", "seconds": 0.014'
    assert normalise(measured) == (
        'copied 1 file by <copy> in <seconds> s; "method": "<copy>", "seconds": "<seconds>"'
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


def test_new_sparse(transcript: Transcript, home_repo: Path) -> None:
    tree = ("src/api/main.py", "src/web/app.js", "docs/guide.md")
    declare(home_repo, {rel: f"{rel}\n" for rel in tree}, "a tree")
    transcript.note("main holds src/api, src/web and docs")
    transcript.run(
        "new", "Add rate limiting", "--date", "2026-05-01", "--sparse", "src/api", cwd=home_repo
    )
    transcript.run(
        "new",
        "Fix the login page",
        "--date",
        "2026-05-01",
        "--sparse",
        "src/web,docs",
        "--json",
        cwd=home_repo,
    )
    transcript.note("the first again: its worktree exists, with its cone")
    transcript.run(
        "new", "Add rate limiting", "--date", "2026-05-01", "--sparse", "src/api", cwd=home_repo
    )
    transcript.run(
        "new", "Add caching", "--date", "2026-05-01", "--sparse", "../out", cwd=home_repo
    )
    transcript.run(
        "new", "Add caching", "--date", "2026-05-01", "--sparse", "../out", "--json", cwd=home_repo
    )
    transcript.check()


def test_new_setup_include_submodules(transcript: Transcript, workspace: Path) -> None:
    home = make_repo(workspace, "web")
    submodule_tree(workspace.parent, home)
    include(home, ".env")
    write(home / ".env", "SECRET=1\n")
    declare(home, {".worktreesetup": "echo installing\ntrue\n"}, "declare setup")
    transcript.note(
        "web: a submodule vendor/lib; .env copied by .worktreeinclude; a .worktreesetup of two"
        " lines"
    )
    transcript.run("new", "Add rate limiting", "--date", "2026-05-01", cwd=home)
    transcript.run("new", "Fix the login page", "--date", "2026-05-01", "--json", cwd=home)
    declare(home, {".worktreesetup": "echo installing\nexit 3\ntrue\n"}, "a failing line")
    transcript.note(".worktreesetup's second line now fails (exit 3); --no-setup skips it")
    transcript.run("new", "Add caching", "--date", "2026-05-01", cwd=home)
    transcript.run("new", "Add search", "--date", "2026-05-01", "--json", cwd=home)
    transcript.run("new", "Add paging", "--date", "2026-05-01", "--no-setup", "--json", cwd=home)
    transcript.check()


def test_new_refused(transcript: Transcript, workspace: Path) -> None:
    home = make_repo(workspace, "web")
    transcript.run("new", "Add rate limiting", "--id", "Not An Id", cwd=home)
    transcript.run("new", "Add rate limiting", "--id", "Not An Id", "--json", cwd=home)
    git(home, "switch", "-q", "-c", "dev")
    main_wt = workspace / "main-wt"
    git(home, "worktree", "add", "-q", str(main_wt), "main")
    transcript.note("web switched to dev; main checked out in a linked worktree, main-wt")
    transcript.run("new", "Add rate limiting", "--date", "2026-05-01", cwd=main_wt)
    transcript.run("new", "Add rate limiting", "--date", "2026-05-01", "--json", cwd=main_wt)
    assert branches(home) == ["dev", "main"] and not (main_wt / "docs").exists()
    plain = workspace / "plain"
    plain.mkdir()
    transcript.run("new", "Add rate limiting", cwd=plain)
    transcript.run("new", "Add rate limiting", "--json", cwd=plain)
    other = make_repo(workspace, "api")
    write(other / ".claude" / "worktrees" / TOPIC_ID / "notes.txt", "someone's notes\n")
    transcript.note("api: a file of someone else's where the topic's worktree would go")
    transcript.run("new", "Add rate limiting", "--date", "2026-05-01", cwd=other)
    notes = other / ".claude" / "worktrees" / TOPIC_ID / "notes.txt"
    assert notes.read_text() == "someone's notes\n"
    write(other / "docs", "someone's docs\n")
    transcript.note("api: also a file where docs/plans/ goes in its main tree")
    transcript.run("new", "Add rate limiting", "--id", TOPIC_ID, cwd=other)
    transcript.run("new", "Add rate limiting", "--id", TOPIC_ID, "--json", cwd=other)
    assert notes.read_text() == "someone's notes\n"
    assert (other / "docs").read_text() == "someone's docs\n"
    transcript.check()


def test_worktrees_refused(transcript: Transcript, workspace: Path) -> None:
    topic = new_topic(make_repo(workspace, "web"))
    api, types = make_repo(workspace, "api"), make_repo(workspace, "types")
    transcript.run("worktrees", str(workspace / "no-such-plan"), cwd=topic.home)
    bad = repos_md(topic.home).replace(
        "## Additional repos\n", "## Additional repos\n- **name:** api\n  **path:** relative/api\n"
    )
    write(topic.plan_dir / "repos.md", bad)
    transcript.note("repos.md names api by a relative path")
    transcript.run("worktrees", str(topic.plan_dir), cwd=topic.home)
    transcript.run("worktrees", str(topic.plan_dir), "--json", cwd=topic.home)
    items = (("api", api), ("types", types), ("ghost", workspace / "ghost"))
    write(topic.plan_dir / "repos.md", repos_md(topic.home, *items))
    write(api / ".claude" / "worktrees" / TOPIC_ID, "a file in the way\n")
    transcript.note(
        "repos.md names api (a file where its worktree would go), types and ghost (no such path)"
    )
    transcript.run("worktrees", str(topic.plan_dir), "--strict", cwd=topic.home)
    transcript.run("worktrees", str(topic.plan_dir), "--strict", "--json", cwd=topic.home)
    assert branches(types) == ["main"]  # --strict rolled back what it made
    transcript.run("worktrees", str(topic.plan_dir), cwd=topic.home)
    transcript.run("worktrees", str(topic.plan_dir), "--json", cwd=topic.home)
    transcript.check()


def test_install_hooks(transcript: Transcript, workspace: Path) -> None:
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    write(settings, json.dumps({"model": "opus", "hooks": {"Stop": []}}, indent=2) + "\n")
    transcript.note("~/.claude/settings.json holds a model and a Stop hook")
    transcript.run("install-hooks", "--dry-run", cwd=workspace)
    transcript.run("install-hooks", "--dry-run", "--json", cwd=workspace)
    transcript.run("install-hooks", cwd=workspace)
    transcript.run("install-hooks", "--json", cwd=workspace)
    transcript.run("install-hooks", "--uninstall", "--dry-run", cwd=workspace)
    transcript.run("install-hooks", "--uninstall", cwd=workspace)
    transcript.run("install-hooks", "--uninstall", "--json", cwd=workspace)
    assert json.loads(settings.read_text()) == {"model": "opus", "hooks": {"Stop": []}}
    write(settings, '{"hooks": []}\n')
    transcript.note("settings.json's hooks is a list")
    transcript.run("install-hooks", cwd=workspace)
    transcript.run("install-hooks", "--json", cwd=workspace)
    assert settings.read_text() == '{"hooks": []}\n'
    transcript.check()


def test_hook_worktree_create_remove(transcript: Transcript, home_repo: Path) -> None:
    res = transcript.run("hook", "worktree-create", stdin=create_payload(home_repo, "ENG-7-native"))
    path = Path(res.out.strip())
    transcript.run("hook", "worktree-create", stdin=create_payload(home_repo, "ENG-7-native"))
    transcript.run("hook", "worktree-remove", stdin=remove_payload(path))
    assert not path.exists()
    res = transcript.run("hook", "worktree-create", stdin=create_payload(home_repo, "ENG-8-work"))
    kept = Path(res.out.strip())
    commit(kept, "feature.txt", "committed, not pushed\n", "feature")
    write(kept / "notes.txt", "untracked\n")
    transcript.note("ENG-8-work: an unpushed commit and an untracked file")
    transcript.run("hook", "worktree-remove", stdin=remove_payload(kept))
    assert (kept / "notes.txt").read_text() == "untracked\n"
    transcript.run("hook", "worktree-remove", stdin=remove_payload(kept, discard_changes=True))
    transcript.run("restore", "ENG-8-work", cwd=home_repo)
    assert (kept / "notes.txt").read_text() == "untracked\n"
    transcript.run("hook", "worktree-create", stdin="not json")
    transcript.run("hook", "worktree-remove", stdin="not json")
    transcript.check()


def test_local_state(transcript: Transcript, home_repo: Path) -> None:
    topic = new_topic(home_repo)
    scratch = Path(os.environ["TMPDIR"]) / "scratch"
    scratch.mkdir()
    write(topic.plan_dir / "temp-paths", f"{scratch}\n")
    declare(home_repo, {".teamteardown": "# stop the dev server\necho stopping\nexit 3\n"})
    transcript.note(".teamteardown on main: a comment, an echo, a line that fails; a temp path")
    transcript.run("local-state", topic.id, "--dry-run", cwd=home_repo)
    transcript.run("local-state", topic.id, "--dry-run", "--json", cwd=home_repo)
    transcript.run("local-state", topic.id, cwd=home_repo)
    assert not scratch.exists()
    transcript.run("local-state", topic.id, "--json", cwd=home_repo)
    transcript.run("local-state", "2026-05-01-no-such-topic", "--json", cwd=home_repo)
    transcript.check()


def test_teardown_dirty(transcript: Transcript, home_repo: Path) -> None:
    topic = ship(new_topic(home_repo))
    wt = topic.worktrees["home"]
    commit(wt, "lib.py", "v = 1\n", "unpushed work")
    write(wt / "lib.py", "v = 2  # edited, not committed\n")
    write(wt / "idea.py", "print('untracked')\n")
    transcript.note("pr.md written; an unpushed commit, an uncommitted edit, an untracked file")
    transcript.run("teardown", topic.id, "--dry-run", cwd=home_repo)
    transcript.run("teardown", topic.id, "--dry-run", "--json", cwd=home_repo)
    transcript.run("teardown", topic.id, cwd=home_repo)
    transcript.run("teardown", topic.id, "--json", cwd=home_repo)
    # Refused: nothing was lost.
    assert (wt / "lib.py").read_text() == "v = 2  # edited, not committed\n"
    assert (wt / "idea.py").is_file() and topic.branch in branches(home_repo)
    assert git(wt, "log", "-1", "--format=%s") == "unpushed work"
    transcript.check()


def test_pr_cleanup_abandon(
    transcript: Transcript, workspace: Path, tmp_path: Path, monkeypatch
) -> None:
    web = make_github_repo(workspace, "web")
    first = two_commits(new_topic(web, "Add rate limiting", topic_id=TOPIC_ID))
    second = two_commits(new_topic(web, "Add caching", topic_id="2026-05-01-add-caching"))
    for topic in (first, second):
        write(topic.worktrees["home"] / "wip.py", "half done\n")
    heads = [git(web, "rev-parse", f"refs/heads/{t.branch}") for t in (first, second)]
    prs = (
        pr(20, first.branch, heads[0], state="OPEN"),
        pr(21, second.branch, heads[1], state="OPEN"),
    )
    install_fake_gh(tmp_path, monkeypatch, prs=prs)
    transcript.note(
        f"{first.id} and {second.id}: two commits pushed and an uncommitted file each; PRs 20"
        " and 21 open; gh faked"
    )
    transcript.run("pr-cleanup", first.id, "--abandon", "--dry-run", cwd=web)
    transcript.run("pr-cleanup", first.id, "--abandon", "--dry-run", "--json", cwd=web)
    transcript.run("pr-cleanup", first.id, "--abandon", cwd=web, stdin="y\n")
    transcript.run("pr-cleanup", first.id, "--abandon", "--json", cwd=web, stdin="y\n")
    assert first.worktrees["home"].is_dir()
    res = transcript.run("pr-cleanup", first.id, "--abandon", "--yes", cwd=web)
    assert res.code == 0 and not first.worktrees["home"].exists()
    res = transcript.run("pr-cleanup", second.id, "--abandon", "--yes", "--json", cwd=web)
    assert res.code == 0 and not second.worktrees["home"].exists()
    # Abandoned, not lost: the uncommitted file is in the snapshot.
    assert git(web, "show", f"refs/team-router/snapshots/{first.id}:wip.py") == "half done"
    transcript.run("pr-cleanup", first.id, "--abandon", "--yes", cwd=web)
    transcript.check()


def test_pr_cleanup_not_merged(transcript: Transcript, workspace: Path, monkeypatch) -> None:
    web = make_github_repo(workspace, "web")
    hide_gh(workspace.parent, monkeypatch)
    topic = two_commits(new_topic(web, "Add rate limiting", topic_id=TOPIC_ID))
    transcript.note("two commits pushed, not merged; no gh")
    transcript.run("pr-cleanup", TOPIC_ID, "--dry-run", cwd=web)
    transcript.run("pr-cleanup", TOPIC_ID, "--dry-run", "--json", cwd=web)
    transcript.run("pr-cleanup", TOPIC_ID, cwd=web)
    transcript.run("pr-cleanup", TOPIC_ID, "--json", cwd=web)
    assert topic.worktrees["home"].is_dir() and TOPIC_ID in branches(web)
    transcript.check()


def test_restore_refused(
    transcript: Transcript, home_repo: Path, tmp_path: Path, monkeypatch
) -> None:
    hide_gh(tmp_path, monkeypatch)
    topic = new_topic(home_repo)
    wt = topic.worktrees["home"]
    write(wt / "draft.txt", "draft\n")
    assert teardown(topic, "--force").code == 0
    write(wt / "in-the-way.txt", "someone else's\n")
    transcript.note(
        "an untracked draft snapshotted by teardown --force; then a file where the worktree was"
    )
    transcript.run("restore", topic.id, cwd=home_repo)
    transcript.run("restore", topic.id, "--json", cwd=home_repo)
    assert (wt / "in-the-way.txt").read_text() == "someone else's\n"
    other = new_topic(home_repo, "add caching")
    assert teardown(other).code == 0
    transcript.note(f"{other.id} torn down with nothing to keep: no snapshot")
    transcript.run("restore", other.id, cwd=home_repo)
    transcript.run("restore", other.id, "--json", cwd=home_repo)
    transcript.check()


def test_record_refused(transcript: Transcript, home_repo: Path) -> None:
    topic = new_topic(home_repo)
    transcript.run("record", "verdict", topic.id, "APPROVE", cwd=home_repo)
    transcript.run("record", "verdict", topic.id, "APPROVE", "--json", cwd=home_repo)
    transcript.run("record", "pr", topic.id, "https://github.com/example/web/pull/1", cwd=home_repo)
    transcript.run(
        "record", "pr", topic.id, "https://github.com/example/web/pull/1", "--json", cwd=home_repo
    )
    transcript.run("record", "verdict", topic.id, "MAYBE", "--json", cwd=home_repo)
    assert sorted(p.name for p in topic.plan_dir.iterdir()) == []
    transcript.check()


def test_next_status_interrupted(transcript: Transcript, home_repo: Path) -> None:
    asked = new_topic(home_repo)
    artifact(asked.plan_dir, "task.md")
    write(asked.worktrees["home"] / "limits.py", "LIMIT = 10  # not committed\n")
    transcript.note(
        f"{asked.id}: its questioner stopped after task.md; an uncommitted edit in its worktree"
    )
    halted = new_topic(home_repo, "add caching")
    for name in ("task.md", "questions.md", "research.md"):
        artifact(halted.plan_dir, name)
    for n in range(1, 6):
        artifact(halted.plan_dir, "design.md", revision=n - 1)
        res = run_cli("record", "verdict", halted.id, "REQUEST CHANGES", cwd=home_repo)
        assert res.code == 0, res.out + res.err
    transcript.note(f"{halted.id}: five design reviews asked for changes (halted)")
    gone = new_topic(home_repo, "add search")
    commit(gone.worktrees["home"], "search.py", "s = 1\n", "slice")
    shutil.rmtree(gone.worktrees["home"])
    transcript.note(f"{gone.id}: one commit, then its worktree deleted by hand")
    for topic in (asked, halted, gone):
        transcript.run("next", topic.id, cwd=home_repo)
        transcript.run("next", topic.id, "--json", cwd=home_repo)
    questioned = new_topic(home_repo, "add paging")
    for name in ("task.md", "questions.md"):
        artifact(questioned.plan_dir, name)
    transcript.note(f"{questioned.id}: task.md and questions.md written (QUESTION's gate passed)")
    transcript.run("next", questioned.id, "--until", "question", cwd=home_repo)
    transcript.run("next", questioned.id, "--until", "question", "--json", cwd=home_repo)
    transcript.run("next", halted.id, "--until", "research", "--json", cwd=home_repo)
    transcript.run("status", cwd=home_repo)
    transcript.run("status", "--json", cwd=home_repo)
    # Without a target: the newest run, and the one whose worktree is gone named beside it.
    transcript.run("phase", cwd=home_repo)
    transcript.run("phase", "--json", cwd=home_repo)
    transcript.run("hook", "session-start", stdin=json.dumps({"cwd": str(home_repo)}))
    for topic in (asked, halted, questioned):
        assert teardown(topic, "--force").code == 0
    transcript.note(f"every run torn down but {gone.id}")
    transcript.run("phase", cwd=home_repo)
    transcript.run("next", "--json", cwd=home_repo)
    transcript.run("status", "--json", cwd=home_repo)
    transcript.run("hook", "session-start", stdin=json.dumps({"cwd": str(home_repo)}))
    assert git(home_repo, "log", "-1", "--format=%s", gone.id).strip() == "slice"
    transcript.check()


def test_phase_refused(transcript: Transcript, home_repo: Path) -> None:
    transcript.run("phase", cwd=home_repo)
    transcript.run("phase", "--json", cwd=home_repo)
    transcript.run("next", "no-such-topic", cwd=home_repo)
    transcript.run("next", "no-such-topic", "--json", cwd=home_repo)
    transcript.run("status", cwd=home_repo)
    transcript.run("status", "--json", cwd=home_repo)
    transcript.check()


def test_demo(transcript: Transcript, tmp_path: Path) -> None:
    transcript.run("demo", "--dir", str(tmp_path / "demo"))
    transcript.run("demo", "--dir", str(tmp_path / "demo"), "--json")
    transcript.check()


def test_init_options(transcript: Transcript, home_repo: Path) -> None:
    transcript.run("init", "--write-examples", "--allow-agent", cwd=home_repo)
    transcript.run("init", "--write-examples", "--allow-agent", "--json", cwd=home_repo)
    transcript.check()


def test_record_gates(transcript: Transcript, home_repo: Path, tmp_path: Path) -> None:
    topic = new_topic(home_repo)
    artifact(topic.plan_dir, "plan.md")
    findings = write(tmp_path / "findings.md", "- the retry loop never ends\n")
    transcript.note("plan.md written; findings.md holds one finding")
    transcript.run("record", "tests", topic.id, "RED", "--body-file", str(findings), cwd=home_repo)
    transcript.run("record", "tests", topic.id, "RED", "--json", cwd=home_repo)
    commit(topic.worktrees["home"], "limits.py", "LIMIT = 10\n", "first slice")
    transcript.note("one commit made")
    transcript.run(
        "record", "review", topic.id, "FAIL", "--body-file", str(findings), cwd=home_repo
    )
    transcript.run("record", "review", topic.id, "PASS", "--json", cwd=home_repo)
    transcript.run("record", "verify", topic.id, "PASS", cwd=home_repo)
    transcript.run("record", "verify", topic.id, "PASS", "--json", cwd=home_repo)
    scratch = Path(os.environ["TMPDIR"]) / "scratch"
    transcript.run("record", "temp", topic.id, str(scratch), cwd=home_repo)
    transcript.run("record", "temp", topic.id, str(scratch), "--json", cwd=home_repo)
    url = "https://github.com/example/web/pull/7"
    transcript.run("record", "pr", topic.id, url, cwd=home_repo)
    transcript.run("record", "pr", topic.id, url, "--json", cwd=home_repo)
    transcript.run("phase", topic.id, cwd=home_repo)
    transcript.check()


def test_record_pr_local(transcript: Transcript, workspace: Path) -> None:
    topic = multi_topic(workspace, ("api",))
    commit(topic.worktrees["home"], "a.py", "a = 1\n", "home slice")
    push_branch(topic.worktrees["home"], topic.branch)
    commit(topic.worktrees["api"], "b.py", "b = 1\n", "api slice")
    transcript.note("web (home) and api: home's commit pushed, api's not")
    transcript.run("record", "pr", topic.id, "--local", cwd=topic.home)
    transcript.run("record", "pr", topic.id, "--local", "--json", cwd=topic.home)
    transcript.check()


def test_teardown_integrate(transcript: Transcript, home_repo: Path) -> None:
    first = ship(new_topic(home_repo))
    commit(first.worktrees["home"], "one.py", "one\n", "unpushed work")
    second = ship(new_topic(home_repo, "add caching"))
    commit(second.worktrees["home"], "two.py", "two\n", "more unpushed work")
    transcript.note("two shipped topics, each with one commit never pushed")
    transcript.run("teardown", first.id, "--integrate", "--dry-run", cwd=home_repo)
    transcript.run("teardown", first.id, "--integrate", cwd=home_repo)
    transcript.run("teardown", second.id, "--integrate", "--json", cwd=home_repo)
    # Integrated, not lost: both commits are on main.
    assert git(home_repo, "log", "--format=%s", "-2", "main").splitlines() == [
        "more unpushed work",
        "unpushed work",
    ]
    transcript.check()


def test_doctor_repair(transcript: Transcript, home_repo: Path) -> None:
    empty = new_topic(home_repo)
    worked = new_topic(home_repo, "add caching")
    commit(worked.worktrees["home"], "work.py", "w = 1\n", "unpushed work")
    for topic in (empty, worked):
        shutil.rmtree(topic.worktrees["home"])
    transcript.note(
        f"both worktrees deleted by hand; {worked.id}'s branch holds a commit found nowhere else"
    )
    transcript.run("doctor", "--repair", cwd=home_repo)
    transcript.run("doctor", "--repair", "--json", cwd=home_repo)
    assert worked.branch in branches(home_repo)  # its work is kept
    transcript.run("doctor", cwd=home_repo)
    tip = git(home_repo, "rev-parse", worked.branch).strip()
    transcript.note(
        f"{worked.id}: no worktree, no plan dir, git lists none; its record and branch kept"
    )
    _phase_next_status(transcript, home_repo)
    transcript.run("next", worked.id, "--json", cwd=home_repo)
    transcript.run("hook", "session-start", stdin=json.dumps({"cwd": str(home_repo)}))
    assert git(home_repo, "rev-parse", worked.branch).strip() == tip  # read commands change nothing
    transcript.note("the command they name makes the worktree again at the branch's tip")
    transcript.run("new", "add caching", "--id", worked.id, "--json", cwd=home_repo)
    assert git(worked.worktrees["home"], "rev-parse", "HEAD").strip() == tip
    transcript.run("phase", cwd=home_repo)
    transcript.check()


def test_secondary_worktree_deleted(transcript: Transcript, workspace: Path) -> None:
    topic = multi_topic(workspace, ("api",))
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(topic.plan_dir, name)
    artifact(topic.plan_dir, "design-review-1.md", verdict="APPROVE")
    artifact(topic.plan_dir, "structure.md")
    api, api_wt = topic.repos["api"], topic.worktrees["api"]
    commit(api_wt, "api.py", "a = 1\n", "api work")
    shutil.rmtree(api_wt)
    transcript.note(
        "design approved, structure written; api's worktree (one commit on its branch) deleted"
        " by hand; git still lists it"
    )
    _secondary_answers(transcript, topic)
    git(api, "worktree", "unlock", str(api_wt))
    git(api, "worktree", "prune")
    transcript.note(
        "its registration pruned (unlocked, then git worktree prune): git lists it no more"
    )
    _secondary_answers(transcript, topic)
    assert git(api, "log", "-1", "--format=%s", topic.branch).strip() == "api work"
    transcript.check()


def _secondary_answers(transcript: Transcript, topic: Topic) -> None:
    home_wt = topic.worktrees["home"]
    _phase_next_status(transcript, home_wt)
    transcript.run("hook", "session-start", stdin=json.dumps({"cwd": str(home_wt)}))
    transcript.run("doctor", cwd=topic.home)
    transcript.run("doctor", "--json", cwd=topic.home)


def test_sweep_host_worktrees(transcript: Transcript, home_repo: Path) -> None:
    idle = asked_for(home_repo, "agent-1111")
    dirty = asked_for(home_repo, "agent-2222")
    write(dirty.worktree / "scratch.txt", "unsaved\n")
    committed = asked_for(home_repo, "agent-3333")
    commit(committed.worktree, "feature.txt", "feature\n", "a commit of its own")
    transcript.note(
        "three worktrees the host asked for, their sessions ended: one holds nothing, one an"
        " untracked file, one a commit of its own"
    )
    transcript.run("status", cwd=home_repo)
    transcript.run("sweep", "--host-worktrees", "--dry-run", cwd=home_repo)
    transcript.run("sweep", "--host-worktrees", "--dry-run", "--json", cwd=home_repo)
    transcript.run("sweep", "--host-worktrees", cwd=home_repo)
    assert not idle.worktree.exists()
    assert (dirty.worktree / "scratch.txt").is_file() and committed.worktree.is_dir()
    transcript.run("sweep", "--host-worktrees", "--json", cwd=home_repo)
    transcript.check()


def test_hold_release_refused(transcript: Transcript, home_repo: Path) -> None:
    topic = new_topic(home_repo)
    transcript.run("hold", topic.id, "--pid", "4294967296", cwd=home_repo)
    transcript.run("hold", topic.id, "--pid", "4294967296", "--json", cwd=home_repo)
    transcript.run("hold", topic.id, "--session", "a b", "--json", cwd=home_repo)
    transcript.run("hold", "2026-05-01-nothing-here", cwd=home_repo)
    transcript.run("release", "2026-05-01-nothing-here", "--json", cwd=home_repo)
    assert not (home_repo / ".git" / "team-router" / "holders").exists()
    transcript.check()


def test_sweep_refused(transcript: Transcript, home_repo: Path) -> None:
    base = home_repo / ".claude" / "worktrees"
    run = base / "2026-05-01-half-removed"
    for name in ("design.md", "task.md"):
        artifact(run / "docs" / "plans" / run.name, name)
    write(base / "gone-topic" / "tmp" / "lsp.log", "log\n")
    transcript.note(
        "under .claude/worktrees: residue holding an unshipped run's artifacts, and plain residue"
    )
    transcript.run("sweep", "--dry-run", cwd=home_repo)
    transcript.run("sweep", cwd=home_repo)
    transcript.run("sweep", "--json", cwd=home_repo)
    assert sorted(p.name for p in (run / "docs" / "plans" / run.name).iterdir()) == [
        "design.md",
        "task.md",
    ]
    transcript.check()
