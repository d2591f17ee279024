"""Records: atomic, in the common git dir, never trusted or deleted when they do not parse."""

from __future__ import annotations

import json
import os

import pytest
from helpers.repos import git, run_cli, worktree_paths

from router import records
from router.reasons import Reason, Why
from router.teardown.wording import in_words
from router.topic import state

ID = "2026-05-01-add-thing"


def _common(repo):
    return repo / ".git"


def test_new_writes_a_complete_record_in_the_common_git_dir(home_repo):
    res = run_cli("new", "Add thing", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    record = state.read_record(_common(home_repo), ID)
    assert record is not None
    worktree = home_repo / ".claude/worktrees" / ID
    assert record.worktree == str(worktree)
    assert record.branch == ID
    assert record.branch_created is True
    assert record.base_commit == git(home_repo, "rev-parse", "origin/main")
    assert {"inspect", "base", "claim", "add", "verify", "setup", "record"} <= set(record.steps)
    # Every worktree of the repo sees the same record: it is not inside any checkout.
    assert state.record_path(_common(home_repo), ID).is_relative_to(home_repo / ".git")


def test_a_record_for_an_existing_branch_says_the_tool_did_not_create_it(home_repo):
    git(home_repo, "branch", ID)
    res = run_cli("new", "x", "--id", ID, "--json", cwd=home_repo)
    assert res.code == 0, res.err
    record = state.read_record(_common(home_repo), ID)
    assert record.branch_created is False


def test_write_atomic_replaces_the_file_whole_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "d" / "r.json"
    state.write_atomic(target, "one\n")
    state.write_atomic(target, "two\n")
    assert target.read_text() == "two\n"
    assert os.listdir(target.parent) == ["r.json"]


def test_write_atomic_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "d" / "r.json"
    state.write_atomic(target, "old\n")

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        state.write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert os.listdir(target.parent) == ["r.json"]


def test_a_record_round_trips_every_field(tmp_path):
    record = state.TopicRecord(
        id=ID,
        repo="home",
        branch=ID,
        worktree="/w",
        base_commit="abc",
        branch_created=True,
        description="d",
        plan_dir="/p",
        steps=("inspect", "claim"),
        repos=(state.RepoEntry("api", "/api", "/api/w"),),
        home="/home-repo",
        included=(".env",),
        temp_paths=("/tmp/x",),
        teardown=state.TeardownMark(("integrate", "remove"), False),
        restored=state.Restored("a" * 40, f"{ID}-restored", "/w2"),
        integrating=state.Picking(ID, "main", "b" * 40, ("c" * 40,)),
        removing=state.Removal(
            "/w",
            (
                state.Judged("a.txt", 2049, 12, 0o100644, 5, 10**18, 10**18 + 1),
                state.Judged("dir/b:c.txt", 2049, 13, 0o120777, 3, 7, 8, "d" * 64),
            ),
        ),
        pr_cleanup_mode="merged",
        host_removal=state.HostRemoval("/w", "removed"),
        last_run=state.LastRun(
            "teardown",
            (
                state.RanStep(
                    "remove",
                    "done",
                    "removed /w; the repositories inside, holding nothing unpushed, go with "
                    "it: submodule lib",
                    why=Why(Reason.REMOVED, path="/w").noting(
                        Why(Reason.NESTED, items=("submodule lib",))
                    ),
                ),
                state.RanStep("sweep", "skipped", "no residue under /"),
            ),
        ),
        track="fix",
        sparse=("src", "docs"),
        setup_done=("make deps",),
        setup_state="pending",
        declared_at="e" * 40,
        made_by="host",
    )
    # Every field set: one the record's JSON left out would read back as its default.
    bare = state.TopicRecord("x", "r", "b")
    fields = [f.name for f in records.fields(state.TopicRecord) if f.name != "schema"]
    assert [f for f in fields if getattr(record, f) == getattr(bare, f)] == []
    state.write_record(tmp_path, record)
    assert state.read_record(tmp_path, ID) == record


def _with_last_run(tmp_path, steps: list[dict]) -> state.TopicRecord | None:
    path = state.record_path(tmp_path, ID)
    path.parent.mkdir(parents=True)
    last_run = {"command": "teardown", "steps": steps}
    raw = {"schema": 2, "id": ID, "repo": "home", "branch": ID, "last_run": last_run}
    path.write_text(json.dumps(raw), encoding="utf-8")
    return state.read_record(tmp_path, ID)


def test_a_journal_line_keeps_its_written_form_and_reads_back_as_the_same_file():
    # Records written by earlier versions hold these lines: the form may not change.
    # A stamp before 1970 is negative; a path may hold ':'.
    entry = state.Judged("dir/a:b.txt", 2049, 12, 0o100644, 5, -1_000_000_007, 10**18, "d" * 64)
    line = f"2049:12:33188:5:-1000000007:{10**18}:{'d' * 64}:dir/a:b.txt"
    assert entry.to_json() == line
    back = state.Judged.from_json(line)
    assert back == entry and type(back) is state.Judged and back.ctime_ns == 10**18
    removal = state.Removal("/w", (entry, state.Judged("c", 1, 2, 3, 4, 5, 6)))
    assert state.Removal.from_json(removal.to_json()) == removal
    with pytest.raises(ValueError, match="is not a journaled file"):
        state.Judged.from_json("2049:12:33188:5:x:6::a.txt")


def test_a_last_run_written_before_reasons_were_kept_reads_with_its_words_alone(tmp_path):
    gone = {"name": "branch", "outcome": "skipped", "detail": f"{ID} is already gone"}
    record = _with_last_run(tmp_path, [gone])
    assert record.last_run.steps == (state.RanStep("branch", "skipped", f"{ID} is already gone"),)
    assert record.last_run.steps[0].why is None


def test_a_reason_this_version_does_not_know_keeps_the_record_readable(tmp_path):
    # A newer version's reason (or payload field): the words still say what happened.
    newer = {"reason": "a-newer-reason", "path": "/w"}
    odd = {"reason": "gone", "path": "/w", "mood": "fine"}
    steps = [
        {"name": "remove", "outcome": "done", "detail": "removed /w", "why": newer},
        {"name": "verify-gone", "outcome": "done", "detail": "/w is gone", "why": odd},
    ]
    record = _with_last_run(tmp_path, steps)
    assert [(s.detail, s.why) for s in record.last_run.steps] == [
        ("removed /w", None),
        ("/w is gone", None),
    ]


def test_a_teardown_keeps_each_steps_reason_and_payload_in_the_record(home_repo):
    res = run_cli("new", "Add thing", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    done = run_cli("teardown", ID, "--json", cwd=home_repo)
    assert done.code == 0, done.out + done.err
    printed = done.json["repos"][0]["steps"]
    kept = state.read_record(_common(home_repo), ID).last_run.steps
    assert [(s.name, s.outcome, s.detail) for s in kept] == [
        (s["name"], s["outcome"], s["detail"]) for s in printed
    ]
    # The typed value a later run reads says what the run printed: its reason, and its words.
    for step, ran in zip(printed, kept, strict=True):
        if "reason" in step:
            assert ran.why is not None and str(ran.why.reason) == step["reason"]
            assert in_words(ran.why) == ran.detail
        else:
            assert ran.why is None
    assert [s["reason"] for s in printed if "reason" in s][:3] == ["empty", "removed", "deleted"]


BAD_RECORDS = [
    b"{not json",
    b"[1, 2]",
    b'{"id": 3, "unknown": }',
    b"\xff\xfe binary",
    b'{"id": "2026-05-01-add-thing"}',
    b'{"id": "2026-05-01-add-thing", "repo": "home", "branch": 5}',
    b'{"id": "2026-05-01-add-thing", "repo": "home", "branch": "b", "steps": 7}',
    b'{"id": "2026-05-01-add-thing", "repo": "home", "branch": "b", "branch_created": "yes"}',
    b'{"id": "2026-05-01-add-thing", "repo": "home", "branch": "b", "repos": [{"name": 1}]}',
    b'{"id": "2026-05-01-other", "repo": "home", "branch": "b"}',
]


@pytest.mark.parametrize("raw", BAD_RECORDS)
def test_a_record_that_does_not_parse_raises_record_corrupt_and_stays(tmp_path, raw):
    path = state.record_path(tmp_path, ID)
    path.parent.mkdir(parents=True)
    path.write_bytes(raw)
    with pytest.raises(state.RecordCorrupt) as info:
        state.read_record(tmp_path, ID)
    assert info.value.path == path
    assert path.read_bytes() == raw


def test_a_missing_record_reads_as_none(tmp_path):
    assert state.read_record(tmp_path, ID) is None


def test_a_corrupt_record_makes_new_warn_not_crash_and_keeps_the_file(home_repo):
    path = state.record_path(_common(home_repo), ID)
    path.parent.mkdir(parents=True)
    path.write_text("{garbage", encoding="utf-8")
    res = run_cli("new", "Add thing", "--id", ID, "--json", cwd=home_repo)
    assert res.code == 0, res.err + res.out
    data = res.json
    assert any(str(path) in w and "not trusted" in w for w in data["warnings"])
    assert "Traceback" not in res.err
    # Never deleted: the fresh record sets the bytes aside, exactly as they were.
    kept = state.corrupt_records(_common(home_repo))
    assert [p.read_text(encoding="utf-8") for p in kept] == ["{garbage"]
    assert kept[0].name == f"{ID}.json.corrupt-1"
    assert state.read_record(_common(home_repo), ID).worktree == data["home"]["worktree"]
    assert str(home_repo / ".claude/worktrees" / ID) in worktree_paths(home_repo)


def test_write_record_sets_a_corrupt_predecessor_aside_under_a_new_name_each_time(tmp_path):
    path = state.record_path(tmp_path, ID)
    record = state.TopicRecord(id=ID, repo="home", branch=ID)
    path.parent.mkdir(parents=True)
    for n, junk in enumerate(["{one", "[two]"], start=1):
        path.write_text(junk, encoding="utf-8")
        assert state.write_record(tmp_path, record) == path.with_name(f"{ID}.json.corrupt-{n}")
    assert [p.read_text() for p in state.corrupt_records(tmp_path)] == ["{one", "[two]"]
    assert state.write_record(tmp_path, record) is None  # a valid predecessor is simply replaced


def test_a_corrupt_record_makes_new_without_id_choose_a_fresh_id(home_repo):
    path = state.record_path(_common(home_repo), ID)
    path.parent.mkdir(parents=True)
    path.write_text("{garbage", encoding="utf-8")
    res = run_cli("new", "Add thing", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    assert res.json["id"] == f"{ID}-2"  # an unreadable record is never reused blindly
    assert path.read_text(encoding="utf-8") == "{garbage"


def test_a_set_aside_record_is_reported_by_doctor_and_kept_by_repair(home_repo):
    path = state.record_path(_common(home_repo), ID)
    path.parent.mkdir(parents=True)
    path.write_text("{garbage", encoding="utf-8")
    assert run_cli("new", "x", "--id", ID, cwd=home_repo).code == 0
    res = run_cli("doctor", "--repair", "--json", cwd=home_repo)
    kept = path.with_name(f"{ID}.json.corrupt-1")
    found = [f for f in res.json["findings"] if f["kind"] == "record-corrupt"]
    assert [(f["path"], f["repaired"], f["topic"]) for f in found] == [(str(kept), False, ID)]
    assert kept.read_text(encoding="utf-8") == "{garbage"


def test_a_corrupt_record_is_reported_by_doctor_and_kept_by_repair(home_repo):
    path = state.record_path(_common(home_repo), ID)
    path.parent.mkdir(parents=True)
    path.write_text("{garbage", encoding="utf-8")
    res = run_cli("doctor", "--repair", "--json", cwd=home_repo)
    assert res.code == 0, res.err
    found = [f for f in res.json["findings"] if f["kind"] == "record-corrupt"]
    assert found == [
        {
            "kind": "record-corrupt",
            "path": str(path),
            "repaired": False,
            "detail": found[0]["detail"],
            "repo": str(home_repo),
            "topic": ID,
        }
    ]
    assert path.read_text(encoding="utf-8") == "{garbage"


def test_records_survive_the_worktree_that_wrote_them(home_repo):
    res = run_cli("new", "Add thing", "--date", "2026-05-01", "--json", cwd=home_repo)
    assert res.code == 0
    worktree = home_repo / ".claude/worktrees" / ID
    # From inside the worktree the same record is found through the common dir.
    inside = state.read_record(_common(home_repo), ID)
    assert json.loads(state.record_path(_common(home_repo), ID).read_text())["id"] == ID
    assert inside.worktree == str(worktree)


DEEP_RECORD = "[" * 100_000 + "]" * 100_000  # json recurses once per level


@pytest.mark.parametrize(
    "command",
    [("status",), ("doctor",), ("new", "Add thing", "--id", ID), ("teardown", ID)],
    ids=["status", "doctor", "new", "teardown"],
)
def test_a_deeply_nested_record_is_reported_as_corrupt_not_a_traceback(home_repo, command):
    assert run_cli("new", "Add thing", "--id", ID, "--json", cwd=home_repo).code == 0
    path = state.record_path(_common(home_repo), ID)
    path.write_text(DEEP_RECORD, encoding="utf-8")
    res = run_cli(*command, "--json", cwd=home_repo)
    assert "Traceback" not in res.err and "RecursionError" not in res.err + res.out
    data = res.json
    named = [*data["warnings"], *(f["path"] for f in data.get("findings", []))]
    if not data["ok"]:
        named.append(data["error"]["message"])
    assert any(str(path) in line for line in named), data
    # Reported, never deleted: the bytes stay (or are set aside whole by a fresh record).
    kept = [path, *state.corrupt_records(_common(home_repo))]
    assert DEEP_RECORD in [p.read_text(encoding="utf-8") for p in kept if p.exists()]
    if command[0] != "teardown":  # teardown may remove the worktree: it holds no work
        assert str(home_repo / ".claude/worktrees" / ID) in worktree_paths(home_repo)


def test_read_record_turns_a_too_deep_record_into_record_corrupt(tmp_path):
    path = state.record_path(tmp_path, ID)
    path.parent.mkdir(parents=True)
    path.write_text(DEEP_RECORD, encoding="utf-8")
    with pytest.raises(state.RecordCorrupt, match="nested too deeply"):
        state.read_record(tmp_path, ID)
    assert state.write_record(tmp_path, state.TopicRecord(id=ID, repo="home", branch=ID))
    assert [p.read_text() for p in state.corrupt_records(tmp_path)] == [DEEP_RECORD]


# -- schema 1 (the untyped ``extra`` object) is read and upgraded ---------------------

OLD_RECORD = {
    "id": ID,
    "repo": "home",
    "branch": ID,
    "worktree": "/w",
    "base_commit": "abc",
    "branch_created": True,
    "description": "d",
    "plan_dir": "/p",
    "steps": ["inspect", "base", "claim", "add", "verify", "setup", "record"],
    "repos": [{"name": "api", "path": "/api", "worktree": "/api/w"}],
    "extra": {
        "included": [".env", 3],
        "temp_paths": ["/tmp/x"],
        "teardown": {"done": ["integrate"], "complete": False},
        "restored": {"snapshot": "a" * 40, "branch": f"{ID}-restored", "worktree": "/w2"},
        "integrating": {"branch": ID, "target": "main", "tip": "b" * 40, "commits": ["c" * 40]},
        "removing": {"path": "/w", "at": 1.5},
        "pr_cleanup": {"mode": "merged"},
        "host_removal": {"worktree": "/w", "outcome": "kept", "detail": "holds work"},
    },
}


def test_a_schema_1_record_with_extra_reads_as_named_fields(tmp_path):
    path = state.record_path(tmp_path, ID)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(OLD_RECORD), encoding="utf-8")
    record = state.read_record(tmp_path, ID)
    assert record == state.TopicRecord(
        id=ID,
        repo="home",
        branch=ID,
        worktree="/w",
        base_commit="abc",
        branch_created=True,
        description="d",
        plan_dir="/p",
        steps=tuple(OLD_RECORD["steps"]),
        repos=(state.RepoEntry("api", "/api", "/api/w"),),
        included=(".env",),  # schema 1 ignored a non-string entry; so does the upgrade
        temp_paths=("/tmp/x",),
        teardown=state.TeardownMark(("integrate",), False),
        restored=state.Restored("a" * 40, f"{ID}-restored", "/w2"),
        integrating=state.Picking(ID, "main", "b" * 40, ("c" * 40,)),
        # An earlier version's mark journaled no files: all left there is kept.
        removing=state.Removal("/w"),
        pr_cleanup_mode="merged",
        host_removal=state.HostRemoval("/w", "kept", "holds work"),
        schema=state.SCHEMA,
    )


def test_the_first_update_writes_an_old_record_back_in_the_new_schema(tmp_path):
    path = state.record_path(tmp_path, ID)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(OLD_RECORD), encoding="utf-8")
    # A step is a mark of an operation under way: written as the journal writes it.
    state.update_record(tmp_path, ID, lambda r: r.with_step("extra-step"), journal=True)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert "extra" not in data and data["schema"] == state.SCHEMA
    assert data["teardown"] == {"done": ["integrate"], "complete": False, "left": []}
    assert data["included"] == [".env"] and data["temp_paths"] == ["/tmp/x"]
    assert data["steps"][-1] == "extra-step"
    assert state.corrupt_records(tmp_path) == []


def test_an_old_record_with_malformed_marks_keeps_what_it_can(tmp_path):
    # Schema 1 readers ignored a mark of the wrong shape: the upgrade drops it, not the record.
    old = {**OLD_RECORD, "extra": {"teardown": "yes", "integrating": {"tip": "x"}, "removing": 4}}
    path = state.record_path(tmp_path, ID)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old), encoding="utf-8")
    record = state.read_record(tmp_path, ID)
    assert record is not None and record.branch == ID
    assert (record.teardown, record.integrating, record.removing) == (None, None, None)


