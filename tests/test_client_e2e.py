"""End to end through the real Claude Code client: the plugin loaded with --plugin-dir,
a scripted model on 127.0.0.1, and real git and team-router underneath.

The stand-in model only decides which tool calls to make; everything asserted here is
what the client itself did: what it put in the requests it sent to the model, which tool
calls it ran, refused or could not resolve.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.client import (
    PROJECT_ROOT,
    Block,
    ClientMissing,
    ClientRun,
    Conversation,
    Request,
    StandIn,
    Turns,
    ensure_client,
    result_text,
    run_client,
    run_plain,
    text,
    tool,
)
from helpers.plans import artifact, repos_md, touch
from helpers.repos import branches, git, make_repo, run_cli, status, worktree_paths
from helpers.topics import multi_topic

# Agents are named in skills and briefs by the qualified name the client resolves
# (`team-router:<name>`: a plugin's agent is "not found" under its bare name).
QUALIFIED = re.compile(r"`team-router:([a-z][a-z0-9-]*)`")
SUBAGENT = "E2E-SUBAGENT"


@pytest.fixture(scope="session")
def claude() -> Path:
    # Never a skip: CI installs the client before the tests (.ci/run), and a test run
    # without it must say so by failing.
    try:
        return ensure_client()
    except ClientMissing as exc:
        missing = str(exc)
    pytest.fail(missing, pytrace=False)


@pytest.fixture
def home(hermetic: Path) -> Path:
    return hermetic / "home"


def named_agents() -> set[str]:
    """Every agent the skills and the phase briefs tell the orchestrator to dispatch."""
    skills = {p.name for p in (PROJECT_ROOT / "skills").iterdir() if p.is_dir()}
    sources = [
        *(PROJECT_ROOT / "skills").rglob("*.md"),
        *(PROJECT_ROOT / "templates" / "briefs").glob("*.j2"),
    ]
    names = {m for p in sources for m in QUALIFIED.findall(p.read_text(encoding="utf-8"))}
    return names - skills


def team_skill_heading() -> str:
    """The first line of the team skill's body, as it appears inside a JSON request."""
    skill = (PROJECT_ROOT / "skills" / "team" / "SKILL.md").read_text(encoding="utf-8")
    heading = skill.split("---", 2)[2].strip().splitlines()[0]
    return json.dumps(heading)[1:-1]


def agent_prompt(name: str) -> str:
    """The first line of the prompt of the agent file whose frontmatter names ``name``."""
    for path in sorted((PROJECT_ROOT / "agents").glob("*.md")):
        _, front, body = path.read_text(encoding="utf-8").split("---", 2)
        if yaml.safe_load(front).get("name") == name:
            return next(line for line in body.splitlines() if line.strip()).strip()
    raise AssertionError(f"no agents/*.md has `name: {name}`")


def scripted(*turns: list[Block]) -> Callable[[Request], list[Block]]:
    """The main conversation answers ``turns`` in order, then "done"."""

    def play() -> Turns:
        for turn in turns:
            _results = yield turn  # (a tuple has no send(): no `yield from` here)

    return with_subagents(Conversation(play()))


def with_subagents(main: Callable[[Request], list[Block]]) -> Callable[[Request], list[Block]]:
    """Subagents (their prompt carries SUBAGENT) answer at once; the rest is ``main``'s."""

    def script(request: Request) -> list[Block]:
        if SUBAGENT in request.first_user_text():
            return [text("subagent done")]
        return main(request)

    return script


def results_by_tool(standin: StandIn) -> dict[str, str]:
    """tool_use id -> the tool_result text the client sent back, over the conversation."""
    out: dict[str, str] = {}
    for request in standin.conversation():
        for block in request.tool_results():
            out[block["tool_use_id"]] = result_text(block)
    return out


def calls(run: ClientRun, name: str) -> list[Block]:
    """The tool_use blocks named ``name`` the client reports it received, in order."""
    return [
        block
        for event in run.events
        if event.get("type") == "assistant" and event.get("parent_tool_use_id") is None
        for block in event["message"]["content"]
        if block.get("type") == "tool_use" and block.get("name") == name
    ]


def assert_clean_run(run: ClientRun, standin: StandIn) -> None:
    assert not standin.errors, standin.errors
    assert run.code == 0, run.stderr[-2000:]
    assert run.result().get("subtype") == "success", run.result()


