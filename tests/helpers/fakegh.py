"""A fake ``gh`` first on PATH, answering from a JSON file, and repos with a GitHub-looking origin.

The fake accepts only what team-router may send (``auth status``, ``pr view``,
``pr list``, ``pr close``, each with ``--repo``) and logs every call, so a test
can assert what reached gh. It refuses a request for ``title`` or ``body``:
PR prose must never be asked for, let alone reach a command.

Repos made here have an origin URL that looks like GitHub
(``https://github.com/acme/<name>.git``) which git rewrites to the local bare
origin through ``url.<path>.insteadOf``, so fetch, push and ls-remote are real.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers.repos import commit, git, make_repo

OWNER = "acme"

FAKE_GH = r"""#!__PYTHON__
import json, sys, time

STATE = __STATE__
LOG = __LOG__


def load():
    with open(STATE, encoding="utf-8") as fh:
        return json.load(fh)


def save(data):
    with open(STATE, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)


def fail(message, code=1):
    print(message, file=sys.stderr)
    sys.exit(code)


def options(args):
    found, rest, i = {}, [], 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--") and "=" in arg:
            key, _, value = arg[2:].partition("=")
            found[key] = value
        elif arg.startswith("--"):
            flag = i + 1 >= len(args) or args[i + 1].startswith("--")  # --draft
            found[arg[2:]] = "" if flag else args[i + 1]
            i += 0 if flag else 1
        else:
            rest.append(arg)
        i += 1
    return found, rest


def pick(pr, fields):
    if {"title", "body"} & set(fields):
        fail("fake gh: PR prose was requested", 3)
    return {f: pr.get(f) for f in fields}


def main():
    args = sys.argv[1:]
    with open(LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(args) + "\n")
    data = load()
    if data.get("sleep"):
        time.sleep(data["sleep"])
    if args[:2] == ["auth", "status"]:
        if not data.get("authenticated", True):
            fail("You are not logged into any GitHub hosts. To log in, run: gh auth login")
        print("Logged in to github.com", file=sys.stderr)
        return
    known = data.get("repos") or [data["repo"]]
    if args[:2] == ["api", "graphql"]:
        return review_threads(data, args[2:], known)
    if args[:2] == ["issue", "view"]:
        return issue_view(data, args[2:], known)
    if args[:2] in (["pr", "create"], ["pr", "edit"]):
        return pr_write(data, args[1], args[2:], known)
    if args[:1] != ["pr"] or len(args) < 2:
        fail(f"fake gh: unexpected call {args}", 4)
    opts, rest = options(args[2:])
    if opts.get("repo") not in known:
        fail(f"fake gh: --repo {opts.get('repo')!r} is not {data['repo']!r}", 5)
    if data.get("fail"):
        fail("HTTP 502: Bad Gateway (https://api.github.com/graphql)")
    prs = data["prs"]
    fields = [f for f in opts.get("json", "").split(",") if f]
    if args[1] == "view":
        match = [p for p in prs if str(p["number"]) == rest[0]]
        if not match:
            fail(f"GraphQL: Could not resolve to a PullRequest with the number of {rest[0]}.")
        print(json.dumps(pick(match[0], fields)))
    elif args[1] == "list":
        state = opts.get("state", "open")
        found = [
            p for p in prs
            if ("head" not in opts or p["headRefName"] == opts["head"])
            and ("base" not in opts or p["baseRefName"] == opts["base"])
            and (state == "all" or p["state"].lower() == state)
        ]
        print(json.dumps([pick(p, fields) for p in found]))
    elif args[1] == "close":
        if int(rest[0]) in data.get("close_fails", []):
            fail("GraphQL: Resource not accessible by integration (closePullRequest)")
        for p in prs:
            if str(p["number"]) == rest[0]:
                if p["state"] != "OPEN":
                    fail(f"Pull request #{rest[0]} is already {p['state'].lower()}")
                p["state"] = "CLOSED"
                save(data)
                print(f"Closed pull request #{rest[0]}", file=sys.stderr)
                return
        fail(f"no pull request #{rest[0]}")
    else:
        fail(f"fake gh: unexpected call {args}", 4)


