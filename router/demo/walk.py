"""The demo's walk: one topic from ``new`` to a lossless teardown, each step checked and narrated."""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from router import git as gitmod
from router.demo.inprocess import invoke
from router.demo.scenario import (
    CHANGES,
    DEFAULT_BRANCH,
    DESCRIPTION,
    DIRTY_FILE,
    PREVIEW_DIR,
    REPOS,
    FixtureRepo,
    demo_env,
    topic_name,
    write_file,
)
from router.demo.trace import DemoFailed, DemoResult, DemoStep
from router.errors import ErrorCode, RouterError
from router.names import parse_id
from router.plandir.templates import render


def run_demo(*, base: Path | None, keep: bool, say: Callable[[str], None]) -> DemoResult:
    """Build the repos under ``base`` (default: the temp dir), walk the topic, clean up."""
    root = _make_root(base)
    demo = Walk(root, say)
    try:
        with demo_env():
            demo.run()
    except DemoFailed as exc:
        exc.details.update(
            {"dir": str(root), "kept": keep, "steps": [s.to_json() for s in demo.steps]}
        )
        demo.cleanup(keep=keep)
        raise
    except BaseException:
        demo.cleanup(keep=keep)
        raise
    demo.cleanup(keep=keep)
    return DemoResult(root, demo.topic_id, keep, demo.steps)


def _make_root(base: Path | None) -> Path:
    if base is not None:
        if base.exists() and not base.is_dir():
            raise RouterError(ErrorCode.DEMO_DIR, f"--dir {base} is not a directory")
        base.mkdir(parents=True, exist_ok=True)
    return Path(
        os.path.realpath(tempfile.mkdtemp(prefix="team-router-demo-", dir=base or temp_base()))
    )


def temp_base() -> str:
    """``${TMPDIR:-/tmp}`` as of now, the directory teardown accepts recorded temp paths under.

    Read at each call: :func:`tempfile.gettempdir` caches its first answer.
    """
    return os.environ.get("TMPDIR", "").rstrip("/") or "/tmp"