def test_the_client_validates_the_plugin_and_lists_its_skills_hook_and_agents(
    claude: Path, home: Path
) -> None:
    manifest = ".claude-plugin/plugin.json"
    proc = run_plain(
        claude, "plugin", "validate", "--strict", "--json", manifest, cwd=PROJECT_ROOT, home=home
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    report = json.loads(proc.stdout)
    provides = report["provides"]
    skills = {f"team-router:{p.parent.name}" for p in (PROJECT_ROOT / "skills").glob("*/SKILL.md")}
    assert set(provides["skills"]) == skills
    assert [h["event"] for h in provides["hooks"]] == [
        "SessionStart",
        "WorktreeCreate",
        "WorktreeRemove",
    ]
    agents = named_agents()
    assert agents, "no skill or brief names an agent as `team-router:<name>`"
    assert {f"team-router:{a}" for a in agents} <= set(provides["agents"])


@pytest.mark.parametrize("where", ["worktree", "primary"])
def test_the_session_start_notice_reaches_the_model_in_the_first_request(
    claude: Path, home: Path, home_repo: Path, where: str
) -> None:
    made = run_cli("new", "add rate limiting", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert made.code == 0, made.out
    topic = made.json["id"]
    cwd = Path(made.json["home"]["worktree"]) if where == "worktree" else home_repo
    with StandIn(scripted([text("noted")])) as standin:
        run = run_client(claude, standin, "hello", cwd=cwd, home=home)
    assert_clean_run(run, standin)
    first = standin.conversation()[0]
    assert f"Phase: QUESTION | Id: {topic}" in first.messages_text
    assert made.json["plan_dir"] in first.messages_text


def test_a_session_in_a_topics_worktree_is_told_that_topic_not_the_newest_one(
    claude: Path, home: Path, workspace: Path
) -> None:
    # Topic A at DESIGN with api as a secondary; topic B is newer (its plan dir made now).
    older = multi_topic(workspace, ("api",), topic_id="2026-05-01-older-topic")
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(older.plan_dir, name)
    for path in older.plan_dir.iterdir():
        touch(path, 1_000_000_000)
    newer = run_cli("new", "newer topic", "--date", "2026-05-02", "--json", cwd=older.home)
    assert newer.code == 0, newer.out
    for cwd in (older.worktrees["home"], older.worktrees["api"]):
        with StandIn(scripted([text("noted")])) as standin:
            run = run_client(claude, standin, "hello", cwd=cwd, home=home)
        assert_clean_run(run, standin)
        first = standin.conversation()[0].messages_text
        assert f"Phase: DESIGN | Id: {older.id}" in first, cwd
        assert newer.json["id"] not in first, cwd


def test_slash_team_loads_the_team_skill_with_the_request(
    claude: Path, home: Path, home_repo: Path
) -> None:
    request = "add rate limiting to the login endpoint"
    with StandIn(scripted([text("on it")])) as standin:
        run = run_client(claude, standin, f"/team {request}", cwd=home_repo, home=home)
    assert_clean_run(run, standin)
    first = standin.conversation()[0].messages_text
    assert team_skill_heading() in first, "the /team skill's body is not in the request"
    assert request in first


def test_the_skill_tool_loads_the_team_skill_for_the_model(
    claude: Path, home: Path, home_repo: Path
) -> None:
    with StandIn(
        scripted([tool("Skill", skill="team-router:team", args="add rate limiting")])
    ) as standin:
        run = run_client(claude, standin, "please run the team pipeline", cwd=home_repo, home=home)
    assert_clean_run(run, standin)
    (call,) = calls(run, "Skill")
    answered = results_by_tool(standin)[call["id"]]
    assert "not found" not in answered.lower() and "unknown skill" not in answered.lower()
    after = standin.conversation()[-1].messages_text
    assert team_skill_heading() in after, "the skill's body never reached the model"


def test_team_router_bash_calls_run_without_a_prompt_and_their_json_reaches_the_model(
    claude: Path, home: Path, home_repo: Path
) -> None:
    made = run_cli("new", "add rate limiting", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert made.code == 0, made.out
    with StandIn(
        scripted(
            [
                tool("Bash", command="team-router status --json", description="List topics"),
                tool("Bash", command="touch made-by-the-model", description="Create a file"),
            ]
        )
    ) as standin:
        run = run_client(claude, standin, "where are we?", cwd=home_repo, home=home)
    assert_clean_run(run, standin)
    allowed, denied = calls(run, "Bash")
    answers = results_by_tool(standin)
    payload = json.loads(answers[allowed["id"]])
    assert payload["ok"] is True and payload["command"] == "status"
    assert [t["id"] for t in payload["topics"]] == [made.json["id"]]
    # The permission check is live: a command the rule does not cover was refused, so
    # the team-router call ran because of the rule, not because nothing asks.
    assert "needs approval" in answers[denied["id"]], answers[denied["id"]]
    assert not (home_repo / "made-by-the-model").exists()


def test_the_agent_tool_accepts_every_agent_the_skills_and_briefs_name(
    claude: Path, home: Path, home_repo: Path
) -> None:
    agents = sorted(named_agents())
    assert agents, "no skill or brief names an agent as `team-router:<name>`"
    dispatch = [
        tool(
            "Agent",
            subagent_type=f"team-router:{name}",
            description=f"Run the {name}",
            prompt=f"{SUBAGENT}: reply 'done' and stop.",
            run_in_background=False,
        )
        for name in agents
    ]
    with StandIn(scripted(dispatch)) as standin:
        run = run_client(claude, standin, "dispatch the team", cwd=home_repo, home=home)
    assert_clean_run(run, standin)
    answers = results_by_tool(standin)
    refused = {
        call["input"]["subagent_type"]: answers.get(call["id"], "(no result)")
        for call in calls(run, "Agent")
        if "not found" in answers.get(call["id"], "(no result)")
    }
    assert not refused
    assert len(calls(run, "Agent")) == len(agents)
    # Each ran as our agent: its own request to the model carried the agent's prompt.
    subagents = [r.system_text for r in standin.conversation() if SUBAGENT in r.first_user_text()]
    for name in agents:
        prompt = agent_prompt(name)
        assert any(prompt in system for system in subagents), (
            f"{name}'s prompt never reached the model"
        )
    assert status(home_repo) == ""


# -- a scripted walk of every phase -----------------------------------------------------

WALK_TOOLS = "Bash(team-router:*) Bash(git:*) Write"
MAX_PHASES = 20
GATES = {
    ("DESIGN", "review"): "record verdict {id} APPROVE",
    ("IMPLEMENT", "tests"): "record tests {id} RED",
    ("IMPLEMENT", "slices"): "record review {id} PASS",
    ("PR", None): "record pr {id} https://example.invalid/org/web/pull/1",
}


@dataclass
class Walk:
    """The orchestrator's side, played by the script: it follows what `team-router next`
    answers, dispatches the agents each brief names, writes what the phase `expects`,
    commits at IMPLEMENT, records each gate, and tears the topic down once SHIPPED."""

    description: str
    api: Path
    phases: list[tuple[str, str | None]] = field(default_factory=list)
    dispatched: dict[str, list[str]] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)

    def turns(self) -> Turns:
        (out,) = yield [bash(f'team-router new "{self.description}" --json')]
        started = self.answers["new"] = json.loads(out)
        topic_id = started["id"]
        ask = bash(f"team-router next {topic_id} --json")
        (out,) = yield [ask]
        for _ in range(MAX_PHASES):
            payload = json.loads(out)
            where = (payload["resume_at"], payload["step"])
            self.phases.append(where)
            if where[0] == "SHIPPED":
                break
            # One turn per phase: tools that change something run one after the other in
            # the order asked, so `next` at the end sees the phase's work done.
            if where == ("STRUCTURE", "worktrees"):
                steps = [bash(f"team-router worktrees {topic_id} --json")]
            else:
                steps = self.phase_work(payload, started)
            *done, out = yield [*steps, ask]
            if where == ("STRUCTURE", "worktrees"):
                self.answers["worktrees"] = json.loads(done[0])
            elif where in GATES:
                assert json.loads(done[-1])["ok"], done[-1]
        (out,) = yield [bash(f"team-router teardown {topic_id} --integrate --json")]
        self.answers["teardown"] = json.loads(out)
        yield [text("The topic is shipped and torn down.")]

    def phase_work(self, payload: dict[str, Any], started: dict[str, Any]) -> list[Block]:
        where = (payload["resume_at"], payload["step"])
        agents = sorted(set(QUALIFIED.findall(payload["brief"])))
        self.dispatched[":".join(filter(None, where))] = agents
        steps = [dispatch(name, payload["resume_at"]) for name in agents]
        steps += [
            tool("Write", file_path=p, content=body) for p, body in self.artifacts(payload, started)
        ]
        if where[0] == "IMPLEMENT":
            steps += self.commits(payload, where[1] or "slice")
        gate = GATES.get(where)
        if gate:
            steps.append(bash(f"team-router {gate.format(id=payload['id'])} --json"))
        return steps

    def artifacts(self, payload: dict[str, Any], started: dict[str, Any]) -> list[tuple[str, str]]:
        if payload["resume_at"] in {"IMPLEMENT", "PR"} or payload["step"] == "review":
            return []  # commits and router-written gate records, not artifacts
        writes = [(p, frontmatter(Path(p).stem, started)) for p in payload["expects"]]
        if payload["resume_at"] == "QUESTION":
            plan = Path(payload["plan_dir"])
            writes.append(
                (
                    str(plan / "repos.md"),
                    repos_md(
                        Path(started["home"]["repo"]),
                        ("api", self.api),
                        topic=started["topic"],
                        date=started["id"][:10],
                        role="the API",
                    ),
                )
            )
        return writes

    def commits(self, payload: dict[str, Any], step: str) -> list[Block]:
        worktrees = [Path(w["worktree"]) for w in self.answers["worktrees"]["repos"]]
        targets = worktrees[:1] if step == "tests" else worktrees
        name, message = f"{step}.txt", f"{step} of {payload['id']}"
        writes = [tool("Write", file_path=str(w / name), content=f"{step}\n") for w in targets]
        return writes + [
            bash(f'git -C {w} add -- {name} && git -C {w} commit -q -m "{message}"')
            for w in targets
        ]


def bash(command: str) -> Block:
    return tool("Bash", command=command, description="Run the team-router step")


def dispatch(name: str, phase: str) -> Block:
    return tool(
        "Agent",
        subagent_type=f"team-router:{name}",
        description=f"{phase}: {name}",
        prompt=f"{SUBAGENT}: the {phase} phase; reply 'done' and stop.",
        run_in_background=False,
    )


def frontmatter(stem: str, started: dict[str, Any]) -> str:
    extra = {"task": ["ticketId: null"], "design": ["revision: 0"]}.get(stem, [])
    lines = [f"topic: {started['topic']}", f"date: {started['id'][:10]}", f"phase: {stem}", *extra]
    return "---\n" + "\n".join(lines) + f"\n---\n\n# {stem}\n"


def test_a_scripted_run_walks_every_phase_to_shipped_and_tears_down_clean(
    claude: Path, home: Path, home_repo: Path, workspace: Path
) -> None:
    api = make_repo(workspace, "api")
    walk = Walk("add rate limiting", api)
    with StandIn(with_subagents(Conversation(walk.turns()))) as standin:
        run = run_client(
            claude,
            standin,
            "/team add rate limiting",
            cwd=home_repo,
            home=home,
            allowed_tools=WALK_TOOLS,
            timeout=150,  # ~25 s on an idle machine; generous for a loaded one
        )
    assert_clean_run(run, standin)
    phases = [phase for phase, _ in walk.phases]
    assert phases[-1] == "SHIPPED", walk.phases
    order = ["QUESTION", "RESEARCH", "DESIGN", "STRUCTURE", "PLAN", "IMPLEMENT", "PR", "SHIPPED"]
    assert sorted(set(phases), key=order.index) == order
    assert phases == sorted(phases, key=order.index), "the run went back a phase"
    # Every phase with work for a helper named one (PR is the orchestrator's own), and
    # the client ran each of them.
    idle = [where for where, agents in walk.dispatched.items() if not agents and where != "PR"]
    assert not idle, walk.dispatched
    answers = results_by_tool(standin)
    assert not [a for a in answers.values() if "not found" in a or "needs approval" in a]
    teardown = walk.answers["teardown"]
    assert teardown["ok"], teardown
    for repo in (home_repo, api):
        assert status(repo) == ""
        assert worktree_paths(repo) == [str(repo)]
        assert walk.answers["new"]["branch"] not in branches(repo)
    subjects = git(home_repo, "log", "--format=%s", "main")
    assert f"slices of {walk.answers['new']['id']}" in subjects


@pytest.mark.parametrize("grant", ["init --allow-agent", "init --allow-agent-everywhere"])
def test_a_session_resumed_in_a_secondary_repos_worktree_runs_team_router_without_a_prompt(
    claude: Path, home: Path, home_repo: Path, workspace: Path, grant: str
) -> None:
    assert run_cli(*grant.split(), cwd=home_repo).code == 0
    made = run_cli("new", "add rate limiting", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert made.code == 0, made.out
    api = make_repo(workspace, "api")
    plan = Path(made.json["plan_dir"])
    (plan / "repos.md").write_text(repos_md(home_repo, ("api", api)), encoding="utf-8")
    created = run_cli("worktrees", made.json["id"], "--json", cwd=home_repo)
    assert created.code == 0, created.out
    api_worktree = Path(created.json["repos"][1]["worktree"])
    asked = tool("Bash", command="team-router next --json", description="Where are we?")
    # Nothing on the command line allows Bash: only the settings init wrote can.
    with StandIn(scripted([asked])) as standin:
        run = run_client(
            claude, standin, "resume", cwd=api_worktree, home=home, allowed_tools="Read"
        )
    assert_clean_run(run, standin)
    (call,) = calls(run, "Bash")
    payload = json.loads(results_by_tool(standin)[call["id"]])
    assert (payload["ok"], payload["id"]) == (True, made.json["id"])
    assert status(api) == "" and status(home_repo) == ""
