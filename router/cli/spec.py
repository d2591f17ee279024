"""Every command once: its name, arguments, options (types, defaults, help) and handler.

The parser (:mod:`router.cli.parse`), ``--help`` (:mod:`router.cli.helptext`) and
the console entry point all read these declarations, so there is one reading of
an argument list for every command, the session-start hook and the commands
agents run at every phase included. A handler is named, not imported: reading
the declarations imports nothing but this module, and running a command
imports its handler's module alone (each imports its core lazily).

The records are small frozen classes rather than dataclasses: ``dataclasses``
imports ``inspect`` (~10 ms), and the hook and ``--help`` must not pay for it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

# The cores' defaults (state.DEFAULT_WAIT, declared.DEFAULT_LINE_TIMEOUT), written
# here as values: reading the declarations must import no core module (and no git
# boundary). tests/test_cli.py::test_the_clis_defaults_are_the_cores keeps them equal.
CLI_DEFAULT_WAIT = 30.0
CLI_DEFAULT_LINE_TIMEOUT = 120.0

PROG = "team-router"


class _Frozen:
    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is a declaration: it does not change")

    def _init(self, **fields: object) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)


class Arg(_Frozen):
    """A positional argument: the handler's parameter, how help and errors write it."""

    __slots__ = ("help", "metavar", "name", "required")
    name: str
    metavar: str  # "TARGET" (required) or "[TARGET]" (optional, None when absent)
    help: str
    required: bool

    def __init__(self, name: str, metavar: str, help: str) -> None:
        self._init(name=name, metavar=metavar, help=help, required=not metavar.startswith("["))


# What an option's value is read as: a flag takes none.
FLAG, TEXT, FLOAT, INT, PATH = "flag", "text", "float", "int", "path"
# A text option that may be given more than once: its value is every one, in order.
TEXTS = "texts"


class Opt(_Frozen):
    """An option: its flag, the handler's parameter, its value's kind, default and lower bound."""

    __slots__ = ("default", "flag", "help", "kind", "least", "metavar", "name")
    flag: str
    name: str
    help: str
    kind: str
    metavar: str
    default: object
    least: float | None

    def __init__(
        self,
        flag: str,
        name: str,
        help: str,
        *,
        kind: str = FLAG,
        metavar: str = "",
        default: object = None,
        least: float | None = None,
    ) -> None:
        if kind == FLAG:
            default = False
        self._init(
            flag=flag,
            name=name,
            help=help,
            kind=kind,
            metavar=metavar,
            default=default,
            least=least,
        )

    @property
    def takes_value(self) -> bool:
        return self.kind != FLAG


class Command(_Frozen):
    """One command: ``path`` is its words (``("record", "verdict")``); ``handler`` is
    ``module:function`` under ``router.cli``, called with the directory the command runs
    in, then the parsed values by name. ``as_given`` hands it ``-C``'s directory as
    given instead (None without ``-C``): the command decides where it runs."""

    __slots__ = ("args", "as_given", "handler", "help", "opts", "path")
    path: tuple[str, ...]
    help: str
    handler: str
    args: tuple[Arg, ...]
    opts: tuple[Opt, ...]
    as_given: bool

    def __init__(
        self,
        path: str,
        help: str,
        handler: str,
        args: tuple[Arg, ...] = (),
        opts: tuple[Opt, ...] = (),
        *,
        as_given: bool = False,
    ) -> None:
        self._init(
            path=tuple(path.split()),
            help=help,
            handler=handler,
            args=args,
            opts=opts,
            as_given=as_given,
        )

    @property
    def name(self) -> str:
        return self.path[-1]


class Group(_Frozen):
    """Commands under one word (``record``, ``hook``); the root is the group of all."""

    __slots__ = ("commands", "help", "opts", "path")
    path: tuple[str, ...]
    help: str
    commands: tuple[Command | Group, ...]
    opts: tuple[Opt, ...]

    def __init__(
        self,
        path: str,
        help: str,
        commands: tuple[Command | Group, ...],
        opts: tuple[Opt, ...] = (),
    ) -> None:
        self._init(path=tuple(path.split()), help=help, commands=commands, opts=opts)

    @property
    def name(self) -> str:
        return self.path[-1] if self.path else PROG

    def find(self, word: str) -> Command | Group | None:
        return next((c for c in self.commands if c.name == word), None)


