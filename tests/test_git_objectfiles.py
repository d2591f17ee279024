"""git's objects and refs read from its files: the answer git gives, with no git process.

Each test compares what the package answers with what git itself prints for
the same repository, and a ``git`` first on PATH that logs every call proves
whether git ran: in the plain layout it does not; where this reader is unsure
(alternates, replace refs, a reftable) git answers, and the answer is git's.
"""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

import pytest
from helpers.faults import git_logger
from helpers.repos import FORMATS, commit, git, lock_reason, make_repo, write

from router.git import Git, GitError, first_blob

PREFIXES = ("refs/remotes/origin/", "refs/heads/")


@pytest.fixture
def git_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The log of every git process the package starts from here on."""
    log = tmp_path / "git.log"
    for key, value in git_logger(tmp_path / "logging-bin", log).items():
        monkeypatch.setenv(key, value)
    return log


def _calls(log: Path) -> list[str]:
    """The git processes logged since the last call (the log starts again)."""
    calls = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def _blob(repo: Path, spec: str) -> str:
    """``git cat-file -p spec``, byte for byte (the helper's ``git`` strips the output)."""
    out = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "-p", spec], capture_output=True, check=True
    ).stdout
    return out.decode("utf-8", "surrogateescape")


def _for_each_ref(repo: Path) -> dict[str, tuple[str, str, str]]:
    out = git(repo, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(tree)%00%(symref)")
    rows = [line.split("\0") for line in out.splitlines()]
    return {r[0]: (r[1], r[2], r[3]) for r in rows if r[0].startswith(PREFIXES)}


def _tips(repo: Path) -> dict[str, tuple[str, str, str]]:
    tips = Git(repo).ref_tips(*PREFIXES, trees=True)
    return {name: (t.commit, t.tree, t.symref) for name, t in tips.items()}


def _commits_and_symrefs(repo: Path) -> dict[str, tuple[str, str]]:
    return {name: (t.commit, t.symref) for name, t in Git(repo).ref_tips(*PREFIXES).items()}


def _history(repo: Path, versions: int = 30) -> None:
    """Many versions of a few files on two branches: a repack stores most as deltas."""
    for n in range(versions):
        body = "".join(f"line {i} of version {n if i % 7 == 0 else 0}\n" for i in range(200))
        commit(repo, "src/deep/file.txt", body, f"version {n}")
    git(repo, "branch", "side", "HEAD~5")
    write(repo / ".teamteardown", "echo one\r\necho two\n")
    git(repo, "add", ".teamteardown")
    git(repo, "commit", "-q", "-m", "declaration")
    git(repo, "push", "-q", "origin", "main", "side")


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_ref_tips_and_trees_are_what_for_each_ref_prints(tmp_path, git_format, git_log, packed):
    repo = make_repo(tmp_path / "ws", "r")
    _history(repo)
    git(repo, "fetch", "-q", "origin")
    if packed:
        git(repo, "pack-refs", "--all")
        git(repo, "repack", "-q", "-a", "-d", "-f", "--depth=50", "--window=50")
        git(repo, "update-ref", "refs/heads/loose-after-pack", "HEAD~3")
    _calls(git_log)
    tips = _tips(repo)
    # Read from the files where they are the plain layout; a reftable is git's to list.
    listed = [c for c in _calls(git_log) if "for-each-ref" in c]
    assert len(listed) == (1 if git_format == "reftable" else 0), listed
    assert tips == _for_each_ref(repo)
    assert tips["refs/remotes/origin/HEAD"][2] == "refs/remotes/origin/main"


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_ref_tips_are_what_for_each_ref_prints_and_many_are_listed_by_git(
    tmp_path, git_format, git_log, packed
):
    repo = make_repo(tmp_path / "ws", "r")
    _history(repo, versions=6)
    git(repo, "fetch", "-q", "origin")
    if packed:
        git(repo, "pack-refs", "--all")
        git(repo, "update-ref", "refs/heads/loose-after-pack", "HEAD~1")
    expected = {name: (sha, target) for name, (sha, _tree, target) in _for_each_ref(repo).items()}
    _calls(git_log)
    assert _commits_and_symrefs(repo) == expected
    listed = [c for c in _calls(git_log) if "for-each-ref" in c]
    assert len(listed) == (1 if git_format == "reftable" else 0), listed
    # Past a few dozen refs one git process lists them sooner than their files are read.
    for n in range(70):
        git(repo, "update-ref", f"refs/heads/many-{n}", "HEAD")
    expected = {name: (sha, target) for name, (sha, _tree, target) in _for_each_ref(repo).items()}
    _calls(git_log)
    assert _commits_and_symrefs(repo) == expected
    assert len([c for c in _calls(git_log) if "for-each-ref" in c]) == 1


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_a_file_of_a_commit_is_the_blob_git_prints(tmp_path, git_format, git_log, packed):
    repo = make_repo(tmp_path / "ws", "r")
    _history(repo)
    os.symlink("src/deep/file.txt", repo / "link")
    git(repo, "add", "link")
    git(repo, "commit", "-q", "-m", "a link")
    if packed:
        git(repo, "repack", "-q", "-a", "-d", "-f", "--depth=50", "--window=50")
        assert not list((repo / ".git" / "objects").glob("??/*"))
    head = git(repo, "rev-parse", "HEAD")
    old = git(repo, "rev-parse", "HEAD~20")
    specs = [
        f"{head}:src/deep/file.txt",
        f"{old}:src/deep/file.txt",
        "refs/heads/main:link",
        "HEAD:.teamteardown",
    ]
    expected = {spec: _blob(repo, spec) for spec in specs}
    assert expected["HEAD:.teamteardown"] == "echo one\r\necho two\n"
    assert expected["refs/heads/main:link"] == "src/deep/file.txt"
    _calls(git_log)
    # Each after a path that is not there and one that names a folder.
    found = {s: first_blob(Git(repo), [f"{head}:absent", "refs/heads/main:src", s]) for s in specs}
    none = first_blob(Git(repo), ["refs/heads/gone:.teamteardown", f"{head}:src/x"])
    asked = [c for c in _calls(git_log) if "cat-file" in c]
    assert found == {spec: (spec, text) for spec, text in expected.items()}
    assert none is None
    assert len(asked) == (len(specs) + 1 if git_format == "reftable" else 0), asked


def test_a_replaced_commit_is_read_as_git_reads_it(tmp_path, git_log):
    # git applies replace refs to every read: this reader leaves such a repository to git.
    repo = make_repo(tmp_path / "ws", "r")
    commit(repo, ".teamteardown", "echo original\n", "declared")
    original = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "-c", "other", "HEAD~1")
    commit(repo, ".teamteardown", "echo replacement\n", "declared otherwise")
    git(repo, "replace", original, git(repo, "rev-parse", "HEAD"))
    _calls(git_log)
    found = first_blob(Git(repo), [f"{original}:.teamteardown"])
    assert found == (f"{original}:.teamteardown", "echo replacement\n")
    assert any("cat-file" in c for c in _calls(git_log))


