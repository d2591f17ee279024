"""router.git: what git prints reaches the caller byte for byte (decoded, never translated)."""

from __future__ import annotations

import os
import time

from helpers.faults import slow_git
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


def test_a_started_fetch_reports_git_s_own_failure(tmp_path):
    repo = make_repo(tmp_path, "r")
    error = Git(repo).start_fetch("nowhere").error()
    assert error is not None and error.returncode == 128 and "nowhere" in error.stderr
    assert Git(repo).start_fetch("origin").error() is None
