"""A folder's files, asked without git: an unreadable folder never reads as empty."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.unreadable import unreadable

from router.fsutil import files_under


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
