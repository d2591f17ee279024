from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.faults import CRASHED, bind_mounted, run, spawn
from helpers.repos import commit, git, make_repo, run_cli, write
from helpers.unreadable import unreadable

from router.teardown import sweep as sweep_module
from router.teardown.sweep_aside import SWEEPING

# Seed 002, "Ship (teardown)" step 7, verbatim but for <repo-path>.
SEED_LOOP = Path(__file__).with_name("seed_sweep_loop.sh").read_text(encoding="utf-8")


def seed_loop(repo: Path) -> str:
    return SEED_LOOP.replace("<repo-path>", f"'{repo}'")


def leftovers(repo: Path) -> Path:
    return repo / ".claude" / "worktrees"


def sweep(repo: Path):
    res = run_cli("sweep", "--json", cwd=repo)
    assert res.code == 0, res.out + res.err
    return res.json


def add_live_worktree(repo: Path, name: str) -> Path:
    path = leftovers(repo) / name
    git(repo, "worktree", "add", "-q", "-b", name, str(path))
    write(path / "work-in-progress.py", "not committed\n")
    return path


def build_tree(repo: Path) -> None:
    """Every case of seed 002's sweep, plus a few more, under .claude/worktrees/."""
    base = leftovers(repo)
    write(base / "late-writer" / "tmp" / "session.json", "{}\n")
    write(base / "late-writer" / ".omc" / "state" / "x.json", "{}\n")
    # A run that has shipped (its pr.md): its plan dir is residue like any other.
    write(base / "plans-only" / "docs" / "plans" / "2026-05-01-x" / "design.md", "# d\n")
    write(base / "plans-only" / "docs" / "plans" / "2026-05-01-x" / "pr.md", "# pr\n")
    (base / "empty").mkdir(parents=True)
    (base / "empty-nested" / "tmp" / "a" / "b").mkdir(parents=True)
    write(base / "unexpected" / "tmp" / "ok.txt", "ok\n")
    write(base / "unexpected" / "src" / "main.py", "print('keep me')\n")
    write(base / "docs-file" / "docs" / "plans", "a file named plans, not the folder\n")
    write(base / "tmp-file" / "tmp", "a file named tmp\n")
    write(base / "stale-checkout" / ".git", "gitdir: /nowhere/.git/worktrees/stale\n")
    write(base / "stale-checkout" / "tmp" / "x", "x\n")
    add_live_worktree(repo, "live-one")


def test_late_writer_residue_is_swept(home_repo):
    write(leftovers(home_repo) / "gone-topic" / "tmp" / "lsp.log", "log\n")
    write(leftovers(home_repo) / "gone-topic" / ".omc" / "s.json", "{}\n")
    data = sweep(home_repo)
    assert data["swept"] == [str(leftovers(home_repo) / "gone-topic")]
    assert data["kept"] == []
    assert not (leftovers(home_repo) / "gone-topic").exists()


def test_a_file_outside_the_allowed_folders_is_kept_and_listed(home_repo):
    write(leftovers(home_repo) / "t" / "tmp" / "x", "x\n")
    write(leftovers(home_repo) / "t" / "notes" / "idea.md", "precious\n")
    data = sweep(home_repo)
    assert data["swept"] == []
    assert data["kept"] == [
        {
            "path": str(leftovers(home_repo) / "t"),
            "reason": "unexpected-files",
            "files": ["notes/idea.md"],
        }
    ]
    assert (leftovers(home_repo) / "t" / "notes" / "idea.md").read_text() == "precious\n"


def test_an_unreadable_folder_in_residue_is_kept_never_taken_for_empty(home_repo):
    write(leftovers(home_repo) / "t" / "tmp" / "x", "x\n")
    write(leftovers(home_repo) / "t" / "notes" / "idea.md", "precious\n")
    with unreadable(leftovers(home_repo) / "t" / "notes"):  # it may hold anything
        data = sweep(home_repo)
    assert data["swept"] == []
    assert data["kept"] == [
        {
            "path": str(leftovers(home_repo) / "t"),
            "reason": "unexpected-files",
            "files": ["notes/ (unreadable: Permission denied)"],
        }
    ]
    assert (leftovers(home_repo) / "t" / "notes" / "idea.md").read_text() == "precious\n"
    assert (leftovers(home_repo) / "t" / "tmp" / "x").read_text() == "x\n"


