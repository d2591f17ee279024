"""One writer per topic: real parallel processes, and the ``locked`` refusal."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from helpers.faults import argv, finish, git_then, git_wrapper, run, run_all, spawn, wait_until_open
from helpers.repos import branches, commit, git, make_repo, run_cli, status, worktree_paths, write
from helpers.topics import merged_in_secondary

from router.create.creation import REPO_LOCK
from router.topic import state

ID = "2026-05-01-add-thing"


def _common(repo):
    return repo / ".git"


def test_two_processes_creating_the_same_topic_end_with_one_worktree(home_repo):
    args = ("new", "Add thing", "--date", "2026-05-01", "--json")
    first, second = run_all([args, args], cwd=home_repo)
    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert first.json["id"] == second.json["id"] == ID
    assert sorted([first.json["home"]["status"], second.json["home"]["status"]]) == [
        "created",
        "existing",
    ]
    worktree = str(home_repo / ".claude/worktrees" / ID)
    assert worktree_paths(home_repo).count(worktree) == 1
    assert len(worktree_paths(home_repo)) == 2
    assert branches(home_repo) == [ID, "main"]
    assert status(home_repo) == ""


def test_two_processes_with_different_descriptions_of_one_slug_get_two_topics(home_repo):
    first, second = run_all(
        [
            ("new", "Add thing", "--date", "2026-05-01", "--json"),
            ("new", "add THING!", "--date", "2026-05-01", "--json"),
        ],
        cwd=home_repo,
    )
    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert sorted([first.json["id"], second.json["id"]]) == [ID, f"{ID}-2"]
    assert {first.json["home"]["status"], second.json["home"]["status"]} == {"created"}
    assert len(worktree_paths(home_repo)) == 3


def test_six_different_topics_created_at_once_all_succeed(home_repo):
    names = [f"Topic number {n}" for n in range(1, 7)]
    results = run_all([("new", n, "--date", "2026-05-01", "--json") for n in names], cwd=home_repo)
    assert [r.code for r in results] == [0] * 6, [r.err for r in results]
    ids = sorted(r.json["id"] for r in results)
    assert ids == [f"2026-05-01-topic-number-{n}" for n in range(1, 7)]
    assert {r.json["home"]["status"] for r in results} == {"created"}
    registered = worktree_paths(home_repo)
    for topic_id in ids:
        assert registered.count(str(home_repo / ".claude/worktrees" / topic_id)) == 1
        record = state.read_record(_common(home_repo), topic_id)
        assert record is not None and "record" in record.steps
        assert (home_repo / ".claude/worktrees" / topic_id / "docs/plans" / topic_id).is_dir()
    exclude = (home_repo / ".git/info/exclude").read_text().splitlines()
    assert exclude.count("/.claude/worktrees/") == 1
    assert exclude.count("/docs/plans/") == 1
    assert status(home_repo) == ""


def test_two_worktrees_runs_of_one_multi_repo_topic_give_each_repo_one_worktree(
    workspace, home_repo
):
    api = make_repo(workspace, "api")
    res = run_cli("new", "Add thing", "--date", "2026-05-01", "--json", cwd=home_repo)
    plan = res.json["plan_dir"]
    write(
        home_repo / ".claude/worktrees" / ID / "docs/plans" / ID / "repos.md",
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {home_repo}\n\n"
        f"## Additional repos\n- **name:** api\n  **path:** {api}\n",
    )
    args = ("worktrees", plan, "--json")
    first, second = run_all([args, args], cwd=home_repo)
    assert (first.code, second.code) == (0, 0), first.err + second.err
    statuses = sorted(
        next(r["status"] for r in p.json["repos"] if r["name"] == "api") for p in (first, second)
    )
    assert statuses == ["created", "existing"]
    assert worktree_paths(api).count(str(api / ".claude/worktrees" / ID)) == 1


def test_a_held_lock_makes_new_refuse_locked_naming_the_holder_pid(home_repo):
    with state.held_lock(_common(home_repo), ID):
        res = run("new", "Add thing", "--id", ID, "--wait", "0.5", "--json", cwd=home_repo)
    assert res.code == 1, res.err
    assert res.json["error"]["code"] == "locked"
    assert f"process {os.getpid()}" in res.json["error"]["message"]
    assert "Traceback" not in res.err
    # Refused before anything: no worktree, no branch, the main tree untouched.
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert branches(home_repo) == ["main"]
    assert status(home_repo) == ""


def test_a_held_lock_makes_worktrees_refuse_locked(home_repo):
    assert run_cli("new", "Add thing", "--id", ID, cwd=home_repo).code == 0
    record = (_common(home_repo) / "team-router/topics" / f"{ID}.json").read_text()
    with state.held_lock(_common(home_repo), ID):
        res = run_cli("worktrees", ID, "--wait", "0.2", "--json", cwd=home_repo)
    assert res.code == 1
    assert res.json["error"]["code"] == "locked"
    assert str(os.getpid()) in res.json["error"]["message"]
    assert (_common(home_repo) / "team-router/topics" / f"{ID}.json").read_text() == record


def test_a_second_process_waits_for_the_lock_and_then_proceeds(home_repo):
    acquired = threading.Event()

    def hold_briefly() -> None:
        with state.held_lock(_common(home_repo), ID):
            acquired.set()
            time.sleep(1.0)

    holder = threading.Thread(target=hold_briefly)
    holder.start()
    acquired.wait()
    started = time.monotonic()
    res = run("new", "Add thing", "--id", ID, "--wait", "20", "--json", cwd=home_repo)
    holder.join()
    assert res.code == 0, res.err
    assert res.json["home"]["status"] == "created"
    assert time.monotonic() - started >= 0.5


def test_a_wait_that_is_not_a_number_gives_up_at_once_instead_of_waiting_forever(home_repo):
    with state.held_lock(_common(home_repo), ID):
        proc = spawn("new", "Add thing", "--id", ID, "--wait", "nan", "--json", cwd=home_repo)
        try:
            res = finish(proc, timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "locked"


def test_a_killed_run_leaves_no_lock_that_blocks_the_next_one(home_repo):
    crashed = run("new", "Add thing", "--id", ID, "--json", cwd=home_repo, crash_at="add")
    assert crashed.code == 137
    owner = state.read_owner(state.lock_path(_common(home_repo), ID))
    assert owner is not None and owner.stale  # the owner file survives the kill ...
    res = run("new", "Add thing", "--id", ID, "--wait", "0.5", "--json", cwd=home_repo)
    assert res.code == 0, res.err  # ... but the kernel dropped the lock itself
    assert state.read_owner(state.lock_path(_common(home_repo), ID)) is None


def test_a_locked_refusal_never_names_the_dead_pid_a_killed_run_left_behind(home_repo):
    crashed = run("new", "Add thing", "--id", ID, "--json", cwd=home_repo, crash_at="add")
    assert crashed.code == 137
    lock = state.lock_path(_common(home_repo), ID)
    dead = state.read_owner(lock)
    assert dead is not None and dead.stale
    # The next run has the lock but has not written its own owner file yet.
    fd = state.acquire(lock, 0)
    try:
        res = run("new", "Add thing", "--id", ID, "--wait", "0.2", "--json", cwd=home_repo)
    finally:
        os.close(fd)
    assert (res.code, res.json["error"]["code"]) == (1, "locked"), res.out + res.err
    message = res.json["error"]["message"]
    assert str(dead.pid) not in message
    assert message == (
        f"{ID} is locked by another team-router run; wait for it to finish or pass a longer --wait"
    )
    assert worktree_paths(home_repo) == [str(home_repo)]  # the crashed run made no worktree


def test_a_held_repo_lock_makes_new_refuse_locked_and_leaves_nothing_behind(home_repo):
    """The per-repo critical section (``git worktree add``) is serialized across topics too."""
    with state.held_lock(_common(home_repo), REPO_LOCK):
        res = run("new", "Add thing", "--id", ID, "--wait", "0.5", "--json", cwd=home_repo)
    assert res.code == 1, res.err
    assert res.json["error"]["code"] == "locked"
    assert str(os.getpid()) in res.json["error"]["message"]
    # The claim this run made is rolled back: no directory, no registration, no branch.
    assert not (home_repo / ".claude/worktrees" / ID).exists()
    assert worktree_paths(home_repo) == [str(home_repo)]
    assert branches(home_repo) == ["main"]
    assert git(home_repo, "status", "--porcelain") == ""
    again = run("new", "Add thing", "--id", ID, "--json", cwd=home_repo)
    assert again.code == 0 and again.json["home"]["status"] == "created"


def test_worktrees_gives_up_on_a_held_repo_lock_after_its_own_wait(home_repo):
    assert run("new", "Add thing", "--id", ID, "--json", cwd=home_repo).code == 0
    started = time.monotonic()
    with state.held_lock(_common(home_repo), REPO_LOCK):
        res = run("worktrees", ID, "--wait", "0.5", "--json", cwd=home_repo)
    assert time.monotonic() - started < 10  # --wait 0.5, not the default 30 s
    assert (res.code, res.json["error"]["code"]) == (1, "locked")
    assert (home_repo / ".claude/worktrees" / ID / "docs/plans" / ID).is_dir()
    assert len(worktree_paths(home_repo)) == 2


# -- every mutating command holds the topic's lock --------------------------------------

MUTATING = {
    "new": ("new", "Add thing", "--id", ID),
    "worktrees": ("worktrees", ID),
    "teardown": ("teardown", ID),
    "teardown --integrate --force": ("teardown", ID, "--integrate", "--force"),
    "restore": ("restore", ID),
    "local-state": ("local-state", ID),
    "record verdict": ("record", "verdict", ID, "APPROVE"),
    "record review": ("record", "review", ID, "PASS"),
    "record pr": ("record", "pr", ID, "https://github.com/acme/web/pull/7"),
    "record temp": ("record", "temp", ID, "{tmp}/scratch"),
    "pr-cleanup": ("pr-cleanup", ID),
    "pr-cleanup --abandon": ("pr-cleanup", ID, "--abandon", "--yes"),
}


@pytest.mark.parametrize("name", sorted(MUTATING))
def test_each_mutating_command_refuses_locked_while_another_process_holds_the_topic(
    home_repo, tmp_path, name
):
    from helpers.topics import snapshot_of

    made = run_cli("new", "Add thing", "--id", ID, "--json", cwd=home_repo)
    assert made.code == 0
    worktree = Path(made.json["home"]["worktree"])
    commit(worktree, "work.py", "w = 1\n", "work in progress")
    write(worktree / "draft.txt", "not committed\n")
    args = [a.format(tmp=tmp_path / "tmp") for a in MUTATING[name]]
    before = snapshot_of(home_repo), snapshot_of(worktree), _state_files(home_repo)
    with state.held_lock(_common(home_repo), ID):
        res = run_cli(*args, "--wait", "0.3", "--json", cwd=home_repo)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "locked"
    assert f"process {os.getpid()}" in res.json["error"]["message"]
    # Nothing changed anywhere: refs, worktrees, files, plan dir, records.
    assert (snapshot_of(home_repo), snapshot_of(worktree), _state_files(home_repo)) == before


def test_doctor_repair_refuses_locked_while_another_process_holds_the_topic(home_repo):
    assert run_cli("new", "Add thing", "--id", ID, cwd=home_repo).code == 0
    shutil.rmtree(home_repo / ".claude/worktrees" / ID)  # a repairable finding of this topic
    with state.held_lock(_common(home_repo), ID):
        res = run_cli("doctor", "--repair", "--wait", "0.3", "--json", cwd=home_repo)
    assert res.code == 1
    assert res.json["error"]["code"] == "locked"
    assert str(home_repo / ".claude/worktrees" / ID) in worktree_paths(home_repo)


def _gated_git(bin_dir: Path, when: str) -> tuple[dict[str, str], Path, Path]:
    """A ``git`` that touches ``started`` before a ``when`` command, then waits for ``go``."""
    started, go = bin_dir / "started", bin_dir / "go"
    body = (
        f"touch '{started}'\nwhile [ ! -e '{go}' ]; do sleep 0.02; done\nexec \"$REAL_GIT\" \"$@\""
    )
    return git_wrapper(bin_dir, when, body), started, go


def _wait_for(path: Path, proc) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, finish(proc)
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_a_teardown_that_waited_for_another_teardown_of_the_topic_finds_it_done(
    home_repo, tmp_path
):
    """The second run resolved the topic before the lock; under it, it sees what the first did."""
    made = run_cli("new", "Add thing", "--id", ID, "--json", cwd=home_repo)
    worktree = Path(made.json["home"]["worktree"])
    env, started, go = _gated_git(tmp_path / "bin", "worktree remove")
    first = spawn("teardown", ID, "--json", cwd=home_repo, env=env)
    _wait_for(started, first)
    second = spawn("teardown", ID, "--json", cwd=home_repo)
    wait_until_open(second.pid, state.lock_path(_common(home_repo), ID))  # waiting for it
    go.touch()
    one, two = finish(first), finish(second)
    assert one.code == 0, one.out + one.err
    assert two.code == 0, two.out + two.err
    assert not worktree.exists()
    assert branches(home_repo) == ["main"]


def _state_files(repo: Path) -> dict[str, bytes]:
    root = _common(repo) / "team-router"
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".pid" and p.name != f"{ID}.lock"
    }


def test_two_threads_of_one_process_exclude_each_other_on_a_record_lock(tmp_path):
    # A repo's worker threads update records concurrently: each acquire is its own holder.
    path = tmp_path / "record.lock"
    first = state.acquire(path, 0)
    try:
        with pytest.raises(state.LockBusy):
            state.acquire(path, 0.1)
        got: list[int] = []
        waiter = threading.Thread(target=lambda: got.append(state.acquire(path, 5)))
        waiter.start()
        time.sleep(0.2)
        assert got == []  # still waiting for the first holder
    finally:
        os.close(first)
    waiter.join(5)
    assert len(got) == 1
    os.close(got[0])


def test_a_run_that_finishes_while_another_chooses_the_id_leaves_it_the_same_id(
    home_repo, tmp_path
):
    # The second run looks for the id's record (none yet), then for its branch
    # and path: the first run finishes in between. It made them, so the id
    # is still this description's, never "taken" (which chose ...-2). A repo whose
    # config includes another file is asked through `git show-ref` (a plain one is
    # read from its ref files, with no process to time the other run against).
    git(home_repo, "config", "include.path", "team-router-test-extra.cfg")
    args = ("new", "Add thing", "--date", "2026-05-01", "--json")
    once = tmp_path / "once"
    other = " ".join(f"'{a}'" for a in argv(*args, cwd=home_repo))
    then = f"[ -e '{once}' ] || {{ touch '{once}'; {other} > '{tmp_path}/other.json'; }}"
    env = git_then(tmp_path / "bin", f" show-ref --verify --quiet -- refs/heads/{ID} ", then)
    proc = run(*args, cwd=home_repo, env=env)
    assert proc.code == 0, proc.err
    assert proc.json["id"] == ID and proc.json["home"]["status"] == "existing"
    assert (tmp_path / "other.json").read_text() and once.exists()
    assert branches(home_repo) == [ID, "main"]
    assert len(worktree_paths(home_repo)) == 2


def test_a_busy_record_lock_refuses_in_the_shape_of_a_busy_topic_lock(tmp_path):
    """One "take this lock or refuse": the same code and message shape for both locks."""
    from router.errors import Refusal

    record = state.TopicRecord(id=ID, repo="home", branch=ID)
    state.write_record(tmp_path, record)
    before = state.record_path(tmp_path, ID).read_bytes()
    lock = state.lock_path(tmp_path, f"record-{ID}")
    lock.parent.mkdir(parents=True, exist_ok=True)
    held = state.acquire(lock, 0)
    try:
        with pytest.raises(Refusal) as on_record:
            state.update_record(tmp_path, ID, lambda r: r.with_step("x"), wait=0.1)
    finally:
        os.close(held)
    with (
        state.held_lock(tmp_path, ID),
        pytest.raises(Refusal) as on_topic,
        state.held_lock(tmp_path, ID, wait=0.1),
    ):
        pass
    assert (on_record.value.code, on_topic.value.code) == ("locked", "locked")
    shape = (
        r" is locked by (process \d+|another [a-z -]+); "
        r"wait for it to finish or pass a longer --wait"
    )
    record_rest = on_record.value.message.removeprefix(f"the record of {ID} in {tmp_path}")
    assert re.fullmatch(shape, record_rest), on_record.value.message
    topic_rest = on_topic.value.message.removeprefix(ID)
    assert re.fullmatch(shape, topic_rest), on_topic.value.message
    assert f"process {os.getpid()}" in topic_rest
    assert state.record_path(tmp_path, ID).read_bytes() == before  # nothing written


# -- a secondary repo's commands take the lock at the topic's home ------------------------


def _everything(topic) -> tuple[object, ...]:
    from helpers.topics import snapshot_of

    api, api_wt = topic.repos["api"], topic.worktrees["api"]
    return (
        snapshot_of(topic.home),
        snapshot_of(topic.worktrees["home"]),
        snapshot_of(api),
        snapshot_of(api_wt),
        git(api, "ls-remote", "origin"),
        _state_files(topic.home),
        _state_files(api),
    )


FROM_A_SECONDARY = {
    "worktrees": ("worktrees", ID),
    "teardown": ("teardown", ID),
    "teardown --integrate --force": ("teardown", ID, "--integrate", "--force"),
    "restore": ("restore", ID),
    "local-state": ("local-state", ID),
    "record verdict": ("record", "verdict", ID, "APPROVE"),
    "record pr": ("record", "pr", ID, "https://github.com/acme/web/pull/7"),
    "record temp": ("record", "temp", ID, "{tmp}/scratch"),
    "pr-cleanup": ("pr-cleanup", ID, "--delete-remote"),
    "pr-cleanup --abandon": ("pr-cleanup", ID, "--abandon", "--yes"),
}


@pytest.mark.parametrize("where", ["secondary primary", "secondary worktree"])
@pytest.mark.parametrize("name", sorted(FROM_A_SECONDARY))
def test_a_command_run_in_a_secondary_waits_for_the_topic_lock_at_the_home(
    workspace, tmp_path, name, where
):
    topic = merged_in_secondary(workspace, ID)
    cwd = topic.repos["api"] if where == "secondary primary" else topic.worktrees["api"]
    args = [a.format(tmp=tmp_path / "tmp") for a in FROM_A_SECONDARY[name]]
    before = _everything(topic)
    with state.held_lock(_common(topic.home), ID):
        res = run_cli(*args, "--wait", "0.3", "--json", cwd=cwd)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "locked", res.json
    assert f"process {os.getpid()}" in res.json["error"]["message"]
    assert _everything(topic) == before


def test_pr_cleanup_in_a_secondary_refuses_locked_while_a_process_holds_the_topic_at_home(
    workspace,
):
    """A real pr-cleanup process in the secondary, while this process holds the home's lock
    (as a teardown or record run from the home does): it waits, gives up, changes nothing."""
    topic = merged_in_secondary(workspace, ID)
    api, api_wt = topic.repos["api"], topic.worktrees["api"]
    before = _everything(topic)
    with state.held_lock(_common(topic.home), ID):
        in_primary = run("pr-cleanup", ID, "--wait", "0.5", "--json", cwd=api)
        in_worktree = run("pr-cleanup", "--wait", "0.5", "--json", cwd=api_wt)
    for res in (in_primary, in_worktree):
        assert res.code == 1, res.out + res.err
        assert res.json["error"]["code"] == "locked"
        assert f"locked by process {os.getpid()}" in res.json["error"]["message"]
        assert "Traceback" not in res.err
    assert _everything(topic) == before
    # The home's run is over: the same command now cleans the secondary up.
    done = run("pr-cleanup", ID, "--json", cwd=api)
    assert done.code == 0, done.out + done.err
    assert not api_wt.exists() and ID not in branches(api)


def test_doctor_repair_in_a_secondary_waits_for_the_topic_lock_at_the_home(workspace):
    from helpers.topics import multi_topic

    topic = multi_topic(workspace, ("api",), topic_id=ID)
    api, api_wt = topic.repos["api"], topic.worktrees["api"]
    shutil.rmtree(api_wt)  # a repairable finding of the topic, in the secondary
    before = worktree_paths(api), branches(api), _state_files(api)
    with state.held_lock(_common(topic.home), ID):
        res = run_cli("doctor", "--repair", "--wait", "0.3", "--json", cwd=api)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "locked"
    assert f"process {os.getpid()}" in res.json["error"]["message"]
    assert (worktree_paths(api), branches(api), _state_files(api)) == before
    assert str(api_wt) in worktree_paths(api)


def test_restore_in_a_secondary_waits_for_the_home_lock_even_when_the_home_record_is_unreadable(
    workspace,
):
    from helpers.topics import multi_topic

    topic = multi_topic(workspace, ("api",), topic_id=ID)
    api, api_wt = topic.repos["api"], topic.worktrees["api"]
    write(api_wt / "draft.txt", "not committed\n")
    gone = run_cli("teardown", ID, "--force", "--json", cwd=topic.home)
    assert gone.code == 0, gone.out + gone.err
    assert not api_wt.exists()
    # The home record no longer says which repos the topic had: restore falls back to
    # the snapshot the secondary holds, and must still lock the topic at its home.
    (_common(topic.home) / "team-router/topics" / f"{ID}.json").write_text("{ not json")
    before = worktree_paths(api), branches(api)
    with state.held_lock(_common(topic.home), ID):
        res = run_cli("restore", ID, "--wait", "0.3", "--json", cwd=api)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "locked"
    assert (worktree_paths(api), branches(api)) == before
    again = run_cli("restore", ID, "--json", cwd=api)
    assert again.code == 0, again.out + again.err
    [restored] = again.json["repos"]
    assert (Path(restored["worktree"]) / "draft.txt").read_text() == "not committed\n"


def test_new_with_the_id_of_a_topic_this_repo_is_a_secondary_of_answers_at_the_home(workspace):
    """``new --id`` in a secondary names a topic whose home is elsewhere: it takes the lock
    there and answers as the home does, never making the secondary a second home."""
    from helpers.topics import multi_topic, snapshot_of

    topic = multi_topic(workspace, ("api",), topic_id=ID)
    api, api_wt = topic.repos["api"], topic.worktrees["api"]
    record = (_common(api) / "team-router/topics" / f"{ID}.json").read_bytes()
    before = snapshot_of(api), snapshot_of(api_wt)
    with state.held_lock(_common(topic.home), ID):
        res = run_cli("new", "Add thing", "--id", ID, "--wait", "0.3", "--json", cwd=api_wt)
    assert (res.code, res.json["error"]["code"]) == (1, "locked"), res.out + res.err
    assert (snapshot_of(api), snapshot_of(api_wt)) == before
    res = run_cli("new", "Add thing", "--id", ID, "--json", cwd=api_wt)
    assert res.code == 0, res.out + res.err
    assert res.json["home"]["repo"] == str(topic.home)
    assert res.json["home"]["status"] == "existing"
    assert res.json["plan_dir"] == str(topic.plan_dir)
    assert not (api_wt / "docs/plans" / ID).exists()
    assert (_common(api) / "team-router/topics" / f"{ID}.json").read_bytes() == record


def test_restore_of_a_reused_checkouts_branch_takes_its_topics_lock(home_repo, workspace):
    # `new` reused the user's linked worktree on feature-x; teardown --force kept its dirt
    # in feature-x's snapshot. Restoring it by branch name is restoring that topic.
    checkout = workspace / "feature-wt"
    git(home_repo, "worktree", "add", "-q", "-b", "feature-x", str(checkout))
    assert run_cli("new", "Add thing", "--id", ID, cwd=checkout).code == 0
    write(checkout / "draft.txt", "not committed\n")
    gone = run_cli("teardown", ID, "--force", "--remove-reused", "--json", cwd=home_repo)
    assert gone.code == 0, gone.out + gone.err
    assert not checkout.exists()
    before = worktree_paths(home_repo), branches(home_repo)
    with state.held_lock(_common(home_repo), ID):
        res = run_cli("restore", "feature-x", "--wait", "0.3", "--json", cwd=home_repo)
    assert res.code == 1, res.out + res.err
    assert res.json["error"]["code"] == "locked"
    assert (worktree_paths(home_repo), branches(home_repo)) == before
    again = run_cli("restore", "feature-x", "--json", cwd=home_repo)
    assert again.code == 0, again.out + again.err
    [restored] = again.json["repos"]
    assert (Path(restored["worktree"]) / "draft.txt").read_text() == "not committed\n"


# -- another run of the topic is no process working in its worktree ---------------------------


_PIPES: dict = {
    "stdin": subprocess.DEVNULL,
    "stdout": subprocess.PIPE,
    "stderr": subprocess.PIPE,
    "text": True,
}


def _merged_topic(home_repo: Path) -> Path:
    """Topic ``ID`` with one commit, merged on origin: pr-cleanup takes it apart. Its worktree."""
    from helpers.origin import merge_on_origin
    from helpers.topics import Topic, ship

    made = run_cli("new", "Add thing", "--id", ID, "--json", cwd=home_repo)
    assert made.code == 0, made.out
    worktree = Path(made.json["home"]["worktree"])
    commit(worktree, "thing.py", "t = 1\n", "add thing")
    git(worktree, "push", "-q", "origin", f"{ID}:{ID}")
    merge_on_origin(home_repo, ID, how="merge")
    git(home_repo, "fetch", "-q", "origin")  # a dry run of teardown does not fetch
    ship(Topic(ID, home_repo, Path(made.json["plan_dir"])))
    return worktree


def _git_in_worktree(bin_dir: Path, worktree: Path) -> tuple[dict[str, str], Path, Path]:
    """:func:`_gated_git` for the status of ``worktree``, waiting there as git itself would
    (``git -C <worktree>`` works with its working directory in the worktree)."""
    started, go = bin_dir / "started", bin_dir / "go"
    body = (
        f"cd '{worktree}' && touch '{started}'\n"
        f'while [ ! -e \'{go}\' ]; do sleep 0.02; done\nexec "$REAL_GIT" "$@"'
    )
    env = git_wrapper(bin_dir, f"{worktree} -c core.fsmonitor= status", body)
    return env, started, go


@pytest.mark.parametrize(
    "dry_run",
    [("pr-cleanup", ID, "--dry-run"), ("teardown", ID, "--dry-run")],
    ids=["pr-cleanup", "teardown"],
)
def test_a_dry_run_beside_a_running_cleanup_answers_locked_never_held(home_repo, tmp_path, dry_run):
    worktree = _merged_topic(home_repo)
    env, started, go = _git_in_worktree(tmp_path / "bin", worktree)
    first = spawn("pr-cleanup", ID, "--json", cwd=home_repo, env=env)
    try:
        _wait_for(started, first)  # its git works in the worktree, under the topic's lock
        second = run(*dry_run, "--wait", "0.3", "--json", cwd=home_repo)
    finally:
        go.touch()
    one = finish(first)
    assert second.code == 1, second.out + second.err
    assert second.json["error"]["code"] == "locked", second.json["error"]
    assert second.json["error"]["message"] == (
        f"{ID} is locked by process {first.pid}; wait for it to finish or pass a longer --wait"
    )
    assert one.code == 0, one.out + one.err
    assert not worktree.exists() and ID not in branches(home_repo)


def test_a_dry_run_that_waited_for_a_running_cleanup_plans_what_it_left(home_repo, tmp_path):
    worktree = _merged_topic(home_repo)
    env, started, go = _git_in_worktree(tmp_path / "bin", worktree)
    first = spawn("pr-cleanup", ID, "--json", cwd=home_repo, env=env)
    _wait_for(started, first)
    second = spawn("pr-cleanup", ID, "--dry-run", "--json", cwd=home_repo)
    wait_until_open(second.pid, state.lock_path(_common(home_repo), ID))  # waiting for it
    go.touch()
    one, two = finish(first), finish(second)
    assert one.code == 0, one.out + one.err
    assert two.code == 0, two.out + two.err
    plan = {s["name"]: s for s in two.json["steps"]}
    assert plan["remove"]["detail"] == f"no worktree has {ID} checked out: already gone"


def test_two_pr_cleanups_in_the_worktree_at_once_never_call_each_other_held(home_repo, tmp_path):
    # Both started in the worktree (a shell there runs `pr-cleanup & pr-cleanup`): the
    # one waiting for the topic's lock sits in the worktree, and is no one's work.
    worktree = _merged_topic(home_repo)
    env, started, go = _git_in_worktree(tmp_path / "bin", worktree)
    cmd = argv("pr-cleanup", "--json", cwd=worktree)
    first = subprocess.Popen(cmd, cwd=worktree, env={**os.environ, **env}, **_PIPES)
    _wait_for(started, first)
    second = subprocess.Popen(cmd, cwd=worktree, env=dict(os.environ), **_PIPES)
    wait_until_open(second.pid, state.lock_path(_common(home_repo), ID))  # waiting in the worktree
    go.touch()
    one, two = finish(first), finish(second)
    assert one.code == 0, one.out + one.err
    assert not worktree.exists() and ID not in branches(home_repo)
    # The one that waited finds the branch cleaned up: done, nothing left to do.
    assert two.code == 0, two.out + two.err
    remove = next(s for s in two.json["steps"] if s["name"] == "remove")
    assert remove["detail"] == f"no worktree has {ID} checked out: already gone"
