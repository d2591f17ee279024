"""The CLI layer itself: usage errors and help texts read as one line naming the fix."""

from __future__ import annotations

from gitutil import run_cli


def test_usage_errors_name_the_command_to_ask_for_help():
    res = run_cli("record", "verdict")
    assert res.code == 2
    assert res.err.splitlines()[-1] == "Try 'team-router record verdict --help' for help."
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
        ("new",): ["Usage: team-router new [OPTIONS] {DESCRIPTION}", "--ticket T", "--id ID"],
        ("hold",): ["--pid PID", "--session ID"],
        ("release",): ["--pid PID"],
        ("record", "verdict"): ["{TARGET} {VERDICT}", '"REQUEST CHANGES"', "--body-file F"],
        ("record", "review"): ["PASS or FAIL"],
        ("record", "pr"): ["http(s) URL"],
        ("hook", "session-start"): ["Always exits", "0."],
    }
    for args, expected in cases.items():
        res = run_cli(*args, "--help")
        assert res.code == 0, res.err
        for text in expected:
            assert text in res.out, (args, text)
        assert "<int range>" not in res.out and "entry point" not in res.out
