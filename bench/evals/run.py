"""Prompt evals: each fixture gives one agent of the /team method its inputs and checks what a
good artifact must contain. Runs against a real model only with a key; not part of the tests.

    TEAM_ROUTER_EVAL_API_KEY=sk-... python bench/evals/run.py [--only NAME] [--model M]
    python bench/evals/run.py --dry-run      # no key: check the fixtures and show the prompts

The agent's prompt (``agents/<agent>.md``, its body) is the system prompt; the fixture's
``input`` is the user message, with every file the agent would read inline. The agent's
tools are not offered: it answers with the content of each file it would write, under a
line ``=== <file name>``, or with its review as it would return it. Each check is a regular
expression that must match (``must_match``) or must not match (``must_not_match``) the
answer, case-insensitive and multi-line. The last line prints passed/total; the exit code
is non-zero when any fixture fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
API_URL = os.environ.get("TEAM_ROUTER_EVAL_API_URL", "https://api.anthropic.com/v1/messages")
DEFAULT_MODEL = "claude-sonnet-4-5"
ANSWER_FORMAT = (
    "\n\nYou have no tools here. Answer with the content of each file you would write, each "
    "under a line `=== <file name>`; a reviewer answers with its review as it would return it."
)


@dataclass(frozen=True)
class Fixture:
    name: str
    agent: str
    input: str
    must_match: tuple[str, ...]
    must_not_match: tuple[str, ...]


def load_fixtures(only: str | None = None) -> list[Fixture]:
    found = []
    for path in sorted(FIXTURES.rglob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        name = str(path.relative_to(FIXTURES).with_suffix(""))
        if only and only not in name:
            continue
        fixture = Fixture(
            name,
            data["agent"],
            data["input"],
            tuple(data.get("must_match", ())),
            tuple(data.get("must_not_match", ())),
        )
        problem = fixture_problem(fixture)
        if problem:
            raise SystemExit(f"{path}: {problem}")
        found.append(fixture)
    return found


def fixture_problem(fixture: Fixture) -> str | None:
    """Why a fixture cannot run (no such agent, a check that does not compile), or None."""
    if not (ROOT / "agents" / f"{fixture.agent}.md").is_file():
        return f"no agents/{fixture.agent}.md"
    if not fixture.must_match:
        return "no must_match check: a fixture must say what a good answer contains"
    for pattern in (*fixture.must_match, *fixture.must_not_match):
        try:
            re.compile(pattern)
        except re.error as exc:
            return f"check {pattern!r} does not compile: {exc}"
    return None


def system_prompt(agent: str) -> str:
    text = (ROOT / "agents" / f"{agent}.md").read_text(encoding="utf-8")
    return text.split("\n---\n", 1)[1].strip() + ANSWER_FORMAT


def ask(key: str, model: str, system: str, user: str) -> str:
    body = json.dumps(
        {
            "model": model,
            "max_tokens": 4096,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
    ).encode()
    request = urllib.request.Request(
        API_URL,
        data=body,
        headers={
            "content-type": "application/json",
            "x-api-key": key,
            "anthropic-version": "2023-06-01",
        },
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        data = json.loads(response.read())
    return "".join(b.get("text", "") for b in data.get("content", []) if b.get("type") == "text")


def failures(fixture: Fixture, answer: str) -> list[str]:
    flags = re.IGNORECASE | re.MULTILINE
    missing = [f"missing /{p}/" for p in fixture.must_match if not re.search(p, answer, flags)]
    present = [f"has /{p}/" for p in fixture.must_not_match if re.search(p, answer, flags)]
    return missing + present


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the fixtures whose name contains this")
    parser.add_argument("--model", default=os.environ.get("TEAM_ROUTER_EVAL_MODEL", DEFAULT_MODEL))
    parser.add_argument("--dry-run", action="store_true", help="check the fixtures; call no model")
    parser.add_argument("--show", action="store_true", help="print each answer")
    args = parser.parse_args()
    fixtures = load_fixtures(args.only)
    key = os.environ.get("TEAM_ROUTER_EVAL_API_KEY")
    if args.dry_run or not key:
        for f in fixtures:
            print(
                f"{f.name}: {f.agent}, {len(f.must_match)} must / {len(f.must_not_match)} must-not"
            )
        why = "--dry-run" if args.dry_run else "no TEAM_ROUTER_EVAL_API_KEY: no model was called"
        print(f"{len(fixtures)} fixtures valid ({why})")
        return 0
    passed = 0
    for f in fixtures:
        try:
            answer = ask(key, args.model, system_prompt(f.agent), f.input)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            print(f"FAIL {f.name}: the model call failed ({exc})")
            continue
        wrong = failures(f, answer)
        print(
            f"{'ok  ' if not wrong else 'FAIL'} {f.name}"
            + (f": {'; '.join(wrong)}" if wrong else "")
        )
        if args.show:
            print(answer)
        passed += not wrong
    print(f"{passed}/{len(fixtures)} fixtures passed with {args.model}")
    return 0 if passed == len(fixtures) else 1


if __name__ == "__main__":
    sys.exit(main())
