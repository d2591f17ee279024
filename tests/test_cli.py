"""The CLI layer itself: usage errors and help texts read as one line naming the fix."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from helpers.faults import argv
from helpers.repos import commit, run_cli, status, write
from helpers.topics import new_topic


def test_usage_errors_name_the_command_to_ask_for_help():
    res = run_cli("record", "verdict")
    assert res.code == 2
    assert res.err.splitlines() == [
        "team-router: Missing argument 'TARGET' [usage]",
        "Try 'team-router record verdict --help' for help.",
    ]
    res = run_cli("record", "verdict", "--json")
    assert res.code == 2 and res.json["error"]["code"] == "usage"
    assert res.json["error"]["message"] == (
        "Missing argument 'TARGET'; see `team-router record verdict --help`"
    )


def test_a_group_without_its_command_prints_its_help_as_is():
    for args in ((), ("record",), ("hook",)):
        res = run_cli(*args)
        assert res.code == 2
        assert res.err.startswith(f"Usage: {' '.join(('team-router', *args))} ")
        assert "team-router: Usage" not in res.err and "Try '" not in res.err


def test_help_names_every_argument_and_option_value():
    cases = {
        ("new",): ["Usage: team-router new [OPTIONS] DESCRIPTION\n", "--ticket T", "--id ID"],
        ("hold",): ["--pid PID", "--session ID"],
        ("release",): ["--pid PID"],
        ("record", "verdict"): ["[OPTIONS] TARGET VERDICT\n", '"REQUEST CHANGES"', "--body-file F"],
        ("record", "review"): ["PASS or FAIL"],
        ("record", "pr"): ["http(s) URL"],
        ("hook", "session-start"): ["Always exits", "0."],
        # docs/teardown.md: `restore BRANCH` also takes a branch `pr-cleanup --abandon` snapshotted
        ("restore",): ["--abandon"],
    }
    for args, expected in cases.items():
        res = run_cli(*args, "--help")
        assert res.code == 0, res.err
        for text in expected:
            assert text in res.out, (args, text)
        assert "<int range>" not in res.out and "entry point" not in res.out
        assert "{" not in res.out.splitlines()[0], res.out  # the usage line: no braces


def test_ctrl_c_while_the_cli_is_still_loading_exits_130_without_a_traceback(tmp_path, home_repo):
    # A real SIGINT at the one moment main() cannot yet hand it to a command: while
    # it imports the CLI (the envelope's json comes before any handler is in place).
    # A stand-in ``json`` first on PYTHONPATH sends it to its own process on import
    # (and never finishes importing).
    shim = write(
        tmp_path / "shim" / "json.py",
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n",
    )
    env = {**os.environ, "PYTHONPATH": str(shim.parent)}
    proc = subprocess.run(
        argv("status", cwd=home_repo),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        # Whatever this runner inherited: an ignored SIGINT stays ignored across exec.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "team-router: interrupted"


def test_ctrl_c_while_the_hook_is_still_loading_exits_130_without_a_traceback(tmp_path, home_repo):
    # The hook's path imports the standard library's json before anything else
    # does: a stand-in first on PYTHONPATH sends the real SIGINT at that moment.
    shim = write(
        tmp_path / "shim" / "json.py",
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n",
    )
    proc = subprocess.run(
        # Without -C, as the host runs it (in the session's directory): the hook's own path.
        [*argv(cwd=home_repo)[:-2], "hook", "session-start"],
        cwd=home_repo,
        env={**os.environ, "PYTHONPATH": str(shim.parent)},
        input="{}",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert (proc.returncode, proc.stdout) == (130, ""), proc.stderr
    assert proc.stderr.strip() == "team-router: interrupted"


def test_the_clis_defaults_are_the_cores():
    from router import declared
    from router.cli import spec as cli
    from router.topic import state

    assert cli.CLI_DEFAULT_WAIT == state.DEFAULT_WAIT
    assert cli.CLI_DEFAULT_LINE_TIMEOUT == declared.DEFAULT_LINE_TIMEOUT


def test_help_lists_every_command_without_importing_a_handler_or_core_module():
    import ast
    import sys

    code = (
        "import sys\nfrom router.cli.main import run\ncode = run(['--help'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('router.')))\nraise SystemExit(code)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "teardown" in proc.stdout and "pr-cleanup" in proc.stdout
    loaded = set(ast.literal_eval(proc.stdout.splitlines()[-1]))
    # The declarations, their reader and help writer, the envelope: no command's module,
    # no core module. The envelope's own: its error types (with the wording of an I/O
    # error) and the signal handling.
    assert loaded == {
        "router.cli",
        "router.cli.helptext",
        "router.cli.main",
        "router.cli.output",
        "router.cli.parse",
        "router.cli.spec",
        "router.errors",
        "router.ioerror",
        "router.interrupt",
    }


# -- the console script's exit ----------------------------------------------------

# A stand-in for `main` (printing a large answer, exit code 3), then the console
# script's `console()`. An object whose finaliser writes "TEARDOWN" shows whether the
# interpreter's teardown ran.
_EXIT_SCRIPT = """
import sys
import router.entry as entry