def test_a_removal_mark_of_the_earlier_version_reads_as_one_that_journaled_no_files(tmp_path):
    # It held a time that file times were compared with; nothing is decided by it now.
    data = {"id": ID, "repo": "home", "branch": ID, "schema": 2}
    data["removing"] = {"path": "/w", "at": 1.5}
    path = state.record_path(tmp_path, ID)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    record = state.read_record(tmp_path, ID)
    assert record is not None and record.removing == state.Removal("/w", ())


NEW_BAD = [
    {"schema": 2, "teardown": {"done": "integrate"}},
    {"schema": 2, "integrating": {"branch": ID, "target": "main", "tip": "no", "commits": []}},
    {"schema": 2, "restored": {"snapshot": 1, "branch": "b", "worktree": "/w"}},
    {"schema": 2, "included": ".env"},
    {"schema": 2, "host_removal": {"worktree": "/w", "outcome": 3}},
    {"schema": 2, "removing": {"files": []}},
    {"schema": 2, "removing": {"path": "/w", "files": ["1:2:3:x:5:6::a.txt"]}},
    {"schema": 2, "removing": {"path": "/w", "files": "a.txt"}},
    {"schema": 99},
    {"extra": []},
]


@pytest.mark.parametrize("fields", NEW_BAD)
def test_a_record_whose_typed_fields_have_the_wrong_shape_is_corrupt(tmp_path, fields):
    path = state.record_path(tmp_path, ID)
    path.parent.mkdir(parents=True)
    raw = json.dumps({"id": ID, "repo": "home", "branch": ID, **fields})
    path.write_text(raw, encoding="utf-8")
    with pytest.raises(state.RecordCorrupt):
        state.read_record(tmp_path, ID)
    assert path.read_text(encoding="utf-8") == raw


