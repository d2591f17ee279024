"""``init``: prepare a repository for team-router."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from router.create import permission
from router.create.permission import LOCAL_SETTINGS, PERMISSION_RULE
from router.errors import ErrorCode, RouterError
from router.ioerror import io_operation
from router.plandir.templates import render
from router.records import field, record
from router.share import share_path
from router.topic.workspace import Repo, ensure_excludes, open_repo

PLUGIN_NAME = "team-router"


@record
class InitResult:
    repo: Path
    actions: list[str]
    plugin_commands: list[str]
    warnings: list[str] = field(default_factory=list)
    allowed_by: Path | None = None  # the settings file that lets the agent run team-router

    def to_json(self) -> dict[str, object]:
        return {
            "repo": str(self.repo),
            "actions": self.actions,
            "plugin_commands": self.plugin_commands,
            "permission_rule": PERMISSION_RULE,
            "settings_file": str(self.repo / LOCAL_SETTINGS),
        }


def prepare_repo(
    cwd: Path,
    *,
    allow_agent: bool = False,
    allow_everywhere: bool = False,
    write_examples: bool = False,
) -> InitResult:
    """Add the exclude lines; offer the example files without touching the work tree.

    The examples go under the common git dir, where no ``git status`` sees
    them: an untracked file in the main tree would make the teardown it
    prepares refuse (§3.1). ``write_examples`` writes them into the repo
    instead (never overwriting one), for the user to review and commit.
    ``allow_agent`` also adds the permission rule to the repo's personal Claude Code
    settings (``.claude/settings.local.json``, kept out of ``git status`` by info/exclude),
    and to those of every other repo its topics reach; ``allow_everywhere`` to the
    user's own settings instead (every repo, on the user's explicit request).
    """
    repo = open_repo(cwd)
    try:
        actions = _prepare(repo, write_examples=write_examples)
        if allow_everywhere:
            actions.append(permission.allow_for_user())
        elif allow_agent:
            actions.append(permission.allow_in_repo(repo))
            # A session the recovery notice resumes in another repo of a topic reads
            # that repo's settings: they get the rule too.
            actions += permission.extend_to(repo, _topic_repos(repo))
        allowed = permission.allowed_in(repo.primary)
        return InitResult(repo.primary, actions, plugin_commands(), allowed_by=allowed)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise RouterError(
            ErrorCode.SETUP_FAILED,
            f"init: {where}{exc.strerror or exc}; fix that path (permissions, a file in the way) "
            "and rerun",
        ) from None


EXAMPLES_DIR = "examples"  # under the common git dir's team-router/


def examples_dir(repo: Repo) -> Path:
    from router.topic.state import state_root

    return state_root(repo.common_dir) / EXAMPLES_DIR


def _prepare(repo: Repo, *, write_examples: bool) -> list[str]:
    actions = [
        "info/exclude: added /.claude/worktrees/ and /docs/plans/"
        if ensure_excludes(repo.common_dir)
        else "info/exclude: already lists /.claude/worktrees/ and /docs/plans/"
    ]
    shared = Path(share_path("templates")).parent
    examples = {
        ".worktreeinclude": render("worktreeinclude.j2"),
        ".worktreesetup.example": (shared / ".worktreesetup.example").read_text(encoding="utf-8"),
        ".teamteardown.example": (shared / ".teamteardown.example").read_text(encoding="utf-8"),
    }
    if write_examples:
        return actions + [_write_example(repo.primary / n, t) for n, t in examples.items()]
    where = examples_dir(repo)
    from router.topic.state import write_atomic

    for name, text in examples.items():
        write_atomic(where / name, text)  # ours alone: refreshed on every run
    offered = (
        f"examples: {where / '.worktreeinclude'}, {where / '.worktreesetup.example'} and "
        f"{where / '.teamteardown.example'} (outside the work tree, so it stays clean; to use "
        "one, copy it into the repo as .worktreeinclude, .worktreesetup or .teamteardown and "
        "commit it to the default branch)"
    )
    return [*actions, offered]


def _topic_repos(repo: Repo) -> list[tuple[str, Repo]]:
    """The other repos this repo's topics reach (their home records name them)."""
    from router.errors import RouterError
    from router.topic import state
    from router.topic.workspace import open_repo

    found: dict[str, tuple[str, Repo]] = {}
    for topic_id in state.list_records(repo.common_dir):
        record = state.read_record_or_none(repo.common_dir, topic_id)
        for entry in record.repos if record is not None and record.repo == "home" else ():
            if entry.name == "home" or entry.path in found:
                continue
            try:
                found[entry.path] = (entry.name, open_repo(Path(entry.path)))
            except RouterError:
                continue  # gone or moved: nothing to give the rule to
    return list(found.values())


def plugin_commands() -> list[str]:
    """How to get the Claude Code plugin from this installation.

    An installed copy's ``_share`` is itself a marketplace holding the plugin alone
    (``.claude-plugin/marketplace.json`` lists it with source ``./``): its two
    ``claude plugin`` lines. From a source checkout, a marketplace install would
    copy the whole directory (the client skips only ``.git``: a ``.venv``, caches,
    the tests): the checkout is loaded in place with ``--plugin-dir`` instead.
    """
    root = Path(share_path("skills")).parent
    if not installed_copy():
        return [f"claude --plugin-dir {root}"]
    market, plugin = PLUGIN_NAME, PLUGIN_NAME
    manifest = root / ".claude-plugin" / "marketplace.json"
    with contextlib.suppress(OSError, ValueError, KeyError, IndexError, TypeError):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        market, plugin = data["name"], data["plugins"][0]["name"]
    return [f"claude plugin marketplace add {root}", f"claude plugin install {plugin}@{market}"]


def installed_copy() -> bool:
    """team-router runs from an installed wheel (its ``_share``), not from a source checkout."""
    return Path(share_path("skills")).parent.name == "_share"


def _write_example(path: Path, text: str) -> str:
    # lexists: a dangling symlink in the repo must not make init write where it points.
    if os.path.lexists(path):
        return f"{path.name}: exists, left as it is"
    with io_operation("writing", path), open(path, "x", encoding="utf-8") as fh:
        fh.write(text)
    return (
        f"{path.name}: written (review it, then commit it to the default branch: until then the "
        "main tree is not clean, and teardown refuses)"
    )