class Witness:
    def __del__(self):
        sys.stderr.write("TEARDOWN")

witness = Witness()
{setup}
entry.main = lambda: (print("x" * 300_000), 3)[1]
sys.exit(entry.console())
"""


def _console_run(setup: str = "") -> subprocess.CompletedProcess:
    import sys

    code = _EXIT_SCRIPT.format(setup=setup)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_console_script_ends_after_flushing_without_the_interpreters_teardown():
    proc = _console_run()
    assert proc.returncode == 3
    assert proc.stdout == "x" * 300_000 + "\n"  # every byte delivered first
    assert "TEARDOWN" not in proc.stderr


def test_an_exit_handler_or_a_running_thread_gets_the_usual_exit(tmp_path):
    handler = tmp_path / "handler"
    thread = tmp_path / "thread"
    for setup, witness in (
        (f"import atexit; atexit.register(lambda: open({str(handler)!r}, 'w').close())", handler),
        (
            "import threading, time\n"
            "def late():\n"
            "    time.sleep(0.3)\n"
            f"    open({str(thread)!r}, 'w').close()\n"
            "threading.Thread(target=late).start()",
            thread,
        ),
    ):
        proc = _console_run(setup)
        assert proc.returncode == 3
        assert proc.stdout == "x" * 300_000 + "\n"
        assert witness.exists()  # the handler ran; the thread was waited for
        assert "TEARDOWN" in proc.stderr


def test_a_closed_stdout_is_no_traceback_and_keeps_the_exit_code(home_repo):
    # `team-router status --json >&-`: Python starts with no sys.stdout at all.
    topic = new_topic(home_repo)
    for args in (("status", "--json"), ("next", topic.id, "--json"), ("--help",)):
        proc = subprocess.run(
            ["sh", "-c", 'exec "$@" >&-', "sh", *argv(*args, cwd=home_repo)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)


def test_a_reader_that_closes_the_pipe_early_gets_no_traceback(home_repo):
    # `team-router next ID --json | head -c 1`: the rest of the answer is dropped
    # quietly and the command keeps its own exit code.
    topic = new_topic(home_repo)
    for args in (("next", topic.id, "--json"), ("status", "--json"), ("phase", "--json")):
        proc = subprocess.Popen(
            argv(*args, cwd=home_repo),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # no reader left: the first write gets EPIPE
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, (args, err)
        assert "Traceback" not in err and "Exception ignored" not in err, (args, err)


def test_a_missing_git_is_refused_naming_the_install_not_a_rerun(home_repo, tmp_path):
    # The repo's layout is read from its files, so the first git to run may be
    # deep in a command: wherever it turns out git is missing, that is what it says.
    import shutil
    import sys

    topic = new_topic(home_repo)  # made while git was there
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {**os.environ, "PATH": str(bin_dir)}
    assert shutil.which("git", path=env["PATH"]) is None

    def refused(*args: str) -> dict:
        proc = subprocess.run(
            [sys.executable, "-m", "router.entry", "-C", str(home_repo), *args, "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
        error = json.loads(proc.stdout)["error"]
        assert error["code"] == "not-a-repo", (args, error)
        assert "git is not installed or not on PATH" in error["message"], (args, error)
        assert "run the same command again" not in error["message"]
        return error

    assert refused("new", "x y")["message"].endswith("; install git")
    refused("teardown", topic.id)
    assert topic.worktrees["home"].is_dir()  # nothing was removed


BEFORE = "(before the command team-router takes only -C DIR, --version and --help)"


def test_a_commands_option_before_the_command_says_it_goes_after_the_command():
    res = run_cli("--json", "status")
    assert (res.code, res.json["error"]["code"]) == (2, "usage")
    assert res.json["error"]["message"] == (
        "--json is an option of `status`, so it goes after the command: "
        f"`team-router status --json` {BEFORE}; see `team-router --help`"
    )
    res = run_cli("--json", "record", "verdict", "T-1", "APPROVE")
    assert res.code == 2 and res.json["error"]["message"].startswith(
        "--json is an option of `record verdict`, so it goes after the command: "
        "`team-router record verdict T-1 APPROVE --json` "
    )
    res = run_cli("--json")
    assert res.code == 2 and res.json["error"]["message"] == (
        f"--json goes after the command: `team-router COMMAND --json` {BEFORE}; "
        "see `team-router --help`"
    )


def test_an_option_and_its_value_before_the_command_are_shown_after_it_in_text_mode(tmp_path):
    res = run_cli("-C", str(tmp_path), "--wait", "5", "teardown", "T-1", "--dry-run")
    assert (res.code, res.out) == (2, "")
    assert res.err.splitlines() == [
        "team-router: --wait is an option of `teardown`, so it goes after the command: "
        f"`team-router -C {tmp_path} teardown T-1 --dry-run --wait 5` {BEFORE} [usage]",
        "Try 'team-router --help' for help.",
    ]
    res = run_cli("--bogus", "status")
    assert res.code == 2
    assert (res.out, res.err) == (
        "",
        "team-router: No such option: --bogus; before the command team-router takes only "
        "-C DIR, --version and --help [usage]\nTry 'team-router --help' for help.\n",
    )


# A flag given a value before the command: (what was typed, the suggestion, its exit code).
FLAG_GIVEN_A_VALUE = {
    "--json=1": (("--json=1", "status"), "status --json", 0),
    "--json=TRUE": (("--json=TRUE", "status"), "status --json", 0),
    "--json=0": (("--json=0", "status"), "status", 0),
    "--dry-run=yes": (
        ("--dry-run=yes", "teardown", "ENG-1-none"),
        "teardown ENG-1-none --dry-run",
        2,
    ),
}


@pytest.mark.parametrize("case", FLAG_GIVEN_A_VALUE, ids=FLAG_GIVEN_A_VALUE)
def test_a_flag_given_a_value_before_the_command_gets_a_suggestion_that_runs(home_repo, case):
    import shlex

    typed, expected, code = FLAG_GIVEN_A_VALUE[case]
    res = run_cli(*typed, cwd=home_repo)
    assert (res.code, res.out) == (2, ""), res.err
    suggested = re.search(r"goes after the command: `team-router -C \S+ ([^`]*)`", res.err)
    assert suggested and suggested[1] == expected, res.err
    # The suggestion is itself accepted (teardown then finds no plan dir: no-plan-dir).
    again = run_cli(*shlex.split(suggested[1]), cwd=home_repo)
    assert again.code == code, again.err + again.out
    assert code == 0 or again.err.endswith("[no-plan-dir]\n"), again.err


def test_minus_c_after_the_command_says_it_goes_before_the_command(tmp_path):
    res = run_cli("status", "-C", str(tmp_path), "--json")
    assert (res.code, res.json["error"]["code"]) == (2, "usage")
    assert res.json["error"]["message"] == (
        f"-C goes before the command: `team-router -C {tmp_path} status --json`; "
        "see `team-router status --help`"
    )


def test_words_that_name_a_hook_after_another_command_do_not_make_it_a_hook(tmp_path):
    # An unquoted description: `new` refuses the extra word (exit 2, the JSON
    # envelope), it does not become a hook that always exits 0 saying nothing.
    for hook in ("session-start", "worktree-remove"):
        res = run_cli("new", "hook", hook, "--json", cwd=tmp_path)
        assert (res.code, res.json["error"]["code"]) == (2, "usage"), res.out + res.err
        assert "unexpected extra argument" in res.json["error"]["message"]


EMPTY_PATHS = {
    "-C": ("-C", "", "status", "--json"),
    "demo --dir": ("demo", "--dir", "", "--json"),
    "record --body-file": ("record", "verdict", "{id}", "APPROVE", "--body-file", "", "--json"),
}


@pytest.mark.parametrize("args", EMPTY_PATHS.values(), ids=EMPTY_PATHS.keys())
def test_an_empty_path_is_a_usage_error_never_the_current_directory(
    topic, home_repo, monkeypatch, args
):
    monkeypatch.chdir(home_repo)
    plans = sorted(p.name for p in topic.plan_dir.iterdir())
    listing = sorted(os.listdir(home_repo))
    res = run_cli(*(a.format(id=topic.id) for a in args))
    assert (res.code, res.json["error"]["code"]) == (2, "usage"), res.out + res.err
    option = args[args.index("") - 1]
    assert res.json["error"]["message"].startswith(
        f"Invalid value for '{option}': the path is empty; pass a path (`.` is the current "
        "directory) or leave the option out"
    )
    assert status(home_repo) == "" and sorted(os.listdir(home_repo)) == listing
    assert sorted(p.name for p in topic.plan_dir.iterdir()) == plans


# -- the docs' JSON table holds to what each command prints ------------------------

ERRORS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "json-and-errors.md"
ENVELOPE = {"ok", "command", "warnings", "error"}
_KEY = re.compile(r"[a-z_]+")


def _contract() -> dict[str, set[str]]:
    """Per command of the docs' JSON envelope table, the top-level keys it names."""
    text = ERRORS_PAGE.read_text(encoding="utf-8")
    section = text.split("\n## The JSON envelope\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) != 2:
            continue
        for command in re.findall(r"`([^`]+)`", cells[0]):
            rows[command] = _top_level_keys(cells[1])
    return rows


def _top_level_keys(cell: str) -> set[str]:
    """The backticked keys outside any [..], {..} or (..): the object's own keys."""
    keys, depth = set(), 0
    for part in re.split(r"(`[^`]*`|[\[\]{}()])", cell):
        if part in ("[", "{", "("):
            depth += 1
        elif part in ("]", "}", ")"):
            depth -= 1
        elif depth == 0 and part.startswith("`") and _KEY.fullmatch(part.strip("`")):
            keys.add(part.strip("`"))
    return keys


def _printed_keys(topic, other_topic) -> dict[str, set[str]]:
    """Each command's top-level keys beyond the envelope, over the runs that exercise them."""
    home, tid = topic.repos["home"], topic.id
    write(topic.worktrees["home"] / "notes.txt", "work in progress\n")
    runs = {
        "new": [("new", "another", "--date", "2026-05-01")],
        "worktrees": [("worktrees", tid)],
        "phase": [("phase", tid)],
        "next": [("next", tid)],
        "status": [("status",)],
        "record": [("record", "temp", tid, "/tmp/x"), ("record", "pr", other_topic, "--local")],
        "sweep": [("sweep", "--dry-run"), ("sweep", "--host-worktrees", "--dry-run")],
        "local-state": [("local-state", tid, "--dry-run")],
        "doctor": [("doctor",)],
        "hold": [("hold", tid)],
        "release": [("release", tid)],
        "init": [("init",)],
        "install-hooks": [("install-hooks", "--dry-run")],
        "pr-cleanup": [
            ("pr-cleanup", other_topic, "--abandon", "--yes", "--dry-run"),
            ("pr-cleanup", tid, "--dry-run"),  # its dirty worktree: a refused plan's blockers
        ],
        # a dirty worktree: --force snapshots it, and restore brings it back
        "teardown": [("teardown", tid, "--dry-run"), ("teardown", tid, "--force")],
        "restore": [("restore", tid)],
    }
    printed: dict[str, set[str]] = {}
    for command, invocations in runs.items():
        for args in invocations:
            res = run_cli(*args, "--json", cwd=home)
            assert res.code in (0, 1), (args, res.out, res.err)
            printed.setdefault(command, set()).update(set(res.json) - ENVELOPE)
    return printed


def test_the_json_table_of_the_docs_names_every_key_each_command_prints(topic) -> None:
    other = new_topic(topic.repos["home"], "other work")
    commit(other.worktrees["home"], "other.txt", "built\n", "other work")  # record pr needs it
    contract, printed = _contract(), _printed_keys(topic, other.id)
    assert set(contract) - {"demo"} == set(printed)  # test_demo runs the demo
    wrong = {
        command: {
            "undocumented": keys - contract[command],
            "never printed": contract[command] - keys,
        }
        for command, keys in printed.items()
        if keys != contract[command]
    }
    assert not wrong


def test_the_contract_reader_takes_only_an_objects_own_keys() -> None:
    cell = "`id`, `mode` (`single`/`multi`), `repos`: [{`name`, `steps`: [{`code`}]}], `home`: {`base`}"
    assert _top_level_keys(cell) == {"id", "mode", "repos", "home"}
    assert _contract()["phase"] == {"id", "plan_dir", "resume_at", "step", "halted", "completed"}
