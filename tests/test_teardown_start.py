"""How a teardown starts: each repo's slowest git under way before the plan's modules load.

The fetches from origin and the worktrees' statuses run while the rest of the
command loads, and the plan takes each one over as its own: still one fetch and
one status per repo, and the same teardown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers.faults import git_logger, git_verbs
from helpers.topics import multi_topic, ship

# Prints, as each fetch or status starts, whether the plan's modules are loaded yet, and at
# the end every module the command loaded.
_WATCHED_TEARDOWN = """
import sys
from router.git.remote import RemoteMethods
from router.git.status import StatusMethods

def watched(method, what):
    def started(self, *args, **kwargs):
        loaded = "router.teardown.facts" in sys.modules
        print("STARTED", what, self.cwd, loaded, file=sys.stderr)
        return method(self, *args, **kwargs)
    return started

RemoteMethods.start_fetch = watched(RemoteMethods.start_fetch, "fetch")
StatusMethods.status_started = watched(StatusMethods.status_started, "status")
from router.entry import main
code = main(["teardown", sys.argv[1], "--json"])
print("MODULES", *sorted(sys.modules), file=sys.stderr)
raise SystemExit(code)
"""


def test_teardown_starts_every_fetch_and_worktree_status_before_it_loads_the_plan(
    workspace, tmp_path
):
    topic = ship(multi_topic(workspace, ("api", "types")))
    log = tmp_path / "git.log"
    proc = subprocess.run(
        [sys.executable, "-c", _WATCHED_TEARDOWN, topic.id],
        cwd=topic.home,
        env={**os.environ, **git_logger(tmp_path / "bin", log)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    started = sorted(
        tuple(line.split()[1:]) for line in proc.stderr.splitlines() if line.startswith("STARTED")
    )
    # One fetch in each primary clone, one status in each worktree, all before the plan loads.
    primaries = [str(p) for p in topic.repos.values()]
    worktrees = [str(p) for p in topic.worktrees.values()]
    assert started == sorted(
        [("fetch", p, "False") for p in primaries] + [("status", w, "False") for w in worktrees]
    )
    data = json.loads(proc.stdout)
    assert data["ok"] is True
    for name in ("home", "api", "types"):
        steps = {s["name"]: s for s in next(r for r in data["repos"] if r["name"] == name)["steps"]}
        assert steps["remove"]["outcome"] == "done"
        assert not topic.worktrees[name].exists()
    # The plan took each one over: no second fetch (nor a second config read) anywhere.
    verbs = git_verbs(log)
    assert (verbs["fetch"], verbs["config"]) == (3, 3)
    # gh's module (subprocess, typing) is loaded only for a gh reason's words.
    modules = next(line for line in proc.stderr.splitlines() if line.startswith("MODULES "))
    assert "router.github" not in modules.split()
