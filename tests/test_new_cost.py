"""What ``new`` costs when a stage has nothing to do: no git process, no module it does not use.

Every ``new`` pays its start-up and its stages before the user's session can
begin; a stage with nothing to do (no ``.worktreeinclude``, no
``.worktreesetup``, no submodules, no sparse cone) must cost nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.faults import git_logger, git_verbs, run
from helpers.repos import make_repo
from helpers.topics import new_topic, write_repos_md

# Modules `new` has no use for when nothing asks for them: repos.md (the `worktrees`
# command's), the permission rule and host settings (`worktrees`, `init`), the
# removal journal (a fallen-back plan dir's move), mounts (a path already
# registered), the submodules and sparse stages (no .gitmodules, no cone), the
# reasons a half-made worktree or a teardown's step is refused for, discovery and the
# plan files' readers (a topic `new` did not make), the progress and threads of several
# repos at once (`worktrees`), and what those pull in; and the URL parser pathlib imports
# for Path.as_uri alone (router/__init__.py).
NEW_UNUSED = {
    "threading",
    "router.reasons",
    "router.topic.discovery",
    "router.topic.containment",
    "router.plandir.artifacts",
    "router.plandir.flatfields",
    "router.progress",
    "router.plandir.reposmd",
    "router.plandir.outline",
    "router.plandir.frontmatter",
    "router.create.permission",
    "router.create.hostsettings",
    "router.topic.removal",
    "router.mounts",
    "router.create.setuprun",
    "router.create.submodules",
    "router.git.submodules",
    "router.create.sparse",
    "hashlib",
    "shutil",
    "urllib.parse",
    "ipaddress",
}


def test_new_with_nothing_to_do_in_any_stage_runs_only_the_fetch_and_the_worktree_add(
    home_repo, tmp_path
):
    log = tmp_path / "git.log"
    res = run("new", "Add thing", "--json", cwd=home_repo, env=git_logger(tmp_path / "bin", log))
    assert res.code == 0, res.err
    home = json.loads(res.out)["home"]
    assert (home["status"], home["submodules"], home["copied"], home["sparse"]) == (
        "created",
        [],
        None,
        None,
    )
    assert home["setup"]["status"] == "none"
    assert git_verbs(log) == {"fetch": 1, "worktree": 1}


def _imported_by_new(cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    code = (
        "import sys\nfrom router.entry import main\n"
        "code = main(['new', 'Add thing', '--json'])\n"
        "print('MODULES', *sorted(sys.modules), file=sys.stderr)\nraise SystemExit(code)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    line = proc.stderr.splitlines()[-1] if proc.stderr else ""
    return proc, set(line.split()[1:]) if line.startswith("MODULES ") else set()


def test_pathlib_loaded_through_router_has_no_url_parser_until_a_path_asks_for_a_uri():
    # pathlib imports urllib.parse (and ipaddress) for Path.as_uri alone: loaded through
    # router, neither is imported until as_uri is called, and then the real one is.
    code = (
        "import sys, router\nfrom pathlib import Path\n"
        "print(sorted({'urllib.parse', 'ipaddress'} & set(sys.modules)))\n"
        "print(Path('/a b/c').as_uri())\n"
        "import urllib.parse\n"
        "print(urllib.parse.urlsplit('https://x/y?z').query, 'ipaddress' in sys.modules)\n"
        "print(router._PathlibFinder in sys.meta_path)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "file:///a%20b/c", "z True", "False"]


def test_a_pathlib_that_takes_other_names_from_the_url_parser_still_loads(tmp_path):
    # Another Python's pathlib may import more of urllib.parse when it loads: the
    # stand-in then gives the real module's names, never an ImportError at start-up.
    (tmp_path / "pathlib.py").write_text(
        "from urllib.parse import quote_from_bytes, unquote\nSPACE = unquote('%20')\n"
    )
    code = "import router, pathlib\nprint(repr(pathlib.SPACE), pathlib.quote_from_bytes(b'a b'))"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "' ' a%20b\n"


def test_new_imports_none_of_what_only_other_commands_and_stages_use(home_repo):
    proc, imported = _imported_by_new(home_repo)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["home"]["status"] == "created"
    assert "router.create.topic" in imported  # the command ran through its own module
    assert not imported & NEW_UNUSED, sorted(imported & NEW_UNUSED)


# Modules `worktrees` has no use for when no stage of any repo asks for them: the
# status concept (the home worktree's index is a layout fact), the removal
# journal, mounts, the running side of the setup stage, the submodules and sparse
# stages, the settings editor (no repo's settings are written when the home's allow
# nothing), and what those pull in.
WORKTREES_UNUSED = {
    "router.create.hostsettings",
    "router.git.status",
    "router.topic.removal",
    "router.mounts",
    "router.create.setuprun",
    "router.create.submodules",
    "router.git.submodules",
    "router.create.sparse",
    "hashlib",
    "shutil",
}


def test_worktrees_imports_none_of_what_its_stages_with_nothing_to_do_would_use(workspace):
    home = make_repo(workspace, "web")
    topic = new_topic(home)
    write_repos_md(topic, {n: make_repo(workspace, n) for n in ("api", "db")})
    code = (
        "import sys\nfrom router.entry import main\n"
        f"code = main(['worktrees', {topic.id!r}, '--json'])\n"
        "print('MODULES', *sorted(sys.modules), file=sys.stderr)\nraise SystemExit(code)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=home, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    statuses = [r["status"] for r in json.loads(proc.stdout)["repos"]]
    assert statuses == ["existing", "created", "created"]
    line = proc.stderr.splitlines()[-1]
    assert line.startswith("MODULES ")
    imported = set(line.split()[1:])
    assert "router.create.topic" in imported  # the command ran through its own module
    assert not imported & WORKTREES_UNUSED, sorted(imported & WORKTREES_UNUSED)


def test_new_starts_its_fetch_before_it_loads_the_creation_pipeline(home_repo, tmp_path):
    # The fetch runs while the rest of the command loads: at the moment git's fetch
    # starts, the pipeline's modules are not loaded yet. It is still the one fetch,
    # taken over by the pipeline (no second one), and the worktree is cut from origin.
    log = tmp_path / "git.log"
    code = (
        "import sys\n"
        "from router.git.remote import RemoteMethods\n"
        "started = RemoteMethods.start_fetch\n"
        "def start_fetch(self, *a, **k):\n"
        "    print('PIPELINE LOADED', 'router.create.pipeline' in sys.modules, file=sys.stderr)\n"
        "    return started(self, *a, **k)\n"
        "RemoteMethods.start_fetch = start_fetch\n"
        "from router.entry import main\n"
        "raise SystemExit(main(['new', 'Add thing', '--json']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=home_repo,
        env={**os.environ, **git_logger(tmp_path / "bin", log)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [line for line in proc.stderr.splitlines() if line.startswith("PIPELINE LOADED")]
    assert said == ["PIPELINE LOADED False"]
    data = json.loads(proc.stdout)
    assert (data["home"]["status"], data["warnings"]) == ("created", [])
    origin_head = subprocess.run(
        ["git", "-C", str(home_repo), "rev-parse", "refs/remotes/origin/HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert data["home"]["base"] == origin_head
    assert git_verbs(log) == {"fetch": 1, "worktree": 1}
