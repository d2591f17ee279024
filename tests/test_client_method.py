"""The /team method end to end through the real client with the scripted model: a run from an
issue URL across two repos (the test-first gate, the verifier, the security review, two linked
draft PRs), review threads on a shipped topic, ``--until design`` and ``--fix``.

The stand-in plays the orchestrator: it follows what ``team-router next`` answers, dispatches
the agents each brief names, writes what a helper would write, runs the gate and records it.
Everything asserted is what really happened: the client's requests, gh's log, git, the records.
Slow (a client run each): run this file on its own.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.client import (
    PROJECT_ROOT,
    Block,
    ClientMissing,
    Conversation,
    StandIn,
    Turns,
    ensure_client,
    run_client,
    text,
    tool,
)
from helpers.fakegh import install_fake_gh, make_github_repo, thread
from helpers.plans import repos_md
from helpers.repos import commit, git, run_cli
from helpers.topics import new_topic
from test_client_e2e import (
    QUALIFIED,
    assert_clean_run,
    bash,
    dispatch,
    frontmatter,
    results_by_tool,
    with_subagents,
)

TOOLS = "Bash Write"


@pytest.fixture(scope="session")
def claude() -> Path:
    try:
        return ensure_client()
    except ClientMissing as exc:
        missing = str(exc)
    pytest.fail(missing, pytrace=False)


@pytest.fixture
def home(hermetic: Path) -> Path:
    return hermetic / "home"


MAX_STEPS = 24
TIMEOUT = 240  # a loaded machine; ~40 s idle


def _json(out: str) -> Any:
    try:
        return json.loads(out)
    except ValueError:
        raise AssertionError(f"not the JSON of a team-router call: {out[:1500]!r}") from None


def _plan_md(started: dict[str, Any], repos: tuple[str, ...]) -> str:
    head = frontmatter("plan", started).split("\n# plan\n")[0]
    checks = "".join(f"- [repo: {r}] test: `sh check.sh`; static: `true`\n" for r in repos)
    slices = "".join(
        f"\n### Slice {i}: {r} part [repo: {r}]\n- change: `feature.txt`\n"
        f"- test: `check.sh`: feature.txt says done\n- run: `sh check.sh`\n"
        for i, r in enumerate(repos, 1)
    )
    return f"{head}\n# Plan\n\n## Checks\n{checks}\n## Slices\n{slices}"


@dataclass
class MethodWalk:
    """The orchestrator's side: ``next`` -> the phase's work -> its record -> ``next``."""

    start: str  # the `new` command line (after `team-router `)
    secondaries: dict[str, Path] = field(default_factory=dict)
    until: str | None = None
    phases: list[tuple[str, str | None]] = field(default_factory=list)
    dispatched: dict[str, list[str]] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    briefs: dict[str, str] = field(default_factory=dict)
    pr_urls: dict[str, str] = field(default_factory=dict)

    def turns(self) -> Turns:
        (out,) = yield [bash(f"team-router {self.start} --json")]
        started = self.answers["new"] = _json(out)
        self.id = started["id"]
        flag = f" --until {self.until}" if self.until else ""
        ask = bash(f"team-router next {self.id}{flag} --json")
        (out,) = yield [ask]
        for _ in range(MAX_STEPS):
            payload = _json(out)
            where = (payload["resume_at"], payload["step"])
            self.phases.append(where)
            self.briefs[":".join(filter(None, where))] = payload["brief"]
            if where[0] == "SHIPPED" or where[1] == "until":
                break
            if where[0] == "PR" and self.secondaries:
                yield from self.open_prs(payload)
                (out,) = yield [ask]
                continue
            steps = self.work(payload, started)
            *done, out = yield [*steps, ask]
            for result in done:
                if result.startswith("{") and '"command": "record"' in result:
                    assert _json(result)["ok"], result
        yield [text("Done.")]

    def work(self, payload: dict[str, Any], started: dict[str, Any]) -> list[Block]:
        at, step = payload["resume_at"], payload["step"]
        agents = sorted(set(QUALIFIED.findall(payload["brief"])))
        self.dispatched[":".join(filter(None, (at, step)))] = agents
        steps = [dispatch(name, at) for name in agents]
        plan = Path(payload["plan_dir"])
        if at == "QUESTION":
            for path in payload["expects"]:
                stem = Path(path).stem
                body = frontmatter(stem, started)
                if stem == "task" and "track: fix" in payload["brief"]:
                    body = body.replace("ticketId: null", "ticketId: null\ntrack: fix")
                steps.append(tool("Write", file_path=path, content=body))
            if self.secondaries:
                content = repos_md(
                    Path(started["home"]["repo"]),
                    *self.secondaries.items(),
                    topic=started["topic"],
                    date=started["id"][:10],
                ).replace("- **name:** web\n", "- **name:** home\n")
                steps.append(tool("Write", file_path=str(plan / "repos.md"), content=content))
        elif at in ("RESEARCH", "STRUCTURE") and step != "worktrees":
            steps += [
                tool("Write", file_path=p, content=frontmatter(Path(p).stem, started))
                for p in payload["expects"]
            ]
        elif at == "STRUCTURE":
            steps = [bash(f"team-router worktrees {self.id} --json")]
        elif at == "DESIGN" and step == "draft":
            steps.append(
                tool("Write", file_path=str(plan / "design.md"), content=self.design(started))
            )
        elif at == "DESIGN":
            steps.append(bash(f"team-router record verdict {self.id} APPROVE --json"))
        elif at == "PLAN":
            names = ("home", *self.secondaries)
            steps.append(
                tool("Write", file_path=str(plan / "plan.md"), content=_plan_md(started, names))
            )
        elif at == "IMPLEMENT" and step == "tests":
            steps += self.gate(payload)
        elif at == "IMPLEMENT":
            steps += self.slices(payload)
        elif at == "PR":
            steps.append(bash(f"team-router record pr {self.id} --local --json"))
        return steps

    def design(self, started: dict[str, Any]) -> str:
        head = frontmatter("design", started).split("\n# design\n")[0]
        return f"{head}\n# Design\n\n## Summary\nLogins are limited to five a minute.\n"

    def checkouts(self, brief: str) -> dict[str, str]:
        found = re.findall(r"^- ([a-z0-9-]+): (/\S+) \(commits since", brief, re.M)
        return dict(found)

    def gate(self, payload: dict[str, Any]) -> list[Block]:
        """The test architect's failing tests (not committed), then the gate the orchestrator runs."""
        steps: list[Block] = []
        for wt in self.checkouts(payload["brief"]).values():
            steps.append(
                tool("Write", file_path=f"{wt}/check.sh", content="grep -q done feature.txt\n")
            )
            steps.append(bash(f"cd {shlex.quote(wt)} && sh check.sh; echo exit=$?"))
        steps.append(bash(f"team-router record tests {self.id} RED --json"))
        return steps

    def slices(self, payload: dict[str, Any]) -> list[Block]:
        steps: list[Block] = []
        for wt in self.checkouts(payload["brief"]).values():
            steps.append(tool("Write", file_path=f"{wt}/feature.txt", content="done\n"))
            steps.append(
                bash(
                    f"git -C {wt} branch --show-current && git -C {wt} add -- feature.txt check.sh "
                    f'&& git -C {wt} commit -q -m "feature and its test"'
                )
            )
        steps.append(bash(f"team-router record verify {self.id} PASS --json"))
        steps.append(bash(f"team-router record review {self.id} PASS --json"))
        return steps

    def open_prs(self, payload: dict[str, Any]) -> Turns:
        """One draft PR per repo from the brief's body template, then link them all."""
        brief = payload["brief"]
        body = brief.split("```markdown\n", 1)[1].split("\n   ```", 1)[0]
        body = "\n".join(line.removeprefix("   ") for line in body.splitlines())
        footer = re.search(r"^Closes .*$", body, re.M)
        checkouts = re.findall(r"^- ([a-z0-9-]+): (/\S+) \(branch `([^`]+)`", brief, re.M)
        for name, wt, branch in checkouts:
            own = (
                body
                if name == "home" or not footer
                else body.replace(footer.group(0), "").rstrip() + "\n"
            )
            path = f"{wt}/.git-pr-body.md"
            results = yield [
                tool("Write", file_path=path, content=own),
                bash(f"git -C {wt} push -q -u origin HEAD"),
                bash(
                    f'cd {wt} && gh pr create --draft --head {branch} --title "Limit logins" '
                    f"--body-file {path}"
                ),
            ]
            # The client may add a line after gh's (its shell's directory was reset).
            url = re.search(r"https://github\.com/\S+/pull/[0-9]+", results[-1]).group(0)
            self.pr_urls[name] = url
            (recorded,) = yield [
                bash(f"team-router record pr {self.id} {url} --repo {name} --json")
            ]
            assert _json(recorded)["ok"], recorded
        for name, wt, _branch in checkouts:
            others = "".join(f"- {o}: {u}\n" for o, u in self.pr_urls.items() if o != name)
            path = f"{wt}/.git-pr-body.md"
            own = Path(path).read_text(encoding="utf-8")
            linked = re.sub(r"(## Companion PRs\n)<[^>\n]*>\n", r"\1" + others, own)
            yield [
                tool("Write", file_path=path, content=linked),
                bash(f"cd {wt} && gh pr edit {self.pr_urls[name]} --body-file {path}"),
            ]


