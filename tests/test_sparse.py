"""The ``sparse`` stage of creation (DESIGN §7): a worktree with a real cone, on real git."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.faults import CRASHED, KILLED, git_killer
from helpers.faults import run as run_process
from helpers.origin import declare
from helpers.repos import branches, git, make_repo, run_cli, status, worktree_paths, write

from router.names import BadSparseDir, sparse_dirs
from router.plandir.reposmd import parse_repos_md
from router.topic import state

ID = "2026-05-01-add-thing"
NEW = ("new", "Add thing", "--date", "2026-05-01")
# The repo's files: a cone of src/api holds these two and the top level's README.md.
IN_CONE = ["README.md", "src/api/main.py", "src/api/util/helpers.py"]
OUT_OF_CONE = ["docs/guide.md", "src/web/app.js", "tools/build.sh"]


def _with_tree(repo: Path) -> Path:
    """``repo`` with files in several directories, pushed to its origin."""
    declare(
        repo, {rel: f"{rel}\n" for rel in [*IN_CONE, *OUT_OF_CONE] if rel != "README.md"}, "a tree"
    )
    return repo


@pytest.fixture
def tree_repo(workspace: Path) -> Path:
    return _with_tree(make_repo(workspace, "web"))


def _files(worktree: Path) -> list[str]:
    """Every file in the checkout but git's and the plan dir's (which the router makes)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(worktree):
        rel = Path(dirpath).relative_to(worktree).as_posix()
        dirnames[:] = [d for d in dirnames if d != ".git" and f"{rel}/{d}" != "./docs/plans"]
        found += [Path(dirpath, f).relative_to(worktree).as_posix() for f in filenames]
    return sorted(f for f in found if f != ".git")


def _assert_sparse_worktree(repo: Path, worktree: Path, cone: list[str]) -> None:
    assert _files(worktree) == IN_CONE  # only the cone and the top level are written
    assert git(worktree, "sparse-checkout", "list").splitlines() == cone
    assert git(worktree, "config", "--bool", "core.sparseCheckoutCone") == "true"
    assert status(worktree) == ""  # the files never written are not "deleted"
    assert git(worktree, "ls-files").splitlines() == sorted([*IN_CONE, *OUT_OF_CONE])
    assert status(repo) == ""


# -- the cone's directories, as written -----------------------------------------------


def test_sparse_dirs_are_comma_separated_repeatable_and_normalised():
    assert sparse_dirs(["src/api, ./tools/", "`docs`", "src/api"]) == ("src/api", "tools", "docs")
    assert sparse_dirs([" , "]) == ()


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("/abs/src", "is an absolute path; write it relative to the repo root ('abs/src')"),
        ("src/../../etc", "goes through '..'"),
        (".", "is the repo root, which is the whole tree: leave sparse out instead"),
        (".git/hooks", "is git's own directory"),
        ("a\\b", "is not a directory name"),
    ],
)
def test_a_directory_no_cone_can_hold_is_refused_naming_the_fix(value, says):
    with pytest.raises(BadSparseDir, match=says.replace("(", r"\(").replace(")", r"\)")):
        sparse_dirs([value])


def test_repos_md_reads_sparse_per_repo_and_names_the_line_of_a_bad_one(tmp_path):
    text = (
        "# Repos\n\n## Home repo\n- **name:** web\n- **path:** /w/web\n- **sparse:** src/api\n\n"
        "## Additional repos\n- **name:** api\n  **path:** /w/api\n"
        "- **name:** types\n  **path:** /w/types\n  **sparse:** packages/types, tools/codegen\n"
    )
    parsed = parse_repos_md(text)
    assert parsed.home.sparse == ("src/api",)
    assert [(s.name, s.sparse) for s in parsed.secondaries] == [
        ("api", None),
        ("types", ("packages/types", "tools/codegen")),
    ]
    from router.errors import RouterError

    with pytest.raises(RouterError) as bad:
        parse_repos_md(text.replace("tools/codegen", "../codegen"))
    assert bad.value.code == "repos-md"
    assert bad.value.message.startswith("repos.md line 13: **sparse:** of 'types': '../codegen'")