def test_update_record_leaves_a_corrupt_record_alone_unless_told_to_replace_it(tmp_path):
    path = state.record_path(tmp_path, ID)
    path.parent.mkdir(parents=True)
    path.write_text("{junk", encoding="utf-8")
    fresh = state.TopicRecord(id=ID, repo="home", branch=ID)
    assert state.update_record(tmp_path, ID, lambda r: r, new=lambda: fresh) is None
    assert path.read_text(encoding="utf-8") == "{junk"
    written = state.update_record(
        tmp_path, ID, lambda r: r, new=lambda: fresh, replace_corrupt=True
    )
    assert written == fresh and state.read_record(tmp_path, ID) == fresh
    assert [p.read_text() for p in state.corrupt_records(tmp_path)] == ["{junk"]


def test_update_record_leaves_the_file_alone_when_the_change_changes_nothing(tmp_path):
    record = state.TopicRecord(ID, "home", ID, steps=("inspect", "claim"))
    state.write_record(tmp_path, record)
    path = state.record_path(tmp_path, ID)
    written = os.stat(path).st_ino
    # Steps are marks of an operation under way: written as the journal writes them.
    same = state.update_record(tmp_path, ID, lambda r: r.with_step("claim"), journal=True)
    assert same == record
    assert os.stat(path).st_ino == written  # not replaced: no write, no fsync
    changed = state.update_record(tmp_path, ID, lambda r: r.with_step("add"), journal=True)
    assert changed is not None and changed.steps == ("inspect", "claim", "add")
    assert os.stat(path).st_ino != written
    assert state.read_record(tmp_path, ID) == changed


def test_update_record_writes_nothing_for_an_absent_record_without_new(tmp_path):
    assert state.update_record(tmp_path, ID, lambda r: r.with_step("x")) is None
    assert state.list_records(tmp_path) == []


def test_concurrent_updates_lose_no_change(tmp_path):
    import threading

    state.write_record(tmp_path, state.TopicRecord(id=ID, repo="home", branch=ID))
    names = [f"s{n}" for n in range(20)]
    threads = [
        threading.Thread(
            target=state.update_record,
            args=(tmp_path, ID, lambda r, n=n: r.with_step(n)),
            kwargs={"journal": True},  # steps are marks: written as the journal writes them
        )
        for n in names
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(state.read_record(tmp_path, ID).steps) == sorted(names)


def test_merging_done_steps_keeps_the_earlier_ones_in_step_order():
    mark = state.TeardownMark(("remove",), False)
    merged = mark.with_done(["integrate", "remove", "odd"], ("integrate", "remove"), complete=True)
    assert merged == state.TeardownMark(("integrate", "remove", "odd"), True)
