"""Topics made as users make them (``new``, then ``worktrees`` for several repos), and their teardown."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from helpers.origin import merge_on_origin
from helpers.plans import artifact, repos_md
from helpers.repos import commit, git, make_repo, run_cli, write

TOPIC_ID = "2026-05-01-add-rate-limiting"


@dataclass
class Topic:
    id: str
    home: Path  # home primary clone
    plan_dir: Path
    repos: dict[str, Path] = field(default_factory=dict)  # name -> primary clone (home included)
    worktrees: dict[str, Path] = field(default_factory=dict)  # name -> worktree

    @property
    def branch(self) -> str:
        return self.id


def new_topic(
    repo: Path,
    description: str = "add rate limiting",
    *,
    topic_id: str | None = None,
    date: str = "2026-05-01",
) -> Topic:
    """A topic made the way users make one (``team-router new`` in ``repo``).

    Its id is ``date`` plus the slug of ``description`` (``TOPIC_ID`` by
    default), or exactly ``topic_id`` when given (``new --id``).
    """
    chosen = ("--id", topic_id) if topic_id is not None else ("--date", date)
    res = run_cli("new", description, *chosen, "--json", cwd=repo)
    assert res.code == 0, res.out + res.err
    data = res.json
    worktree = Path(data["home"]["worktree"])
    return Topic(data["id"], repo, Path(data["plan_dir"]), {"home": repo}, {"home": worktree})


def multi_topic(
    workspace: Path,
    names: tuple[str, ...] = ("api",),
    topic_id: str = TOPIC_ID,
    *,
    config: dict[str, str] | None = None,
) -> Topic:
    """A home repo ``web`` and sibling repos ``names``, each with origin and a worktree.

    ``config`` is set in each repo's own config before team-router first touches it.
    """
    home = configure(make_repo(workspace, "web"), config)
    topic = new_topic(home, topic_id=topic_id)
    secondaries = {n: configure(make_repo(workspace, n), config) for n in names}
    write_repos_md(topic, secondaries)
    res = run_cli("worktrees", str(topic.plan_dir), "--json", cwd=home)
    assert res.code == 0, res.out + res.err
    for repo in res.json["repos"]:
        topic.repos[repo["name"]] = Path(repo["path"])
        topic.worktrees[repo["name"]] = Path(repo["worktree"])
    return topic


def merged_in_secondary(workspace: Path, topic_id: str = TOPIC_ID) -> Topic:
    """:func:`multi_topic` (home ``web``, secondary ``api``) with a commit on api's branch,
    pushed and merged on api's origin: pr-cleanup and teardown would take api's part apart."""
    topic = multi_topic(workspace, ("api",), topic_id=topic_id)
    api_wt = topic.worktrees["api"]
    commit(api_wt, "api.py", "a = 1\n", "api work")
    git(api_wt, "push", "-q", "origin", f"{topic_id}:{topic_id}")
    merge_on_origin(topic.repos["api"], topic_id, how="merge")
    return topic


def two_commits(topic: Topic, *, push: bool = True) -> Topic:
    """``topic`` with two commits on its branch in its home worktree, pushed to origin unless
    ``push`` is False. Two, so that a squash merge is patch-identical to neither and only the
    squash proof can see it."""
    worktree = topic.worktrees["home"]
    name = "limits" if topic.id == TOPIC_ID else topic.id
    commit(worktree, f"{name}.py", "LIMIT = 10\n", f"add {name}")
    commit(worktree, f"test_{name}.py", "assert True\n", f"test {name}")
    if push:
        git(worktree, "push", "-q", "origin", f"{topic.branch}:{topic.branch}")
    return topic


def configure(repo: Path, config: dict[str, str] | None) -> Path:
    for key, value in (config or {}).items():
        git(repo, "config", key, value)
    return repo


def write_repos_md(topic: Topic, secondaries: dict[str, Path]) -> Path:
    """The topic's repos.md: home ``web`` and ``secondaries`` (name -> primary), no frontmatter."""
    text = repos_md(topic.home, *secondaries.items(), topic=None, role="service")
    return write(topic.plan_dir / "repos.md", text)