def test_an_unreadable_folder_under_tmp_keeps_its_leftover_and_the_rest_is_swept(home_repo):
    """Under a residue folder too: an unreadable folder is never read as empty, nor deleted."""
    write(leftovers(home_repo) / "t" / "tmp" / "x", "x\n")
    write(leftovers(home_repo) / "t" / "tmp" / "cache" / "clone" / "work.py", "precious\n")
    write(leftovers(home_repo) / "gone" / "tmp" / "lsp.log", "log\n")
    with unreadable(leftovers(home_repo) / "t" / "tmp" / "cache"):
        res = run_cli("sweep", "--json", cwd=home_repo)
        text = run_cli("sweep", "--dry-run", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    kept = leftovers(home_repo) / "t"
    assert res.json["swept"] == [str(leftovers(home_repo) / "gone")]
    assert res.json["failed"] == []
    assert res.json["kept"] == [
        {
            "path": str(kept),
            "reason": "unexpected-files",
            "files": ["tmp/cache/ (unreadable: Permission denied)"],
        }
    ]
    warning = (
        f"{kept}: kept: tmp/cache/ (Permission denied) could not be read, so what it holds is "
        "not known and it is never swept; make it readable, then sweep again"
    )
    assert res.json["warnings"] == [warning]
    assert text.code == 0, text.out + text.err
    assert text.out == (
        f"would keep (unexpected-files): {kept}\n    tmp/cache/ (unreadable: Permission denied)\n"
    )
    assert text.err == f"warning: {warning}\n"
    assert (kept / "tmp" / "cache" / "clone" / "work.py").read_text() == "precious\n"
    assert (kept / "tmp" / "x").read_text() == "x\n"
    assert sorted(os.listdir(leftovers(home_repo))) == ["t"]


def test_docs_plans_alone_is_still_sweepable(home_repo):
    """A shipped run's plan dir (its pr.md) and files no run owns under docs/plans/ are residue."""
    write(leftovers(home_repo) / "t" / "docs" / "plans" / "2026-05-01-x" / "design.md", "# d\n")
    write(leftovers(home_repo) / "t" / "docs" / "plans" / "2026-05-01-x" / "pr.md", "# pr\n")
    write(leftovers(home_repo) / "u" / "docs" / "plans" / "index.md", "# plans\n")
    write(leftovers(home_repo) / "u" / "docs" / "plans" / "drafts" / "idea.md", "# i\n")
    data = sweep(home_repo)
    assert data["swept"] == [str(leftovers(home_repo) / "t"), str(leftovers(home_repo) / "u")]


def test_a_live_worktree_is_never_touched(home_repo):
    path = add_live_worktree(home_repo, "busy")
    data = sweep(home_repo)
    assert data["swept"] == [] and data["kept"] == [] and data["live"] == 1
    assert (path / "work-in-progress.py").read_text() == "not committed\n"


def test_a_stale_git_entry_is_kept(home_repo):
    stale = leftovers(home_repo) / "stale"
    write(stale / ".git", "gitdir: /nowhere\n")
    write(stale / "tmp" / "only-residue", "x\n")
    data = sweep(home_repo)
    assert data["swept"] == []
    assert data["kept"][0]["path"] == str(stale) and data["kept"][0]["reason"] == "checkout"
    assert (stale / ".git").exists()


def test_a_symlink_and_a_linked_file_are_kept(home_repo, tmp_path):
    outside = tmp_path / "elsewhere"
    write(outside / "data.txt", "x\n")
    base = leftovers(home_repo)
    base.mkdir(parents=True)
    os.symlink(outside, base / "alias")
    write(base / "links" / "tmp" / "ok", "x\n")
    os.symlink(outside / "data.txt", base / "links" / "data.txt")
    data = sweep(home_repo)
    kept = {k["path"]: k for k in data["kept"]}
    assert kept[str(base / "alias")]["reason"] == "symlink"
    assert kept[str(base / "links")]["files"] == ["data.txt"]
    assert (outside / "data.txt").exists()


def test_no_residue_is_said_not_implied(home_repo):
    res = run_cli("sweep", cwd=home_repo)
    assert res.code == 0
    assert res.out.strip() == f"no residue under {home_repo}/.claude/worktrees"


def test_sweep_keeps_exactly_what_the_seed_shell_loop_keeps(workspace):
    ours = make_repo(workspace, "ours")
    theirs = make_repo(workspace, "theirs")
    build_tree(ours)
    build_tree(theirs)
    data = sweep(ours)
    proc = subprocess.run(
        ["sh", "-c", seed_loop(theirs)], capture_output=True, text=True, check=True
    )
    shell_kept = {
        Path(line.split(": ", 1)[1]).name
        for line in proc.stdout.splitlines()
        if line.startswith("kept")
    }
    shell_swept = {
        Path(line.split(": ", 1)[1]).name
        for line in proc.stdout.splitlines()
        if line.startswith("swept")
    }
    assert {Path(k["path"]).name for k in data["kept"]} == shell_kept
    assert {Path(p).name for p in data["swept"]} == shell_swept
    assert sorted(os.listdir(leftovers(ours))) == sorted(os.listdir(leftovers(theirs)))
    assert shell_kept == {"unexpected", "docs-file", "tmp-file", "stale-checkout"}
    unexpected = next(k for k in data["kept"] if k["path"].endswith("/unexpected"))
    assert unexpected["files"] == ["src/main.py"]


CLAIM_ID = "2026-05-01-claimed-topic"


def _claim_without_add(repo: Path) -> Path:
    """A `new` stopped between its claim (mkdir) and `git worktree add`: what a concurrent sweep sees."""
    from helpers.faults import CRASHED, run

    crashed = run("new", "Claimed topic", "--id", CLAIM_ID, "--json", cwd=repo, crash_at="add")
    assert crashed.code == CRASHED, crashed.err
    claim = leftovers(repo) / CLAIM_ID
    assert claim.is_dir() and os.listdir(claim) == []
    assert str(claim) not in git(repo, "worktree", "list", "--porcelain")
    return claim


def test_a_directory_a_creation_under_way_has_claimed_is_kept(home_repo):
    claim = _claim_without_add(home_repo)
    (leftovers(home_repo) / "empty-residue").mkdir()
    data = sweep(home_repo)
    assert data["swept"] == [str(leftovers(home_repo) / "empty-residue")]
    assert data["kept"] == [{"path": str(claim), "reason": "claimed", "files": []}]
    assert claim.is_dir()
    # The creation then finishes in the directory it claimed.
    again = run_cli("new", "Claimed topic", "--id", CLAIM_ID, "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["home"]["worktree"] == str(claim)
    assert git(claim, "symbolic-ref", "--short", "HEAD") == CLAIM_ID


def test_teardown_of_another_topic_keeps_a_claimed_directory(home_repo):
    from helpers.topics import new_topic, teardown

    topic = new_topic(home_repo)
    claim = _claim_without_add(home_repo)
    res = teardown(topic)
    assert res.code == 0, res.out + res.err
    assert res.json["kept"] == [{"path": str(claim), "reason": "claimed", "files": []}]
    assert claim.is_dir()
    assert not topic.worktrees["home"].exists()


def test_a_symlinked_worktrees_folder_is_not_swept_where_it_points(home_repo, tmp_path):
    shared = tmp_path / "shared-claude"
    write(shared / "worktrees" / "someone-elses" / "tmp" / "state.json", "{}\n")
    (shared / "worktrees" / "empty").mkdir()
    (home_repo / ".claude").symlink_to(shared)
    data = sweep(home_repo)
    assert data["swept"] == []
    assert data["kept"] == [{"path": str(leftovers(home_repo)), "reason": "symlink", "files": []}]
    assert (shared / "worktrees" / "someone-elses" / "tmp" / "state.json").exists()
    assert (shared / "worktrees" / "empty").is_dir()


def test_a_directory_whose_topic_lock_another_process_holds_is_kept(home_repo):
    """A topic id created again: its record's steps are the earlier run's, but the creation holds its lock."""
    import sys
    import textwrap

    claim = leftovers(home_repo) / CLAIM_ID
    claim.mkdir(parents=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            from router.topic import state
            with state.held_lock(Path({str(home_repo / ".git")!r}), {CLAIM_ID!r}):
                print("held", flush=True)
                sys.stdin.read()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        data = sweep(home_repo)
        assert data["kept"] == [{"path": str(claim), "reason": "claimed", "files": []}]
        assert claim.is_dir()
    finally:
        holder.communicate("", timeout=30)
    assert sweep(home_repo)["swept"] == [str(claim)]  # once the lock is released it is residue


def test_dry_run_names_what_would_be_swept_and_removes_nothing(home_repo):
    residue = write(leftovers(home_repo) / "gone-topic" / "tmp" / "lsp.log", "log\n")
    res = run_cli("sweep", "--dry-run", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert res.json["dry_run"] is True
    assert res.json["swept"] == [str(leftovers(home_repo) / "gone-topic")]
    assert residue.read_text() == "log\n"
    text = run_cli("sweep", "--dry-run", cwd=home_repo)
    assert text.out.strip() == f"would sweep: {leftovers(home_repo) / 'gone-topic'}"
    assert residue.exists()


def test_sweep_keeps_a_nested_clone_under_tmp(home_repo):
    """A repository someone made under tmp/ holds commits that exist nowhere else: not residue."""
    clone = leftovers(home_repo) / "gone-topic" / "tmp" / "scratch-lib"
    clone.mkdir(parents=True)
    git(clone, "init", "-q")
    commit(clone, "patch.py", "fix = True\n", "a local fix, never pushed")
    res = run_cli("sweep", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert res.json["swept"] == []
    assert [k["reason"] for k in res.json["kept"]] == ["checkout"]
    assert git(clone, "log", "--format=%s") == "a local fix, never pushed"


def test_sweep_keeps_a_bare_repository_under_tmp(home_repo, workspace):
    """A bare clone has no .git entry, yet its commits may exist nowhere else: not residue."""
    source = make_repo(workspace, "scratch-src", origin=False)
    sha = commit(source, "patch.py", "fix = True\n", "a local fix, never pushed")
    bare = leftovers(home_repo) / "gone-topic" / "tmp" / "mirror.git"
    git(workspace, "clone", "-q", "--bare", str(source), str(bare))
    res = run_cli("sweep", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert res.json["swept"] == []
    assert [k["reason"] for k in res.json["kept"]] == ["checkout"]
    assert git(bare, "cat-file", "-t", sha) == "commit"


def test_sweep_keeps_a_file_written_after_the_directory_was_judged(home_repo, monkeypatch):
    """A writer adds work between the sweep's judgement and its removal: the work stays."""
    import router.teardown.sweep as sweep_module

    residue = leftovers(home_repo) / "gone-topic"
    write(residue / "tmp" / "lsp.log", "log\n")
    judged = sweep_module.claimed_names

    def then_a_writer(common_dir):
        write(residue / "src" / "draft.py", "written just now\n")
        return judged(common_dir)

    monkeypatch.setattr(sweep_module, "claimed_names", then_a_writer)
    res = run_cli("sweep", "--json", cwd=home_repo)
    assert (residue / "src" / "draft.py").read_text() == "written just now\n"
    assert res.json["swept"] == []
    assert [(k["path"], k["files"]) for k in res.json["kept"]] == [(str(residue), ["src/draft.py"])]


def _killed_mid_sweep(repo: Path) -> Path:
    """A sweep killed right after moving ``gone-topic`` aside; the aside directory."""
    write(leftovers(repo) / "gone-topic" / "tmp" / "lsp.log", "log\n")
    crashed = run("sweep", "--json", cwd=repo, crash_at="sweep-aside")
    assert crashed.code == CRASHED, crashed.err
    (aside,) = leftovers(repo).iterdir()
    assert aside.name.startswith(".team-router-sweeping-") and aside.name.endswith("-gone-topic")
    return aside


def test_a_directory_a_killed_sweep_left_aside_is_swept_under_its_own_name(home_repo):
    _killed_mid_sweep(home_repo)
    data = sweep(home_repo)
    assert data["swept"] == [str(leftovers(home_repo) / "gone-topic")]
    assert list(leftovers(home_repo).iterdir()) == []


def test_a_dry_run_leaves_a_killed_sweeps_directory_where_it_is(home_repo):
    aside = _killed_mid_sweep(home_repo)
    res = run_cli("sweep", "--dry-run", "--json", cwd=home_repo)
    assert res.json["swept"] == [str(aside)]
    assert (aside / "tmp" / "lsp.log").read_text() == "log\n"


def test_work_in_a_directory_a_killed_sweep_left_aside_is_kept_under_its_own_name(home_repo):
    """Work written before the move, then the kill: kept where its writer put it, and listed."""
    aside = _killed_mid_sweep(home_repo)
    write(aside / "src" / "draft.py", "written before the move\n")
    data = sweep(home_repo)
    gone_topic = leftovers(home_repo) / "gone-topic"
    assert data["swept"] == []
    assert [(k["path"], k["reason"], k["files"]) for k in data["kept"]] == [
        (str(gone_topic), "unexpected-files", ["src/draft.py"])
    ]
    assert (gone_topic / "src" / "draft.py").read_text() == "written before the move\n"
    assert not aside.exists()


def test_a_directory_a_running_sweep_moved_aside_is_left_to_it(home_repo):
    """Another sweep, still running, is judging it: not ours to delete or rename."""
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        aside = leftovers(home_repo) / f".team-router-sweeping-{sleeper.pid}-gone-topic"
        write(aside / "tmp" / "lsp.log", "log\n")
        data = sweep(home_repo)
        assert data["swept"] == []
        assert [(k["path"], k["reason"]) for k in data["kept"]] == [(str(aside), "claimed")]
        assert (aside / "tmp" / "lsp.log").read_text() == "log\n"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_killed_sweeps_directory_is_taken_back_when_its_pid_names_another_process_now(
    home_repo,
):
    """The killed sweep's pid, reused by a live unrelated process, does not keep it claimed."""
    aside = _killed_mid_sweep(home_repo)
    dead = re.match(r"[0-9]+", aside.name[len(SWEEPING) :])[0]
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        # The same name but for the pid: what the name reads as once the pid is reused.
        reused = aside.with_name(aside.name.replace(f"-{dead}", f"-{sleeper.pid}", 1))
        aside.rename(reused)
        data = sweep(home_repo)
        assert data["swept"] == [str(leftovers(home_repo) / "gone-topic")], data
        assert list(leftovers(home_repo).iterdir()) == []
    finally:
        sleeper.kill()
        sleeper.wait()


def test_an_aside_directory_named_the_older_way_is_still_read(home_repo):
    """``<pid>-<name>`` (no start time): a gone pid gives it back, a live one keeps it."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        for pid, name in ((gone.pid, "gone-topic"), (sleeper.pid, "held-topic")):
            write(leftovers(home_repo) / f".team-router-sweeping-{pid}-{name}" / "tmp" / "x", "\n")
        data = sweep(home_repo)
        held = leftovers(home_repo) / f".team-router-sweeping-{sleeper.pid}-held-topic"
        assert data["swept"] == [str(leftovers(home_repo) / "gone-topic")]
        assert [(k["path"], k["reason"]) for k in data["kept"]] == [(str(held), "claimed")]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_work_moved_back_never_replaces_an_empty_claim_made_meanwhile(home_repo, monkeypatch):
    """While residue is judged aside, a writer adds work to it and a creation claims the name
    with an empty directory: the move back must not replace that claim (its rollback would
    then delete the work as its own); the work stays aside, named."""
    import router.teardown.sweep as sweep_module

    residue = leftovers(home_repo) / "gone-topic"
    write(residue / "tmp" / "lsp.log", "log\n")
    listing = sweep_module.open_tree  # the second look, once the directory is moved aside

    def meanwhile(path: Path):
        if path.name.startswith(SWEEPING):
            write(path / "src" / "draft.py", "written just now\n")
            residue.mkdir()  # a creation's claim: empty until its git worktree add
        return listing(path)

    monkeypatch.setattr(sweep_module, "open_tree", meanwhile)
    res = run_cli("sweep", "--json", cwd=home_repo)
    assert res.code == 1, res.out + res.err
    assert res.json["swept"] == []
    assert residue.is_dir() and list(residue.iterdir()) == []  # the claim, as it was made
    (aside,) = [p for p in leftovers(home_repo).iterdir() if p != residue]
    assert (aside / "src" / "draft.py").read_text() == "written just now\n"
    [(failed_path, why)] = [(f["path"], f["error"]) for f in res.json["failed"]]
    assert failed_path == str(residue) and str(aside) in why


def test_rename_noreplace_refuses_an_empty_directory_in_the_way(tmp_path):
    from router.teardown.sweep_aside import rename_noreplace

    write(tmp_path / "src" / "work.txt", "work\n")
    (tmp_path / "claim").mkdir()
    with pytest.raises(FileExistsError):
        rename_noreplace(tmp_path / "src", tmp_path / "claim")
    assert list((tmp_path / "claim").iterdir()) == []
    rename_noreplace(tmp_path / "src", tmp_path / "free")
    assert (tmp_path / "free" / "work.txt").read_text() == "work\n"


# -- an unshipped run's artifacts in residue ------------------------------------------------------

RUN_ID = "2026-05-01-half-removed"
RUN_FILES = ("design.md", "questions.md", "research.md", "task.md")


def half_removed_run(repo: Path) -> Path:
    """A worktree git no longer knows, holding only the plan dir the pipeline wrote into it
    after (or during) the removal, and a late writer's residue: a run that has not shipped."""
    from helpers.plans import artifact

    path = leftovers(repo) / RUN_ID
    for name in RUN_FILES:
        artifact(path / "docs" / "plans" / RUN_ID, name)
    write(path / "tmp" / "lsp.log", "log\n")
    return path


def contents(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def test_an_unshipped_runs_artifacts_keep_the_residue_and_refuse(home_repo):
    path = half_removed_run(home_repo)
    write(leftovers(home_repo) / "gone-topic" / "tmp" / "lsp.log", "log\n")
    before = contents(path)
    res = run_cli("sweep", "--json", cwd=home_repo)
    assert res.code == 1, res.out + res.err
    named = [f"docs/plans/{RUN_ID}/{f}" for f in RUN_FILES]
    assert res.json["error"] == {
        "code": "unshipped-run",
        "message": f"sweep keeps {path}: it holds the artifacts of {RUN_ID}, a run that has not "
        f"shipped (no pr.md): {', '.join(named)}; pass --force to snapshot them before they go "
        f"(`team-router restore {RUN_ID}` brings them back), or move them to where the run "
        "goes on",
    }
    assert res.json["kept"] == [{"path": str(path), "reason": "unshipped-run", "files": named}]
    assert res.json["swept"] == [str(leftovers(home_repo) / "gone-topic")]  # the rest goes
    assert contents(path) == before
    assert git(home_repo, "for-each-ref", "refs/team-router/") == ""
    text = run_cli("sweep", cwd=home_repo)
    assert text.code == 1
    assert text.out == f"kept (unshipped-run): {path}\n" + "".join(f"    {n}\n" for n in named)
    assert text.err == f"team-router: {res.json['error']['message']} [unshipped-run]\n"
    assert contents(path) == before


def test_a_dry_run_and_a_forced_sweep_snapshot_an_unshipped_runs_artifacts_first(home_repo):
    path = half_removed_run(home_repo)
    before = contents(path / "docs" / "plans" / RUN_ID)
    ref = f"refs/team-router/plan-dirs/{RUN_ID}"
    listed = f"the run's artifacts {', '.join(RUN_FILES)}"
    dry = run_cli("sweep", "--force", "--dry-run", "--json", cwd=home_repo)
    assert dry.code == 0, dry.out + dry.err
    assert (dry.json["swept"], dry.json["kept"]) == ([str(path)], [])
    assert dry.json["snapshotted"] == [
        {"path": str(path), "notes": [f"would first write {listed} to {ref}"]}
    ]
    assert path.is_dir() and git(home_repo, "for-each-ref", "refs/team-router/") == ""
    res = run_cli("sweep", "--force", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    snap = git(home_repo, "rev-parse", ref)
    assert (res.json["swept"], res.json["kept"]) == ([str(path)], [])
    assert res.json["snapshotted"] == [
        {"path": str(path), "notes": [f"{listed} are in {ref} ({snap[:12]})"]}
    ]
    assert not path.exists()
    # The ref holds every artifact as it was, at the plan dir's place in a checkout.
    for name, data in before.items():
        assert git(home_repo, "show", f"{ref}:docs/plans/{RUN_ID}/{name}") == data.decode().strip()
    assert git(home_repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_forced_sweep_names_every_file_the_plan_dir_snapshot_holds(home_repo):
    """A plan-dir snapshot is laid over the one before: a second leftover of the run
    holding fewer files leaves the ref holding all of them, and the note names what the
    ref holds, not only what was on disk."""
    from helpers.plans import artifact

    ref = f"refs/team-router/plan-dirs/{RUN_ID}"
    half_removed_run(home_repo)
    assert run_cli("sweep", "--force", "--json", cwd=home_repo).code == 0
    again = leftovers(home_repo) / f"{RUN_ID}-again"
    artifact(again / "docs" / "plans" / RUN_ID, "task.md")
    res = run_cli("sweep", "--force", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    snap = git(home_repo, "rev-parse", ref)
    listed = f"the run's artifacts {', '.join(RUN_FILES)}"
    assert res.json["snapshotted"] == [
        {"path": str(again), "notes": [f"{listed} are in {ref} ({snap[:12]})"]}
    ]
    held = git(home_repo, "ls-tree", "-r", "--name-only", ref).splitlines()
    assert held == [f"docs/plans/{RUN_ID}/{f}" for f in RUN_FILES]


def restored_plan_dir(repo: Path) -> dict[str, bytes]:
    """``team-router restore RUN_ID``, then the plan dir it put back in the primary clone."""
    res = run_cli("restore", RUN_ID, "--json", cwd=repo)
    assert res.code == 0, res.out + res.err
    return contents(repo / "docs" / "plans" / RUN_ID)


def test_a_forced_sweep_killed_while_deleting_then_rerun_restores_every_artifact(home_repo):
    """Killed after its snapshot, between two deletions: the rerun snapshots what is left,
    and restore still brings back every artifact the run had, the newest content of each."""
    path = half_removed_run(home_repo)
    before = contents(path / "docs" / "plans" / RUN_ID)
    crashed = run("sweep", "--force", "--json", cwd=home_repo, crash_at="sweep-delete")
    assert crashed.code == CRASHED, crashed.err
    (aside,) = leftovers(home_repo).iterdir()
    left = contents(aside / "docs" / "plans" / RUN_ID)
    assert sorted(left) == sorted(RUN_FILES)[1:]  # the first deletion, and no other
    edited = aside / "docs" / "plans" / RUN_ID / "task.md"
    edited.write_text("# task, edited after the kill\n")
    res = run_cli("sweep", "--force", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert (res.json["swept"], res.json["kept"]) == ([str(path)], [])
    assert list(leftovers(home_repo).iterdir()) == []
    assert restored_plan_dir(home_repo) == {**before, "task.md": b"# task, edited after the kill\n"}


def test_a_second_forced_sweep_restores_the_newest_content_and_every_file(home_repo):
    """The run's artifacts come back in residue, changed by the user and one deleted: restore
    brings the newest content back, and the deleted file too (never lost by a sweep)."""
    path = half_removed_run(home_repo)
    before = contents(path / "docs" / "plans" / RUN_ID)
    assert run_cli("sweep", "--force", "--json", cwd=home_repo).code == 0
    plan = path / "docs" / "plans" / RUN_ID
    for name in RUN_FILES[1:]:
        write(plan / name, before[name].decode())
    write(plan / "research.md", "# research, rewritten\n")
    res = run_cli("sweep", "--force", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert not path.exists()
    assert restored_plan_dir(home_repo) == {**before, "research.md": b"# research, rewritten\n"}


# -- deleting residue: exactly what was judged, never outside it -----------------------------------


def test_a_link_in_residue_goes_and_what_it_points_to_outside_stays(home_repo, tmp_path):
    outside = tmp_path / "outside"
    write(outside / "notes" / "idea.md", "precious\n")
    residue = leftovers(home_repo) / "gone-topic"
    write(residue / "tmp" / "lsp.log", "log\n")
    (residue / "tmp" / "notes").symlink_to(outside / "notes")
    (residue / ".omc" / "idea.md").parent.mkdir(parents=True)
    (residue / ".omc" / "idea.md").symlink_to(outside / "notes" / "idea.md")
    data = sweep(home_repo)
    assert (data["swept"], data["kept"]) == ([str(residue)], [])
    assert not residue.exists()
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == [
        "notes",
        "notes/idea.md",
    ]
    assert (outside / "notes" / "idea.md").read_text() == "precious\n"


def shipped_leftover(path: Path) -> Path:
    """A worktree's leftover holding only a shipped run's plan dir (its pr.md) and residue."""
    plan = path / "docs" / "plans" / "2026-05-01-x"
    for name in ("design.md", "plan.md", "task.md"):
        write(plan / name, f"# {name}\n")
    write(plan / "pr.md", "---\npr: https://example.invalid/pull/1\n---\n")
    write(path / "tmp" / "lsp.log", "log\n")
    return plan


def test_a_removal_stopped_part_way_leaves_the_run_shipped_for_the_next_sweep(home_repo):
    """A shipped run's pr.md goes last: a removal stopped before (a file that cannot be
    deleted) leaves what remains still marked shipped, and the next sweep finishes it
    rather than keeping it as an unshipped run's artifacts."""
    residue = leftovers(home_repo) / "gone-topic"
    plan = shipped_leftover(residue)
    stuck = plan / "task.md"
    if subprocess.run(["chattr", "+i", str(stuck)], check=False).returncode != 0:
        pytest.skip("chattr +i is not possible on this filesystem")
    try:
        first = run_cli("sweep", "--json", cwd=home_repo)
    finally:  # wherever the sweep left it (moved aside)
        for path in leftovers(home_repo).glob(f"*/{stuck.relative_to(residue)}"):
            subprocess.run(["chattr", "-i", str(path)], check=True)
    assert first.code == 1, first.out + first.err
    [(failed_path, why)] = [(f["path"], f["error"]) for f in first.json["failed"]]
    assert failed_path == str(residue) and why.startswith("Operation not permitted: ")
    (aside,) = leftovers(home_repo).iterdir()
    assert sorted(p.name for p in (aside / plan.relative_to(residue)).iterdir()) == [
        "pr.md",
        "task.md",
    ]
    again = sweep(home_repo)
    assert (again["swept"], again["kept"]) == ([str(residue)], [])
    assert list(leftovers(home_repo).iterdir()) == []


def test_a_sweep_killed_while_deleting_is_finished_by_the_next(home_repo):
    """SIGKILL while residue is being deleted: the next sweep deletes the rest and keeps
    everything it kept before, untouched."""
    base = leftovers(home_repo)
    for i in range(240):
        if i % 3 == 0:
            shipped_leftover(base / f"t{i:03d}")
        else:
            write(base / f"t{i:03d}" / "tmp" / "session.json", "{}\n")
            write(base / f"t{i:03d}" / ".omc" / "state" / "s.json", "{}\n")
    for i in range(0, 240, 40):
        write(base / f"t{i:03d}" / "src" / "draft.py", f"work {i}\n")
    kept = sorted(f"t{i:03d}" for i in range(0, 240, 40))
    proc = spawn("sweep", "--json", cwd=home_repo, new_group=True)
    try:
        while proc.poll() is None and not any(n.startswith(SWEEPING) for n in os.listdir(base)):
            time.sleep(0.001)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.communicate()
    if proc.returncode != -signal.SIGKILL:
        pytest.skip("the sweep was over before it could be killed")
    assert len(os.listdir(base)) > len(kept)  # killed part way: residue is left
    again = sweep(home_repo)
    assert [Path(k["path"]).name for k in again["kept"]] == kept
    assert sorted(os.listdir(base)) == kept
    for i in range(0, 240, 40):
        assert (base / f"t{i:03d}" / "src" / "draft.py").read_text() == f"work {i}\n"


def test_a_mount_inside_residue_keeps_the_leftover_and_nothing_in_it_is_deleted(
    home_repo, tmp_path
):
    """A folder bound into a leftover's tmp/ holds files that live elsewhere: the leftover
    is kept, its mount point named, and none of those files is deleted."""
    precious = tmp_path / "precious"
    write(precious / "notes.md", "keep\n")
    write(precious / "deep" / "draft.md", "keep too\n")
    gone = leftovers(home_repo) / "gone"
    write(gone / "tmp" / "lsp.log", "log\n")
    write(leftovers(home_repo) / "residue" / "tmp" / "x", "x\n")
    with bind_mounted(precious, gone / "tmp" / "bound", within=leftovers(home_repo)):
        data = sweep(home_repo)
        assert data["swept"] == [str(leftovers(home_repo) / "residue")]
        assert data["failed"] == []
        assert data["kept"] == [
            {
                "path": str(gone),
                "reason": "unexpected-files",
                "files": ["tmp/bound/ (a filesystem is mounted here)"],
            }
        ]
        assert (gone / "tmp" / "lsp.log").read_text() == "log\n"
    assert (precious / "notes.md").read_text() == "keep\n"
    assert (precious / "deep" / "draft.md").read_text() == "keep too\n"


def test_work_written_into_residue_while_it_is_deleted_stays(home_repo, monkeypatch):
    """A process still inside the moved-aside directory writes while the removal runs: only
    what was judged is deleted; the new file stays, and the directory is named as failed."""
    residue = leftovers(home_repo) / "gone-topic"
    write(residue / "tmp" / "lsp.log", "log\n")
    remove = sweep_module.remove_listed

    def with_a_writer(path, files, folders, **options):
        write(path / "src" / "draft.py", "written during the removal\n")
        return remove(path, files, folders, **options)

    monkeypatch.setattr(sweep_module, "remove_listed", with_a_writer)
    res = run_cli("sweep", "--json", cwd=home_repo)
    assert res.code == 1, res.out + res.err
    assert res.json["swept"] == []
    (aside,) = leftovers(home_repo).iterdir()
    assert aside.name.startswith(SWEEPING)
    assert sorted(str(p.relative_to(aside)) for p in aside.rglob("*")) == ["src", "src/draft.py"]
    assert (aside / "src" / "draft.py").read_text() == "written during the removal\n"
    [(failed_path, why)] = [(f["path"], f["error"]) for f in res.json["failed"]]
    assert failed_path == str(residue) and "Directory not empty" in why, why
    again = run_cli("sweep", "--json", cwd=home_repo)  # the next sweep gives it its name back
    assert [(k["path"], k["files"]) for k in again.json["kept"]] == [
        (str(residue), ["src/draft.py"])
    ]
    assert (residue / "src" / "draft.py").read_text() == "written during the removal\n"


@pytest.mark.parametrize("how", ["in place", "replaced"])
def test_an_artifact_rewritten_after_its_snapshot_is_not_deleted(home_repo, monkeypatch, how):
    """A process inside the moved-aside directory rewrites a run's artifact after the forced
    sweep's snapshot took it, before its deletion: the newer content is never deleted (the
    snapshot holds the older). The sweep fails naming it; the next snapshots and sweeps it,
    and restore brings back the newest content of every artifact."""
    path = half_removed_run(home_repo)
    before = contents(path / "docs" / "plans" / RUN_ID)
    remove = sweep_module.remove_listed
    newer = "# task, rewritten while swept\n"

    def with_a_writer(aside, files, folders, **options):
        task = aside / "docs" / "plans" / RUN_ID / "task.md"
        if how == "in place":
            task.write_text(newer)
        else:
            write(task.with_name(".task.md.swp"), newer)
            os.replace(task.with_name(".task.md.swp"), task)
        return remove(aside, files, folders, **options)

    monkeypatch.setattr(sweep_module, "remove_listed", with_a_writer)
    res = run_cli("sweep", "--force", "--json", cwd=home_repo)
    assert res.code == 1, res.out + res.err
    assert res.json["swept"] == []
    (aside,) = leftovers(home_repo).iterdir()
    assert (aside / "docs" / "plans" / RUN_ID / "task.md").read_text() == newer
    [(failed_path, why)] = [(f["path"], f["error"]) for f in res.json["failed"]]
    assert failed_path == str(path), res.json
    assert why == (f"changed since it was judged; not deleted: {aside}/docs/plans/{RUN_ID}/task.md")
    monkeypatch.setattr(sweep_module, "remove_listed", remove)
    again = run_cli("sweep", "--force", "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    assert (again.json["swept"], again.json["kept"]) == ([str(path)], [])
    assert list(leftovers(home_repo).iterdir()) == []
    assert restored_plan_dir(home_repo) == {**before, "task.md": newer.encode()}


def test_a_leftover_swapped_for_a_link_after_it_was_judged_is_kept_under_its_name(
    home_repo, monkeypatch, tmp_path
):
    """Judged residue, then replaced by a link to a folder elsewhere (holding only tmp/)
    before its removal: the link is kept where it was, as one found at judging is, and
    nothing it points to is read as residue or deleted."""
    residue = leftovers(home_repo) / "gone-topic"
    write(residue / "tmp" / "lsp.log", "log\n")
    outside = tmp_path / "outside"
    write(outside / "tmp" / "notes.md", "precious\n")
    claimed = sweep_module.claimed_names

    def then_swapped(common_dir):
        (residue / "tmp" / "lsp.log").unlink()
        (residue / "tmp").rmdir()
        residue.rmdir()
        residue.symlink_to(outside)
        return claimed(common_dir)

    monkeypatch.setattr(sweep_module, "claimed_names", then_swapped)
    data = sweep(home_repo)
    assert (data["swept"], data["failed"]) == ([], [])
    assert data["kept"] == [{"path": str(residue), "reason": "symlink", "files": []}]
    assert os.listdir(leftovers(home_repo)) == ["gone-topic"]
    assert os.readlink(residue) == str(outside)
    assert (outside / "tmp" / "notes.md").read_text() == "precious\n"


def test_residue_with_a_name_long_in_bytes_is_swept(home_repo):
    """A name of 120 two-byte characters is 240 bytes: moved aside under a name cut at
    the filesystem's 255 bytes, not 255 characters, it is swept like any other."""
    name = "é" * 120
    write(leftovers(home_repo) / name / "tmp" / "lsp.log", "log\n")
    data = sweep(home_repo)
    assert (data["swept"], data["kept"], data["failed"]) == (
        [str(leftovers(home_repo) / name)],
        [],
        [],
    )
    assert list(leftovers(home_repo).iterdir()) == []


def test_two_leftovers_alike_up_to_the_cut_aside_name_are_both_swept(home_repo, monkeypatch):
    """Two names alike in their first 230 bytes: cut to 255 bytes, their aside names differ
    (a digest of the whole name ends them), so the second is moved aside and swept while
    the first, which could not be deleted, still holds its own; the next sweep takes that."""
    base = leftovers(home_repo)
    first, second = base / f"{'l' * 230}-a", base / f"{'l' * 230}-b"
    write(first / "tmp" / "lsp.log", "log\n")
    stuck = first / "tmp" / "stuck.log"
    write(stuck, "log\n")
    write(second / "tmp" / "lsp.log", "log\n")
    if subprocess.run(["chattr", "+i", str(stuck)], check=False).returncode != 0:
        pytest.skip("chattr +i is not possible on this filesystem")
    # One at a time, in name order: the first is aside (and stays) when the second moves.
    monkeypatch.setattr(sweep_module, "REMOVING", 1)
    try:
        res = run_cli("sweep", "--json", cwd=home_repo)
    finally:  # wherever the sweep left it (moved aside)
        for path in base.glob("*/tmp/stuck.log"):
            subprocess.run(["chattr", "-i", str(path)], check=True)
    assert res.code == 1, res.out + res.err
    assert [(f["path"], f["error"].split(":")[0]) for f in res.json["failed"]] == [
        (str(first), "Operation not permitted")
    ]
    assert (res.json["swept"], res.json["kept"]) == ([str(second)], [])
    (aside,) = base.iterdir()  # the first, under its aside name cut at 255 bytes
    assert aside.name.startswith(SWEEPING) and len(os.fsencode(aside.name)) == 255
    assert sorted(p.name for p in (aside / "tmp").iterdir()) == ["stuck.log"]
    again = sweep(home_repo)
    assert (again["swept"], again["kept"], again["failed"]) == ([str(aside)], [], [])
    assert list(base.iterdir()) == []


# -- removing beside the judging ---------------------------------------------------------------


def test_a_filesystem_mounted_into_residue_after_it_was_judged_keeps_it_untouched(
    home_repo, tmp_path, monkeypatch
):
    """A folder bound into residue between its judgement and its removal: the second look
    names the mount point, and the leftover is kept under its own name, nothing in it or
    in what is mounted deleted (it was refused part-way as a failure, and left aside)."""
    import contextlib

    precious = tmp_path / "precious"
    write(precious / "notes.md", "keep\n")
    gone = leftovers(home_repo) / "gone"
    write(gone / "tmp" / "lsp.log", "log\n")
    judged = sweep_module.claimed_names
    mounts = contextlib.ExitStack()

    def then_a_mount(common_dir):
        mounts.enter_context(bind_mounted(precious, gone / "tmp" / "bound", within=tmp_path))
        return judged(common_dir)

    monkeypatch.setattr(sweep_module, "claimed_names", then_a_mount)
    with mounts:
        data = sweep(home_repo)
        assert (data["swept"], data["failed"]) == ([], [])
        assert data["kept"] == [
            {
                "path": str(gone),
                "reason": "unexpected-files",
                "files": ["tmp/bound/ (a filesystem is mounted here)"],
            }
        ]
        assert (gone / "tmp" / "lsp.log").read_text() == "log\n"
        assert (gone / "tmp" / "bound" / "notes.md").read_text() == "keep\n"
    assert (precious / "notes.md").read_text() == "keep\n"


def test_a_folder_unreadable_by_the_time_residue_is_removed_keeps_it(home_repo, monkeypatch):
    """The second look, through the folders' own descriptors, never reads an unreadable
    folder as empty: the leftover is kept, named, and nothing in it is deleted."""
    import contextlib

    gone = leftovers(home_repo) / "gone"
    write(gone / "tmp" / "lsp.log", "log\n")
    write(gone / "tmp" / "cache" / "clone" / "work.py", "precious\n")
    judged = sweep_module.claimed_names
    locked = contextlib.ExitStack()

    def then_unreadable(common_dir):  # the removals' threads start after this, as locked
        locked.enter_context(unreadable(gone.parent / f"{gone.name}" / "tmp" / "cache"))
        return judged(common_dir)

    monkeypatch.setattr(sweep_module, "claimed_names", then_unreadable)
    with locked:
        data = sweep(home_repo)
    assert (data["swept"], data["failed"]) == ([], [])
    assert [(k["path"], k["files"]) for k in data["kept"]] == [
        (str(gone), ["tmp/cache/ (unreadable: Permission denied)"])
    ]
    assert (gone / "tmp" / "lsp.log").read_text() == "log\n"
    assert (gone / "tmp" / "cache" / "clone" / "work.py").read_text() == "precious\n"


def test_many_leftovers_are_removed_while_the_next_are_judged_with_the_same_verdicts(
    home_repo, tmp_path
):
    """More leftovers than are judged at once: each batch's residue goes while the next is
    judged; what is kept, what is swept and what a link points to are as for a few."""
    outside = tmp_path / "outside"
    write(outside / "idea.md", "precious\n")
    base = leftovers(home_repo)
    count = 2 * sweep_module.JUDGED_AT_ONCE + 30
    for i in range(count):
        write(base / f"t{i:03d}" / "tmp" / "session.json", "{}\n")
    for i in range(7, count, 60):
        write(base / f"t{i:03d}" / "src" / "draft.py", f"work {i}\n")
    (base / f"t{count - 1:03d}" / ".omc").mkdir()
    (base / f"t{count - 1:03d}" / ".omc" / "idea.md").symlink_to(outside / "idea.md")
    kept = [f"t{i:03d}" for i in range(7, count, 60)]
    data = sweep(home_repo)
    assert [(Path(k["path"]).name, k["files"]) for k in data["kept"]] == [
        (name, ["src/draft.py"]) for name in kept
    ]
    assert data["swept"] == [
        str(base / f"t{i:03d}") for i in range(count) if f"t{i:03d}" not in kept
    ]
    assert sorted(os.listdir(base)) == kept
    assert (outside / "idea.md").read_text() == "precious\n"
