"""The one declaration per command (router/cli/spec.py): help, parsing and handlers derive from it.

Each command's --help shows what it declares; each handler takes exactly the
values its declaration names; and the commands on the hot paths (the
session-start hook, ``phase``, ``next``, ``status``, ``--help``) answer through
the same reader as every other command, without importing what they do not use.
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.repos import run_cli

from router.cli import spec
from router.cli.parse import HelpAsked, UsageError, parse

NODES = list(spec.walk())
COMMANDS = [n for n in NODES if isinstance(n, spec.Command)]
HEAVY = {"typer", "click", "jinja2", "rich", "filelock"}


def _id(node: spec.Command | spec.Group) -> str:
    return " ".join(node.path)


@pytest.mark.parametrize("node", NODES, ids=_id)
def test_help_of_every_command_shows_every_declared_argument_and_option(node):
    res = run_cli(*node.path, "--help")
    assert (res.code, res.err) == (0, "")
    usage = res.out.splitlines()[0]
    assert usage.startswith(f"Usage: team-router {_id(node)} [OPTIONS]")
    lines = res.out.splitlines()
    for option in node.opts:
        shown = f"  {option.flag} {option.metavar}" if option.takes_value else f"  {option.flag}"
        assert any(line.startswith(shown) for line in lines), (option.flag, res.out)
    assert any(line.startswith("  -h, --help  ") for line in lines)
    if isinstance(node, spec.Command):
        assert usage.split("[OPTIONS]")[1].split() == [a.metavar for a in node.args]
        for arg in node.args:
            assert any(line.startswith(f"  {arg.metavar}  ") for line in lines), arg.metavar
    else:
        listed = res.out.split("\nCommands:\n")[1].splitlines()
        assert [line.split()[0] for line in listed] == [c.name for c in node.commands]


def test_the_top_help_lists_every_command_in_declaration_order():
    res = run_cli("--help")
    assert res.code == 0
    listed = res.out.split("\nCommands:\n")[1].splitlines()
    assert [line.split()[0] for line in listed] == [c.name for c in spec.ROOT.commands]


@pytest.mark.parametrize("command", COMMANDS, ids=_id)
def test_each_handler_takes_exactly_its_declared_values(command):
    module, _, name = command.handler.partition(":")
    handler = getattr(importlib.import_module(f"router.cli.{module}"), name)
    params = list(inspect.signature(handler).parameters.values())
    assert params[0].name == ("directory" if command.as_given else "cwd")
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    declared = [a.name for a in command.args] + [o.name for o in command.opts]
    assert sorted(p.name for p in params[1:]) == sorted(declared)


def test_declared_names_are_unique_within_each_command():
    for command in COMMANDS:
        names = [a.name for a in command.args] + [o.name for o in command.opts]
        flags = [o.flag for o in command.opts]
        assert len(set(names)) == len(names), _id(command)
        assert len(set(flags)) == len(flags), _id(command)
        assert not {"-h", "--help"} & set(flags)


def test_the_reader_gives_each_declared_value_its_type_and_default():
    parsed = parse(["-C", "/tmp", "record", "pr", "T", "--local", "--wait=2.5", "--repo", "api"])
    assert parsed.command.path == ("record", "pr")
    assert parsed.directory == Path("/tmp")
    assert parsed.values == {
        "target": "T",
        "url": None,
        "local": True,
        "repo_name": "api",
        "wait": 2.5,
        "as_json": False,
    }
    parsed = parse(["hold", "--pid", "7", "--", "--not-an-option"])
    assert parsed.values == {
        "target": "--not-an-option",
        "pid": 7,
        "session": None,
        "as_json": False,
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["phase", "a", "b"], "Got unexpected extra argument(s) (b)"),
        (["record", "temp", "T"], "Missing argument 'PATH'."),
        (["hold", "--pid", "0"], "Invalid value for '--pid': 0 is not in the range x>=1."),
        (["hold", "--pid", "x"], "Invalid value for '--pid': 'x' is not a valid int range."),
        (["doctor", "--wait", "y"], "Invalid value for '--wait': 'y' is not a valid float range."),
        (["teardown", "T", "--wait"], "Option '--wait' requires an argument."),
        (["teardown", "T", "--force=1"], "Option '--force' does not take a value."),
        (["phase", "--jsn"], "No such option: --jsn (Possible options: --json)"),
        (["stats"], "No such command 'stats'. Did you mean 'status'?"),
        (
            ["-C", ""],
            "Invalid value for '-C': the path is empty; pass a path (`.` is the "
            "current directory) or leave the option out",
        ),
    ],
)
def test_the_reader_refuses_bad_input_with_one_message(args, message):
    with pytest.raises(UsageError) as refused:
        parse(args)
    assert refused.value.message == message


def test_help_wins_over_every_other_problem_of_the_same_command():
    with pytest.raises(HelpAsked) as asked:
        parse(["record", "verdict", "a", "b", "c", "--help", "--wait", "x"])
    assert asked.value.node.path == ("record", "verdict")


# -- the hot paths: the same reader, nothing they do not use -------------------------


def _fresh(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``team-router args`` in a fresh interpreter, and every module it imported."""
    code = (
        "import sys\nfrom router.entry import main\n"
        f"code = main({args!r})\n"
        "print('MODULES', *sorted(sys.modules), file=sys.stderr)\nraise SystemExit(code)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        input="{}",
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = proc.stderr.splitlines()[-1] if proc.stderr else ""
    return proc, set(line.split()[1:]) if line.startswith("MODULES ") else set()


@pytest.mark.parametrize(
    "args",
    [
        ["phase", "--json"],
        ["phase"],
        ["status", "--json"],
        ["next", "--json"],
        ["hook", "session-start"],
        ["--help"],
        ["phase", "--help"],
    ],
)
def test_the_hot_commands_import_only_what_they_use(home_repo, questioned_topic, args):
    proc, imported = _fresh(args, home_repo)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "router.cli.parse" in imported  # the one reader answered
    top = {name.split(".")[0] for name in imported}
    # `next` renders a brief: jinja2 is its one template engine import. Help and the
    # hook do not even import typing (~3 ms, ~14 ms with what it pulls in).
    heavy = HEAVY - {"jinja2"} if args[0] == "next" else HEAVY
    if "--help" in args or args[0] == "hook":
        heavy = heavy | {"typing", "dataclasses"}
    assert not top & heavy
    handlers = {n for n in imported if n.startswith("router.cli.")} - {
        "router.cli.parse",
        "router.cli.spec",
        "router.cli.main",
        "router.cli.output",
        "router.cli.jsontext",  # output's JSON writer
    }
    if "--help" in args:
        assert handlers == {"router.cli.helptext"}  # help runs no handler
        assert not {n for n in imported if n.startswith("router.") and "cli" not in n} - {
            "router.entry",
            "router.errors",
            "router.ioerror",
            "router.interrupt",
        }
    else:
        assert len(handlers) == 1, handlers  # the command's own module alone


# What the session-start hook reads (DESIGN §14: it "never imports what it does not
# use"): the one reader and its handler, discovery's readers of records and of git's
# files, the phase table and the holder file it writes. No error types (creating the
# error-code enum costs ~3 ms; a refusal imports them when raised), no git runner.
HOOK_MODULES = {
    "router",
    "router.cli",
    "router.cli.hooks",
    "router.cli.main",
    "router.cli.parse",
    "router.cli.spec",
    "router.entry",
    "router.git",
    "router.git.borrowing",
    "router.git.files",
    "router.git.keep",
    "router.host",
    "router.host.sessionstart",
    "router.interrupt",
    "router.ioerror",
    "router.phase",
    "router.phase.infer",
    "router.plandir",
    "router.plandir.artifacts",
    "router.plandir.flatfields",
    "router.plandir.mdlines",
    "router.processes",
    "router.share",
    "router.topic",
    "router.topic.discovery",
    "router.topic.holders",
    "router.topic.runs",
}
# Standard modules the hook has no use for (threading: asking whether this is the main
# thread; importlib: importing the handler; pathlib: paths are strings on its path;
# contextlib: its context managers are small classes).
HOOK_UNUSED = {
    "threading",
    "importlib",
    "warnings",
    "pathlib",
    "subprocess",
    "typing",
    "contextlib",
}


def test_the_session_start_hook_imports_exactly_what_it_uses(home_repo, questioned_topic):
    # From inside the topic's plan dir: the notice needs the phase table, the records,
    # the artifacts and the holder file.
    proc, imported = _fresh(["hook", "session-start"], questioned_topic.plan_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Phase: " in proc.stdout
    assert {n for n in imported if n.split(".")[0] == "router"} == HOOK_MODULES
    assert not imported & HOOK_UNUSED


# What ``phase`` reads (DESIGN §15: 500 topics within 150 ms): the hook's readers, the
# topic resolver and the repository it opens from git's files. The git handle brings
# its layout methods and the runner alone: no other git concept, no process.
PHASE_MODULES = (
    HOOK_MODULES - {"router.cli.hooks", "router.host", "router.host.sessionstart", "router.share"}
) | {
    "router.cli.jsontext",
    "router.cli.output",
    "router.cli.phase",
    "router.errors",
    "router.git.answers",
    "router.git.client",
    "router.git.layout",
    "router.git.run",
    "router.names",  # the Branch/Sha types the git handle answers in
    "router.records",  # the repository's layout is a record
    "router.topic.planpath",
    "router.topic.target",
    "router.topic.workspace",
}
# dataclasses brings inspect, ast and tokenize; subprocess brings threading and selectors.
PHASE_UNUSED = {"dataclasses", "inspect", "subprocess", "threading", "importlib"}


@pytest.mark.parametrize("args", [["phase", "--json"], ["phase"]])
def test_phase_imports_exactly_what_it_uses(home_repo, questioned_topic, args):
    proc, imported = _fresh(args, home_repo)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert questioned_topic.id in proc.stdout
    # The JSON writer is imported only to write JSON.
    expected = PHASE_MODULES if "--json" in args else PHASE_MODULES - {"router.cli.jsontext"}
    assert {n for n in imported if n.split(".")[0] == "router"} == expected
    assert not imported & PHASE_UNUSED


@pytest.mark.parametrize(
    "args",
    [["phase", "no-such-topic", "--json"], ["phase", "no-such-topic"], ["next", "nope", "--json"]],
)
def test_an_unknown_topic_is_refused(home_repo, questioned_topic, args):
    res = run_cli(*args, cwd=home_repo)
    assert res.code == 2
    message = f"{args[1]} is not a plan dir (expected an existing docs/plans/<id>/ directory)"
    if "--json" in args:
        assert res.err == ""
        assert res.json == {
            "ok": False,
            "command": args[0],
            "warnings": [],
            "error": {"code": "no-plan-dir", "message": message},
        }
    else:
        assert (res.out, res.err) == ("", f"team-router: {message} [no-plan-dir]\n")


@pytest.mark.parametrize("args", [["phase", "--json"], ["phase"], ["status", "--json"]])
def test_outside_a_repo_the_answer_is_not_a_repo(tmp_path, args):
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    res = run_cli(*args, cwd=nowhere)
    assert res.code == 1
    message = f"{nowhere} is not inside a git work tree; run from a repository or pass -C"
    if "--json" in args:
        assert res.err == ""
        assert res.json == {
            "ok": False,
            "command": args[0],
            "warnings": [],
            "error": {"code": "not-a-repo", "message": message},
        }
    else:
        assert (res.out, res.err) == ("", f"team-router: {message} [not-a-repo]\n")


def test_a_vanished_current_directory_is_not_a_repo(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        f"import os; os.rmdir({str(gone)!r}); from router.entry import main; "
        "raise SystemExit(main(['phase', '--json']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=gone, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and '"code": "not-a-repo"' in proc.stdout, proc.stdout
