"""router.git: what git prints reaches the caller byte for byte (decoded, never translated)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from helpers.faults import git_wrapper, slow_git
from helpers.repos import commit, git, make_repo

from router.git import Git, committer_unknown, config_view, first_blob


def test_a_crlf_blob_read_with_others_in_one_batch_is_exactly_its_bytes(tmp_path):
    # Text-mode pipes turn CRLF into LF: the sized read of `cat-file --batch` then ran
    # past the blob into the next object's header ("...\n5" became a line of its own).
    repo = make_repo(tmp_path, "r")
    commit(repo, "crlf.txt", "echo one\r\necho two\r\n", "crlf")
    found = first_blob(Git(repo), ["HEAD:crlf.txt", "HEAD:README.md"])
    assert found == ("HEAD:crlf.txt", "echo one\r\necho two\r\n")


def test_a_carriage_return_in_a_path_survives_a_z_listing(tmp_path):
    repo = make_repo(tmp_path, "r")
    (repo / "a\rb.txt").write_text("x\n")
    out = Git(repo).out("ls-files", "-z", "--others")
    assert out.split("\0")[0] == "a\rb.txt"


def test_config_names_no_committer_when_git_may_use_config_only(tmp_path, monkeypatch):
    # user.useConfigOnly: git ignores EMAIL (and the host), so only git can tell.
    repo = make_repo(tmp_path, "r")
    git(repo, "config", "user.useConfigOnly", "true")
    git(repo, "config", "user.name", "Someone")
    for name in ("GIT_COMMITTER_EMAIL", "GIT_AUTHOR_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EMAIL", "me@example.com")
    config = config_view(Git(repo))
    assert config.get("user.email") is None
    assert not config.names_committer(dict(os.environ))
    assert committer_unknown(Git(repo), config) is not None  # git's own answer


def test_a_config_section_is_a_branch_s_own_not_a_longer_names(tmp_path):
    repo = make_repo(tmp_path, "r")
    git(repo, "config", "branch.feature.x.remote", "origin")
    config = config_view(Git(repo))
    assert config.has_section("branch.feature.x")
    assert not config.has_section("branch.feature")


def test_a_started_fetch_that_hangs_is_ended_at_its_timeout(tmp_path, monkeypatch):
    # A fetch started ahead runs while its job goes on; its timeout counts from
    # the start, and collecting it then ends the process with the error.
    repo = make_repo(tmp_path, "r")
    started = tmp_path / "started"
    for key, value in slow_git(tmp_path / "bin", " fetch ", started, seconds=4).items():
        monkeypatch.setenv(key, value)
    began = time.monotonic()
    running = Git(repo).start_fetch("origin", timeout=1)
    error = running.error()
    assert time.monotonic() - began < 4  # ended, not waited for (the git sleeps 4 s)
    assert started.exists()
    assert error is not None and error.returncode == 124 and "timed out after 1s" in str(error)
    assert running.error() is error  # collected once, then remembered


@pytest.mark.parametrize("started_ahead", [False, True])
def test_a_fetch_that_closes_its_output_and_hangs_is_ended_at_its_timeout(tmp_path, started_ahead):
    """A git (a wrapper, a hook's shell) that closes stdout and stderr, then never ends:
    the pipes end long before it does, and its timeout still ends it, with the typed error."""
    from router.git.run import GitTimedOut, Runner

    repo = make_repo(tmp_path, "r")
    pid_file = tmp_path / "hung.pid"
    env = git_wrapper(
        tmp_path / "bin", " fetch ", f"echo $$ > '{pid_file}'\nexec >&- 2>&-\nexec sleep 30"
    )
    runner = Runner(repo, env)
    began = time.monotonic()
    if started_ahead:
        error = runner.start("fetch", "origin", timeout=1).error()
    else:
        with pytest.raises(GitTimedOut) as raised:
            runner.run("fetch", "origin", timeout=1)
        error = raised.value
    took = time.monotonic() - began
    assert isinstance(error, GitTimedOut), error
    assert (error.returncode, error.stderr) == (124, "timed out after 1s")
    assert took < 10, f"waited {took:.0f}s for a git that closed its output"
    hung = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        os.kill(hung, 0)


def test_a_started_fetch_reports_git_s_own_failure(tmp_path):
    repo = make_repo(tmp_path, "r")
    error = Git(repo).start_fetch("nowhere").error()
    assert error is not None and error.returncode == 128 and "nowhere" in error.stderr
    assert Git(repo).start_fetch("origin").error() is None


# -- the handle: each concept taken in on first use ------------------------------------

_TAKEN_IN = """
import sys
from pathlib import Path

from router.git import Git

def loaded():
    return sorted(m for m in sys.modules if m.startswith("router.git."))

git = Git(Path(sys.argv[1]))
print(loaded())
print(git.files_layout().toplevel == Path(sys.argv[1]).resolve(), git.rev_parse("HEAD"))
print(loaded())
print([c.__name__ for c in Git.__mro__])
"""


def test_the_git_handle_takes_in_a_concept_when_one_of_its_methods_is_first_asked_for(tmp_path):
    repo = make_repo(tmp_path, "r")
    head = git(repo, "rev-parse", "HEAD")
    out = subprocess.run(
        [sys.executable, "-c", _TAKEN_IN, str(repo)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    layout = ["router.git.answers", "router.git.client", "router.git.files", "router.git.layout"]
    assert out == [
        str([*layout, "router.git.run"]),
        f"True {head}",
        str([*layout, "router.git.refs", "router.git.run", "router.git.spawn"]),
        str(["Git", "RefMethods", "LayoutMethods", "Runner", "object"]),
    ]


_RACED = """
import sys, threading
from pathlib import Path

from router.git import Git
from router.git.client import METHODS

git = Git(Path(sys.argv[1]))
failed = []
for names in METHODS.values():
    start = threading.Barrier(8)

    def ask(name=names.split()[0]):
        start.wait()
        try:
            getattr(git, name)
        except AttributeError as exc:
            failed.append(str(exc))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
print(failed)
"""


def test_threads_asking_for_a_concept_at_once_all_get_it(tmp_path):
    # status asks each worktree's state on threads: every one of them is a first use.
    repo = make_repo(tmp_path, "r")
    for _round in range(3):
        out = subprocess.run(
            [sys.executable, "-c", _RACED, str(repo)], capture_output=True, text=True, check=True
        )
        assert out.stdout == "[]\n"


def test_with_every_concept_taken_in_the_handle_is_the_composed_class(tmp_path):
    from router.git import client
    from router.git.history import HistoryMethods
    from router.git.layout import LayoutMethods
    from router.git.objects import ObjectMethods
    from router.git.refs import RefMethods
    from router.git.remote import RemoteMethods
    from router.git.status import StatusMethods
    from router.git.worktrees import WorktreeMethods

    concepts = (
        RefMethods,
        WorktreeMethods,
        StatusMethods,
        HistoryMethods,
        ObjectMethods,
        RemoteMethods,
    )
    composed = type("Composed", concepts, {"__slots__": ()})
    # The index the handle takes concepts in by names every attribute each brings.
    brought = {
        module: {
            name
            for cls in concept.__mro__
            if cls not in LayoutMethods.__mro__
            for name in vars(cls)
            if not name.startswith("__")
        }
        for (module, _cls), concept in zip(client.CONCEPTS, concepts, strict=True)
    }
    assert {m: set(names.split()) for m, names in client.METHODS.items()} == brought
    handle = Git(make_repo(tmp_path, "r"))
    for names in client.METHODS.values():
        getattr(handle, names.split()[0])  # the first use takes the concept in
    assert set(Git.__mro__) == set(composed.__mro__) - {composed} | {Git}

    def owner(cls: type, name: str) -> type:
        return next(c for c in cls.__mro__[1:] if name in vars(c))

    for name in set(dir(composed)) - set(vars(Git)):
        assert owner(Git, name) is owner(composed, name), name
    assert not hasattr(handle, "no_such_method")


def test_a_hook_s_background_process_holding_git_s_output_does_not_hold_the_command(tmp_path):
    """A post-checkout hook that leaves a process running (``cmd &``) passes it git's
    stderr: the command returns when git ends, with all git and the hook wrote by then."""
    repo = make_repo(tmp_path / "ws", "r")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    started = tmp_path / "lingering.pid"
    hook = hooks / "post-checkout"
    hook.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > '{started}'\necho hook ran >&2\n")
    hook.chmod(0o755)
    git(repo, "config", "core.hooksPath", str(hooks))
    began = time.monotonic()
    try:
        res = Git(repo).run("switch", "-c", "topic")
        took = time.monotonic() - began
    finally:
        lingering = int(started.read_text())
        os.kill(lingering, 9)
    assert res.stderr == "Switched to a new branch 'topic'\nhook ran\n"
    assert took < 30, f"the command waited {took:.0f}s for the hook's background process"
    assert git(repo, "branch", "--show-current") == "topic"


def test_a_git_put_on_path_after_a_first_command_is_the_one_the_next_command_runs(tmp_path):
    """Which git runs is looked up on PATH for each command, as a shell does: a wrapper put
    first on PATH between two commands (a fault, a newer git) is not passed over."""
    from router.git.run import Runner

    repo = make_repo(tmp_path, "repo", origin=False)
    folder = tmp_path / "bin"
    folder.mkdir()
    runner = Runner(repo, {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"})
    real = runner.out("rev-parse", "--git-dir")
    marker = tmp_path / "ran"
    wrapper = folder / "git"
    wrapper.write_text(
        f'#!/bin/sh\necho "$@" >> {marker}\nPATH="{os.environ["PATH"]}" exec git "$@"\n'
    )
    wrapper.chmod(0o755)

    assert runner.out("rev-parse", "--git-dir") == real
    assert marker.read_text().split() == [
        "-C",
        str(repo),
        "-c",
        "core.fsmonitor=",
        "rev-parse",
        "--git-dir",
    ]


def test_a_git_killed_by_a_signal_is_said_so_not_as_an_exit_code(tmp_path):
    """A git a signal ended has no exit code of its own (the -9 its wait status reads as):
    its failure names the signal, in the line every refusal and warning says."""
    from router.git.run import GitError, Runner

    repo = make_repo(tmp_path, "repo", origin=False)
    env = git_wrapper(tmp_path / "bin", "rev-parse", 'echo "partial" >&2\nkill -KILL $$')
    runner = Runner(repo, env)
    with pytest.raises(GitError) as caught:
        runner.out("rev-parse", "HEAD")
    assert caught.value.returncode == -9
    assert caught.value.first_line == "git was killed by signal 9 (SIGKILL)"


@pytest.mark.parametrize("asked", ["ok", "check=False"])
def test_a_git_that_fails_while_a_signal_stops_the_command_is_never_an_answer(tmp_path, asked):
    """The group's signal reaches git too; a git (a wrapper, a hook) that catches it and
    exits 1 has not answered "no": while the command stops it is a cut-short answer,
    as a git the signal killed is, and raises Stopped wherever a caller reads failures."""
    from router import interrupt
    from router.git.run import Runner

    repo = make_repo(tmp_path, "repo", origin=False)
    # The real git answers yes; then the command gets SIGTERM and this git exits 1.
    body = '"$REAL_GIT" "$@" >/dev/null; kill -TERM $PPID; exit 1'
    runner = Runner(repo, git_wrapper(tmp_path / "bin", "merge-base", body))
    question = ("merge-base", "--is-ancestor", "HEAD", "HEAD")
    with interrupt.handled(), interrupt.deferred(), pytest.raises(interrupt.Stopped) as caught:
        if asked == "ok":
            runner.ok(*question)
        else:
            runner.run(*question, check=False)
    assert caught.value.signum == signal.SIGTERM
    assert Runner(repo).ok(*question)  # the real answer, once no signal stopped anything


@pytest.mark.parametrize("git_format", ["reftable"], indirect=True)
def test_a_yes_or_no_question_git_could_not_answer_is_never_a_no(tmp_path, git_format):
    """``show-ref --verify`` and ``reflog exists`` say no by exiting 1: a git killed before it
    answered (out of memory, a signal to it alone) or one dying on a broken repository is no
    "the branch does not exist", nor "no reflog, nothing left behind"."""
    from router.git import DanglingHead, GitError, head_reflog_only
    from router.git.run import Runner

    repo = make_repo(tmp_path / "ws", "r")
    common = repo / ".git"
    wt = tmp_path / "ws" / "wt"
    git(repo, "worktree", "add", "-q", "-b", "gone", str(wt))
    commit(wt, "work.txt", "only the HEAD reflog keeps this\n", "work")
    git(repo, "update-ref", "-d", "refs/heads/gone")  # its HEAD names a branch that is gone
    admin = str(common / "worktrees" / "wt")
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(DanglingHead):  # git answering: the reflog is there, unread
        head_reflog_only(Runner(repo), common, admin, heads=[head])
    assert Git(repo).branch_exists("main") and not Git(repo).branch_exists("gone")

    env = git_wrapper(tmp_path / "bin", " reflog exists ", "kill -9 $$")
    with pytest.raises(GitError) as raised:
        head_reflog_only(Runner(repo, env), common, admin, heads=[head])
    assert raised.value.returncode == -9
    env = git_wrapper(tmp_path / "bin", " show-ref ", "kill -9 $$")
    with pytest.raises(GitError) as raised:
        Git(repo, env).branch_exists("main")
    assert raised.value.returncode == -9
    env = git_wrapper(tmp_path / "bin", " show-ref ", "echo 'fatal: bad packed-refs' >&2; exit 128")
    with pytest.raises(GitError) as raised:
        Git(repo, env).branch_exists("gone")
    assert (raised.value.returncode, raised.value.stderr) == (128, "fatal: bad packed-refs")