def test_objects_in_an_alternate_store_are_read_by_git(tmp_path, git_log):
    source = make_repo(tmp_path / "ws", "r")
    commit(source, ".teamteardown", "echo shared\n", "declared")
    borrower = tmp_path / "borrower"
    git(tmp_path, "clone", "-q", "--shared", str(source), str(borrower))
    _calls(git_log)
    assert first_blob(Git(borrower), ["refs/remotes/origin/main:.teamteardown"]) == (
        "refs/remotes/origin/main:.teamteardown",
        "echo shared\n",
    )
    assert any("cat-file" in c for c in _calls(git_log))


def test_a_corrupt_loose_object_is_never_answered_from_the_files(tmp_path, git_log):
    # Its bytes do not hash to its id: whatever git answers then is the answer.
    repo = make_repo(tmp_path / "ws", "r")
    blob = git(repo, "rev-parse", "HEAD:README.md")
    path = repo / ".git" / "objects" / blob[:2] / blob[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob 6\0forged"))
    expected = ("refs/heads/main:README.md", _blob(repo, "refs/heads/main:README.md"))
    _calls(git_log)
    assert first_blob(Git(repo), ["refs/heads/main:README.md"]) == expected
    assert any("cat-file" in c for c in _calls(git_log))


# -- a worktree's lock lifted -----------------------------------------------------------


def test_unlocking_a_worktree_removes_its_lock_as_git_does_without_git(tmp_path, git_log):
    repo = make_repo(tmp_path / "ws", "r")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "--lock", "--reason", "mine", "-b", "topic", str(wt))
    _calls(git_log)
    Git(repo).worktree_unlock(wt)
    assert _calls(git_log) == []
    assert lock_reason(repo, wt) is None
    # Not locked: refused as git refuses it, and nothing else changed.
    with pytest.raises(GitError) as refused:
        Git(repo).worktree_unlock(wt)
    assert refused.value.returncode == 128 and "is not locked" in refused.value.stderr
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 2