# -- new --sparse ---------------------------------------------------------------------


def test_new_sparse_checks_out_only_the_cone_and_reports_it(tree_repo):
    res = run_cli(*NEW, "--sparse", "src/api", "--json", cwd=tree_repo)
    assert res.code == 0, res.out + res.err
    worktree = tree_repo / ".claude/worktrees" / ID
    assert res.json["home"]["status"] == "created"
    assert res.json["home"]["sparse"] == ["src/api"]
    _assert_sparse_worktree(tree_repo, worktree, ["src/api"])
    record = state.read_record(tree_repo / ".git", ID)
    assert record.sparse == ("src/api",)
    assert "sparse" in record.steps
    # The text report says so, and a rerun reports the same cone for the existing worktree.
    again = run_cli(*NEW, "--sparse", "src/api", cwd=tree_repo)
    assert again.code == 0, again.err
    assert again.out == (
        f"Topic {ID} (branch {ID})\n"
        f"home: existing {worktree} from {record.base_commit[:12]}\n"
        "  sparse: src/api (only these directories checked out)\n"
        f"Artifact directory: {worktree}/docs/plans/{ID}\n"
    )


def test_new_without_sparse_reports_null(tree_repo):
    res = run_cli(*NEW, "--json", cwd=tree_repo)
    assert res.code == 0, res.err
    assert res.json["home"]["sparse"] is None
    assert _files(tree_repo / ".claude/worktrees" / ID) == sorted([*IN_CONE, *OUT_OF_CONE])


def test_sparse_is_repeatable_and_comma_separated(tree_repo):
    res = run_cli(*NEW, "--sparse", "src/api,docs", "--sparse", "tools", "--json", cwd=tree_repo)
    assert res.code == 0, res.err
    assert res.json["home"]["sparse"] == ["src/api", "docs", "tools"]
    worktree = tree_repo / ".claude/worktrees" / ID
    assert _files(worktree) == sorted([*IN_CONE, "docs/guide.md", "tools/build.sh"])
    assert status(worktree) == ""


@pytest.mark.parametrize(
    ("value", "code", "says"),
    [
        ("/src/api", "usage", "--sparse: '/src/api' is an absolute path"),
        ("../web", "usage", "--sparse: '../web' goes through '..'"),
        (
            "src/nope, tools",
            "invalid-value",
            "home: sparse names src/nope, which the base (",
        ),
    ],
)
def test_bad_sparse_refuses_with_the_fix_and_creates_nothing(tree_repo, value, code, says):
    res = run_cli(*NEW, "--sparse", value, "--json", cwd=tree_repo)
    assert res.code == 2, res.out
    assert res.json["error"]["code"] == code
    assert res.json["error"]["message"].startswith(says)
    assert worktree_paths(tree_repo) == [str(tree_repo)]
    assert branches(tree_repo) == ["main"]
    assert not (tree_repo / ".claude/worktrees" / ID).exists()
    assert status(tree_repo) == ""


# -- repos.md sparse: -------------------------------------------------------------------


def test_worktrees_makes_a_secondary_sparse_from_repos_md(workspace, tree_repo):
    api = _with_tree(make_repo(workspace, "api"))
    made = run_cli(*NEW, "--json", cwd=tree_repo)
    plan = Path(made.json["plan_dir"])
    write(
        plan / "repos.md",
        f"# Repos\n\n## Home repo\n- **name:** web\n- **path:** {tree_repo}\n\n"
        f"## Additional repos\n- **name:** api\n  **path:** {api}\n  **sparse:** src/api\n",
    )
    res = run_cli("worktrees", ID, "--json", cwd=tree_repo)
    assert res.code == 0, res.out + res.err
    by_name = {r["name"]: r for r in res.json["repos"]}
    assert by_name["home"]["sparse"] is None and by_name["home"]["status"] == "existing"
    assert by_name["api"]["sparse"] == ["src/api"] and by_name["api"]["status"] == "created"
    _assert_sparse_worktree(api, api / ".claude/worktrees" / ID, ["src/api"])
    text = run_cli("worktrees", ID, cwd=tree_repo)
    assert (text.code, text.err) == (0, "")
    assert text.out == (
        f"Topic {ID} (multi-repo)\n"
        f"  home  existing  {tree_repo}/.claude/worktrees/{ID}\n"
        f"  api   existing  {api}/.claude/worktrees/{ID}  (sparse: src/api)\n"
        "repos.md ## Worktrees unchanged\n"
    )


