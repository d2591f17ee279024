"""A run whose worktree directory was deleted by hand (git still lists it): `phase`, `next`,
`status` and the session-start hook see it alike, as `next <id>` resumes it (DESIGN §8).

Every answer without a target picks among the same topics (``discovery.topics``); such a run
has no file left to date it, so it is the answer only when no other run lives, and is named
beside the answer otherwise. None of these read commands touches its branch or its commits.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers.plans import artifact, touch
from helpers.repos import commit, git, run_cli
from helpers.sessions import asked_for
from helpers.topics import Topic, all_answer, answers, multi_topic, new_topic, notice, teardown

from router.plandir import artifacts
from router.topic import discovery, holders, runs


def gone_note(topic: Topic) -> str:
    """What phase, next (warnings) and the hook (a line of its notice) say of ``topic``."""
    return (
        f"{topic.id} resumes at WORKTREE: its worktree {topic.worktrees['home']} is missing "
        "(git still lists it, but its directory is gone); "
        f"`team-router next {topic.id}` says how to make it again on the same branch, "
        "commits included"
    )


def resume_notice(topic: Topic, phase: str, plan_dir: Path, *notes: str) -> list[str]:
    return [
        "team-router found an interrupted /team run in this repository.",
        f"Phase: {phase} | Id: {topic.id}",
        f"Artifact directory: {plan_dir}",
        "To resume it, re-invoke /team (/team-router:team when another plugin also answers to "
        f"/team): the pipeline continues at the {phase} phase from the artifacts above "
        f"(`team-router next {topic.id}` prints what that phase must produce). "
        "Do not start the run over.",
        *(f"{note}." for note in notes),
    ]


def deleted_by_hand(home: Path, description: str) -> Topic:
    """A topic with one commit on its branch, then its worktree directory deleted by hand."""
    topic = new_topic(home, description)
    commit(topic.worktrees["home"], "search.py", "s = 1\n", "slice")
    shutil.rmtree(topic.worktrees["home"])
    return topic


def untouched(home: Path) -> tuple[str, str]:
    """What no read command may change: every branch tip and git's worktree registrations."""
    refs = git(home, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
    return refs, git(home, "worktree", "list", "--porcelain")


def three_topics(home: Path) -> tuple[Topic, Topic, Topic]:
    """A torn-down topic, one whose worktree was deleted by hand, and a live run."""
    done = new_topic(home, "add paging")
    assert teardown(done).code == 0
    gone = deleted_by_hand(home, "add search")
    live = new_topic(home, "add caching")
    touch(artifact(live.plan_dir, "task.md"), 1_000_000_000)  # older than any clock: still newest
    return done, gone, live


def test_beside_a_live_run_the_deleted_worktree_is_named_by_every_answer(home_repo):
    done, gone, live = three_topics(home_repo)
    before = untouched(home_repo)

    assert answers(home_repo) == all_answer(live.id)
    phase = run_cli("phase", cwd=home_repo)
    assert (phase.code, phase.out.splitlines(), phase.err.splitlines()) == (
        0,
        [
            f"Topic {live.id}",
            "Resume at: QUESTION",
            "Done: WORKTREE",
            f"Artifact directory: {live.plan_dir}",
        ],
        [f"warning: {gone_note(gone)}"],
    )
    nxt = run_cli("next", "--json", cwd=home_repo)
    assert (nxt.json["id"], nxt.json["warnings"]) == (live.id, [gone_note(gone)])
    assert notice(home_repo).splitlines() == resume_notice(
        live, "QUESTION", live.plan_dir, gone_note(gone)
    )
    status = run_cli("status", "--json", cwd=home_repo)
    assert [(t["id"], t["resume_at"], t["repos"]) for t in status.json["topics"]] == [
        (
            live.id,
            "QUESTION",
            [
                {
                    "name": "home",
                    "worktree": str(live.worktrees["home"]),
                    "dirty": False,
                    "ahead": 0,
                    "missing": None,
                }
            ],
        ),
        (
            gone.id,
            "WORKTREE",
            [
                {
                    "name": "home",
                    "worktree": None,
                    "dirty": None,
                    "ahead": 1,
                    "missing": str(gone.worktrees["home"]),
                }
            ],
        ),
    ]
    assert done.id not in {t["id"] for t in status.json["topics"]}
    assert untouched(home_repo) == before


def test_alone_the_deleted_worktree_is_what_every_answer_resumes(home_repo):
    _done, gone, live = three_topics(home_repo)
    assert teardown(live, "--force").code == 0
    before = untouched(home_repo)

    assert answers(home_repo) == all_answer(gone.id)
    plan_dir = gone.worktrees["home"] / "docs" / "plans" / gone.id
    phase = run_cli("phase", cwd=home_repo)
    assert (phase.code, phase.out.splitlines(), phase.err.splitlines()) == (
        0,
        [
            f"Topic {gone.id}",
            "Resume at: WORKTREE",
            "Done: nothing yet",
            f"Artifact directory: {plan_dir}",
        ],
        [f"warning: {gone_note(gone)}"],
    )
    targetless, named = (run_cli("next", *t, "--json", cwd=home_repo) for t in ((), (gone.id,)))
    assert targetless.json == named.json
    assert (named.json["resume_at"], named.json["warnings"]) == ("WORKTREE", [gone_note(gone)])
    assert notice(home_repo).splitlines() == resume_notice(
        gone, "WORKTREE", plan_dir, gone_note(gone)
    )
    status = run_cli("status", cwd=home_repo)
    assert (status.code, status.err, status.out.splitlines()) == (
        0,
        "",
        [
            f"{gone.id}  resume at WORKTREE  <- here",
            f"  plan dir  {plan_dir}",
            f"  home  -        1 ahead  {gone.worktrees['home']} "
            "(missing: git still lists it, but its directory is gone)",
        ],
    )
    assert untouched(home_repo) == before
    assert git(home_repo, "log", "-1", "--format=%s", gone.id).strip() == "slice"


def test_from_a_secondary_repo_the_hook_resumes_a_deleted_home_worktree_as_phase_does(
    workspace,
):
    topic = multi_topic(workspace, ("api",))
    shutil.rmtree(topic.worktrees["home"])
    api_wt = topic.worktrees["api"]

    plan_dir = topic.worktrees["home"] / "docs" / "plans" / topic.id
    for cwd in (api_wt, topic.repos["api"]):  # its worktree, and its primary clone
        assert answers(cwd) == all_answer(topic.id), cwd
        assert run_cli("phase", "--json", cwd=cwd).json["resume_at"] == "WORKTREE"
        assert notice(cwd).splitlines() == resume_notice(
            topic, "WORKTREE", plan_dir, gone_note(topic)
        )


def test_a_topic_named_without_its_prefix_is_told_the_id_of_a_deleted_worktree(home_repo):
    gone = deleted_by_hand(home_repo, "add search")
    res = run_cli("next", "add-search", cwd=home_repo)
    assert (res.code, res.out) == (2, "")
    assert res.err == (
        "team-router: add-search is not a plan dir (expected an existing docs/plans/<id>/ "
        f"directory); 'add-search' is the topic of {gone.id}: pass the whole id [no-plan-dir]\n"
    )


def test_a_hosts_worktree_deleted_by_hand_is_listed_and_kept_by_status_and_the_sweep(home_repo):
    host = asked_for(home_repo, "agent-1111")
    commit(host.worktree, "feature.txt", "feature\n", "a commit of its own")
    shutil.rmtree(host.worktree)
    before = untouched(home_repo)
    holds = [
        "no worktree any more (`team-router doctor` says what is left)",
        "1 commit(s) of its own",
    ]

    listed = run_cli("status", "--json", cwd=home_repo).json
    assert (listed["topics"], [(h["id"], h["holds"]) for h in listed["host_worktrees"]]) == (
        [],
        [(host.id, holds)],
    )
    res = run_cli("sweep", "--host-worktrees", "--json", cwd=home_repo)
    assert res.code == 0, res.out + res.err
    assert [(h["id"], h["outcome"], h["detail"]) for h in res.json["host_worktrees"]] == [
        (host.id, "kept", f"it holds {'; '.join(holds)}")
    ]
    # No /team run: nothing to resume, the hook says nothing.
    none = {"hook": None, "phase": "no-topic", "next": "no-topic", "status": None}
    assert answers(home_repo) == none
    assert untouched(home_repo) == before


def test_discovery_reads_the_records_of_its_answer_and_of_a_deleted_worktree_alone(
    home_repo, monkeypatch
):
    """The hook runs at every session start: among many runs it reads the record of the one it
    answers and of the one whose worktree is gone, not every topic's."""
    for n in range(6):
        artifact(new_topic(home_repo, f"topic {n}").plan_dir, "task.md")
    gone = deleted_by_hand(home_repo, "add search")
    read: list[str] = []
    # The records' reader is the plan files' one, imported where a record is first read.
    real = artifacts.read_identified
    monkeypatch.setattr(artifacts, "read_identified", lambda path: read.append(path) or real(path))

    found = discovery.locate(str(home_repo))

    assert found is not None and found.plan is not None
    assert ([p.id for p in found.missing], found.plan.id) == ([gone.id], "2026-05-01-topic-5")
    records = [Path(path) for path in read if Path(path).parent.name == holders.RECORDS_DIR]
    assert sorted(path.stem for path in records) == sorted([gone.id, found.plan.id])


def test_the_commands_next_gives_make_the_worktree_again_on_its_branch_commits_included(
    home_repo,
):
    gone = deleted_by_hand(home_repo, "add search")
    tip = git(home_repo, "rev-parse", gone.id).strip()
    brief = run_cli("next", "--json", cwd=home_repo).json
    assert (brief["id"], brief["request"]) == (gone.id, "add search")
    assert f'    team-router new "<the user\'s request, verbatim>" --id {gone.id} --json' in (
        brief["brief"].splitlines()
    )

    assert run_cli("doctor", "--repair", "--json", cwd=home_repo).code == 0
    made = run_cli("new", brief["request"], "--id", gone.id, "--json", cwd=home_repo)
    assert (made.code, made.json["home"]["status"]) == (0, "created"), made.out + made.err
    # Made at the branch's tip, and the report says so (not the default branch's commit).
    assert (made.json["home"]["base"], made.json["home"]["on_existing_branch"]) == (tip, True)

    worktree = gone.worktrees["home"]
    assert git(worktree, "rev-parse", "HEAD").strip() == tip  # the commit carries on
    assert answers(home_repo) == all_answer(gone.id)
    again = run_cli("next", "--json", cwd=home_repo).json
    assert (again["resume_at"], again["request"], again["warnings"]) == (
        "QUESTION",
        "add search",
        [],
    )


def unlisted_note(topic: Topic, request: str) -> str:
    """What phase, next (warnings) and the hook say of ``topic`` once ``doctor --repair`` dropped
    the registration of its worktree deleted by hand: the run, that it has no worktree, and
    the one command that makes it again."""
    return (
        f"{topic.id} resumes at WORKTREE: it has no worktree ({topic.worktrees['home']} is gone: "
        "git no longer lists it, and its branch is kept); "
        f"`team-router new {request} --id {topic.id}` makes it again on the same branch, "
        "commits included"
    )


def repaired(home: Path, description: str) -> Topic:
    """:func:`deleted_by_hand`, then ``doctor --repair`` as the WORKTREE brief says: git's
    registration goes, the record and the branch (a commit of its own) stay."""
    topic = deleted_by_hand(home, description)
    assert run_cli("doctor", "--repair", cwd=home).code == 0
    assert "worktrees/" + topic.id not in git(home, "worktree", "list", "--porcelain")
    return topic


def test_after_doctor_repair_every_answer_still_resumes_the_run_without_a_worktree(home_repo):
    gone = repaired(home_repo, "add search")
    before = untouched(home_repo)
    note = unlisted_note(gone, "'add search'")
    plan_dir = gone.worktrees["home"] / "docs" / "plans" / gone.id

    assert answers(home_repo) == all_answer(gone.id)
    phase = run_cli("phase", cwd=home_repo)
    assert (phase.code, phase.out.splitlines(), phase.err.splitlines()) == (
        0,
        [
            f"Topic {gone.id}",
            "Resume at: WORKTREE",
            "Done: nothing yet",
            f"Artifact directory: {plan_dir}",
        ],
        [f"warning: {note}"],
    )
    targetless, named = (run_cli("next", *t, "--json", cwd=home_repo) for t in ((), (gone.id,)))
    assert targetless.json == named.json
    assert (named.json["resume_at"], named.json["request"], named.json["warnings"]) == (
        "WORKTREE",
        "add search",
        [note],
    )
    commands = [ln.strip() for ln in named.json["brief"].splitlines() if ln.startswith("    ")]
    assert commands == [f'team-router new "<the user\'s request, verbatim>" --id {gone.id} --json']
    assert notice(home_repo).splitlines() == resume_notice(gone, "WORKTREE", plan_dir, note)
    status = run_cli("status", cwd=home_repo)
    assert (status.code, status.err, status.out.splitlines()) == (
        0,
        "",
        [
            f"{gone.id}  resume at WORKTREE  <- here",
            f"  plan dir  {plan_dir}",
            f"  home  -        1 ahead  {gone.worktrees['home']} "
            "(missing: git no longer lists it, and its branch is kept)",
        ],
    )
    listed = run_cli("status", "--json", cwd=home_repo).json
    assert [(t["id"], t["resume_at"], t["repos"]) for t in listed["topics"]] == [
        (
            gone.id,
            "WORKTREE",
            [
                {
                    "name": "home",
                    "worktree": None,
                    "dirty": None,
                    "ahead": 1,
                    "missing": str(gone.worktrees["home"]),
                }
            ],
        )
    ]
    assert untouched(home_repo) == before


def test_beside_a_live_run_the_run_without_a_worktree_is_named_by_every_answer(home_repo):
    gone = repaired(home_repo, "add search")
    live = new_topic(home_repo, "add caching")
    touch(artifact(live.plan_dir, "task.md"), 1_000_000_000)
    before = untouched(home_repo)
    note = unlisted_note(gone, "'add search'")

    assert answers(home_repo) == all_answer(live.id)
    phase = run_cli("phase", "--json", cwd=home_repo)
    assert (phase.json["id"], phase.json["warnings"]) == (live.id, [note])
    assert run_cli("next", "--json", cwd=home_repo).json["warnings"] == [note]
    assert notice(home_repo).splitlines() == resume_notice(live, "QUESTION", live.plan_dir, note)
    status = run_cli("status", "--json", cwd=home_repo).json
    assert [(t["id"], t["resume_at"]) for t in status["topics"]] == [
        (live.id, "QUESTION"),
        (gone.id, "WORKTREE"),
    ]
    assert untouched(home_repo) == before


def test_doctor_names_the_command_that_makes_the_run_s_worktree_again(home_repo):
    gone = repaired(home_repo, "add search")
    res = run_cli("doctor", "--json", cwd=home_repo)
    remake = (
        f"`team-router new 'add search' --id {gone.id}` makes its worktree again on it, "
        f"commits included, or `team-router teardown {gone.id}` ends the run"
    )
    assert (res.code, [(f["kind"], f["repaired"], f["detail"]) for f in res.json["findings"]]) == (
        0,
        [
            (
                "orphan-branch",
                False,
                "branch this tool created; no worktree has it checked out; kept: 1 commit(s) "
                f"exist on no other branch, tag or remote; {remake}",
            ),
            (
                "record-dir-gone",
                False,
                f"its worktree {gone.worktrees['home']} is gone; kept: branch {gone.id} still "
                f"exists; {remake}",
            ),
        ],
    )


def test_the_command_every_answer_names_makes_the_worktree_again_at_the_branch_s_tip(home_repo):
    gone = repaired(home_repo, "add search")
    tip = git(home_repo, "rev-parse", gone.id).strip()
    assert tip != git(home_repo, "rev-parse", "main").strip()
    res = run_cli("new", "add search", "--id", gone.id, cwd=home_repo)
    # The report says what was done: the worktree is on the branch's tip, not on main's.
    assert (res.code, res.err, res.out.splitlines()) == (
        0,
        "",
        [
            f"Topic {gone.id} (branch {gone.id})",
            f"home: created {gone.worktrees['home']} on its existing branch at {tip[:12]}",
            f"Artifact directory: {gone.plan_dir}",
        ],
    )
    assert git(gone.worktrees["home"], "rev-parse", "HEAD").strip() == tip
    assert answers(home_repo) == all_answer(gone.id)
    again = run_cli("next", "--json", cwd=home_repo).json
    assert (again["resume_at"], again["warnings"]) == ("QUESTION", [])


def test_the_command_named_quotes_the_request_for_a_shell_or_names_it_when_it_cannot():
    assert runs.remake_command("2026-05-01-x", "it's $HOME `now`") == (
        "team-router new 'it'\"'\"'s $HOME `now`' --id 2026-05-01-x"
    )
    placeholder = 'team-router new "<the user\'s request, verbatim>" --id 2026-05-01-x'
    for request in (None, "", "two\nlines"):
        assert runs.remake_command("2026-05-01-x", request) == placeholder, request
