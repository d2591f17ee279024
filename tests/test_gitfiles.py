"""router.git.files: git's files read without git, and "unsure" wherever the layout is not plain."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

import pytest
from helpers.repos import commit, git, make_repo

from router.git import Git, indexfile, reflog
from router.git import files as gitfiles
from router.git.worktrees import parse_worktree_list


def test_the_branches_checked_out_are_the_primarys_and_each_worktrees(tmp_path):
    repo = make_repo(tmp_path, "r")
    git(repo, "worktree", "add", "-q", "-b", "topic", str(tmp_path / "wt"))
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "detached"))
    assert gitfiles.checked_out_branches(str(repo / ".git")) == {"main", "topic"}


def test_a_branch_being_rebased_makes_the_answer_unsure(tmp_path):
    # The rebase detaches HEAD; git still counts the branch as checked out there.
    repo = make_repo(tmp_path, "r")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(wt))
    commit(wt, "a.txt", "a\n", "one")
    commit(wt, "b.txt", "b\n", "two")
    os.environ["GIT_SEQUENCE_EDITOR"] = "sed -i -e 1s/^pick/edit/"
    try:
        git(wt, "rebase", "-q", "-i", "HEAD~2")
    finally:
        del os.environ["GIT_SEQUENCE_EDITOR"]
    assert git(wt, "symbolic-ref", "-q", "HEAD", check=False) == ""  # detached
    assert gitfiles.checked_out_branches(str(repo / ".git")) is None


def test_a_config_that_may_move_the_work_tree_is_not_read_as_plain(tmp_path):
    settings = [
        ("core.bare", "1"),
        ("include.path", "other.cfg"),
        ("core.worktree", str(tmp_path)),
        ("extensions.worktreeConfig", "true"),
    ]
    for key, value in settings:
        # Named so its origin URL holds the same words: only keys count.
        repo = make_repo(tmp_path, f"r-{key}-worktree-include-bare")
        assert gitfiles.plain_layout(str(repo)) is not None
        git(repo, "config", key, value)
        assert gitfiles.plain_layout(str(repo)) is None, key


# -- refs and the worktree list, read from the files: git's own answers ------------

_REFS = (
    "HEAD",
    "refs/heads/main",
    "refs/heads/topic",
    "refs/heads/unborn",
    "refs/heads/nothing",
    "refs/remotes/origin/HEAD",
    "refs/remotes/origin/main",
    "refs/remotes/origin/nothing",
)


def _gits_commits(cwd, refs=_REFS):
    """What git itself answers: ``rev-parse --verify`` of ``<ref>^{commit}``, None when missing."""
    return {
        r: git(cwd, "rev-parse", "-q", "--verify", f"{r}^{{commit}}", check=False) or None
        for r in refs
    }


def _gits_list(repo):
    out = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list", "--porcelain", "-z"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return parse_worktree_list(out)


def _files_agree_with_git(repo, *checkouts):
    """Both readers read the files (no Unsure) and give git's answers, from every checkout."""
    common = str(repo / ".git")
    gitfiles.listed_worktrees(common)  # the files are read, not handed over
    assert Git(repo).worktree_list() == _gits_list(repo)
    for cwd in (repo, *checkouts):
        _top, git_dir, common = gitfiles.plain_layout(str(cwd))
        for ref in _REFS:
            gitfiles.read_ref(common, git_dir, ref)
        assert Git(cwd).commits(_REFS) == _gits_commits(cwd)