def test_unlocking_a_worktree_git_does_not_list_is_git_s_refusal(tmp_path):
    repo = make_repo(tmp_path / "ws", "r")
    with pytest.raises(GitError) as refused:
        Git(repo).worktree_unlock(tmp_path / "nowhere")
    assert "is not a working tree" in refused.value.stderr


def _merge_base_answer(repo: Path, ancestor: str, descendant: str) -> bool:
    done = subprocess.run(
        ["git", "-C", str(repo), "merge-base", "--is-ancestor", ancestor, descendant]
    )
    return done.returncode == 0


@pytest.mark.parametrize("git_format", FORMATS, indirect=True)
@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_ancestry_near_two_commits_is_what_merge_base_answers(
    tmp_path, git_format, git_log, packed
):
    repo = make_repo(tmp_path / "ws", "r")
    _history(repo, versions=8)
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "-c", "topic")
    commit(repo, "feature.txt", "one\n", "feature")
    commit(repo, "feature.txt", "two\n", "more")
    git(repo, "switch", "-q", "main")
    commit(repo, "other.txt", "other\n", "meanwhile")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge topic", "topic")
    git(repo, "switch", "-q", "--orphan", "unrelated")
    commit(repo, "alone.txt", "alone\n", "unrelated root")
    git(repo, "switch", "-q", "main")
    if packed:
        git(repo, "repack", "-q", "-a", "-d")
    topic = git(repo, "rev-parse", "topic")
    pairs = [
        ("refs/heads/topic", "refs/heads/main"),  # merged: a merge commit reaches it
        (topic, base),  # the topic's tip is not below where it was cut
        (base, topic),
        (topic, topic),
        ("refs/heads/main", topic),
        ("refs/heads/unrelated", "refs/heads/main"),
        ("refs/heads/main", "refs/heads/unrelated"),
        (git(repo, "rev-parse", "HEAD~3"), "refs/heads/main"),
    ]
    expected = [_merge_base_answer(repo, a, d) for a, d in pairs]
    assert expected == [True, False, True, True, False, False, False, True]
    _calls(git_log)
    found = [Git(repo).is_ancestor(a, d) for a, d in pairs]
    asked = [c for c in _calls(git_log) if "merge-base" in c]
    assert found == expected
    # Read from the commits in the plain layout; a reftable repository is git's to read.
    assert len(asked) == (len(pairs) if git_format == "reftable" else 0), asked