# -- shared declarations -------------------------------------------------------

JSON = Opt("--json", "as_json", "Print exactly one JSON object on stdout, nothing else.")
TARGET = Arg(
    "target",
    "[TARGET]",
    "Topic id or plan dir; default: this worktree's topic, else the newest run.",
)
REQUIRED_TARGET = Arg("target", "TARGET", "Topic id or plan dir.")
WAIT = Opt(
    "--wait",
    "wait",
    "Seconds to wait for another run holding the topic's lock.",
    kind=FLOAT,
    metavar="SECONDS",
    default=CLI_DEFAULT_WAIT,
    least=0,
)
# The removing commands' shared options (teardown, pr-cleanup, sweep, local-state).
DRY_RUN = Opt("--dry-run", "dry_run", "Print the plan; change nothing.")
LINE_TIMEOUT = Opt(
    "--line-timeout",
    "line_timeout",
    "Seconds each .teamteardown line may run before its process group is killed.",
    kind=FLOAT,
    metavar="S",
    default=CLI_DEFAULT_LINE_TIMEOUT,
    least=0.1,
)
# The creating commands' setup-commands stage (new, worktrees).
NO_SETUP = Opt(
    "--no-setup",
    "no_setup",
    "Do not run the default branch's .worktreesetup lines in the new worktree.",
)
SETUP_LINE_TIMEOUT = Opt(
    "--line-timeout",
    "line_timeout",
    "Seconds each .worktreesetup line may run before its process group is killed.",
    kind=FLOAT,
    metavar="S",
    default=CLI_DEFAULT_LINE_TIMEOUT,
    least=0.1,
)
REMOVE_REUSED = Opt(
    "--remove-reused",
    "remove_reused",
    "Also remove a checkout and delete a branch team-router did not create "
    "(`new` reused them); without it they are kept.",
)
BODY_FILE = Opt(
    "--body-file",
    "body_file",
    "Markdown to keep as the record's body ('-': stdin).",
    kind=PATH,
    metavar="F",
)
PID = Opt(
    "--pid",
    "pid",
    "The holding process; default: the session that runs team-router (its parent, "
    "past any `sh -c` wrapper).",
    kind=INT,
    metavar="PID",
    least=1,
)
SESSION = Opt("--session", "session", "The host's session id.", kind=TEXT, metavar="ID")


# -- the commands ----------------------------------------------------------------