def ship(topic: Topic, *, plan_dir: Path | None = None) -> Topic:
    """``topic`` as a finished run: its ``pr.md`` written (as ``record pr`` writes it after the
    PR opens), so teardown may drop its artifacts. Written directly: ``record pr`` wants
    commits, and many teardown scenarios have none. ``plan_dir``: where the run's plan dir
    is when not in its worktree (a run in place)."""
    artifact(plan_dir or topic.plan_dir, "pr.md", url="https://github.com/example/web/pull/1")
    return topic


def teardown(topic: Topic, *flags: str, cwd: Path | None = None):
    return run_cli("teardown", topic.id, "--json", *flags, cwd=cwd or topic.home)


def steps_of(data: dict, name: str) -> dict[str, dict]:
    """``step name -> step`` of repo ``name`` in a teardown's JSON."""
    repo = next(r for r in data["repos"] if r["name"] == name)
    return {s["name"]: s for s in repo["steps"]}


def snapshot_of(repo: Path) -> dict[str, str]:
    """Everything a teardown could change: refs, worktrees, the files of every checkout."""
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    worktrees = git(repo, "worktree", "list", "--porcelain")
    files = []
    for path in sorted(repo.rglob("*")):
        if ".git" in path.relative_to(repo).parts:
            continue
        if path.is_file():
            files.append(f"{path.relative_to(repo)}={path.read_bytes()!r}")
    return {"refs": refs, "worktrees": worktrees, "files": "\n".join(files)}


def in_place(repo: Path, topic_id: str) -> Path:
    """A topic whose plan dir is in the primary clone, as a `new` that fell back leaves it:
    the (empty) plan dir and the home record that makes it a run of this machine."""
    from router.topic import state

    plan = repo / "docs" / "plans" / topic_id
    plan.mkdir(parents=True, exist_ok=True)
    record = state.TopicRecord(id=topic_id, repo="home", branch=topic_id, plan_dir=str(plan))
    state.write_record(repo / ".git", record)
    return plan


def notice(cwd: Path) -> str:
    """The session-start hook's notice for a session in ``cwd`` ("" when it says nothing)."""
    res = run_cli("hook", "session-start", stdin=json.dumps({"cwd": str(cwd)}))
    assert (res.code, res.err) == (0, ""), res.err
    return json.loads(res.out)["hookSpecificOutput"]["additionalContext"] if res.out else ""


def answers(cwd: Path) -> dict[str, object]:
    """Which topic the hook, `phase`, `next` and `status` (its ``current``) each name in
    ``cwd``: an id, or (phase, next) the error code, or None."""
    phase, nxt = (run_cli(c, "--json", cwd=cwd) for c in ("phase", "next"))
    status = run_cli("status", "--json", cwd=cwd)
    assert status.code == 0, status.out + status.err
    ids = re.findall(r"(?:^|\| )Id: (\S+)$", notice(cwd), re.MULTILINE)
    return {
        "hook": ids[0] if ids else None,
        "phase": phase.json["id"] if phase.code == 0 else phase.json["error"]["code"],
        "next": nxt.json["id"] if nxt.code == 0 else nxt.json["error"]["code"],
        "status": status.json["current"],
    }


def create_payload(repo: Path | None, name: str | None, **extra: object) -> str:
    """What the host sends ``hook worktree-create`` for a worktree ``name`` asked in ``repo``
    (either may be left out, as a client may leave it out)."""
    payload: dict[str, object] = {"session_id": "s-1", "hook_event_name": "WorktreeCreate"}
    if repo is not None:
        payload["cwd"] = str(repo)
    if name is not None:
        payload["name"] = name
    payload.update(extra)
    return json.dumps(payload)


def remove_payload(path: Path, **extra: object) -> str:
    """What the host sends ``hook worktree-remove`` for its worktree at ``path``."""
    payload = {
        "session_id": "s-1",
        "hook_event_name": "WorktreeRemove",
        "cwd": str(path),
        "worktree_path": str(path),
        **extra,
    }
    return json.dumps(payload)


def all_answer(topic_id: str) -> dict[str, object]:
    """:func:`answers` when every one of them names ``topic_id``."""
    return dict.fromkeys(("hook", "phase", "next", "status"), topic_id)


# A new worktree's setup stage, as the create report says it, when the default branch
# declares no .worktreesetup.
NO_SETUP_DECLARED = {
    "status": "none",
    "lines": 0,
    "done": 0,
    "ran": 0,
    "exit": None,
    "line": None,
    "outcome": None,
    "log": None,
    "note": "no .worktreesetup on the default branch — nothing declared",
}