def test_ancestry_far_apart_or_under_grafts_is_merge_base_s(tmp_path, git_log):
    repo = make_repo(tmp_path / "ws", "r")
    _history(repo, versions=80)
    head, old = git(repo, "rev-parse", "HEAD"), git(repo, "rev-parse", "HEAD~75")
    _calls(git_log)
    assert Git(repo).is_ancestor(old, head)  # further down than the commits read here
    assert len([c for c in _calls(git_log) if "merge-base" in c]) == 1
    # A graft cuts the history git sees: the commits' own parents would say otherwise.
    middle, parent = git(repo, "rev-parse", "HEAD~2"), git(repo, "rev-parse", "HEAD~3")
    assert _merge_base_answer(repo, parent, head)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "grafts").write_text(f"{middle}\n")
    assert not _merge_base_answer(repo, parent, head)
    _calls(git_log)
    assert not Git(repo).is_ancestor(parent, head)
    assert len([c for c in _calls(git_log) if "merge-base" in c]) == 1


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_ancestry_of_a_tag_a_missing_or_a_corrupt_commit_is_what_merge_base_answers(
    tmp_path, git_format
):
    """The ancestor is read as well as the walk's commits: an annotated tag is peeled
    as git peels it, and a commit that is not there, or does not hash to its id, is
    not taken for one its descendant names."""
    repo = make_repo(tmp_path / "ws", "r")
    first = git(repo, "rev-parse", "HEAD")
    commit(repo, "a.txt", "a\n", "second")
    second = git(repo, "rev-parse", "HEAD")
    commit(repo, "b.txt", "b\n", "third")
    third = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "-a", "-m", "the second", "v2", second)
    tag = git(repo, "rev-parse", "refs/tags/v2")
    missing = "0" * len(first)
    loose = repo / ".git" / "objects" / second[:2] / second[2:]
    pairs = [(tag, third), (tag, first), (missing, missing), (second, third), (second, second)]
    answers = []
    for corrupt in (False, True):
        if corrupt:  # the second commit's bytes no longer hash to its id
            loose.chmod(0o644)
            loose.write_bytes(zlib.compress(zlib.decompress(loose.read_bytes()) + b"forged\n"))
        expected = [_merge_base_answer(repo, a, d) for a, d in pairs]
        answers.append(expected)
        assert [Git(repo).is_ancestor(a, d) for a, d in pairs] == expected
    assert answers == [[True, False, False, True, True], [False] * 5]


def _literal_commit(repo: Path, lines: list[str]) -> str:
    """A commit object written as given (``hash-object --literally``): git's own commands
    refuse to make one so malformed, a hostile tool need not."""
    body = "\n".join([*lines, "author A <a@b> 1 +0000", "committer A <a@b> 1 +0000", "", "x", ""])
    return git(repo, "hash-object", "-t", "commit", "-w", "--literally", "--stdin", input=body)


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
def test_a_commit_git_would_not_parse_is_never_taken_for_a_merge(tmp_path, git_format):
    """A commit whose tree or parent lines git rejects ("bad parents", "bad tree pointer"),
    or naming a parent git cannot read as a commit (missing, a blob) before the ancestor:
    merge-base does not find the ancestor there, so the commits' own reading must not
    find it through the parent lines it can read."""
    repo = make_repo(tmp_path / "ws", "r")
    base = git(repo, "rev-parse", "HEAD")
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    blob = git(repo, "hash-object", "-w", "--stdin", input="not a commit\n")
    width = len(base)
    forged = [
        [f"tree {tree}", f"parent {'z' * width}", f"parent {base}"],
        [f"tree {'z' * width}", f"parent {base}"],
        [f"parent {base}", f"tree {tree}"],
        [f"tree {tree} ", f"parent {base}"],
        [f"tree {tree}", f"parent {'1' * width}", f"parent {base}"],
        [f"tree {tree}", f"parent {blob}", f"parent {base}"],
    ]
    for lines in forged:
        descendant = _literal_commit(repo, lines)
        assert not _merge_base_answer(repo, base, descendant), lines
        assert Git(repo).known_ancestry(base, descendant) is None, lines
        assert Git(repo).is_ancestor(base, descendant) is False, lines
    # An ancestor whose own parent git cannot read: git's walk reads it too.
    orphaned = _literal_commit(repo, [f"tree {tree}", f"parent {'1' * width}"])
    child = _literal_commit(repo, [f"tree {tree}", f"parent {orphaned}"])
    assert Git(repo).known_ancestry(orphaned, child) is None
    assert Git(repo).is_ancestor(orphaned, child) is _merge_base_answer(repo, orphaned, child)