NEW = Command(
    "new",
    "WORKTREE phase: derive the topic id, create the home worktree and the plan dir.",
    "create:new_cmd",
    (Arg("description", "DESCRIPTION", "What the topic builds, in a few words."),),
    (
        Opt("--ticket", "ticket", "Ticket id: the id becomes <T>-<slug>.", kind=TEXT, metavar="T"),
        Opt("--id", "topic_id", "Use ID verbatim (validated).", kind=TEXT, metavar="ID"),
        Opt("--date", "date", "Date prefix YYYY-MM-DD instead of today.", kind=TEXT, metavar="D"),
        Opt("--fix", "fix", "A bug fix: QUESTION, PLAN, IMPLEMENT, PR (no research or design)."),
        Opt(
            "--sparse",
            "sparse",
            "A sparse home worktree: check out only DIR (relative to the repo root) and the "
            "files at the top level (git's cone mode). Repeatable, and comma-separated: "
            "`--sparse src,docs` is `--sparse src --sparse docs`.",
            kind=TEXTS,
            metavar="DIR",
        ),
        NO_SETUP,
        SETUP_LINE_TIMEOUT,
        WAIT,
        JSON,
    ),
)
WORKTREES = Command(
    "worktrees",
    "Create or reuse every repo's worktree for a topic; write the ## Worktrees section.",
    "create:worktrees_cmd",
    (Arg("plan_dir", "[PLAN_DIR]", "Plan dir or topic id; default: the newest topic."),),
    (
        Opt(
            "--strict",
            "strict",
            "Any refusal or fallback rolls back this run's worktrees and exits 1; a "
            ".worktreesetup line that fails exits 1 and keeps them.",
        ),
        NO_SETUP,
        SETUP_LINE_TIMEOUT,
        WAIT,
        JSON,
    ),
)
INIT = Command(
    "init",
    "Prepare this repo: info/exclude lines; example .worktreeinclude, .worktreesetup.example "
    "and .teamteardown.example.",
    "create:init_cmd",
    (),
    (
        Opt(
            "--allow-agent",
            "allow_agent",
            "Let Claude Code run team-router without a prompt: add Bash(team-router:*) "
            "to .claude/settings.local.json (kept out of git status), here and in every other "
            "repo this repo's topics reach (worktrees adds it to repos they reach later).",
        ),
        Opt(
            "--allow-agent-everywhere",
            "allow_everywhere",
            "Add Bash(team-router:*) to your user settings (~/.claude/settings.json, or "
            "$CLAUDE_CONFIG_DIR/settings.json) instead: every repo on this machine.",
        ),
        Opt(
            "--write-examples",
            "write_examples",
            "Write .worktreeinclude and .teamteardown.example into the repo (commit them); "
            "by default they go under the git dir and the work tree stays clean.",
        ),
        JSON,
    ),
)
INSTALL_HOOKS = Command(
    "install-hooks",
    "Route Claude Code's own worktrees (claude --worktree, EnterWorktree, isolated agents) "
    "through team-router: add its WorktreeCreate and WorktreeRemove hooks to your user settings "
    "(~/.claude/settings.json, or $CLAUDE_CONFIG_DIR/settings.json), leaving every other key. "
    "Needed only with a client older than 2.1.332 (the plugin's own hooks serve newer ones); "
    "with both, the plugin's stand aside, so each worktree is handled once.",
    "create:install_hooks_cmd",
    (),
    (
        Opt("--uninstall", "uninstall", "Remove exactly the hooks this command adds."),
        Opt("--dry-run", "dry_run", "Print the change to the settings; write nothing."),
        JSON,
    ),
)
PHASE = Command(
    "phase",
    "Where an interrupted run resumes: the first phase whose evidence is missing.",
    "phase:phase_cmd",
    (TARGET,),
    (JSON,),
)
NEXT = Command(
    "next",
    "The phase to run next, with its brief: what to produce, where, and which gate decides.",
    "phase:next_cmd",
    (TARGET,),
    (
        Opt(
            "--until",
            "until",
            "Stop once the run is past PHASE (its gate passed): step 'until'.",
            kind=TEXT,
            metavar="PHASE",
        ),
        JSON,
    ),
)
STATUS = Command(
    "status",
    "Every topic of the home repo: where it resumes and, per repo, its worktree, whether it "
    "is dirty, and how many commits it is ahead of the default branch.",
    "phase:status_cmd",
    (),
    (JSON,),
)
TEARDOWN = Command(
    "teardown",
    "Tear a topic down in every repo: integrate, remove, delete, update, sweep, local state.",
    "teardown:teardown_cmd",
    (REQUIRED_TARGET,),
    (
        Opt(
            "--integrate", "integrate", "Cherry-pick unintegrated commits onto the default branch."
        ),
        Opt(
            "--force",
            "force",
            "Remove work that exists nowhere else, after writing a snapshot ref.",
        ),
        DRY_RUN,
        REMOVE_REUSED,
        LINE_TIMEOUT,
        WAIT,
        JSON,
    ),
)
SWEEP = Command(
    "sweep",
    "Remove residue under .claude/worktrees/ that git no longer knows; keep and list the rest.",
    "teardown:sweep_cmd",
    (),
    (
        Opt(
            "--host-worktrees",
            "host_worktrees",
            "First remove the worktrees Claude Code asked for (claude --worktree, "
            "isolated subagents) that hold nothing: clean, no commits of their own, no "
            "artifacts, no live session holding them.",
        ),
        Opt(
            "--force",
            "force",
            "Also remove residue holding the artifacts of a run that has not shipped, "
            "after writing them to a snapshot ref (`restore <id>` brings them back).",
        ),
        DRY_RUN,
        WAIT,
        JSON,
    ),
)
LOCAL_STATE = Command(
    "local-state",
    "Run each repo's .teamteardown (from its default branch) and remove recorded temp paths.",
    "teardown:local_state_cmd",
    (REQUIRED_TARGET,),
    (LINE_TIMEOUT, DRY_RUN, WAIT, JSON),
)
RESTORE = Command(
    "restore",
    "Recreate a topic's worktree(s) from the snapshot a forced teardown wrote.",
    "teardown:restore_cmd",
    (
        Arg(
            "target",
            "TARGET",
            "Topic id or plan dir, or a branch that is no topic (one pr-cleanup --abandon "
            "snapshotted).",
        ),
    ),
    (Opt("--repo", "repo", "Only this repo of the topic.", kind=TEXT, metavar="NAME"), WAIT, JSON),
)
PR_CLEANUP = Command(
    "pr-cleanup",
    "After a merge: prove it, then remove the worktree, branches, plan dir and local state.",
    "cleanup:pr_cleanup_cmd",
    (
        Arg(
            "target",
            "[TARGET]",
            "PR number, PR URL, or branch; default: the branch checked out here.",
        ),
    ),
    (
        Opt(
            "--abandon",
            "abandon",
            "The work is abandoned: close the PR(s), delete without a merge.",
        ),
        Opt("--delete-remote", "delete_remote", "Also delete the branch on origin."),
        Opt(
            "--reclaim",
            "reclaim",
            "After the prune: expire unreachable reflog entries and gc --prune=now (repo-wide).",
        ),
        Opt(
            "--yes",
            "yes",
            "Confirm --abandon without a prompt; or let the content proof alone stand "
            "when gh knows no merged PR from this repository.",
        ),
        DRY_RUN,
        REMOVE_REUSED,
        LINE_TIMEOUT,
        WAIT,
        JSON,
    ),
)
HOLD = Command(
    "hold",
    "Register a session as a holder of the topic: teardown keeps it while the session lives.",
    "durability:hold_cmd",
    (TARGET,),
    (PID, SESSION, JSON),
)
RELEASE = Command(
    "release",
    "Drop a session's holder of the topic (matching --pid and/or --session).",
    "durability:release_cmd",
    (TARGET,),
    (PID, SESSION, JSON),
)
DOCTOR = Command(
    "doctor",
    "Report records, worktrees, branches, locks and holders that disagree with git.",
    "durability:doctor_cmd",
    (),
    (
        Opt("--repair", "repair", "Fix what is safe to fix, only for paths team-router owns."),
        WAIT,
        JSON,
    ),
)
DEMO = Command(
    "demo",
    "Build three sibling repos and walk one topic from `new` to teardown, narrating each step.",
    "demo:demo_cmd",
    (),
    (
        Opt(
            "--dir",
            "directory",
            "Build the demo repos under D instead of the temp dir.",
            kind=PATH,
            metavar="D",
        ),
        Opt("--keep", "keep", "Keep the demo repos afterwards (to look around)."),
        JSON,
    ),
)


