"""Hostile input: repos.md is written by a model, ids and names come from outside.

Whatever the input, a command exits 0, 1 or 2, prints exactly one JSON object
under --json, never a traceback, and creates nothing outside the repos that
passed containment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.faults import tree
from helpers.repos import commit, make_repo, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ID = "2026-05-01-add-thing"
SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

NASTY_TEXT = [
    "",
    "/",
    ".",
    "..",
    "../../etc/passwd",
    "$(touch pwned)",
    "`touch pwned`",
    "; rm -rf ~",
    "a && touch pwned",
    "-rf",
    "--help",
    "--json",
    "x\x00y",
    "\u202eevil",
    "\u200b",
    "\x1b[31mred",
    "line\nbreak",
    "trailing.",
    "trailing ",
    "CON",
    "nul.txt",
    "\udcff surrogate",
    "é" * 300,
    "x" * 5000,
    "refs/heads/main",
    "main",
    "HEAD",
    "@{-1}",
    "a..b",
    "a/../../b",
    "~user",
    "*",
    "?",
    "[",
]


@pytest.fixture
def arena(tmp_path: Path, workspace: Path, home_repo: Path):
    """A topic in ``web`` beside good and bad neighbours, and a directory outside it all."""
    api = make_repo(workspace, "api")
    outside = tmp_path / "outside"
    outside.mkdir()
    make_repo(outside, "stranger")
    (workspace / "plain-dir").mkdir()
    os.symlink(outside / "stranger", workspace / "link-out")
    os.symlink(api, workspace / "link-api")
    os.symlink("/", workspace / "link-root")
    res = run_cli("new", "Add thing", "--id", ID, "--json", cwd=home_repo)
    assert res.code == 0, res.err
    plan = Path(res.json["plan_dir"])
    return {"tmp": tmp_path, "ws": workspace, "home": home_repo, "api": api, "plan": plan}


def _paths(a) -> list[str]:
    ws, home, api = a["ws"], a["home"], a["api"]
    return [
        str(home),
        str(api),
        str(ws / "link-api"),
        str(ws / "link-out"),
        str(ws / "link-root"),
        str(ws / "plain-dir"),
        str(ws / "missing"),
        str(api / ".git"),
        str(api / "sub"),
        str(ws / "api" / ".." / "api"),
        str(ws / ".." / "outside" / "stranger"),
        f"{ws}/../../..",
        "/",
        "/etc",
        "/tmp",
        "relative/path",
        "~/x",
        f"{api}\n",
        f"{api} ",
        f"`{api}`",
        f"{ws}/$(touch pwned)",
        f"{ws}/;touch pwned",
        f"{ws}/\u202eipa",
        str(home / ".claude/worktrees" / ID),
        str(a["tmp"] / "outside"),
    ]


def _structured(a, *, unique: bool):
    slug = st.from_regex(r"[a-z0-9][a-z0-9-]{0,12}", fullmatch=True)
    names = st.one_of(
        st.sampled_from(["api", "api", "web", "home", "API", "a b", "../x", "x" * 200]),
        slug,
        slug,
        st.sampled_from(NASTY_TEXT),
    )
    absolute = st.sampled_from([p for p in _paths(a) if p.startswith("/")])
    path = st.one_of(absolute, absolute, absolute, st.sampled_from(_paths(a) + NASTY_TEXT))
    item = st.tuples(names, path, st.booleans())
    frontmatter = st.sampled_from(
        [
            "",
            "---\ntopic: add-thing\nphase: repos\n---\n",
            "---\n: : :\n[\n---\n",
            "---\nunclosed\n",
            "---\n---\n",
            "\ufeff---\ntopic: x\n---\n",
        ]
    )
    worktrees = st.sampled_from(
        [
            "",
            "## Worktrees\n- home: /nowhere\n",
            "## Worktrees\n",
            "## Worktrees\n- api: $(x)\n## Worktrees\n",
        ]
    )
    home = str(a["home"])
    home_path = st.sampled_from(
        [home, home, home, f"{a['ws']}/web/", str(a["api"]), "/", "relative", ""]
    )

    def build(fm, home, items, wt, newline):
        lines = [fm, "# Repos\n\n## Home repo\n", f"- **name:** web\n- **path:** {home}\n\n"]
        lines.append("## Additional repos\n")
        for name, path, bold in items:
            key = "**name:**" if bold else "name:"
            lines.append(f"- {key} {name}\n  **path:** {path}\n  **role:** r\n")
        lines.append("\n" + wt)
        text = "".join(lines)
        return (text.replace("\n", "\r\n") if newline else text).encode("utf-8", "surrogatepass")

    items = st.lists(item, max_size=4, unique_by=(lambda t: t[0]) if unique else None)
    return st.builds(build, frontmatter, home_path, items, worktrees, st.booleans())


def _many_items(a):
    def build(n, with_api):
        items = "".join(f"- **name:** r{i}\n  **path:** {a['ws']}/r{i}\n" for i in range(n))
        api = f"- **name:** api\n  **path:** {a['api']}\n" if with_api else ""
        return (
            f"## Home repo\n- **name:** web\n- **path:** {a['home']}\n\n## Additional repos\n{api}{items}"
        ).encode()

    return st.builds(build, st.integers(500, 3000), st.booleans())


def _repos_md(a):
    return st.one_of(
        st.binary(max_size=3000),
        st.text(max_size=3000).map(lambda t: t.encode("utf-8", "surrogatepass")),
        _structured(a, unique=False),
        _structured(a, unique=True),
        _structured(a, unique=True),
        _many_items(a),
        st.sampled_from(
            [b"x" * 300_000, b"## Home repo\n- path: " + b"a" * 100_000, b"\x00" * 1000]
        ),
    )


def _outside_allowed(a, before: set[str], after: set[str], allowed: list[Path]) -> list[str]:
    base = a["tmp"]
    fresh = [base / p for p in after - before]
    return sorted(str(p) for p in fresh if not any(p == r or p.is_relative_to(r) for r in allowed))


def _check_envelope(res, command: str) -> dict:
    assert res.code in (0, 1, 2), (res.code, res.err[-2000:])
    assert "Traceback" not in res.err, res.err[-4000:]
    data = json.loads(res.out)  # exactly one JSON object, nothing else
    assert isinstance(data, dict)
    assert data["ok"] is (res.code == 0)
    assert data["command"] == command
    if res.code:
        assert set(data["error"]) == {"code", "message"}
    return data


def _snapshot(a) -> set[str]:
    # The repos that pass containment may change; everything else must not.
    skip = (a["home"], a["api"])
    found = set()
    for rel in tree(a["tmp"]):
        path = a["tmp"] / rel
        if any(path == r or path.is_relative_to(r) for r in skip):
            continue
        if path.is_relative_to(a["tmp"] / "tmp") or path.is_relative_to(a["tmp"] / "home"):
            continue
        found.add(rel)
    return found


def test_worktrees_survives_any_repos_md(arena):
    a = arena
    repos_md = a["plan"] / "repos.md"

    @SETTINGS
    @given(raw=_repos_md(a))
    def run(raw: bytes) -> None:
        repos_md.write_bytes(raw)
        before = _snapshot(a)
        res = run_cli("worktrees", ID, "--json", cwd=a["home"])
        data = _check_envelope(res, "worktrees")
        assert _snapshot(a) == before  # nothing outside web and api appeared or vanished
        if res.code == 2:
            assert data["error"]["code"] in {"repos-md", "usage"}
        for repo in data.get("repos", []):
            if repo["status"] in {"created", "existing"}:
                real = Path(os.path.realpath(repo["worktree"]))
                assert real.parent.parent.parent in {a["home"], a["api"]}
        if raw == repos_md.read_bytes():
            return
        # Only the ## Worktrees section may change; a rerun changes nothing more.
        again = run_cli("worktrees", ID, "--json", cwd=a["home"])
        assert again.code == res.code
        if again.code == 0:
            assert again.json["repos_md_updated"] is False

    run()


def test_new_survives_any_id_description_ticket_and_date(arena):
    a = arena
    text = st.one_of(st.text(max_size=200), st.sampled_from(NASTY_TEXT))

    @SETTINGS
    @given(
        description=text,
        topic_id=st.none()
        | text
        | st.from_regex(r"2026-05-0[1-9]-[a-z0-9-]{1,20}", fullmatch=True),
        ticket=st.none() | text | st.from_regex(r"[A-Z]{1,4}-[0-9]{1,5}", fullmatch=True),
        date=st.none()
        | text
        | st.sampled_from(["2026-02-30", "2026-13-01", "0000-00-00", "2026-05-01"]),
    )
    def run(description, topic_id, ticket, date) -> None:
        args = ["new", "--json"]
        for flag, value in (("--id", topic_id), ("--ticket", ticket), ("--date", date)):
            if value is not None:
                args += [f"{flag}={value}"]
        args += ["--", description]
        before = _snapshot(a)
        res = run_cli(*args, cwd=a["home"])
        data = _check_envelope(res, "new")
        assert _snapshot(a) == before
        if res.code == 0:
            worktree = data["home"]["worktree"]
            assert Path(worktree).parent == a["home"] / ".claude/worktrees"
            assert Path(worktree).name == data["branch"] == data["id"]
            assert Path(data["plan_dir"]) == Path(worktree) / "docs/plans" / data["id"]
        elif res.code == 2:
            assert data["error"]["code"] in {"invalid-id", "usage"}

    run()


def test_a_plan_dir_symlinked_out_of_the_repo_is_not_followed_out(arena):
    a = arena
    outside = a["tmp"] / "outside"
    os.symlink(outside, a["plan"].parent / "2026-05-01-escape")
    before = _snapshot(a)
    res = run_cli("worktrees", str(a["plan"].parent / "2026-05-01-escape"), "--json", cwd=a["home"])
    _check_envelope(res, "worktrees")
    assert _snapshot(a) == before


def test_pr_cleanup_survives_any_target(arena):
    """Branch names, PR numbers and URLs from outside are data: validated, never run."""
    from helpers.topics import snapshot_of

    a = arena
    # The topic's branch holds work, so no target here is merged.
    commit(a["home"] / ".claude/worktrees" / ID, "work.py", "w = 1\n", "unmerged work")
    text = st.one_of(st.text(max_size=120), st.sampled_from(NASTY_TEXT))
    target = st.one_of(
        text,
        st.from_regex(r"[0-9]{1,12}", fullmatch=True),
        st.builds(lambda t: f"https://github.com/acme/web/pull/{t}", text),
        st.from_regex(r"[A-Za-z0-9._/-]{1,40}", fullmatch=True),
        st.sampled_from(["main", "MAIN", "master", "develop", "release/1.0", "Release/X", ID]),
    )

    @SETTINGS
    @given(target=target, abandon=st.booleans())
    def run(target: str, abandon: bool) -> None:
        args = ["pr-cleanup", "--json"] + (["--abandon"] if abandon else []) + ["--", target]
        before = _snapshot(a), snapshot_of(a["home"]), snapshot_of(a["api"])
        res = run_cli(*args, cwd=a["home"])
        _check_envelope(res, "pr-cleanup")
        # No branch here is merged and no abandon was confirmed: nothing may change
        # (a name that matches nothing is refused, unknown-branch).
        assert (_snapshot(a), snapshot_of(a["home"]), snapshot_of(a["api"])) == before

    run()