def review_threads(data, args, known):
    fields, i = {}, 0
    while i < len(args):
        if args[i] in ("-f", "-F") and i + 1 < len(args):
            key, _, value = args[i + 1].partition("=")
            fields[key] = value
            i += 2
        else:
            i += 1
    repo = f"{fields.get('owner')}/{fields.get('name')}"
    if repo not in known or "reviewThreads" not in fields.get("query", ""):
        fail(f"fake gh: graphql for {repo!r}: {fields}", 5)
    nodes = data.get("threads", {}).get(f"{repo}#{fields.get('number')}", [])
    body = {"data": {"repository": {"pullRequest": {"reviewThreads": {"nodes": nodes}}}}}
    print(json.dumps(body))


def issue_view(data, args, known):
    opts, rest = options(args)
    if opts.get("repo") not in known:
        fail(f"fake gh: --repo {opts.get('repo')!r} is not one of {known!r}", 5)
    for issue in data.get("issues", []):
        if issue["repo"] == opts["repo"] and str(issue["number"]) == rest[0]:
            fields = [f for f in opts.get("json", "").split(",") if f]
            print(json.dumps({f: issue.get(f) for f in fields}))
            return
    fail(f"GraphQL: Could not resolve to an issue or pull request with the number of {rest[0]}.")


def pr_write(data, verb, args, known):
    import os, subprocess

    opts, rest = options(args)
    body = opts.get("body-file")
    text = open(body, encoding="utf-8").read() if body else ""
    if verb == "edit":
        for p in data["prs"]:
            if p["url"] == rest[0] or str(p["number"]) == rest[0]:
                p["body"] = text
                save(data)
                print(p["url"])
                return
        fail(f"fake gh: no PR {rest[0]}")
    # The URL as configured: `git remote get-url` would apply the insteadOf rewrite.
    url = subprocess.run(
        ["git", "config", "--get", "remote.origin.url"],
        capture_output=True,
        text=True,
        cwd=os.getcwd(),
    ).stdout.strip()
    repo = url.removeprefix("https://github.com/").removesuffix(".git")
    if repo not in known:
        fail(f"fake gh: pr create in {os.getcwd()} (origin {url!r}) is not one of {known!r}", 5)
    number = max([p["number"] for p in data["prs"]] + [0]) + 1
    pr = {
        "number": number,
        "state": "OPEN",
        "isDraft": "draft" in opts,
        "headRefName": opts.get("head"),
        "headRefOid": "",
        "baseRefName": opts.get("base", "main"),
        "mergeCommit": None,
        "isCrossRepository": False,
        "headRepositoryOwner": {"login": repo.split("/")[0]},
        "url": f"https://github.com/{repo}/pull/{number}",
        "title": opts.get("title"),
        "body": text,
        "repo": repo,
    }
    data["prs"].append(pr)
    save(data)
    print(pr["url"])