def _run(claude: Path, home: Path, walk: MethodWalk, prompt: str, cwd: Path) -> Any:
    with StandIn(with_subagents(Conversation(walk.turns()))) as standin:
        run = run_client(
            claude, standin, prompt, cwd=cwd, home=home, allowed_tools=TOOLS, timeout=TIMEOUT
        )
    assert_clean_run(run, standin)
    refused = [
        a for a in results_by_tool(standin).values() if "needs approval" in a or "not found" in a
    ]
    assert not refused, refused
    return standin


def test_a_two_repo_run_from_an_issue_url_ends_in_two_linked_draft_prs(
    claude: Path, home: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    web = make_github_repo(workspace, "web")
    api = make_github_repo(workspace, "api")
    issue_url = "https://github.com/acme/web/issues/12"
    fake = install_fake_gh(
        tmp_path,
        monkeypatch,
        repos=("acme/web", "acme/api"),
        issues=(
            {
                "repo": "acme/web",
                "number": 12,
                "title": "Logins are not rate limited",
                "body": "Anyone can try passwords forever.",
                "state": "OPEN",
                "url": issue_url,
            },
        ),
    )
    walk = MethodWalk(f'new "{issue_url}"', {"api": api})
    standin = _run(claude, home, walk, f"/team {issue_url}", web)

    order = [p for p, _ in walk.phases]
    assert order[-1] == "SHIPPED", walk.phases
    assert ("IMPLEMENT", "tests") in walk.phases and ("IMPLEMENT", "slices") in walk.phases
    # The issue was read through gh and reached the model in the QUESTION brief.
    assert "> **Logins are not rate limited**" in walk.briefs["QUESTION"]
    assert any(
        "Anyone can try passwords forever." in r.messages_text for r in standin.conversation()
    )
    # Every agent of the method was dispatched, each found by the client.
    assert walk.dispatched["IMPLEMENT:tests"] == ["test-architect"]
    assert {"implementer", "verifier", "code-reviewer", "security-reviewer"} <= set(
        walk.dispatched["IMPLEMENT:slices"]
    )
    plan = Path(walk.answers["new"]["plan_dir"])
    for record, verdict in (
        ("tests-1.md", "RED"),
        ("verify-1.md", "PASS"),
        ("review-1.md", "PASS"),
    ):
        assert f"verdict: {verdict}\n" in (plan / record).read_text(), record
    # Two draft PRs, each recorded under its repo, linked to each other; the issue's
    # closing line on the home PR only.
    prs = {p["repo"]: p for p in fake.state()["prs"]}
    assert set(prs) == {"acme/web", "acme/api"} and all(p["isDraft"] for p in prs.values())
    assert "## Summary\nLogins are limited to five a minute." in prs["acme/web"]["body"]
    assert "Closes #12" in prs["acme/web"]["body"] and "Closes" not in prs["acme/api"]["body"]
    assert f"## Companion PRs\n- api: {walk.pr_urls['api']}" in prs["acme/web"]["body"]
    assert f"## Companion PRs\n- home: {walk.pr_urls['home']}" in prs["acme/api"]["body"]
    recorded = run_cli("next", walk.id, "--json", cwd=web).json
    assert recorded["resume_at"] == "SHIPPED"
    assert [t["repo"] for t in recorded["threads"]] == ["home", "api"]
    # Each repo's commit is on origin under the topic's branch.
    for repo in (web, api):
        assert git(repo, "ls-remote", "origin", walk.id).strip()
    assert [c[:2] for c in fake.calls() if c[:2] == ["issue", "view"]] == [["issue", "view"]]


def test_a_shipped_topic_with_review_threads_is_fixed_pushed_and_its_body_refreshed(
    claude: Path, home: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    web = make_github_repo(workspace, "web")
    made = new_topic(web)
    wt = made.worktrees["home"]
    commit(wt, "limit.py", "LIMIT = 5\n", "limit logins")
    git(wt, "push", "-q", "-u", "origin", "HEAD")
    url = "https://github.com/acme/web/pull/3"
    assert run_cli("record", "pr", made.id, url, cwd=web).code == 0
    fake = install_fake_gh(
        tmp_path,
        monkeypatch,
        prs=({"number": 3, "url": url, "state": "OPEN", "body": "old body"},),
        threads={"acme/web#3": [thread("limit.py", 1, ("rev", "Name the unit: per minute?"))]},
    )
    body = f"{wt}/.git-pr-body.md"

    def turns() -> Turns:
        (out,) = yield [bash(f"team-router next {made.id} --json")]
        payload = _json(out)
        assert payload["resume_at"] == "SHIPPED", payload
        assert "rev: Name the unit: per minute?" in payload["brief"]
        yield [
            dispatch("implementer", "SHIPPED"),
            tool("Write", file_path=f"{wt}/limit.py", content="LIMIT_PER_MINUTE = 5\n"),
            bash(f'git -C {wt} commit -q -am "name the limit\'s unit"'),
            bash(f"git -C {wt} push -q origin HEAD"),
            tool(
                "Write", file_path=body, content="## Review notes\nRenamed to LIMIT_PER_MINUTE.\n"
            ),
            bash(f"cd {wt} && gh pr edit {url} --body-file {body}"),
        ]
        yield [text("Changed: limit.py renamed (thread 1). Left: nothing.")]

    with StandIn(with_subagents(Conversation(turns()))) as standin:
        run = run_client(
            claude,
            standin,
            f"/team {made.id}",
            cwd=web,
            home=home,
            allowed_tools=TOOLS,
            timeout=TIMEOUT,
        )
    assert_clean_run(run, standin)
    assert [c[:2] for c in fake.calls() if c[0] == "api"] == [["api", "graphql"]]
    assert fake.state()["prs"][0]["body"] == "## Review notes\nRenamed to LIMIT_PER_MINUTE.\n"
    assert git(web, "ls-remote", "origin", made.id).split()[0] == git(wt, "rev-parse", "HEAD")
    assert "LIMIT_PER_MINUTE" in git(wt, "show", "HEAD:limit.py")


def test_until_design_stops_once_the_design_is_approved(
    claude: Path, home: Path, home_repo: Path
) -> None:
    walk = MethodWalk('new "add rate limiting"', until="design")
    _run(claude, home, walk, "/team add rate limiting --until design", home_repo)
    assert walk.phases[-1] == ("STRUCTURE", "until")
    assert [p for p, _ in walk.phases][:-1] == ["QUESTION", "RESEARCH", "DESIGN", "DESIGN"]
    plan = Path(walk.answers["new"]["plan_dir"])
    assert (plan / "design-review-1.md").is_file() and not (plan / "structure.md").exists()
    assert walk.briefs["STRUCTURE:until"].startswith(f"# STOP after DESIGN: {walk.id}")


def test_fix_runs_question_plan_implement_pr_and_nothing_else(
    claude: Path, home: Path, home_repo: Path
) -> None:
    walk = MethodWalk('new "the login page 500s on an empty password" --fix')
    _run(claude, home, walk, "/team --fix the login page 500s on an empty password", home_repo)
    assert walk.phases == [
        ("QUESTION", None),
        ("PLAN", None),
        ("IMPLEMENT", "tests"),
        ("IMPLEMENT", "slices"),
        ("PR", None),
        ("SHIPPED", "teardown"),
    ]
    plan = Path(walk.answers["new"]["plan_dir"])
    assert sorted(p.name for p in plan.iterdir()) == [
        "plan.md",
        "pr.md",
        "review-1.md",
        "task.md",
        "tests-1.md",
        "verify-1.md",
    ]


# -- what every session pays for --------------------------------------------------------

ALWAYS_ON_BUDGET = 2000  # tokens of skill and agent descriptions in every session


def _context_rows(report: str) -> dict[str, int]:
    """``/context``'s per-skill and per-agent rows of this plugin: name -> tokens."""
    rows = {}
    for name, tokens in re.findall(
        r"^\| (team-router:[a-z-]+) \| [^|]+ \| ~?([0-9.]+k?) \|$", report, re.M
    ):
        rows[name] = int(float(tokens[:-1]) * 1000) if tokens.endswith("k") else int(tokens)
    return rows


def test_the_plugins_always_on_context_stays_under_2k_tokens_as_the_client_reports_it(
    claude: Path, home: Path, home_repo: Path
) -> None:
    with StandIn(lambda _request: [text("ok")], estimate=True) as standin:
        run = run_client(claude, standin, "/context", cwd=home_repo, home=home)
    assert run.code == 0, run.stderr[-2000:]
    report = run.result()["result"]
    rows = _context_rows(report)
    skills = {f"team-router:{p.parent.name}" for p in (PROJECT_ROOT / "skills").glob("*/SKILL.md")}
    agents = {f"team-router:{p.stem}" for p in (PROJECT_ROOT / "agents").glob("*.md")}
    assert set(rows) == skills | agents, report  # each one reported, so each one counted
    assert all(rows[name] > 20 for name in rows), rows  # real estimates, not placeholders
    total = sum(rows.values())
    assert total < ALWAYS_ON_BUDGET, f"{total} tokens always on: {rows}"
