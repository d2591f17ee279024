"""A checkout's index read without git: the paths and blobs git lists, and which files are still it.

Every answer is compared with what git itself prints for the same index
(``git ls-files -s``, ``git ls-files -v``), in each index version git writes
and in each object format; an index this reader does not read whole (a
split index) is None, never a partial answer.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.repos import commit, git, write

from router.git import (
    Git,
    IndexCopy,
    checkout_index,
    index_entries,
    index_paths,
    is_indexed_file,
    unwatched_entries,
)
from router.git.files import SETTLED_NS
from router.git.indexfile import WATCHED_STAMP, unlooked_changes


def _index(repo: Path) -> IndexCopy:
    found = checkout_index(str(Git(repo).git_dir()))
    assert found is not None
    return found


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_the_index_reads_as_git_lists_it_in_every_version(home_repo, git_format, version):
    repo = home_repo
    commit(repo, "src/deep/dir/a.py", "a = 1\n", "a")
    commit(repo, "src/deep/dir/b.py", "b = 1\n", "b")
    commit(repo, "src/other.py", "other = 1\n", "other")
    os.symlink("src/other.py", repo / "link")
    write(repo / "tool.sh", "#!/bin/sh\n")
    (repo / "tool.sh").chmod(0o755)
    git(repo, "add", "link", "tool.sh")
    git(repo, "commit", "-q", "-m", "link and tool")
    git(repo, "update-index", "--index-version", version)
    git(repo, "update-index", "--skip-worktree", "src/deep/dir/b.py")
    git(repo, "update-index", "--assume-unchanged", "src/other.py")
    index = _index(repo)
    assert index.algorithm == git_format

    entries = index_entries(index)
    assert entries is not None
    listed = {}
    for line in git(repo, "ls-files", "-s").splitlines():
        meta, path = line.split("\t")
        mode, oid, _stage = meta.split()
        listed[path] = (int(mode, 8), oid)
    assert {p: (e.mode, e.oid.hex()) for p, e in entries.items()} == listed
    assert index_paths(index) == set(listed)
    # `ls-files -v`: S skip-worktree, lower case assume-unchanged: git does not look at them.
    tags = dict(line.split(" ", 1)[::-1] for line in git(repo, "ls-files", "-v").splitlines())
    assert {p for p, e in entries.items() if not e.watched} == {
        p for p, tag in tags.items() if tag != "H"
    }
    assert tags["src/deep/dir/b.py"] == "S" and tags["src/other.py"] == "h"


# A name longer than an entry's 12-bit length field holds (0xFFF and more).
LONG = "/".join(["L" * 200] * 21)


@pytest.mark.parametrize("git_format", ["sha1", "sha256"], indirect=True)
@pytest.mark.parametrize("version", ["2", "3", "4"])
@pytest.mark.parametrize(
    "flagged",
    [
        (),
        (("--assume-unchanged", "src/z.py"),),
        (("--skip-worktree", "src/a.py"),),
        (("--assume-unchanged", LONG), ("--skip-worktree", "src/z.py")),
    ],
)
def test_the_entries_git_does_not_look_at_are_the_ones_git_lists(
    home_repo, git_format, version, flagged
):
    # Most indexes have every entry watched, told by each entry's flags alone; any
    # flag, any version and a name too long for its length field read every entry.
    repo = home_repo
    commit(repo, "src/a.py", "a = 1\n", "a")
    commit(repo, "src/z.py", "z = 1\n", "z")
    # Longer than any path the system opens: indexed without a file.
    blob = git(repo, "hash-object", "-w", "--stdin", input="long\n")
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{LONG}")
    git(repo, "update-index", "--index-version", version)
    for flag, path in flagged:
        git(repo, "update-index", flag, path)
    index = _index(repo)

    found = unwatched_entries(index)
    assert found is not None
    tags = dict(line.split(" ", 1)[::-1] for line in git(repo, "ls-files", "-v").splitlines())
    assert set(found) == {p for p, tag in tags.items() if tag != "H"}
    assert set(found) == {path for _flag, path in flagged}


def test_a_file_is_the_indexed_one_while_unchanged_or_holding_the_blob(home_repo):
    repo = home_repo
    commit(repo, "kept.txt", "same\n", "kept")
    commit(repo, "edited.txt", "one\n", "edited")
    commit(repo, "rewritten.txt", "same text\n", "rewritten")
    commit(repo, "moded.sh", "echo\n", "moded")
    time.sleep(0.01)
    git(repo, "update-index", "--refresh")  # the stat of every file verified, then the index
    index = _index(repo)
    entries = index_entries(index)
    assert entries is not None

    time.sleep(0.01)
    (repo / "edited.txt").write_text("two\n")  # the same size, another blob
    (repo / "rewritten.txt").write_text("same text\n")  # new stamps, the same blob
    (repo / "moded.sh").chmod(0o755)  # the same bytes, another mode

    def judged(name: str) -> bool:
        return is_indexed_file(str(repo / name), entries[name], index)

    assert judged("kept.txt") and judged("rewritten.txt") and judged("README.md")
    assert not judged("edited.txt") and not judged("moded.sh")
    (repo / "kept.txt").unlink()
    assert not judged("kept.txt")


def test_a_split_index_is_not_read(home_repo):
    commit(home_repo, "a.txt", "a\n", "a")
    git(home_repo, "update-index", "--split-index")
    assert index_entries(_index(home_repo)) is None
    assert index_paths(_index(home_repo)) is None


def test_a_file_edited_in_the_second_git_verified_it_with_its_mtime_put_back_is_kept(
    second_stamped,
):
    # git verifies the file and writes its index; in the same second the file is edited
    # to the same size and its mtime put back (touch -d, cp -p, rsync -t, tar x). Every
    # stat field the entry holds is unchanged, and the mtime is older than the index: the
    # change time written no earlier than the index is what says the file may have moved.
    repo = second_stamped / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    path = repo / "notes.txt"
    write(path, "first\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "notes")
    for _attempt in range(5):
        while time.time() % 1 > 0.2:  # all of it in one second
            time.sleep(0.01)
        start = int(time.time())
        os.utime(path, (50, 50))
        git(repo, "update-index", "--refresh")
        write(path, "edits\n")  # the same size
        os.utime(path, (50, 50))
        if int(time.time()) == start:
            break
    else:
        pytest.skip("the machine is too slow to verify and edit a file in one second")
    index = _index(repo)
    entry = (index_entries(index) or {})["notes.txt"]
    info = os.lstat(path)
    assert (entry.ctime[0], entry.mtime, entry.size) == (info.st_ctime, (50, 0), info.st_size)

    assert not is_indexed_file(str(path), entry, index)
    assert path.read_text() == "edits\n"


def _settle() -> None:
    """Past the time an index's stamps may still repeat: what was read of it may be kept."""
    time.sleep(SETTLED_NS / 1e9 + 0.1)


