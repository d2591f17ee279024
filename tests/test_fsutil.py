"""A folder's files, asked without git: an unreadable folder never reads as empty."""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest
from helpers.faults import bind_mounted
from helpers.repos import write
from helpers.unreadable import unreadable

from router import fsutil
from router.fsutil import HELD_FOLDERS, files_under, open_tree, remove_listed, tree_under


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "plans"
    (root / "locked").mkdir(parents=True)
    (root / "locked" / "draft.md").write_text("work\n")
    (root / "kept.txt").write_text("kept\n")
    (root / "link").symlink_to(root / "locked")  # a link to a folder is an entry, never entered
    return root


def test_an_unreadable_folder_is_listed_as_an_entry_so_it_is_never_taken_for_empty(tmp_path):
    root = _tree(tmp_path)
    with unreadable(root / "locked"):
        assert files_under(root) == ("kept.txt", "link", "locked/ (unreadable: Permission denied)")
        assert files_under(root / "locked") == ("./ (unreadable: Permission denied)",)
    assert files_under(root) == ("kept.txt", "link", "locked/draft.md")


def test_an_unreadable_folder_raises_when_the_caller_asks_to_say_so(tmp_path):
    root = _tree(tmp_path)
    with unreadable(root / "locked"), pytest.raises(PermissionError) as raised:
        files_under(root, raise_unreadable=True)
    assert raised.value.filename == str(root / "locked")
    assert files_under(root, raise_unreadable=True) == ("kept.txt", "link", "locked/draft.md")


def test_a_tree_lists_its_folders_the_unreadable_ones_too(tmp_path):
    root = _tree(tmp_path)
    (root / "empty" / "inner").mkdir(parents=True)
    folders = ("empty", "empty/inner", "locked")
    listed = tree_under(root)
    assert (listed.files, sorted(listed.folders)) == (
        ("kept.txt", "link", "locked/draft.md"),
        list(folders),
    )
    with unreadable(root / "locked"):
        marker = "locked/ (unreadable: Permission denied)"
        listed = tree_under(root)
    assert (listed.files, sorted(listed.folders)) == (("kept.txt", "link", marker), list(folders))


def test_removing_a_listed_tree_leaves_what_was_added_since_and_says_so(tmp_path):
    root = tmp_path / "left"
    write(root / "tmp" / "session.json", "{}\n")
    write(root / "tmp" / "cache" / "a", "a\n")
    listed = tree_under(root)
    write(root / "tmp" / "draft.md", "written after the listing\n")
    with pytest.raises(OSError) as raised:
        remove_listed(root, listed.files, listed.folders)
    assert raised.value.errno == errno.ENOTEMPTY and raised.value.filename == str(root / "tmp")
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == ["tmp", "tmp/draft.md"]
    assert (root / "tmp" / "draft.md").read_text() == "written after the listing\n"


def test_removing_a_listed_tree_never_follows_a_link_out_of_it(tmp_path):
    """A link listed is removed, never what it points to; a folder swapped for a link after
    the listing is not entered: the file of the same name where it points survives."""
    outside = tmp_path / "outside"
    write(outside / "session.json", "precious\n")
    root = tmp_path / "left"
    write(root / "tmp" / "session.json", "{}\n")
    (root / "tmp" / "out").symlink_to(outside)
    (root / "tmp" / "file").symlink_to(outside / "session.json")
    listed = tree_under(root)
    assert listed.files == ("tmp/file", "tmp/out", "tmp/session.json")
    remove_listed(root, listed.files, listed.folders)
    assert not root.exists()
    assert (outside / "session.json").read_text() == "precious\n"

    write(root / "tmp" / "session.json", "{}\n")
    listed = tree_under(root)
    (root / "tmp" / "session.json").unlink()
    (root / "tmp").rmdir()
    (root / "tmp").symlink_to(outside)  # the folder is now a link to elsewhere
    with pytest.raises(OSError) as raised:
        remove_listed(root, listed.files, listed.folders)
    assert raised.value.filename == str(root / "tmp")
    assert (outside / "session.json").read_text() == "precious\n"
    assert (root / "tmp").is_symlink()


def test_removing_a_listed_tree_goes_in_the_order_given_and_stops_at_the_first_failure(tmp_path):
    root = tmp_path / "left"
    for name in ("a", "b", "c"):
        write(root / "docs" / name, f"{name}\n")
    if subprocess.run(["chattr", "+i", str(root / "docs" / "b")], check=False).returncode != 0:
        pytest.skip("chattr +i is not possible on this filesystem")
    try:
        with pytest.raises(PermissionError) as raised:
            remove_listed(root, ("docs/a", "docs/b", "docs/c"), ("docs",))
    finally:
        subprocess.run(["chattr", "-i", str(root / "docs" / "b")], check=True)
    assert raised.value.filename == str(root / "docs" / "b")
    assert sorted(p.name for p in (root / "docs").iterdir()) == ["b", "c"]


