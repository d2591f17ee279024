"""The phase table of DESIGN §8, row by row, over real files; the commit signal over real git."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.plans import artifact, repos_md
from helpers.repos import commit, make_repo, run_cli, write
from helpers.topics import TOPIC_ID, new_topic
from hypothesis import given, settings
from hypothesis import strategies as st

from router import names
from router.phase.infer import infer
from router.plandir import artifacts, flatfields

# (files to write: name -> extra frontmatter), commits?, missing worktrees, expected
# (resume_at, step, halted). One entry per row of the table, plus the boundaries.
ROWS = {
    "pr.md ships": (
        {"plan.md": {}, "pr.md": {"url": "https://x/pr/1"}},
        True,
        [],
        ("SHIPPED", "teardown", False),
    ),
    "PASS with commits opens the PR": (
        {"plan.md": {}, "review-1.md": {"verdict": "PASS"}},
        True,
        [],
        ("PR", None, False),
    ),
    "PASS without commits is not shipped work": (
        {"plan.md": {}, "review-1.md": {"verdict": "PASS"}},
        False,
        [],
        ("IMPLEMENT", "tests", False),
    ),
    "fifth FAIL halts": (
        {"plan.md": {}, **{f"review-{n}.md": {"verdict": "FAIL"} for n in range(1, 6)}},
        True,
        [],
        ("IMPLEMENT", None, True),
    ),
    "fourth FAIL goes back to review": (
        {"plan.md": {}, **{f"review-{n}.md": {"verdict": "FAIL"} for n in range(1, 5)}},
        True,
        [],
        ("IMPLEMENT", "review", False),
    ),
    "plan and commits but no gate record: tests": (
        {"plan.md": {}},
        True,
        [],
        ("IMPLEMENT", "tests", False),
    ),
    "plan without commits: tests": ({"plan.md": {}}, False, [], ("IMPLEMENT", "tests", False)),
    "a RED test-first gate: slices": (
        {"plan.md": {}, "tests-1.md": {"verdict": "RED"}},
        False,
        [],
        ("IMPLEMENT", "slices", False),
    ),
    "a BROKEN gate: tests again": (
        {"plan.md": {}, "tests-1.md": {"verdict": "BROKEN"}},
        False,
        [],
        ("IMPLEMENT", "tests", False),
    ),
    "fifth BROKEN gate halts": (
        {"plan.md": {}, **{f"tests-{n}.md": {"verdict": "BROKEN"} for n in range(1, 6)}},
        False,
        [],
        ("IMPLEMENT", None, True),
    ),
    "a RED gate after a BROKEN one: slices": (
        {"plan.md": {}, "tests-1.md": {"verdict": "BROKEN"}, "tests-2.md": {"verdict": "RED"}},
        False,
        [],
        ("IMPLEMENT", "slices", False),
    ),
    "fix track: task.md alone moves to PLAN": (
        {"task.md": {"track": "fix"}},
        False,
        [],
        ("PLAN", None, False),
    ),
    "full track: task.md alone stays at QUESTION": (
        {"task.md": {}},
        False,
        [],
        ("QUESTION", None, False),
    ),
    "structure: plan": ({"structure.md": {}, "design.md": {}}, False, [], ("PLAN", None, False)),
    "approved design: structure": (
        {"design.md": {}, "design-review-1.md": {"verdict": "APPROVE"}},
        False,
        [],
        ("STRUCTURE", None, False),
    ),
    "commented design: structure": (
        {"design.md": {}, "design-review-1.md": {"verdict": "COMMENT"}},
        False,
        [],
        ("STRUCTURE", None, False),
    ),
    "approved design, repos without worktree": (
        {"design.md": {}, "design-review-1.md": {"verdict": "APPROVE"}},
        False,
        ["api"],
        ("STRUCTURE", "worktrees", False),
    ),
    "fifth REQUEST CHANGES halts": (
        {
            "design.md": {"revision": 4},
            **{f"design-review-{n}.md": {"verdict": "REQUEST CHANGES"} for n in range(1, 6)},
        },
        False,
        [],
        ("DESIGN", None, True),
    ),
    "REQUEST CHANGES not yet answered: redraft": (
        {
            "design.md": {"revision": 1},
            "design-review-1.md": {"verdict": "APPROVE"},
            "design-review-2.md": {"verdict": "REQUEST CHANGES"},
        },
        False,
        [],
        ("DESIGN", "redraft", False),
    ),
    "REQUEST CHANGES answered by the revision: review": (
        {"design.md": {"revision": 2}, "design-review-2.md": {"verdict": "REQUEST CHANGES"}},
        False,
        [],
        ("DESIGN", "review", False),
    ),
    "first draft after REQUEST CHANGES: redraft": (
        {"design.md": {}, "design-review-1.md": {"verdict": "REQUEST CHANGES"}},
        False,
        [],
        ("DESIGN", "redraft", False),
    ),
    "design without review: review": ({"design.md": {}}, False, [], ("DESIGN", "review", False)),
    "research: draft": ({"research.md": {}, "task.md": {}}, False, [], ("DESIGN", "draft", False)),
    "task and questions: research": (
        {"task.md": {}, "questions.md": {}},
        False,
        [],
        ("RESEARCH", None, False),
    ),
    "task alone: question": ({"task.md": {}}, False, [], ("QUESTION", None, False)),
    "empty plan dir: question": ({}, False, [], ("QUESTION", None, False)),
}


def _inventory(tmp_path: Path, files: dict[str, dict[str, object]]) -> artifacts.Inventory:
    plan = tmp_path / "docs" / "plans" / TOPIC_ID
    plan.mkdir(parents=True)
    for name, fields in files.items():
        artifact(plan, name, **fields)
    return artifacts.inventory(str(plan), TOPIC_ID)


@pytest.mark.parametrize("row", list(ROWS), ids=list(ROWS))
def test_each_row_of_the_phase_table(tmp_path, row):
    files, commits, missing, expected = ROWS[row]
    inv = _inventory(tmp_path, files)
    resume = infer(inv, has_commits=lambda: commits, missing_worktrees=lambda: missing)
    assert (resume.resume_at, resume.step, resume.halted) == expected
    assert inv.warnings == ()


def test_nothing_at_all_resumes_at_worktree(tmp_path):
    inv = artifacts.inventory(str(tmp_path / "absent"), TOPIC_ID)
    resume = infer(inv, has_commits=lambda: False, missing_worktrees=list)
    assert (resume.resume_at, resume.completed) == ("WORKTREE", ())


def test_a_worktree_without_a_plan_dir_resumes_at_question(tmp_path):
    inv = artifacts.inventory(str(tmp_path / "absent"), TOPIC_ID)
    resume = infer(inv, has_commits=lambda: False, missing_worktrees=list, worktree_exists=True)
    assert (resume.resume_at, resume.completed) == ("QUESTION", ("WORKTREE",))


def test_completed_lists_every_phase_whose_evidence_is_present(tmp_path):
    names = ["task.md", "questions.md", "research.md", "design.md", "structure.md", "plan.md"]
    files = {n: {} for n in names} | {
        "design-review-1.md": {"verdict": "APPROVE"},
        "review-1.md": {"verdict": "PASS"},
    }
    resume = infer(_inventory(tmp_path, files), has_commits=lambda: True, missing_worktrees=list)
    assert resume.resume_at == "PR"
    assert resume.completed == (
        "WORKTREE",
        "QUESTION",
        "RESEARCH",
        "DESIGN",
        "STRUCTURE",
        "PLAN",
        "IMPLEMENT",
    )


def test_without_steps_the_signals_the_answer_does_not_need_are_never_asked(tmp_path):
    inv = _inventory(tmp_path, {"plan.md": {}, "design.md": {}})

    def boom():
        raise AssertionError("asked")

    resume = infer(inv, has_commits=boom, missing_worktrees=boom, with_step=False)
    assert (resume.resume_at, resume.step) == ("IMPLEMENT", None)


def test_an_unreadable_verdict_is_warned_about_and_not_counted(tmp_path):
    inv = _inventory(
        tmp_path,
        {
            "design.md": {},
            "design-review-1.md": {"verdict": "APPROVE"},
            "design-review-2.md": {"verdict": "MAYBE"},
        },
    )
    resume = infer(inv, has_commits=lambda: False, missing_worktrees=list)
    # Round 2 was held after round 1's approval: what it said is unknown, so the
    # older approval does not stand for it; the design is judged again (round 3).
    assert (resume.resume_at, resume.step, resume.completed) == (
        "DESIGN",
        "review",
        ("WORKTREE",),
    )
    assert any("design-review-2.md" in w and "MAYBE" in w for w in inv.warnings)
    assert artifacts.next_round(inv.design_reviews) == 3


NEWEST_ROUND_CASES = {
    "an unreadable newest review after a PASS": (
        {"plan.md": {}, "review-1.md": {"verdict": "PASS"}, "review-2.md": {"verdict": "OK"}},
        ("IMPLEMENT", "review"),
    ),
    "a PASS and a FAIL for the same review round": (
        {"plan.md": {}, "review-01.md": {"verdict": "FAIL"}, "review-1.md": {"verdict": "PASS"}},
        ("IMPLEMENT", "review"),
    ),
    "an APPROVE and a REQUEST CHANGES for the same design round": (
        {
            "design.md": {"revision": 0},
            "design-review-01.md": {"verdict": "REQUEST CHANGES"},
            "design-review-1.md": {"verdict": "APPROVE"},
        },
        ("DESIGN", "review"),
    ),
}


@pytest.mark.parametrize("case", list(NEWEST_ROUND_CASES), ids=list(NEWEST_ROUND_CASES))
def test_a_gate_passes_only_on_its_newest_round_read_in_full(tmp_path, case):
    files, expected = NEWEST_ROUND_CASES[case]
    inv = _inventory(tmp_path, files)
    resume = infer(inv, has_commits=lambda: True, missing_worktrees=list)
    assert (resume.resume_at, resume.step) == expected
    assert "IMPLEMENT" not in resume.completed and "DESIGN" not in resume.completed
    assert inv.warnings  # the unreadable or doubled round is named, never silent


REWRITTEN_AFTER_A_PASS = {
    "approved, then redrafted": {
        "design.md": {"revision": 1},
        "design-review-1.md": {"verdict": "APPROVE"},
    },
    "commented, then redrafted": {
        "design.md": {"revision": 2},
        "design-review-1.md": {"verdict": "REQUEST CHANGES"},
        "design-review-2.md": {"verdict": "COMMENT"},
    },
}


@pytest.mark.parametrize("case", list(REWRITTEN_AFTER_A_PASS), ids=list(REWRITTEN_AFTER_A_PASS))
def test_a_passing_verdict_does_not_stand_for_a_draft_rewritten_after_it(tmp_path, case):
    inv = _inventory(tmp_path, REWRITTEN_AFTER_A_PASS[case])
    resume = infer(inv, has_commits=lambda: False, missing_worktrees=list)
    assert (resume.resume_at, resume.step) == ("DESIGN", "review")
    assert "DESIGN" not in resume.completed
    assert inv.warnings == ()


def test_two_files_for_one_round_are_both_named_and_agreeing_ones_still_pass(tmp_path):
    files = {
        "design.md": {},
        "design-review-1.md": {"verdict": "APPROVE"},
        "design-review-01.md": {"verdict": "COMMENT"},
    }
    inv = _inventory(tmp_path, files)
    assert infer(inv, has_commits=lambda: False, missing_worktrees=list).resume_at == "STRUCTURE"
    (warning,) = inv.warnings
    assert "design-review-1.md" in warning and "design-review-01.md" in warning


def test_a_frontmatter_that_does_not_parse_is_a_warning_naming_the_file(tmp_path):
    plan = tmp_path / "docs" / "plans" / TOPIC_ID
    write(plan / "task.md", "---\ntopic: [unclosed\n---\nbody\n")
    write(plan / "questions.md", "---\ntopic: add-rate-limiting\n")
    inv = artifacts.inventory(str(plan), TOPIC_ID)
    assert inv.has("task.md", "questions.md")
    assert any(w.startswith(str(plan / "task.md")) and "YAML" in w for w in inv.warnings)
    assert any(
        w.startswith(str(plan / "questions.md")) and "never closed" in w for w in inv.warnings
    )


def test_a_topic_that_disagrees_with_the_id_is_a_warning_naming_the_file(tmp_path):
    plan = tmp_path / "docs" / "plans" / TOPIC_ID
    write(plan / "research.md", "---\ntopic: something-else\nphase: research\n---\n")
    inv = artifacts.inventory(str(plan), TOPIC_ID)
    assert inv.warnings == (
        f"{plan / 'research.md'}: frontmatter topic 'something-else' disagrees with the "
        "directory's topic 'add-rate-limiting'",
    )


def test_the_light_id_grammar_is_the_one_of_router_ids():
    assert artifacts.LIGHT_ID_RE.pattern == names.ID_RE.pattern
    assert artifacts.topic_of(TOPIC_ID) == names.parse_id(TOPIC_ID).topic


_usual_values = st.one_of(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,10}( [A-Za-z0-9_-]{1,6}){0,2}", fullmatch=True),
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True),
    st.sampled_from(["null", "NULL", "yes", "Off", "TRUE", "0", "007", "12", "1 2", "APPROVE"]),
)
_usual_keys = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True),
    st.sampled_from(["no", "On", "null", "topic", "verdict"]),
)


@settings(deadline=None)
@given(
    st.lists(st.tuples(_usual_keys, _usual_values), max_size=6),
    st.sampled_from(["", "\n# body\n", "\r\nbody\r\n", "  \n"]),
)
def test_the_usual_block_is_read_as_the_line_by_line_reader_reads_it(pairs, after):
    # Every artifact of every topic is read through the one-match path; a block it takes
    # must read exactly as line by line would (fields, repeated keys, errors).
    text = "---\n" + "".join(f"{k}: {v}\n" for k, v in pairs) + "---" + after
    assert artifacts.parse_frontmatter(text) == artifacts.parse_by_lines(text)


def test_an_artifact_of_the_usual_shape_is_read_in_one_match():
    text = "---\ntopic: x\ndate: 2026-05-01\nphase: design-review\nverdict: REQUEST CHANGES\n---\n# t\n"
    assert flatfields.usual_block(text)[0] == {
        "topic": "x",
        "date": "2026-05-01",
        "phase": "design-review",
        "verdict": "REQUEST CHANGES",
    }
    for other in ("---\ntopic: x\ntopic: y\n---\n", "---\nno: x\n---\n", "---\nn: 007\n---\n"):
        assert flatfields.usual_block(other) is None  # the line-by-line reader decides these


# -- the commit signal, over real git ------------------------------------------------


def _phase(cwd: Path, *args: str) -> dict:
    res = run_cli("phase", *args, "--json", cwd=cwd)
    assert res.code == 0, res.err + res.out
    return res.json


def test_the_test_first_gates_record_not_a_commit_moves_plan_to_slices(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "plan.md")
    assert (_phase(home_repo)["resume_at"], _phase(home_repo)["step"]) == ("IMPLEMENT", "tests")
    commit(plan.parent.parent.parent, "src/a.py", "x = 1\n", "first slice")
    assert (_phase(home_repo)["resume_at"], _phase(home_repo)["step"]) == ("IMPLEMENT", "tests")
    assert run_cli("record", "tests", TOPIC_ID, "BROKEN", cwd=home_repo).code == 0
    assert _phase(home_repo)["step"] == "tests"
    assert run_cli("record", "tests", TOPIC_ID, "RED", cwd=home_repo).code == 0
    assert _phase(home_repo) == {
        "ok": True,
        "command": "phase",
        "id": TOPIC_ID,
        "plan_dir": str(plan),
        "resume_at": "IMPLEMENT",
        "step": "slices",
        "halted": False,
        "completed": ["WORKTREE", "PLAN"],
        "warnings": [],
    }


def test_a_commit_in_a_secondary_repo_alone_counts(home_repo, workspace):
    api = make_repo(workspace, "api")
    plan = new_topic(home_repo).plan_dir
    write(plan / "repos.md", repos_md(home_repo, ("api", api)))
    res = run_cli("worktrees", str(plan), "--json", cwd=home_repo)
    assert res.code == 0, res.err + res.out
    api_worktree = Path(next(r["worktree"] for r in res.json["repos"] if r["name"] == "api"))
    artifact(plan, "plan.md")
    assert run_cli("record", "review", TOPIC_ID, "PASS", cwd=home_repo).code == 0
    assert _phase(home_repo)["resume_at"] == "IMPLEMENT"  # a PASS of no work opens no PR
    commit(api_worktree, "endpoint.py", "ok\n", "api slice")
    assert _phase(home_repo)["resume_at"] == "PR"


def test_structure_asks_for_worktrees_while_repos_md_lists_a_repo_without_one(home_repo, workspace):
    api = make_repo(workspace, "api")
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "design.md")
    artifact(plan, "design-review-1.md", verdict="APPROVE")
    write(plan / "repos.md", repos_md(home_repo, ("api", api)))
    assert (_phase(home_repo)["resume_at"], _phase(home_repo)["step"]) == ("STRUCTURE", "worktrees")
    assert run_cli("worktrees", str(plan), "--json", cwd=home_repo).code == 0
    assert (_phase(home_repo)["resume_at"], _phase(home_repo)["step"]) == ("STRUCTURE", None)


def test_phase_text_is_readable(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "task.md")
    artifact(plan, "questions.md")
    res = run_cli("phase", cwd=home_repo)
    assert res.code == 0
    assert res.out.splitlines() == [
        f"Topic {plan.name}",
        "Resume at: RESEARCH",
        "Done: WORKTREE, QUESTION",
        f"Artifact directory: {plan}",
    ]


@pytest.mark.parametrize("reader", ["light", "yaml"])
def test_a_byte_order_mark_before_the_frontmatter_is_read_past(tmp_path, reader):
    # Editors on Windows save UTF-8 with a BOM: the redraft answering round 1 must
    # read as revision 1 (review next), not as a draft without frontmatter (redraft again).
    plan = tmp_path / "docs" / "plans" / TOPIC_ID
    extra = "notes: [a, b]\n" if reader == "yaml" else ""  # a list makes the YAML reader decide
    fields = f"topic: add-rate-limiting\nphase: design\nrevision: 1\n{extra}"
    (plan).mkdir(parents=True)
    (plan / "design.md").write_bytes(b"\xef\xbb\xbf" + f"---\r\n{fields}---\r\n# D\r\n".encode())
    artifact(plan, "design-review-1.md", verdict="REQUEST CHANGES")
    (plan / "design-review-2.md").write_bytes(
        b"\xef\xbb\xbf---\ntopic: add-rate-limiting\nverdict: APPROVE\n---\n"
    )
    inv = artifacts.inventory(str(plan), TOPIC_ID)
    assert inv.design_revision == 1
    assert [v.verdict for v in inv.design_reviews] == ["REQUEST CHANGES", "APPROVE"]
    assert inv.warnings == ()
    assert (
        artifacts.parse_frontmatter(
            (plan / "design.md").read_text(encoding="utf-8"), typed=True
        ).data["revision"]
        == 1
    )


@pytest.mark.parametrize("value", ["[1]", "{n: 1}", "", "1.5", "one", "-1"])
def test_a_revision_that_is_not_a_whole_number_is_a_warning_naming_the_file_and_field(
    tmp_path, value
):
    # `revision: [1]` was dropped with the other lists: read as no revision (the
    # first draft), redraft again, and no word of why.
    inv = _inventory(
        tmp_path,
        {"design.md": {"revision": value}, "design-review-1.md": {"verdict": "REQUEST CHANGES"}},
    )
    resume = infer(inv, has_commits=lambda: False, missing_worktrees=list)
    assert (resume.resume_at, resume.step, inv.design_revision) == ("DESIGN", "redraft", 0)
    shown = f"{value!r}" if value else "empty"
    assert inv.warnings == (
        f"{inv.path('design.md')}: frontmatter field revision is {shown}, not a whole number "
        "(write `revision: N`, N the review round this draft answers); read as 0",
    )


def test_a_list_where_a_verdict_or_topic_belongs_is_named_in_the_warning(tmp_path):
    inv = _inventory(
        tmp_path,
        {
            "design.md": {"topic": "[add-rate-limiting]"},
            "design-review-1.md": {"verdict": "[APPROVE]"},
        },
    )
    assert inv.latest_design_review is None
    assert any("design.md: frontmatter topic '[add-rate-limiting]'" in w for w in inv.warnings)
    assert any("design-review-1.md: verdict '[APPROVE]'" in w for w in inv.warnings)


FENCES = {
    "opening": ("--- ", "---"),
    "closing": ("---", "--- "),
    "tab and CRLF": ("---\t", "--- \t"),
}


@pytest.mark.parametrize("reader", ["light", "yaml"])
@pytest.mark.parametrize("fences", list(FENCES), ids=list(FENCES))
def test_a_fence_with_trailing_whitespace_is_a_fence(tmp_path, reader, fences):
    # An invisible space after `---` made the whole frontmatter body text (revision
    # unread: redraft again, silently) or left it "never closed".
    opening, closing = FENCES[fences]
    end = "\r\n" if fences == "tab and CRLF" else "\n"
    extra = ["notes: [a, b]"] if reader == "yaml" else []  # a list makes the YAML reader decide
    fields = ["topic: add-rate-limiting", "phase: design", "revision: 1", *extra]
    text = end.join([opening, *fields, closing, "# D", "", "---", "a break, not a fence", ""])
    plan = tmp_path / "docs" / "plans" / TOPIC_ID
    plan.mkdir(parents=True)
    (plan / "design.md").write_bytes(text.encode())
    artifact(plan, "design-review-1.md", verdict="REQUEST CHANGES")
    inv = artifacts.inventory(str(plan), TOPIC_ID)
    assert (inv.design_revision, inv.warnings) == (1, ())
    parsed = artifacts.parse_frontmatter(text, typed=True)
    assert (parsed.data["revision"], parsed.body_line) == (1, len(fields) + 3)
    assert infer(inv, has_commits=lambda: False, missing_worktrees=list).step == "review"


def test_phase_reads_a_design_whose_fence_has_a_trailing_space(home_repo):
    plan = new_topic(home_repo).plan_dir
    write(plan / "design.md", "--- \ntopic: add-rate-limiting\nrevision: 1\n--- \n# D\n")
    artifact(plan, "design-review-1.md", verdict="REQUEST CHANGES")
    data = _phase(home_repo)
    assert (data["resume_at"], data["step"], data["warnings"]) == ("DESIGN", "review", [])


# -- a gate record's verdict, as written by hand -------------------------------------


def _gate(plan: Path, name: str, *lines: str) -> Path:
    """A gate record whose frontmatter holds ``lines`` verbatim (a key may repeat)."""
    head = [f"topic: {plan.name.split('-', 3)[3]}", "date: 2026-05-01", "phase: review"]
    return write(plan / name, "---\n" + "\n".join([*head, *lines]) + "\n---\n\n# review\n")


def _implemented(home_repo: Path) -> Path:
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "plan.md")
    commit(plan.parent.parent.parent, "src/a.py", "x = 1\n", "first slice")
    return plan


# Each order, and a frontmatter the flat scanner leaves to YAML (the list): the last key won.
TWO_VERDICTS = {
    "FAIL then PASS": ("verdict: FAIL", "verdict: PASS"),
    "PASS then FAIL": ("verdict: PASS", "verdict: fail"),
    "read by YAML": ("tags: [a, b]", "verdict: FAIL", "verdict: 'PASS'  # fixed"),
}


@pytest.mark.parametrize("case", list(TWO_VERDICTS), ids=list(TWO_VERDICTS))
def test_a_review_with_two_conflicting_verdicts_is_undecided_and_named(home_repo, case):
    plan = _implemented(home_repo)
    review = _gate(plan, "review-1.md", *TWO_VERDICTS[case])
    data = _phase(home_repo)
    assert (data["resume_at"], data["step"], data["halted"]) == ("IMPLEMENT", "review", False)
    (warning,) = data["warnings"]
    assert warning.startswith(f"{review}: verdict is given 2 times (")
    assert warning.endswith("this round is not counted as decided")
    record = run_cli("record", "review", plan.name, "PASS", "--json", cwd=home_repo)
    assert record.code == 0 and record.json["path"] == str(plan / "review-2.md"), record.out
    assert _phase(home_repo)["resume_at"] == "PR"


def test_a_test_first_gate_record_with_an_unreadable_verdict_is_named(home_repo):
    # The test-first gate's records are read like the review's: a verdict that is none of
    # RED, BROKEN leaves the round undecided, and says so rather than waiting silently.
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "plan.md")
    tests = _gate(plan, "tests-1.md", "verdict: green")
    data = _phase(home_repo)
    assert (data["resume_at"], data["step"], data["halted"]) == ("IMPLEMENT", "tests", False)
    assert data["warnings"] == [
        f"{tests}: verdict 'green' is not one of RED, BROKEN; this round is not counted as decided"
    ]


def test_a_verdict_given_twice_alike_still_decides(home_repo):
    plan = _implemented(home_repo)
    _gate(plan, "review-1.md", "verdict: PASS", "verdict: pass")
    assert _phase(home_repo)["resume_at"] == "PR"


def test_a_design_review_with_two_conflicting_verdicts_is_judged_again(home_repo):
    plan = new_topic(home_repo).plan_dir
    artifact(plan, "design.md")
    _gate(plan, "design-review-1.md", "verdict: REQUEST CHANGES", "verdict: APPROVE")
    data = _phase(home_repo)
    assert (data["resume_at"], data["step"]) == ("DESIGN", "review")
    assert any("verdict is given 2 times" in w for w in data["warnings"])


def test_a_draft_with_two_revisions_is_read_as_answering_none(home_repo):
    plan = new_topic(home_repo).plan_dir
    write(plan / "design.md", "---\ntopic: add-rate-limiting\nrevision: 1\nrevision: 0\n---\n")
    artifact(plan, "design-review-1.md", verdict="REQUEST CHANGES")
    data = _phase(home_repo)
    assert (data["resume_at"], data["step"]) == ("DESIGN", "redraft")
    assert any("revision is given 2 times ('1', '0')" in w for w in data["warnings"])


# GitHub's review states, in the spellings `gh` prints and people copy.
GITHUB_STATES = {
    "APPROVED passes a review": ("review-1.md", "APPROVED", ("PR", None)),
    "changes_requested fails a review": (
        "review-1.md",
        "changes_requested",
        ("IMPLEMENT", "review"),
    ),
    "Approved approves a design": ("design-review-1.md", "Approved", ("STRUCTURE", None)),
    "CHANGES REQUESTED asks a redraft": (
        "design-review-1.md",
        "CHANGES_REQUESTED",
        ("DESIGN", "redraft"),
    ),
    "COMMENTED comments on a design": ("design-review-1.md", "COMMENTED", ("STRUCTURE", None)),
}


@pytest.mark.parametrize("case", list(GITHUB_STATES), ids=list(GITHUB_STATES))
def test_githubs_review_states_decide_a_round(home_repo, case):
    name, state, expected = GITHUB_STATES[case]
    plan = _implemented(home_repo) if name == "review-1.md" else new_topic(home_repo).plan_dir
    if name != "review-1.md":
        artifact(plan, "design.md")
    _gate(plan, name, f"verdict: {state}")
    data = _phase(home_repo)
    assert ((data["resume_at"], data["step"]), data["warnings"]) == (expected, [])


def test_record_review_takes_githubs_state_and_writes_the_gates_word(home_repo):
    plan = _implemented(home_repo)
    res = run_cli("record", "review", plan.name, "approved", "--json", cwd=home_repo)
    assert (res.code, res.json["value"]) == (0, "PASS"), res.out
    assert "verdict: PASS" in (plan / "review-1.md").read_text()
    res = run_cli("record", "review", plan.name, "COMMENTED", "--json", cwd=home_repo)
    assert (res.code, res.json["error"]["code"]) == (2, "invalid-value")
    assert not (plan / "review-2.md").exists()


def test_a_hand_written_review_with_no_plan_never_leads_to_pr(home_repo):
    # `record review` refuses it (no-plan); written by hand it must not skip
    # STRUCTURE and PLAN either, however many rounds it claims.
    plan = new_topic(home_repo).plan_dir
    for name in ("task.md", "questions.md", "research.md", "design.md"):
        artifact(plan, name)
    artifact(plan, "design-review-1.md", verdict="APPROVE")
    commit(plan.parent.parent.parent, "src/a.py", "x = 1\n", "an early slice")
    for reviews in ({"review-1.md": "PASS"}, {f"review-{n}.md": "FAIL" for n in range(1, 6)}):
        for name, verdict in reviews.items():
            artifact(plan, name, verdict=verdict)
        data = _phase(home_repo)
        assert (data["resume_at"], data["step"], data["halted"]) == ("STRUCTURE", None, False)
        assert "IMPLEMENT" not in data["completed"]
        (warning,) = data["warnings"]
        assert "a review round with no plan.md is not counted" in warning
    artifact(plan, "plan.md")  # the plan written: the rounds count again
    data = _phase(home_repo)
    assert (data["resume_at"], data["halted"]) == ("IMPLEMENT", True)