def test_a_settled_index_with_every_entry_watched_is_not_read_again(home_repo):
    commit(home_repo, "src/a.py", "a = 1\n", "a")
    git(home_repo, "status", "--porcelain")  # git refreshes (rewrites) its index first
    git_dir = str(Git(home_repo).git_dir())
    _settle()
    index = os.path.join(git_dir, "index")
    with _opened() as first:
        assert unlooked_changes(str(home_repo), git_dir) == []
    assert index in first
    with _opened() as again:
        # The same file, by its identity: its answer is kept, none of it is read.
        assert unlooked_changes(str(home_repo), git_dir) == []
    assert index not in again


_OPENING: list[list[str]] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and _OPENING and isinstance(args[0], str):
        _OPENING[-1].append(args[0])


@contextlib.contextmanager
def _opened() -> Iterator[list[str]]:
    """The files this process opens while the block runs (Python's audit events)."""
    if not getattr(_audit, "added", False):
        sys.addaudithook(_audit)
        _audit.added = True  # type: ignore[attr-defined]
    _OPENING.append([])
    try:
        yield _OPENING[-1]
    finally:
        _OPENING.pop()


def test_an_index_changed_since_it_was_kept_is_read_again(home_repo):
    commit(home_repo, "config/local.toml", "debug = false\n", "config")
    git(home_repo, "status", "--porcelain")
    git_dir = str(Git(home_repo).git_dir())
    _settle()
    assert unlooked_changes(str(home_repo), git_dir) == []
    git(home_repo, "update-index", "--assume-unchanged", "config/local.toml")
    (home_repo / "config/local.toml").write_text("debug = true, my own edit\n")
    assert git(home_repo, "status", "--porcelain") == ""
    assert unlooked_changes(str(home_repo), git_dir) == ["config/local.toml"]
    _settle()
    assert unlooked_changes(str(home_repo), git_dir) == ["config/local.toml"]


def test_a_sparse_checkouts_files_left_out_are_still_looked_at_each_time(home_repo):
    commit(home_repo, "docs/guide.md", "guide\n", "docs")
    commit(home_repo, "src/a.py", "a = 1\n", "src")
    git(home_repo, "sparse-checkout", "set", "--no-cone", "/src/")
    assert not (home_repo / "docs/guide.md").exists()
    git_dir = str(Git(home_repo).git_dir())
    _settle()
    assert unlooked_changes(str(home_repo), git_dir) == []  # not materialised: nothing to judge
    write(home_repo / "docs/guide.md", "my own guide\n")  # the index is unchanged
    assert unlooked_changes(str(home_repo), git_dir) == ["docs/guide.md"]


def test_an_index_written_moments_ago_is_not_kept(home_repo):
    commit(home_repo, "src/a.py", "a = 1\n", "a")
    git(home_repo, "update-index", "--refresh")
    git_dir = Path(Git(home_repo).git_dir())
    assert unlooked_changes(str(home_repo), str(git_dir)) == []
    assert not (git_dir / WATCHED_STAMP).exists()