main()
"""


@dataclass
class FakeGh:
    bin_dir: Path
    state_path: Path
    log_path: Path

    def state(self) -> dict[str, Any]:
        return json.loads(self.state_path.read_text(encoding="utf-8"))

    def update(self, **changes: Any) -> None:
        data = self.state()
        data.update(changes)
        self.state_path.write_text(json.dumps(data, indent=2), encoding="utf-8")

    def set_prs(self, *prs: dict[str, Any]) -> None:
        self.update(prs=list(prs))

    def pr_state(self, number: int) -> str:
        return next(p["state"] for p in self.state()["prs"] if p["number"] == number)

    def calls(self) -> list[list[str]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text(encoding="utf-8").splitlines()]

    def closed(self) -> list[int]:
        """PR numbers closed, in the order gh was asked to close them."""
        return [int(c[2]) for c in self.calls() if c[:2] == ["pr", "close"]]


def install_fake_gh(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch | None,
    *,
    repo: str = f"{OWNER}/web",
    prs: tuple[dict[str, Any], ...] = (),
    authenticated: bool = True,
    repos: tuple[str, ...] = (),
    issues: tuple[dict[str, Any], ...] = (),
    threads: dict[str, list[dict[str, Any]]] | None = None,
) -> FakeGh:
    """Put a fake gh first on PATH; it answers from a JSON file (see :class:`FakeGh`).

    ``repos``: every repository it answers for (default: ``repo`` alone); ``issues``:
    ``{"repo", "number", "title", "body", "state", "url"}``; ``threads``: review thread
    nodes as GitHub's GraphQL gives them, by ``"OWNER/NAME#N"``. Without
    ``monkeypatch`` PATH is left alone (the caller puts ``bin_dir`` on it).
    """
    base = tmp_path / "fake-gh"
    bin_dir = base / "bin"
    bin_dir.mkdir(parents=True)
    state_path, log_path = base / "state.json", base / "calls.jsonl"
    state = {
        "repo": repo,
        "repos": list(repos) or [repo],
        "authenticated": authenticated,
        "prs": list(prs),
        "issues": list(issues),
        "threads": threads or {},
    }
    state_path.write_text(json.dumps(state), encoding="utf-8")
    script = (
        FAKE_GH.replace("__PYTHON__", sys.executable)
        .replace("__STATE__", repr(str(state_path)))
        .replace("__LOG__", repr(str(log_path)))
    )
    gh = bin_dir / "gh"
    gh.write_text(script, encoding="utf-8")
    gh.chmod(0o755)
    if monkeypatch is not None:
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return FakeGh(bin_dir, state_path, log_path)


def thread(path: str, line: int, *comments: tuple[str, str], resolved: bool = False) -> dict:
    """One review thread node as GitHub's GraphQL answers it."""
    return {
        "isResolved": resolved,
        "isOutdated": False,
        "path": path,
        "line": line,
        "comments": {"nodes": [{"author": {"login": a}, "body": b} for a, b in comments]},
    }


def hide_gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only git and sh, so no gh (real or fake) can be found."""
    bin_dir = tmp_path / "no-gh-bin"
    bin_dir.mkdir()
    for tool in ("git", "sh"):
        found = shutil.which(tool)
        assert found, f"{tool} must be installed"
        (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def pr(
    number: int,
    head: str,
    head_oid: str,
    *,
    state: str = "MERGED",
    merge_commit: str | None = None,
    base: str = "main",
    fork_owner: str | None = None,
) -> dict[str, Any]:
    """One PR as gh's JSON names its fields (with prose that must never be used)."""
    owner = fork_owner or OWNER
    return {
        "number": number,
        "state": state,
        "headRefName": head,
        "headRefOid": head_oid,
        "baseRefName": base,
        "mergeCommit": {"oid": merge_commit} if merge_commit else None,
        "isCrossRepository": fork_owner is not None,
        "headRepositoryOwner": {"login": owner},
        "url": f"https://github.com/{OWNER}/web/pull/{number}",
        "title": "$(touch PWNED_TITLE)",
        "body": "`touch PWNED_BODY`; rm -rf /",
    }


# -- repos with a GitHub-looking origin -------------------------------------------------


def github_url(name: str) -> str:
    return f"https://github.com/{OWNER}/{name}.git"


def make_github_repo(parent: Path, name: str = "web", *, branch: str = "main") -> Path:
    """A repo whose origin URL is GitHub's, rewritten by git to a local bare origin."""
    if branch == "main":
        repo = make_repo(parent, name)
    else:
        repo = parent / name
        repo.mkdir(parents=True)
        git(repo, "init", "-q", "-b", branch)
        commit(repo, "README.md", f"# {name}\n", "initial")
        bare = parent.parent / "origins" / f"{name}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        git(parent, "init", "-q", "--bare", "-b", branch, str(bare))
        git(repo, "remote", "add", "origin", str(bare))
        git(repo, "push", "-q", "-u", "origin", branch)
        git(repo, "remote", "set-head", "origin", branch)
    bare = git(repo, "remote", "get-url", "origin")
    git(repo, "config", f"url.{bare}.insteadOf", github_url(name))
    git(repo, "remote", "set-url", "origin", github_url(name))
    return repo