def _round(kind: str, help: str, verdicts: str) -> Command:
    """A numbered gate record (``record verdict|review|tests|verify``): one shape, one writer."""
    return Command(
        f"record {kind}",
        help,
        f"phase:record_{kind}_cmd",
        (REQUIRED_TARGET, Arg("value", "VERDICT", verdicts)),
        (BODY_FILE, WAIT, JSON),
    )


RECORD = Group(
    "record",
    "Write a gate record into the topic's plan dir (verdict, tests, verify, review, pr, temp).",
    (
        _round(
            "verdict",
            "Record the design review's verdict as design-review-<n>.md (n = highest + 1).",
            'APPROVE, "REQUEST CHANGES" or COMMENT (case and spacing do not matter).',
        ),
        _round(
            "review",
            "Record the implementation review's aggregate verdict as review-<n>.md.",
            "PASS or FAIL (case does not matter).",
        ),
        _round(
            "tests",
            "Record the test-first gate the orchestrator ran as tests-<n>.md (RED moves IMPLEMENT "
            "on to its slices).",
            "RED (the new tests fail by assertion, the static checks pass) or BROKEN.",
        ),
        _round(
            "verify",
            "Record the verifier's result (format, lint, types, build, tests of every repo) as "
            "verify-<n>.md.",
            "PASS or FAIL: every repo's declared checks.",
        ),
        Command(
            "record pr",
            "Record an opened PR's URL in pr.md (one per repo: --repo), or with --local the branch "
            "tips of work kept without a PR (the run is SHIPPED from then on).",
            "phase:record_pr_cmd",
            (REQUIRED_TARGET, Arg("url", "[URL]", "The PR's http(s) URL (or pass --local).")),
            (
                Opt(
                    "--local",
                    "local",
                    "No PR: record every repo's branch tip, pushed or not (the run is finished).",
                ),
                Opt(
                    "--repo",
                    "repo_name",
                    "The repo whose PR this is, as repos.md names it (default: home).",
                    kind=TEXT,
                    metavar="NAME",
                ),
                WAIT,
                JSON,
            ),
        ),
        Command(
            "record temp",
            "Append an absolute temporary path to temp-paths, for teardown to remove.",
            "phase:record_temp_cmd",
            (REQUIRED_TARGET, Arg("path", "PATH", "Absolute path of a temp file or dir.")),
            (WAIT, JSON),
        ),
    ),
)

