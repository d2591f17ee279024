"""Repos with real submodules from local bare origins, made unreachable after the primary clone.

"Unreachable" means the submodules' origins (and the clones they were pushed
from) are moved away: their URLs name paths that no longer exist, so any
fetch or clone fails. A GIT_TRACE2_EVENT log then shows whether any git
process talked to a remote.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers.faults import git_verb
from helpers.repos import commit, git, make_repo

# The git commands that talk to a remote (a clone runs fetch-pack or a remote helper).
TALKERS = {"fetch", "clone", "fetch-pack", "ls-remote", "remote-file", "remote-https", "pull"}
LIBS = ("one", "two")


def common_dir(repo: Path) -> Path:
    return Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")).resolve()


def recorded(checkout: Path, path: str) -> str:
    """The commit the checkout's HEAD records for the submodule at ``path``."""
    return git(checkout, "rev-parse", f"HEAD:{path}")


def web_with_submodules(workspace: Path, *, nested: bool = False) -> Path:
    """Home repo ``web`` with submodules ``libs/one`` and ``libs/two``, initialised in the primary.

    ``nested``: ``libone`` has a submodule ``deps/deep`` of its own (repo
    ``libdeep``), initialised in the primary too (``update --init --recursive``).
    """
    # `submodule add/update` clone through the file transport, which git
    # (since 2.38.1) allows only on request; the test's own HOME is the place.
    git(workspace, "config", "--global", "protocol.file.allow", "always")
    home = make_repo(workspace, "web")
    if nested:
        deep = make_repo(workspace, "libdeep")
        commit(deep, "deep.py", "deep = True\n", "deep: second commit")
        git(deep, "push", "-q", "origin", "main")
    for name in LIBS:
        lib = make_repo(workspace, f"lib{name}")
        commit(lib, "lib.py", f"name = {name!r}\n", f"{name}: second commit")
        if nested and name == "one":
            deep_url = git(workspace / "libdeep", "remote", "get-url", "origin")
            git(lib, "submodule", "add", "-q", deep_url, "deps/deep")
            git(lib, "commit", "-q", "-m", "one: add deps/deep")
        git(lib, "push", "-q", "origin", "main")
        url = git(lib, "remote", "get-url", "origin")
        git(home, "submodule", "add", "-q", url, f"libs/{name}")
    git(home, "commit", "-q", "-m", "add two submodules")
    git(home, "push", "-q", "origin", "main")
    if nested:
        git(home, "submodule", "update", "-q", "--init", "--recursive")
    return home


def make_unreachable(workspace: Path) -> None:
    """Move every submodule's origin (and its source clone) away: no fetch can succeed."""
    gone = workspace.parent / "gone"
    gone.mkdir()
    for name in (*LIBS, "deep"):
        if (workspace / f"lib{name}").exists():
            shutil.move(workspace.parent / "origins" / f"lib{name}.git", gone / f"lib{name}.git")
            shutil.move(workspace / f"lib{name}", gone / f"lib{name}")


def remote_talk(log: Path) -> list[list[str]]:
    """Every git process GIT_TRACE2_EVENT logged (children included) that talks to a remote."""
    found = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "start" and git_verb(event["argv"][1:]) in TALKERS:
            found.append(event["argv"])
    return found