def _states(tmp_path):
    """A repository taken through the states its refs and registrations can be in."""
    repo = make_repo(tmp_path / "ws", "r")  # its origin beside ws/, not shared with other tests
    yield repo, ()
    wt = tmp_path / "wt b"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(wt))
    commit(wt, "t.txt", "t\n", "on topic")
    yield repo, (wt,)
    detached = tmp_path / "Z-detached"
    git(repo, "worktree", "add", "-q", "--detach", str(detached), "HEAD~0")
    unborn = tmp_path / "ä-unborn"
    git(repo, "worktree", "add", "-q", "--detach", str(unborn))
    git(unborn, "checkout", "-q", "--orphan", "unborn")
    yield repo, (wt, detached, unborn)
    git(repo, "pack-refs", "--all")  # every branch and remote ref packed, peeled lines too
    git(repo, "tag", "-a", "-m", "tag", "v1")
    git(repo, "pack-refs", "--all")
    yield repo, (wt, detached, unborn)
    commit(wt, "t2.txt", "t\n", "loose again")  # a loose ref over its packed line
    git(repo, "fetch", "-q", "origin")
    yield repo, (wt, detached, unborn)
    git(repo, "worktree", "lock", "--reason", "on a stick\nsecond line", str(detached))
    git(repo, "worktree", "lock", str(wt))
    yield repo, (wt, detached, unborn)
    shutil.rmtree(unborn)  # prunable
    shutil.rmtree(detached)  # locked: never prunable
    git(repo, "worktree", "unlock", str(wt))
    # Listed by path, not by the name of its registration ("wt b" after "Z-detached").
    git(repo, "worktree", "move", str(wt), str(tmp_path / "0-moved"))
    git(repo, "checkout", "-q", "--detach")
    yield repo, (tmp_path / "0-moved",)


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_the_files_give_gits_own_refs_and_worktree_list_in_every_state(git_format, tmp_path):
    for repo, checkouts in _states(tmp_path):
        _files_agree_with_git(repo, *checkouts)


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_a_primary_on_an_unborn_branch_reads_as_git_lists_it(git_format, tmp_path):
    repo = make_repo(tmp_path, "r", origin=False, commit_first=False)
    _files_agree_with_git(repo)
    assert Git(repo).worktree_list()[0].head is None  # git shows the null id


@pytest.mark.parametrize("git_format", ["reftable"], indirect=True)
def test_a_reftable_is_never_read_as_files_and_git_answers_instead(git_format, tmp_path):
    """A reftable repository keeps its refs and reflogs in no file this module reads
    (``refs/heads`` is a file there): every read is unsure, never "no such ref"."""
    for repo, checkouts in _states(tmp_path):
        common = str(repo / ".git")
        assert gitfiles.repo_format(common).reftable
        for cwd in (repo, *checkouts):
            git_dir = git(cwd, "rev-parse", "--path-format=absolute", "--git-dir")
            assert all(_unsure(gitfiles.read_ref, common, git_dir, ref) for ref in _REFS)
            assert _unsure(gitfiles.read_refs, common, git_dir, list(_REFS))
            assert Git(cwd).commits(_REFS) == _gits_commits(cwd)
        assert _unsure(gitfiles.listed_worktrees, common)
        assert _unsure(functools.partial(reflog.reflog_files, common, skip=""))
        assert Git(repo).worktree_list() == _gits_list(repo)


def test_the_object_format_and_ref_storage_are_read_from_the_extensions_section(tmp_path):
    repo = make_repo(tmp_path, "r", origin=False)
    common, config = str(repo / ".git"), repo / ".git" / "config"
    plain = config.read_text()

    def read(extra: str) -> tuple[int, bool] | None:
        config.write_text(plain + extra)
        try:
            fmt = gitfiles.repo_format(common)
        except gitfiles.Unsure:
            return None
        return fmt.id_width, fmt.reftable

    assert read("") == (40, False)
    assert read("[extensions]\n\tobjectFormat = sha256\n") == (64, False)
    assert read('[Extensions]\n\tobjectformat = "SHA256" ; a comment\n') == (64, False)
    assert read("[extensions] objectformat=sha1\n\trefStorage = reftable\n") == (40, True)
    assert read("[extensions]\n\trefstorage = files\n") == (40, False)
    # The same words as keys of another section say nothing of the repository.
    assert read('[remote "x"]\n\tobjectformat = sha256\n\trefstorage = reftable\n') == (40, False)
    # A format not known here, or a line not read here, is git's to read.
    assert read("[extensions]\n\tobjectformat = sha512\n") is None
    assert read("[extensions]\n\trefstorage = other\n") is None
    assert read("[extensions]\n\tobjectformat = \\\n\t\tsha256\n") is None
    config.write_text(plain)
    (repo / ".git" / "reftable").mkdir()  # a reftable the config does not name
    assert _unsure(gitfiles.repo_format, common)


def _unsure(fn, *args):
    try:
        fn(*args)
    except gitfiles.Unsure:
        return True
    return False