HOOK = Group(
    "hook",
    "Agent-host hooks (Claude Code).",
    (
        Command(
            "hook session-start",
            "SessionStart: read the host's JSON on stdin; print the recovery notice as one JSON "
            "object, or nothing when there is no topic to resume. Always exits 0.",
            "hooks:hook_session_start_cmd",
            (),
            (JSON,),
            # The host's payload names the session's directory; -C only stands in for it.
            as_given=True,
        ),
        Command(
            "hook worktree-create",
            "WorktreeCreate: read the host's JSON on stdin (name, cwd); make or find that worktree "
            "through the creation pipeline and print its absolute path, the only line on stdout. "
            "No worktree: exit 1 (or 2 for a bad payload) with one line on stderr, and the host "
            "stops. Without cwd in the payload: CLAUDE_PROJECT_DIR, then -C.",
            "hooks:hook_worktree_create_cmd",
            (),
            (WAIT,),
        ),
        Command(
            "hook worktree-remove",
            "WorktreeRemove: read the host's JSON on stdin (worktree_path); remove that worktree "
            "and its branch when that loses nothing, else keep it; sweep residue; say what "
            "happened on stderr. Exits 1 exactly when the worktree stays, so the host never "
            'says "removed".',
            "hooks:hook_worktree_remove_cmd",
            (),
            (WAIT,),
        ),
    ),
)

DIRECTORY = Opt("-C", "directory", "Run as if started in PATH.", kind=PATH, metavar="PATH")
VERSION = Opt("--version", "version", "Print the version.")

ROOT = Group(
    "",
    "Isolated git worktrees, durable records and lossless teardown for multi-repo "
    "coding-agent pipelines. Every command takes --json (the worktree hooks speak the "
    "host's protocol instead).",
    (
        NEW,
        WORKTREES,
        INIT,
        INSTALL_HOOKS,
        PHASE,
        NEXT,
        STATUS,
        TEARDOWN,
        SWEEP,
        LOCAL_STATE,
        RESTORE,
        PR_CLEANUP,
        HOLD,
        RELEASE,
        DOCTOR,
        DEMO,
        RECORD,
        HOOK,
    ),
    (DIRECTORY, VERSION),
)

# Every command and group takes these; ``--help`` lists them last.
HELP_FLAGS = ("-h", "--help")
HELP_TEXT = "Show this message and exit."


def walk(group: Group = ROOT) -> Iterator[Command | Group]:
    """Every command and group under ``group``, depth first, in declaration order."""
    for node in group.commands:
        yield node
        if isinstance(node, Group):
            yield from walk(node)