# -- killed between the stages: the rerun finishes ------------------------------------------


def _rerun_finishes(repo: Path) -> None:
    again = run_process(*NEW, "--sparse", "src/api", "--json", cwd=repo)
    assert again.code == 0, again.err
    assert again.json["id"] == ID
    assert again.json["home"]["sparse"] == ["src/api"]
    worktree = repo / ".claude/worktrees" / ID
    assert worktree_paths(repo) == [str(repo), str(worktree)]
    _assert_sparse_worktree(repo, worktree, ["src/api"])
    record = state.read_record(repo / ".git", ID)
    assert {"add", "sparse", "verify", "record"} <= set(record.steps)
    assert run_cli("doctor", "--json", cwd=repo).json["findings"] == []


def test_new_sparse_killed_at_the_seam_before_the_cone_is_finished_by_the_rerun(tree_repo):
    crashed = run_process(*NEW, "--sparse", "src/api", cwd=tree_repo, crash_at="sparse")
    assert crashed.code == CRASHED, crashed.err
    worktree = tree_repo / ".claude/worktrees" / ID
    assert os.listdir(worktree) == [".git"]  # added with --no-checkout, nothing written yet
    _rerun_finishes(tree_repo)


@pytest.mark.parametrize(
    ("when", "then", "real"),
    [
        ("worktree add", "", True),  # --no-checkout done, no cone yet
        ("sparse-checkout set", "", True),  # the cone set, nothing checked out
        # The checkout cut short: one file of the cone written, no index.
        # (git runs as `git -C <worktree> ...`: $2 is the worktree.)
        (
            "checkout --quiet",
            'mkdir -p "$2/src/api" && echo src/api/main.py > "$2/src/api/main.py"',
            False,
        ),
        ("checkout --quiet", "", True),  # checked out, the step not yet recorded
    ],
)
def test_new_sparse_sigkilled_between_the_stages_is_finished_by_the_rerun(
    tree_repo, tmp_path, when, then, real
):
    env = git_killer(tmp_path / "bin", when, then, real=real)
    killed = run_process(*NEW, "--sparse", "src/api", cwd=tree_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    if then:  # what the cut-short checkout wrote is there, with no index beside it
        assert (tree_repo / ".claude/worktrees" / ID / "src/api/main.py").is_file()
    _rerun_finishes(tree_repo)


# -- status, teardown, snapshots: the files never written count as present ----------------


def _sparse_topic(repo: Path) -> Path:
    res = run_cli(*NEW, "--sparse", "src/api", "--json", cwd=repo)
    assert res.code == 0, res.out + res.err
    return Path(res.json["home"]["worktree"])


def test_status_shows_a_clean_sparse_worktree_as_clean_and_an_edit_as_dirty(tree_repo):
    worktree = _sparse_topic(tree_repo)
    res = run_cli("status", "--json", cwd=tree_repo)
    assert res.code == 0, res.err
    [topic] = res.json["topics"]
    [repo] = topic["repos"]
    assert (repo["worktree"], repo["dirty"]) == (str(worktree), False)
    write(worktree / "src/api/main.py", "edited\n")
    [repo] = run_cli("status", "--json", cwd=tree_repo).json["topics"][0]["repos"]
    assert repo["dirty"] is True


def test_teardown_removes_a_clean_sparse_worktree_without_calling_it_dirty(tree_repo):
    worktree = _sparse_topic(tree_repo)
    res = run_cli("teardown", ID, "--json", cwd=tree_repo)
    assert res.code == 0, res.out
    steps = {s["name"]: s for s in res.json["repos"][0]["steps"]}
    assert steps["remove"]["outcome"] == "done", steps["remove"]
    assert not worktree.exists()
    assert git(tree_repo, "for-each-ref", "refs/team-router/snapshots/") == ""  # none needed
    assert worktree_paths(tree_repo) == [str(tree_repo)]


def test_a_dirty_sparse_worktree_is_refused_and_kept_whole(tree_repo):
    worktree = _sparse_topic(tree_repo)
    write(worktree / "src/api/main.py", "edited\n")
    res = run_cli("teardown", ID, "--json", cwd=tree_repo)
    assert res.code == 1, res.out
    assert res.json["error"]["code"] == "dirty-worktree"
    assert (worktree / "src/api/main.py").read_text() == "edited\n"
    assert _files(worktree) == IN_CONE
    assert status(worktree) == "M src/api/main.py"


def test_a_snapshot_of_a_sparse_worktree_never_records_the_unwritten_files_as_deleted(
    tree_repo,
):
    worktree = _sparse_topic(tree_repo)
    _work_in_and_out_of_the_cone(worktree)
    res = run_cli("teardown", ID, "--force", "--json", cwd=tree_repo)
    assert res.code == 0, res.out
    assert not worktree.exists()
    ref = f"refs/team-router/snapshots/{ID}"
    changes = git(tree_repo, "diff", "--name-status", f"{ref}^1", ref).splitlines()
    assert changes == WORK_CHANGES
    assert git(tree_repo, "show", f"{ref}:tools/build.sh") == "tools/build.sh"  # never written
    assert git(tree_repo, "show", f"{ref}:src/web/app.js") == "edited outside the cone"
    assert git(tree_repo, "show", f"{ref}:tools/new.sh") == "untracked outside the cone"


# What _work_in_and_out_of_the_cone changes, as `git diff --name-status` names it.
WORK_CHANGES = [
    "D\tREADME.md",
    "M\tsrc/api/main.py",
    "A\tsrc/api/new.py",
    "M\tsrc/web/app.js",
    "A\ttools/new.sh",
]


def _work_in_and_out_of_the_cone(worktree: Path) -> None:
    """An edit, a new file and a deletion in the cone; an edit and a new file outside it.

    A file outside the cone is written where its directory was never checked
    out, as an agent writing it would: it is work like any other.
    """
    write(worktree / "src/api/main.py", "edited\n")
    write(worktree / "src/api/new.py", "untracked\n")
    (worktree / "README.md").unlink()
    write(worktree / "src/web/app.js", "edited outside the cone\n")
    write(worktree / "tools/new.sh", "untracked outside the cone\n")
    assert sorted(line.strip() for line in status(worktree).splitlines()) == [
        "?? src/api/new.py",
        "?? tools/new.sh",
        "D README.md",
        "M src/api/main.py",
        "M src/web/app.js",
    ]


def test_restore_brings_a_sparse_worktree_back_with_the_same_cone_and_all_its_work(tree_repo):
    worktree = _sparse_topic(tree_repo)
    _work_in_and_out_of_the_cone(worktree)
    git(worktree, "add", "--", "src/api/main.py")  # staged, then edited again
    write(worktree / "src/api/main.py", "edited twice\n")
    assert run_cli("teardown", ID, "--force", "--json", cwd=tree_repo).code == 0
    assert not worktree.exists()
    res = run_cli("restore", ID, "--json", cwd=tree_repo)
    assert res.code == 0, res.out
    assert res.json["repos"][0]["status"] == "restored"
    assert Path(res.json["repos"][0]["worktree"]) == worktree
    assert git(worktree, "sparse-checkout", "list").splitlines() == ["src/api"]
    assert git(worktree, "config", "--bool", "core.sparseCheckoutCone") == "true"
    # The work is back, in the cone and outside it; what was never written still is not.
    assert (worktree / "src/api/main.py").read_text() == "edited twice\n"
    assert (worktree / "src/api/new.py").read_text() == "untracked\n"
    assert (worktree / "src/web/app.js").read_text() == "edited outside the cone\n"
    assert (worktree / "tools/new.sh").read_text() == "untracked outside the cone\n"
    assert not (worktree / "README.md").exists()
    assert not (worktree / "tools/build.sh").exists() and not (worktree / "docs").exists()
    assert sorted(line.strip() for line in status(worktree).splitlines()) == sorted(
        [
            "?? src/api/new.py",
            "?? tools/new.sh",
            "D README.md",
            "MM src/api/main.py",
            "M src/web/app.js",
        ]
    )
    assert git(worktree, "show", ":src/api/main.py") == "edited"  # the staged version


def test_restore_of_a_whole_worktree_stays_whole(tree_repo):
    res = run_cli(*NEW, "--json", cwd=tree_repo)
    worktree = Path(res.json["home"]["worktree"])
    write(worktree / "src/web/app.js", "edited\n")
    assert run_cli("teardown", ID, "--force", "--json", cwd=tree_repo).code == 0
    assert run_cli("restore", ID, "--json", cwd=tree_repo).code == 0
    assert _files(worktree) == sorted([*IN_CONE, *OUT_OF_CONE])
    assert git(worktree, "config", "--bool", "core.sparseCheckout", check=False) in {"", "false"}
    assert status(worktree) == "M src/web/app.js"


def test_a_cone_asked_of_a_worktree_made_before_is_named_not_applied(tree_repo):
    made = run_cli(*NEW, "--json", cwd=tree_repo)
    worktree = Path(made.json["home"]["worktree"])
    res = run_cli(*NEW, "--sparse", "src/api", "--json", cwd=tree_repo)
    assert res.code == 0, res.err
    assert res.json["home"]["status"] == "existing"
    assert res.json["home"]["sparse"] is None
    assert res.json["warnings"] == [
        f"home: sparse src/api was asked, but its worktree {worktree} exists already and "
        "holds the whole tree; a cone is set when the worktree is made. To change it, run "
        f"`git -C {worktree} sparse-checkout set --cone src/api`"
    ]
    assert _files(worktree) == sorted([*IN_CONE, *OUT_OF_CONE])  # nothing was taken away
    same = run_cli(*NEW, "--json", cwd=tree_repo)  # no cone asked: nothing to say
    assert same.json["warnings"] == []


@pytest.mark.parametrize("when", ["worktree add", "sparse-checkout set"])
def test_a_restore_of_a_sparse_worktree_sigkilled_before_its_checkout_is_finished_by_the_rerun(
    tree_repo, tmp_path, when
):
    worktree = _sparse_topic(tree_repo)
    _work_in_and_out_of_the_cone(worktree)
    assert run_cli("teardown", ID, "--force", "--json", cwd=tree_repo).code == 0
    env = git_killer(tmp_path / "bin", when)
    killed = run_process("restore", ID, "--json", cwd=tree_repo, env=env, new_group=True)
    assert killed.code == KILLED, killed.err
    assert os.listdir(worktree) == [".git"]  # added with --no-checkout, nothing written yet
    again = run_process("restore", ID, "--json", cwd=tree_repo)
    assert again.code == 0, again.out + again.err
    assert again.json["repos"][0]["status"] == "restored"
    assert git(worktree, "sparse-checkout", "list").splitlines() == ["src/api"]
    assert (worktree / "src/web/app.js").read_text() == "edited outside the cone\n"
    assert not (worktree / "tools/build.sh").exists()
    assert sorted(line.strip() for line in status(worktree).splitlines()) == sorted(
        [
            "?? src/api/new.py",
            "?? tools/new.sh",
            "D README.md",
            "M src/api/main.py",
            "M src/web/app.js",
        ]
    )
    assert worktree_paths(tree_repo) == [str(tree_repo), str(worktree)]
