"""Test helpers over real git: repos with a local bare origin, commits, and the CLI in-process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import plancheck

# Variables that would point git (or the crash seam) at something outside the test.
LEAKY_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_COUNT",
    "TEAM_ROUTER_CRASH_AT",
    "CLAUDE_PROJECT_DIR",  # the hook would look there instead of the test's directory
)


def hermetic_env(root: Path) -> dict[str, str]:
    """Own HOME, no system config, fixed identity and dates, all under ``root`` (made here)."""
    home, template, tmp = root / "home", root / "git-template", root / "tmp"
    for path in (home, template, tmp):
        path.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.com",
        "GIT_AUTHOR_DATE": "2026-05-01T12:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-05-01T12:00:00+00:00",
        "GIT_TEMPLATE_DIR": str(template),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_EDITOR": "false",
        "TMPDIR": str(tmp),
        "NO_COLOR": "1",
    }


# The repository formats git writes: object ids (SHA-1, SHA-256) and where refs live (files, a
# reftable). A test made for each runs every git of the test, the router's included, in it.
FORMATS = ("sha1", "sha256", "reftable")
# A directory holding a git >= 2.45, the first to write reftables.
GIT_NEW = Path(os.environ.get("TEAM_ROUTER_TEST_GIT_NEW", "/opt/git-new/bin"))


def format_env(fmt: str) -> dict[str, str] | str:
    """What the environment needs for every repository made in it to have format ``fmt``
    (``git init`` and ``git clone`` of an empty repository read it); a str: why it cannot."""
    if fmt == "sha1":
        return {}
    if fmt == "sha256":
        return {"GIT_DEFAULT_HASH": "sha256"}
    assert fmt == "reftable", fmt
    new = GIT_NEW / "git"
    proc = subprocess.run([str(new), "--version"], capture_output=True, text=True, check=False)
    version = proc.stdout.split()[-1:] if proc.returncode == 0 else []
    if not version or tuple(int(p) for p in version[0].split(".")[:2]) < (2, 45):
        return f"reftable repositories need git >= 2.45 in {GIT_NEW} (TEAM_ROUTER_TEST_GIT_NEW)"
    return {
        "PATH": f"{GIT_NEW}{os.pathsep}{os.environ['PATH']}",
        "GIT_DEFAULT_REF_FORMAT": "reftable",
    }


def repo_format(repo: Path) -> str:
    """``repo``'s format as git reports it: sha1, sha256 or reftable (a SHA-1 reftable)."""
    objects = git(repo, "rev-parse", "--show-object-format")
    refs = git(repo, "config", "--get", "extensions.refstorage", check=False) or "files"
    return (
        "reftable"
        if refs == "reftable" and objects == "sha1"
        else f"{objects}-{refs}".removesuffix("-files")
    )


def git(cwd: Path, *args: str, check: bool = True, input: str | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False, input=input
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr}")
    return proc.stdout.strip()


def own_lock(topic_id: str) -> str:
    """The reason team-router locks a worktree of ``topic_id`` with (DESIGN §10)."""
    return f"team-router: topic {topic_id} (team-router teardown {topic_id} removes it)"


def lock_reason(repo: Path, worktree: Path) -> str | None:
    """Why git has ``worktree`` locked ("" for no reason), or None when it is not locked."""
    listing = git(repo, "worktree", "list", "--porcelain", "-z").split("\0\0")
    for entry in listing:
        fields = dict(f.partition(" ")[::2] for f in entry.split("\0") if f)
        if fields.get("worktree") == str(worktree):
            return fields.get("locked")
    raise AssertionError(f"{worktree} is not a registered worktree of {repo}")


def unlock(repo: Path, worktree: Path) -> None:
    """Take team-router's lock off ``worktree``, as a user does before removing it by hand."""
    git(repo, "worktree", "unlock", str(worktree))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def commit(
    repo: Path, rel: str = "file.txt", text: str | None = None, msg: str | None = None
) -> str:
    write(repo / rel, text if text is not None else f"{rel} at {msg or 'change'}\n")
    git(repo, "add", "--", rel)
    git(repo, "commit", "-q", "-m", msg or f"change {rel}")
    return git(repo, "rev-parse", "HEAD")


def make_repo(parent: Path, name: str, *, origin: bool = True, commit_first: bool = True) -> Path:
    """``parent/name`` on ``main`` with one commit, pushed to a bare origin outside ``parent``."""
    repo = parent / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    if commit_first:
        commit(repo, "README.md", f"# {name}\n", "initial")
    if origin:
        bare = parent.parent / "origins" / f"{name}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        git(parent, "init", "-q", "--bare", "-b", "main", str(bare))
        git(repo, "remote", "add", "origin", str(bare))
        if commit_first:
            git(repo, "push", "-q", "-u", "origin", "main")
            git(repo, "remote", "set-head", "origin", "main")
    return repo


def status(repo: Path) -> str:
    return git(repo, "status", "--porcelain", "--untracked-files=all")


def worktree_paths(repo: Path) -> list[str]:
    out = git(repo, "worktree", "list", "--porcelain")
    return [ln.removeprefix("worktree ") for ln in out.splitlines() if ln.startswith("worktree ")]


def branches(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").splitlines()


@dataclass
class CliResult:
    """What a team-router run left: exit code, stdout, stderr (in-process or a real process)."""

    code: int
    out: str
    err: str

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.out)


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None) -> CliResult:
    """Run team-router in-process as a user would (``-C cwd``), capturing its output.

    A real teardown or pr-cleanup is planned first while the plan check is on
    (:mod:`helpers.plancheck`): what it then did must be what its dry run said.
    """
    if not plancheck.wanted(args):
        return _in_process(*args, cwd=cwd, stdin=stdin)

    def plan(dry: list[str]) -> tuple[int, str]:
        res = _in_process(*dry, cwd=cwd, stdin=stdin)
        return res.code, res.out

    return plancheck.checked(args, cwd, plan, lambda: _in_process(*args, cwd=cwd, stdin=stdin))


def _in_process(*args: str, cwd: Path | None = None, stdin: str | None = None) -> CliResult:
    from router.entry import main

    argv = (["-C", str(cwd)] if cwd is not None else []) + list(args)
    out, err = io.StringIO(), io.StringIO()
    old_stdin = os.sys.stdin  # type: ignore[attr-defined]
    try:
        if stdin is not None:
            os.sys.stdin = io.StringIO(stdin)  # type: ignore[attr-defined]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.sys.stdin = old_stdin  # type: ignore[attr-defined]
    return CliResult(code, out.getvalue(), err.getvalue())
