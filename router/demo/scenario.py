"""The demo's scripted scenario: the three fixture repos, the commits it makes, its git identity."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from router.records import record

DESCRIPTION = "Billing page shows the plan"

DIRTY_FILE = "draft-notes.txt"

DEFAULT_BRANCH = "main"

PREVIEW_DIR = ".cache/preview-{branch}"  # what api's .teamteardown removes

TEAMTEARDOWN = (
    "# Drop the preview database a branch provisioned.\n"
    'rm -rf "$TEAM_REPO_ROOT/.cache/preview-$TEAM_BRANCH"\n'
)


# Set for every git process of the demo (the CLI's included), restored afterwards.
# The global and system config are kept out: a commit.gpgsign or core.hooksPath
# there would make the throw-away commits prompt or fail on the user's machine.
_DEMO_ENV = {
    "GIT_AUTHOR_NAME": "team-router demo",
    "GIT_AUTHOR_EMAIL": "demo@team-router.invalid",
    "GIT_COMMITTER_NAME": "team-router demo",
    "GIT_COMMITTER_EMAIL": "demo@team-router.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


@record
class FixtureRepo:
    name: str
    role: str
    files: tuple[tuple[str, str], ...]  # (path, content) of the first commit


@record
class Change:
    """One commit the IMPLEMENT phase makes in a repo's worktree."""

    repo: str
    path: str
    content: str
    message: str


REPOS = (
    FixtureRepo(
        "web",
        "the billing UI",
        (
            (
                "src/billing.js",
                "export function billingPage(customer) {\n  return `<h1>${customer.name}</h1>`;\n}\n",
            ),
        ),
    ),
    FixtureRepo(
        "api",
        "the customer endpoints",
        (
            (
                "app/customers.py",
                'def customer(customer_id):\n    return {"id": customer_id, "name": "Ada"}\n',
            ),
            (".gitignore", ".cache/\n"),
            (".teamteardown", TEAMTEARDOWN),
        ),
    ),
    FixtureRepo(
        "shared-types",
        "the types both sides import",
        (("index.ts", "export interface Customer {\n  id: string;\n  name: string;\n}\n"),),
    ),
)

CHANGES = (
    Change(
        "api",
        "app/customers.py",
        'def customer(customer_id):\n    return {"id": customer_id, "name": "Ada", "plan": "Pro"}\n',
        "Return the customer's plan",
    ),
    Change(
        "web",
        "src/billing.js",
        "export function billingPage(customer) {\n"
        "  return `<h1>${customer.name}</h1><p>Plan: ${customer.plan}</p>`;\n}\n",
        "Show the plan name on the billing page",
    ),
)


def topic_name(directory: str) -> str:
    """A fixture repo's name in the topic, as every command reports it (the home repo: ``home``)."""
    return "home" if directory == REPOS[0].name else directory


@contextlib.contextmanager
def demo_env() -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in _DEMO_ENV}
    os.environ.update(_DEMO_ENV)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