class Walk:
    def __init__(self, root: Path, say: Callable[[str], None]) -> None:
        self.root = root
        self.workspace = root / "workspace"
        self.origins = root / "origins"
        self.say = say
        self.steps: list[DemoStep] = []
        self.topic_id = ""
        self.branch = ""
        self.plan_dir = Path()
        self.worktrees: dict[str, Path] = {}
        self.temp_paths: list[Path] = []
        self.date = dt.date.today().isoformat()

    def run(self) -> None:
        self.say("Demo: one topic across three repos, from `new` to teardown")
        self.say(f"Working in {self.root}")
        self._build_repos()
        self._start_topic()
        self._phase("QUESTION", "the worktree exists, task.md does not", command="next")
        self._question()
        self._phase("RESEARCH", "task.md and questions.md exist")
        self._research()
        self._phase("DESIGN", "research.md exists, design.md does not")
        self._design()
        self._phase("DESIGN", "design.md has no review yet")
        self._review_design()
        self._phase(
            "STRUCTURE",
            "the design is approved; repos.md lists repos without worktrees",
            command="next",
        )
        self._worktrees()
        self._plan()
        self._phase("IMPLEMENT", "plan.md exists, the test-first gate is not recorded")
        self._test_gate()
        self._phase("IMPLEMENT", "the new tests fail by assertion: the slices land next")
        self._implement()
        self._provision()
        self._status()
        self._ship()
        self._refused_teardown()
        self._teardown()

    def cleanup(self, *, keep: bool) -> None:
        for path in self.temp_paths:
            shutil.rmtree(path, ignore_errors=True)
        if keep:
            self.say(f"Kept {self.root} (--keep)")
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- recording --------------------------------------------------------------

    def _step(self, title: str, lines: list[str], **command: Any) -> None:
        step = DemoStep(title, tuple(lines), **command)
        self.steps.append(step)
        self.say("")
        self.say(f"{len(self.steps)}. {title}")
        if step.command:
            self.say(f"   {step.cwd}$ {step.command}")
        for line in lines:
            self.say(f"   {line}")

    def _cli(
        self, title: str, where: str, args: list[str], *, expect_code: ErrorCode | None = None
    ) -> tuple[dict[str, Any], Callable[[list[str]], None]]:
        """Run ``team-router <args> --json`` in repo ``where``; check it did what we expect.

        Returns the command's JSON and a function that records the step with
        its narration once the caller has composed it.
        """
        cwd = self.workspace / where
        code, out, err = invoke(["-C", str(cwd), *args, "--json"])
        shown = "team-router " + shlex.join(args)
        try:
            payload = json.loads(out)
        except ValueError:
            payload = None
        expected_exit = 0 if expect_code is None else 1
        got_code = (payload or {}).get("error", {}).get("code")
        if payload is None or code != expected_exit or got_code != expect_code:
            self.steps.append(DemoStep(title, (), shown, where, code, payload))
            detail = (payload or {}).get("error", {}).get("message") or err.strip() or out.strip()
            wanted = f"a refusal '{expect_code}'" if expect_code else "success"
            raise DemoFailed(
                ErrorCode.DEMO_FAILED,
                f"step {len(self.steps)} ({title}): `{shown}` exited {code}, expected {wanted}: "
                f"{detail or 'no output'}",
            )

        def record(lines: list[str]) -> None:
            self._step(title, lines, command=shown, cwd=where, exit=code, result=payload)

        return payload, record

    def _fail(self, title: str, message: str) -> DemoFailed:
        return DemoFailed(ErrorCode.DEMO_FAILED, f"step {len(self.steps) + 1} ({title}): {message}")

    def _dir(self, repo: dict[str, Any]) -> str:
        """The directory of a repo a report names (the home repo is reported as ``home``)."""
        return REPOS[0].name if repo["name"] == "home" else repo["name"]

    def brief(self, message: str) -> str:
        """A message with the workspace prefix dropped from its paths."""
        return message.replace(f"{self.workspace}{os.sep}", "")

    def in_plan(self, path: str | Path | None) -> str:
        """A path inside the artifact directory by its name there; others as ``show``."""
        try:
            return str(Path(path).relative_to(self.plan_dir))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return self.show(path)

    def show(self, path: str | Path | None) -> str:
        """A path as the narration prints it: relative to the workspace when inside it."""
        if path is None:
            return "-"
        try:
            return str(Path(path).relative_to(self.workspace))
        except ValueError:
            return str(path)

    # -- steps --------------------------------------------------------------------

    def _build_repos(self) -> None:
        lines = []
        width = max(len(r.name) for r in REPOS)
        for repo in REPOS:
            sha = self._build_repo(repo)
            lines.append(f"{repo.name:<{width}}  {DEFAULT_BRANCH} {sha[:8]}  {repo.role}")
        lines.append(f"origins: {self.show(self.origins)}/<name>.git (local bare repositories)")
        lines.append(
            f"{REPOS[0].name} is the home repo: every command reports it as `home`, the others "
            "by their repos.md names"
        )
        self._step("Three sibling repos, each pushed to its own bare origin", lines)

    def _build_repo(self, repo: FixtureRepo) -> str:
        path = self.workspace / repo.name
        git = gitmod.init_repo(path, branch=DEFAULT_BRANCH)
        write_file(path / "README.md", render("demo/README.md.j2", name=repo.name, role=repo.role))
        for rel, content in repo.files:
            write_file(path / rel, content)
        sha = gitmod.commit_all(git, f"Start {repo.name}")
        bare = self.origins / f"{repo.name}.git"
        gitmod.init_repo(bare, branch=DEFAULT_BRANCH, bare=True)
        gitmod.add_remote(git, "origin", str(bare))
        gitmod.push(git, "origin", DEFAULT_BRANCH, set_head=True)
        return sha

    def _start_topic(self) -> None:
        title = "WORKTREE: start the topic in the home repo"
        payload, record = self._cli(title, "web", ["new", DESCRIPTION])
        self.topic_id, self.branch = payload["id"], payload["branch"]
        self.plan_dir = Path(payload["plan_dir"])
        home = payload["home"]
        if home["status"] != "created" or not home["worktree"]:
            raise self._fail(title, f"the home worktree was {home['status']}, not created")
        self.worktrees["web"] = Path(home["worktree"])
        record(
            [
                f"topic id {self.topic_id} (the branch has the same name)",
                f"home worktree {home['status']}: {self.show(home['worktree'])}",
                f"artifact directory: {self.show(self.plan_dir)}",
            ]
        )

    def _phase(self, expected: str, why: str, *, command: str = "phase") -> None:
        """Ask where the run stands; ``next`` also hands over the phase's brief."""
        title = f"Where does the run stand? (expect {expected})"
        payload, record = self._cli(title, "web", [command, self.topic_id])
        if payload.get("resume_at") != expected:
            raise self._fail(
                title, f"{command} says {payload.get('resume_at')}, expected {expected}"
            )
        step = f", step {payload['step']}" if payload.get("step") else ""
        lines = [f"resume at {payload['resume_at']}{step}: {why}"]
        if command == "next":
            heading = next(iter(payload.get("brief", "").splitlines()), "").lstrip("# ")
            expects = ", ".join(self.in_plan(p) for p in payload.get("expects", []))
            lines += [f"brief: {heading}", f"expects: {expects or '-'}"]
        record(lines)

    def _artifact(self, name: str, **context: Any) -> str:
        text = render(
            f"artifacts/{name}.j2", topic=parse_id(self.topic_id).topic, date=self.date, **context
        )
        write_file(self.plan_dir / name, text)
        return name

    def _question(self) -> None:
        written = [
            self._artifact(
                "task.md",
                ticket_id=None,
                description="The billing page shows the customer's plan, which the API returns.",
                context=["the page is rendered by web", "the plan comes from api"],
                done_when=["the billing page shows 'Plan: <name>'"],
            ),
            self._artifact(
                "questions.md",
                questions=[
                    "Where is the billing page rendered?",
                    "What does the customer endpoint return?",
                    "Which types describe a customer on both sides?",
                ],
            ),
            self._repos_md(),
        ]
        self._step(
            "QUESTION: the questioner writes the intent and neutral questions",
            [
                f"wrote {', '.join(written)} in the artifact directory",
                "repos.md lists api and shared-types besides web: this is a multi-repo topic",
            ],
        )

    def _repos_md(self) -> str:
        home, *others = REPOS
        spec = {"name": home.name, "path": str(self.workspace / home.name), "role": home.role}
        secondaries = [
            {"name": r.name, "path": str(self.workspace / r.name), "role": r.role} for r in others
        ]
        return self._artifact("repos.md", home=spec, secondaries=secondaries)

    def _research(self) -> None:
        findings = [
            {
                "question": "Where is the billing page rendered?",
                "answer": "web `src/billing.js:1`.",
            },
            {
                "question": "What does the customer endpoint return?",
                "answer": "id and name (api `app/customers.py:2`).",
            },
        ]
        name = self._artifact("research.md", findings=findings)
        self._step(
            "RESEARCH: researchers answer questions.md (they never see task.md)", [f"wrote {name}"]
        )

    def _design(self) -> None:
        name = self._artifact(
            "design.md",
            revision=0,
            summary="api adds `plan` to the customer; web renders it.",
            decisions=["the plan travels as a plain string; no new endpoint"],
            repos=[
                {"name": "api", "change": "return `plan`"},
                {"name": "web", "change": "render `Plan: <name>`"},
            ],
        )
        self._step(
            "DESIGN: the design author drafts the design",
            [f"wrote {name} (revision 0, the first draft)"],
        )

    def _review_design(self) -> None:
        title = "DESIGN: the reviewer's verdict becomes a durable record"
        payload, record = self._cli(title, "web", ["record", "verdict", self.topic_id, "APPROVE"])
        record([f"wrote {self.in_plan(payload.get('path'))} in the artifact directory"])

    def _test_gate(self) -> None:
        title = "IMPLEMENT: the orchestrator records the test-first gate"
        payload, record = self._cli(title, "web", ["record", "tests", self.topic_id, "RED"])
        record(
            [
                "the test architect wrote each slice's test; run, each failed by its assertion",
                f"wrote {self.in_plan(payload.get('path'))} (RED) in the artifact directory",
            ]
        )

    def _worktrees(self) -> None:
        title = "STRUCTURE, step worktrees: every repo of repos.md gets its worktree"
        payload, record = self._cli(title, "web", ["worktrees", self.topic_id])
        lines = []
        for repo in payload["repos"]:
            name = repo["name"]
            if repo["status"] not in {"created", "existing"} or not repo["worktree"]:
                raise self._fail(title, f"{name} is {repo['status']}: {repo.get('reason')}")
            self.worktrees[self._dir(repo)] = Path(repo["worktree"])
            lines.append(f"{name:<12}  {repo['status']:<8}  {self.show(repo['worktree'])}")
        if payload.get("repos_md_updated"):
            lines.append("repos.md now has a ## Worktrees section naming each path")
        record(lines)

    def _plan(self) -> None:
        written = [
            self._artifact(
                "structure.md",
                slices=[
                    {
                        "name": "the API returns the plan",
                        "repo": "api",
                        "files": ["app/customers.py"],
                        "tests": "the customer endpoint returns `plan`",
                    },
                    {
                        "name": "the page shows it",
                        "repo": "home",
                        "files": ["src/billing.js"],
                        "tests": "the billing page shows 'Plan: <name>'",
                    },
                ],
            ),
            self._artifact(
                "plan.md",
                checks=[
                    {"repo": "api", "test": "python -m pytest", "static": "none"},
                    {"repo": "home", "test": "npm test", "static": "none"},
                ],
                slices=[
                    {
                        "name": c.message,
                        "repo": topic_name(c.repo),
                        "change": f"`{c.path}`",
                        "test": f"{c.path} shows the plan",
                        "run": "python -m pytest" if c.repo == "api" else "npm test",
                    }
                    for c in CHANGES
                ],
            ),
        ]
        self._step(
            "STRUCTURE and PLAN: the planners slice the work", [f"wrote {', '.join(written)}"]
        )

    def _implement(self) -> None:
        lines = []
        for change in CHANGES:
            worktree = self.worktrees[change.repo]
            write_file(worktree / change.path, change.content)
            sha = gitmod.commit_all(gitmod.Git(worktree), change.message)
            lines.append(f"{topic_name(change.repo)}: commit {sha[:8]} {change.message}")
        dirty = [r.name for r in REPOS if gitmod.Git(self.workspace / r.name).status().dirty]
        if dirty:
            raise self._fail("IMPLEMENT", f"a primary clone changed: {', '.join(dirty)}")
        lines.append("every primary clone is still clean: all edits happened in worktrees")
        self._step("IMPLEMENT: commits land in the worktrees of api and home", lines)

    def _local_state_lines(self, payload: dict[str, Any]) -> list[str]:
        lines = []
        for repo in payload.get("local_state", []):
            for command in repo.get("commands", []):
                lines.append(
                    f"{repo['name']} .teamteardown: {command['line']}  -> {command['outcome']}"
                )
            for temp in repo.get("temp_paths", []):
                lines.append(f"temp path {temp['path']}  -> {temp['outcome']}")
        return lines

    def _preview_dir(self) -> Path:
        return self.workspace / "api" / PREVIEW_DIR.format(branch=self.branch)

    def _provision(self) -> None:
        title = "Local state: what the work provisioned outside git"
        preview = self._preview_dir()
        write_file(preview / "db.sqlite", "preview data\n")
        scratch = Path(tempfile.mkdtemp(prefix="team-router-demo-scratch-", dir=temp_base()))
        self.temp_paths.append(scratch)
        payload, record = self._cli(title, "web", ["record", "temp", self.topic_id, str(scratch)])
        record(
            [
                f"api: a preview database in {self.show(preview)} (ignored by git);",
                "     api's .teamteardown on main declares how to drop it",
                f"a scratch directory {scratch}, recorded in {self.in_plan(payload.get('path'))}",
            ]
        )

    def _status(self) -> None:
        title = "Every topic of the home repo at a glance"
        payload, record = self._cli(title, "web", ["status"])
        lines = []
        for topic in payload.get("topics", []):
            lines.append(f"{topic['id']}: resume at {topic.get('resume_at')}")
            for repo in topic.get("repos", []):
                state = "dirty" if repo.get("dirty") else "clean"
                lines.append(f"  {repo['name']:<12}  {state}, {repo.get('ahead', 0)} ahead")
        record(lines)

    def _ship(self) -> None:
        # Teardown keeps the artifacts of a run that has not shipped: pr.md says it has.
        title = "PR: the run is finished (here without a PR: the work stays on its branches)"
        payload, record = self._cli(title, "web", ["record", "pr", self.topic_id, "--local"])
        record(
            [
                f"wrote {self.in_plan(payload.get('path'))}: the topic is SHIPPED, and "
                "teardown may now drop its artifacts"
            ]
        )

    def _refused_teardown(self) -> None:
        title = "Teardown refuses while a worktree holds uncommitted work"
        dirty = self.worktrees["shared-types"] / DIRTY_FILE
        write_file(dirty, "notes nobody committed\n")
        payload, record = self._cli(
            title,
            "web",
            ["teardown", self.topic_id, "--integrate"],
            expect_code=ErrorCode.DIRTY_WORKTREE,
        )
        missing = [name for name, path in self.worktrees.items() if not path.is_dir()]
        if missing or not dirty.is_file():
            raise self._fail(title, f"the refusal removed something: {missing or [DIRTY_FILE]}")
        kept = [
            n for n in self.worktrees if gitmod.Git(self.workspace / n).branch_exists(self.branch)
        ]
        record(
            [
                f"left {self.show(dirty)} uncommitted",
                # The command's own last line (stderr), as it prints every refusal.
                f"team-router: {self.brief(payload['error']['message'])} "
                f"[{payload['error']['code']}]",
                f"nothing removed: {len(self.worktrees)} worktrees and {len(kept)} branches "
                f"are still there, and so is {DIRTY_FILE}",
            ]
        )

    def _teardown(self) -> None:
        title = "Teardown: integrate the commits, remove everything the topic made"
        dirty = self.worktrees["shared-types"] / DIRTY_FILE
        dirty.unlink()
        payload, record = self._cli(title, "web", ["teardown", self.topic_id, "--integrate"])
        left = [name for name, path in self.worktrees.items() if path.exists()]
        if left:
            raise self._fail(title, f"worktrees still on disk after teardown: {', '.join(left)}")
        lines = [f"deleted {DIRTY_FILE} first"]
        for repo in payload.get("repos", []):
            done = [s["name"] for s in repo.get("steps", []) if s.get("outcome") == "done"]
            lines.append(f"{repo['name']:<12}  done: {', '.join(done) or 'nothing to do'}")
        lines += self._local_state_lines(payload)
        preview = self._preview_dir()
        gone = [p for p in (preview, *self.temp_paths) if not p.exists()]
        if len(gone) != 1 + len(self.temp_paths):
            raise self._fail(title, "local state survived the teardown")
        for change in CHANGES:
            (subject,) = gitmod.log_subjects(
                gitmod.Git(self.workspace / change.repo), DEFAULT_BRANCH, limit=1
            )
            lines.append(f"{topic_name(change.repo)} {DEFAULT_BRANCH} now ends with: {subject}")
        left = [
            r.name for r in REPOS if gitmod.Git(self.workspace / r.name).branch_exists(self.branch)
        ]
        if left or self.plan_dir.exists():
            raise self._fail(
                title, f"left behind: branches in {left}, plan dir {self.plan_dir.exists()}"
            )
        lines.append("no worktree, branch or plan dir of the topic is left")
        record(lines)