def test_what_git_might_read_another_way_is_left_to_git(tmp_path):
    repo = make_repo(tmp_path, "r")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(wt))
    common = str(repo / ".git")
    heads = repo / ".git" / "refs" / "heads"
    admin = repo / ".git" / "worktrees" / "wt"

    def changed(undo):
        # Unsure from the files, and git's answers from Git all the same.
        probes = [(gitfiles.read_ref, common, common, ref) for ref in _REFS]
        assert any(_unsure(*p) for p in [*probes, (gitfiles.listed_worktrees, common)])
        assert Git(repo).worktree_list() == _gits_list(repo)
        assert Git(repo).commits(_REFS) == _gits_commits(repo)
        undo()

    (heads / "topic").rename(heads / "topic.real")
    (heads / "topic").symlink_to(heads / "topic.real")
    changed(lambda: ((heads / "topic").unlink(), (heads / "topic.real").rename(heads / "topic")))
    tip = (heads / "topic").read_text()
    (heads / "topic").write_text(tip.upper())
    changed(lambda: (heads / "topic").write_text(tip))
    (heads / "topic").write_text(tip.strip() + " trailing words\n")
    changed(lambda: (heads / "topic").write_text(tip))
    for n in range(6):
        (heads / f"link{n}").write_text(f"ref: refs/heads/link{n + 1}\n")
    (heads / "topic").write_text("ref: refs/heads/link0\n")
    changed(lambda: (heads / "topic").write_text(tip))
    (repo / ".git" / "packed-refs").write_text(
        "".join(f"{tip.strip()} refs/heads/p{n:06d}\n" for n in range(6000))
    )
    changed(lambda: (repo / ".git" / "packed-refs").unlink())
    git(repo, "config", "core.ignorecase", "true")
    changed(lambda: git(repo, "config", "--unset", "core.ignorecase"))
    gitdir = (admin / "gitdir").read_text()
    (admin / "gitdir").write_text("../../../wt/.git\n")
    changed(lambda: (admin / "gitdir").write_text(gitdir))
    (admin / "commondir").write_text("")  # a torn registration: git cannot list either
    assert _unsure(gitfiles.listed_worktrees, common)
    (admin / "commondir").write_text("../..\n")
    _files_agree_with_git(repo, wt)  # every change undone: the files are read again


def test_only_branch_remote_and_head_names_are_read_from_the_files(tmp_path):
    repo = make_repo(tmp_path, "r")
    for name in (
        "refs/heads/../HEAD",
        "refs/heads/a..b",
        "refs/heads/x.lock",
        "refs/tags/v1",
        "main",
        "refs/heads/",
        "refs/heads//main",
        "refs/heads/.hidden",
        "HEAD~1",
    ):
        assert not gitfiles.readable_ref(name), name
    assert gitfiles.readable_ref("refs/heads/feature/x-1")
    # A name git would refuse is never answered from the files.
    assert Git(repo).commits(["refs/heads/../HEAD"]) == {"refs/heads/../HEAD": None}


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_a_plain_checkout_answers_without_running_git(git_format, tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "ws", "r")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(wt))
    expected = (_gits_list(repo), _gits_commits(wt))
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "git").write_text("#!/bin/sh\nexit 3\n")
    (stub / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{stub}{os.pathsep}{os.environ['PATH']}")
    assert (Git(repo).worktree_list(), Git(wt).commits(_REFS)) == expected


def test_an_index_says_no_gitlink_only_when_it_surely_holds_none(tmp_path):
    repo = make_repo(tmp_path, "r", origin=False)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(wt))
    wt_git_dir = git(wt, "rev-parse", "--path-format=absolute", "--git-dir")
    for where in (str(repo / ".git"), wt_git_dir):
        assert not indexfile.may_hold_gitlinks(where)  # plain files only
    nested = make_repo(wt, "vendor", origin=False)
    git(wt, "add", "--", "vendor")  # a gitlink, no .gitmodules
    assert Git(wt).gitlinks() == ["vendor"]
    assert indexfile.may_hold_gitlinks(wt_git_dir)
    assert not indexfile.may_hold_gitlinks(str(repo / ".git"))  # the primary's index has none
    git(wt, "commit", "-q", "-m", "vendor")
    # A split index keeps entries in a shared file: not read here, so git is asked.
    git(wt, "rm", "-q", "--cached", "vendor")
    git(wt, "update-index", "--split-index")
    assert indexfile.may_hold_gitlinks(wt_git_dir)
    assert nested.is_dir()
    assert not indexfile.may_hold_gitlinks(str(tmp_path / "no-such-git-dir"))  # no index yet