def test_removing_a_listed_tree_never_deletes_through_a_mount_inside_it(tmp_path):
    """A folder mounted inside the tree (a bind mount of the same filesystem included) is
    another tree: nothing in it is deleted, though the listing went through it."""
    precious = tmp_path / "precious"
    write(precious / "a.txt", "keep\n")
    write(precious / "sub" / "b.txt", "keep too\n")
    root = tmp_path / "left"
    write(root / "tmp" / "session.json", "{}\n")
    with bind_mounted(precious, root / "tmp" / "mounted", within=tmp_path):
        listed = tree_under(root)
        assert listed.files == ("tmp/mounted/a.txt", "tmp/mounted/sub/b.txt", "tmp/session.json")
        with pytest.raises(OSError) as raised:
            remove_listed(root, listed.files, listed.folders)
        assert raised.value.errno == errno.EXDEV
        assert raised.value.filename == str(root / "tmp" / "mounted")
    assert (precious / "a.txt").read_text() == "keep\n"
    assert (precious / "sub" / "b.txt").read_text() == "keep too\n"


@pytest.fixture(params=["openat2", "no openat2"])
def kernel(request, monkeypatch):
    """Each folder's mount checked by ``openat2``, and (a kernel or sandbox without it) by
    its device and mount id after opening it: the same refusals either way."""
    if request.param == "no openat2":
        monkeypatch.setattr(fsutil, "_openat2", [None])
    return request.param


def test_a_tree_opened_lists_what_tree_under_lists_and_enters_no_link(tmp_path, kernel):
    root = _tree(tmp_path)
    (root / "empty" / "inner").mkdir(parents=True)
    with open_tree(root) as listed:
        assert (
            listed.tree.files == tree_under(root).files == ("kept.txt", "link", "locked/draft.md")
        )
        assert sorted(listed.tree.folders) == ["empty", "empty/inner", "locked"]
        assert sorted(listed.held or {}) == ["", "empty", "empty/inner", "locked"]
    with unreadable(root / "locked"), open_tree(root) as listed:
        marker = "locked/ (unreadable: Permission denied)"
        assert listed.tree.files == ("kept.txt", "link", marker)
    with open_tree(root / "link") as listed:  # the top a link: never followed
        assert listed.tree.files == ("./ (unreadable: Not a directory)",)
        assert listed.held is None


def test_a_tree_removed_through_its_listing_s_folders_deletes_exactly_what_was_listed(
    tmp_path, kernel
):
    outside = tmp_path / "outside"
    write(outside / "session.json", "precious\n")
    root = tmp_path / "left"
    write(root / "tmp" / "session.json", "{}\n")
    write(root / "tmp" / "cache" / "a", "a\n")
    (root / "tmp" / "out").symlink_to(outside)
    with open_tree(root) as listed:
        write(root / "tmp" / "draft.md", "written after the listing\n")
        with pytest.raises(OSError) as raised:
            remove_listed(root, listed.tree.files, listed.tree.folders, held=listed.held)
    assert raised.value.errno == errno.ENOTEMPTY and raised.value.filename == str(root / "tmp")
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == ["tmp", "tmp/draft.md"]
    assert (outside / "session.json").read_text() == "precious\n"


def test_a_mount_point_in_a_tree_opened_is_listed_as_such_never_entered(tmp_path, kernel):
    """A folder bound into the tree (the same filesystem) is named as a mount point: none
    of its files is listed, so none can be judged or deleted as the tree's."""
    precious = tmp_path / "precious"
    write(precious / "a.txt", "keep\n")
    root = tmp_path / "left"
    write(root / "tmp" / "session.json", "{}\n")
    with bind_mounted(precious, root / "tmp" / "mounted", within=tmp_path):
        with open_tree(root) as listed:
            assert listed.tree.files == (
                "tmp/mounted/ (a filesystem is mounted here)",
                "tmp/session.json",
            )
            assert sorted(listed.held or {}) == ["", "tmp"]
        listed = tree_under(root)
        with pytest.raises(OSError) as raised:
            remove_listed(root, listed.files, listed.folders)
        assert raised.value.errno == errno.EXDEV
        assert raised.value.filename == str(root / "tmp" / "mounted")
    assert (precious / "a.txt").read_text() == "keep\n"


def test_a_tree_of_many_folders_is_listed_by_path_and_removed_all_the_same(tmp_path, kernel):
    """More folders than are held open: listed as tree_under lists it, none held, and the
    removal opens each folder as it goes."""
    root = tmp_path / "left"
    for i in range(HELD_FOLDERS + 5):
        write(root / "tmp" / f"d{i}" / "f", f"{i}\n")
    with open_tree(root) as listed:
        assert listed.held is None
        assert listed.tree == tree_under(root)
        remove_listed(root, listed.tree.files, listed.tree.folders, held=listed.held)
    assert not root.exists()
