"""router.git: what git prints reaches the caller byte for byte (decoded, never translated)."""

from __future__ import annotations

from helpers.repos import commit, make_repo

from router.git import Git, first_blob


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
