"""Why a teardown or pr-cleanup step went as it did: a :class:`Reason` and its typed payload.

A step decides its outcome and says why with a :class:`Why`; the words people
read are rendered from it at the edge (``router.teardown.wording``), never
built where the step decides and never parsed back. The record keeps the
:class:`Why` beside the words (``RanStep``), so a later run reads the value,
not the prose. Standard library only: the record's layer reads it too.
"""

from __future__ import annotations

from enum import StrEnum

from router.records import fields, record, replace


class Reason(StrEnum):
    """One member per distinct reason a step is done, skipped, refused or failed.

    The value is the JSON's ``reason`` key: a contract (docs/json-and-errors.md).
    """

    # -- any step
    GIT_FAILED = "git-failed"  # git's first line in ``text``, its command in ``command``
    IO_FAILED = "io-failed"  # the I/O error (router.ioerror's words for it) in ``text``
    # ``signal`` stopped it (``flag``: part-way, else before it started); local-state's says
    # what it did (``parts``)
    STOPPED = "stopped"
    HELD_BACK = "held-back"  # a guarding step (``step``) before it stopped (``flag``: it failed)
    UNSHIPPED = "unshipped"  # a run that has not shipped keeps its artifacts
    SNAPSHOT_FAILED = "snapshot-failed"  # the snapshot could not be written (``parts``: why): kept
    # why a snapshot could not be written: of ``path`` (a worktree, a plan dir) or ``branch``,
    # git's first line or the system's error in ``text``; a worktree (``path``) whose index
    # has unmerged paths; the tree of ``branch`` at ``commit`` that cannot be read
    SNAPSHOT_NOT_WRITTEN = "snapshot-not-written"
    UNMERGED_INDEX = "unmerged-index"
    TREE_UNREADABLE = "tree-unreadable"
    KEPT = "kept"  # `new` reused it, never made it: the checkout (``path``) or the branch
    # -- integrate
    BRANCH_GONE = "branch-gone"
    KEPT_UNMERGED = "kept-unmerged"  # the branch is kept, with commits not on the default branch
    KEPT_BRANCH = "kept-branch"  # the branch is kept: nothing to integrate
    NO_DEFAULT_BRANCH = "no-default-branch"
    EMPTY = "empty"  # nothing on the branch since it was cut
    MERGED = "merged"  # proven merged (``parts``: the proof; an older record's in ``text``)
    INTEGRATED = "integrated"  # every patch is on the default branch
    PICKED = "picked"  # cherry-picked onto the default branch
    PRIMARY_BUSY = "primary-busy"  # the primary clone cannot take a cherry-pick now
    PICK_INTERRUPTED = "pick-interrupted"  # git was killed mid-pick: a rerun undoes it
    PICK_NOT_UNDONE = "pick-not-undone"  # a stopped pick that could not be undone yet
    PICK_LOCKED = "pick-locked"  # a lock file stopped the pick: aborted
    CONFLICT = "conflict"  # a commit did not apply: aborted
    NO_IDENTITY = "no-identity"  # git cannot name a committer
    PICK_UNDONE = "pick-undone"  # what a killed pick of ours left was undone (``parts``: how)
    PICK_ABORTED = "pick-aborted"  # its cherry-pick aborted
    PICK_QUIT = "pick-quit"  # its cherry-pick ended, keeping the commits it had picked
    CHANGES_DROPPED = "changes-dropped"  # its half-applied changes (``items``) dropped
    PICK_NOT_ENDED = "pick-not-ended"
    PICK_FOREIGN = "pick-foreign"  # a killed pick, and changes not from it: kept
    PICK_STUCK = "pick-stuck"  # undoing or ending a killed pick stopped
    GIT_RUNNING = "git-running"  # a live git holds a lock of the pick
    UNINTEGRATED = "unintegrated"  # commits not on the default branch refuse
    UNINTEGRATED_FORCED = "unintegrated-forced"  # ... and --force snapshots them instead
    # -- remove, verify-gone
    NO_WORKTREE = "no-worktree"  # no checkout of the branch: already gone
    NOTHING_TO_RECHECK = "nothing-to-recheck"
    NO_WORKTREE_RECORDED = "no-worktree-recorded"
    PRIMARY_CLONE = "primary-clone"  # never removed
    FOREIGN = "foreign"  # the worktree (``path``) is on another branch (``others``; none: detached)
    NOT_REGISTERED = "not-registered"  # git does not know it (``flag``: something is there)
    REMOVED = "removed"
    FINISHED = "finished"  # a removal a kill interrupted, finished
    REMOVAL_STOPPED = "removal-stopped"  # git stopped part-way, and this run finished it
    INTERRUPTED = "interrupted"  # git was killed mid-removal: a rerun finishes it
    # a removal stopped half-way that cannot finish yet: files written there since (``items``),
    # or ``count`` paths it could not delete (``parts``: the first few, each NOT_DELETED)
    HALF_REMOVED = "half-removed"
    # ``path`` could not be deleted: the system's error (``text``), and what stands in the
    # way (``kind``: router.topic.removal.BlockedBy) at ``other``
    NOT_DELETED = "not-deleted"
    WRITTEN_SINCE = "written-since"  # files written into a half-removed worktree since
    WORKTREE_KEPT = "worktree-kept"
    STILL_REGISTERED = "still-registered"
    GONE = "gone"
    OUTSIDE = "outside"  # came back outside the worktrees directory
    CAME_BACK = "came-back"  # a late writer's directory, removed
    CAME_BACK_FAILED = "came-back-failed"  # ``parts``: why it could not be removed
    # why the sweep could not remove a directory
    OS_ERROR = "os-error"  # the system's error (``text``: its strerror) on ``path``
    NOT_PUT_BACK = "not-put-back"  # written to while swept: kept at ``path`` (strerror in ``text``)
    NOT_SNAPSHOTTED = "not-snapshotted"  # its run's artifacts not snapshotted (``parts``: why)
    NO_PRIMARY_CLONE = "no-primary-clone"  # no primary clone to keep a snapshot in
    PLAN_DIR_NOT_SNAPSHOTTED = "plan-dir-not-snapshotted"  # ``path``'s snapshot: ``text`` says why
    REFUSAL = "refusal"  # an older record's refusal message (``text``)
    CAME_BACK_UNSHIPPED = "came-back-unshipped"
    CAME_BACK_KEPT = "came-back-kept"  # ``kind``: what the sweep found it is (``items``: files)
    # -- branch
    ALREADY_GONE = "already-gone"
    PRIMARY_HOLDS = "primary-holds"  # the primary clone has it checked out
    CHECKED_OUT = "checked-out"  # a worktree has it checked out
    DELETED = "deleted"
    HOLDS_UNINTEGRATED = "holds-unintegrated"
    # -- update-default
    UNKNOWN_DEFAULT = "unknown-default"
    NO_ORIGIN = "no-origin"
    UP_TO_DATE = "up-to-date"
    # Moved up to origin's tip: fast-forwarded to the fetched tip, or pulled (``command``);
    # which one is how the run found the branch, not a different decision.
    UPDATED = "updated"
    PULL_FAILED = "pull-failed"
    BUSY = "busy"  # the primary clone cannot move (``parts``: why, and the way out)
    LEFT_EARLIER = "left-earlier"  # an earlier run left it to the user
    SUBMODULES_FOLLOWED = "submodules-followed"
    SUBMODULES_FAILED = "submodules-failed"
    # after the default branch moved (a pick, a pull): its submodules (``items``) followed,
    # or git could not update them (git's words in ``text``, the primary clone in ``path``)
    SUBMODULES_MOVED = "submodules-moved"
    # why the primary clone (``path``) cannot move its default branch now, and the way out
    PRIMARY_OPERATION = "primary-operation"  # a git operation (``text``: its name) stopped there
    PRIMARY_CHANGES = "primary-changes"  # uncommitted changes (``items``)
    PRIMARY_ELSEWHERE = "primary-elsewhere"  # on ``branch`` (none: detached), not ``default``
    PRIMARY_NO_DEFAULT = "primary-no-default"  # no local ``default``
    WAY_OUT_OPERATION = "way-out-operation"  # end the operation (``text``)
    WAY_OUT_STASH = "way-out-stash"  # commit or stash the changes
    WAY_OUT_SWITCH = "way-out-switch"  # switch back to ``default``
    SUBMODULES_LEFT = "submodules-left"
    PRUNED = "pruned"
    NOT_PRUNED = "not-pruned"  # origin still has the branch
    NOTHING_TO_PRUNE = "nothing-to-prune"
    PRUNE_FAILED = "prune-failed"
    UNREACHABLE = "unreachable"  # origin could not be reached: not pruned
    # -- plan-dir
    NOT_A_TOPIC = "not-a-topic"
    NOT_HOME = "not-home"
    NO_PLAN_DIR = "no-plan-dir"
    NOT_PLAIN = "not-plain"
    SYMLINKED = "symlinked"  # ``path`` is reached through the symlink ``items[0]``
    UNTRACKED_UNKNOWN = "untracked-unknown"
    TRACKED = "tracked"
    UNREADABLE = "unreadable"
    REMOVED_UNTRACKED = "removed-untracked"
    REMOVE_FAILED = "remove-failed"
    # -- the plan's refusals, and a refused teardown's steps
    CHECK_FAILED = "check-failed"  # reading the repo failed: nothing is guessed
    # other live sessions (``parts``: each HOLDER) hold the topic (``flag``: no --force overrides)
    HELD = "held"
    DETACHED_COMMITS = "detached-commits"  # a detached HEAD holds commits no branch has
    # not done: the teardown was refused as a whole (``code``: the refusal in this repo, if any)
    TEARDOWN_REFUSED = "teardown-refused"
    UNCHECKED = "unchecked"  # not known until the repo can be checked
    # -- sweep
    NO_RESIDUE = "no-residue"
    SWEPT = "swept"  # residue swept (or snapshotted), some perhaps kept
    RESIDUE_KEPT = "residue-kept"  # nothing swept: what is there is kept
    RESIDUE_STUCK = "residue-stuck"  # residue that could not be removed
    # -- local-state
    ALREADY_RAN = "already-ran"  # an earlier teardown or pr-cleanup of the topic ran it
    NOTHING_DECLARED = "nothing-declared"  # what local-state found (``parts``)
    RAN = "ran"  # the declared lines and temp paths (``parts``; the outcome says how it went)
    # the parts of local-state's words (of RAN, NOTHING_DECLARED, and STOPPED's)
    DECLARED = "declared"  # file ``path`` on ``default`` (``flag``: found), ``count`` lines
    LINES_RUN = "lines-run"  # each declared line's outcome (``items``)
    WOULD_RUN = "would-run"  # the dry run's declared line (the user's, in ``text``)
    LINES_LEFT = "lines-left"  # a signal: ``count`` lines not run to the end
    NO_TEMP_PATHS = "no-temp-paths"  # none recorded
    TEMP_PATHS = "temp-paths"  # each temp path's outcome (``items``; ``flag``: planned)
    # -- pr-cleanup's remote-branch, prune and reclaim
    ORIGIN_UNKNOWN = "origin-unknown"  # origin could not be asked (``parts``: why): nothing done
    ORIGIN_MISSING = "origin-missing"  # the repository has no origin
    ORIGIN_NOT_ASKED = "origin-not-asked"  # a dry run does not ask origin
    GIT_SAID = "git-said"  # git's first line (``text``), all that is known
    REMOTE_GONE = "remote-gone"  # origin has no such branch
    REMOTE_KEPT = "remote-kept"  # origin keeps its branch unless asked to delete it
    REMOTE_UNINTEGRATED = "remote-unintegrated"  # deleting it would lose work (``parts``: why)
    REMOTE_NOT_FETCHED = "remote-not-fetched"  # origin's tip ``commit`` is not in this clone
    REMOTE_NOT_MERGED = "remote-not-merged"  # origin's tip ``commit`` is not proven merged
    # origin's tip ``commit`` has commits this clone's ``branch`` and its snapshot lack
    REMOTE_AHEAD = "remote-ahead"
    REMOTE_DELETE_FAILED = "remote-delete-failed"
    REMOTE_DELETED = "remote-deleted"
    TRACKING_STAYS = "tracking-stays"  # the remote-tracking ref keeps the commits reachable
    NOT_ASKED = "not-asked"  # --reclaim was not given
    # a git may be writing objects (``parts``: who may): nothing expired
    HELD_ELSEWHERE = "held-elsewhere"
    RECLAIM_FAILED = "reclaim-failed"
    RECLAIMED = "reclaimed"
    # -- what keeps a worktree (teardown's and pr-cleanup's checks)
    # repositories inside (``parts``: each NESTED_REPO) hold work found nowhere else
    NESTED_WORK = "nested-work"
    # a repository inside: ``kind`` (router.teardown.nested.NestedKind) at ``path``, and what
    # removing it would lose (``parts``), or why it could not be inspected; none: it loses nothing
    NESTED_REPO = "nested-repo"
    NOT_A_REPOSITORY = "not-a-repository"  # git does not recognise it as a repository
    NOT_INSPECTED = "not-inspected"  # git could not inspect it (its words in ``text``)
    ORPHANS = "orphans"  # its linked worktrees elsewhere (``items``) would lose their repository
    UNPUSHED = "unpushed"  # ``count`` commits on none of its remote-tracking refs
    REMOTES_GONE = "remotes-gone"  # its remotes (``items``) name a path that no longer exists
    CHANGES = "changes"  # changed tracked files (``items``), untracked files (``others``)
    UNSEEN_FILES = "unseen-files"  # an uninitialised submodule's files, which git does not see
    MODULE_DIR = "module-dir"  # a submodule git dir (``path``) and how git reads it
    # the worktree's filesystem is not mounted: how that shows (``kind``: router.mounts.Shows)
    # at ``items[0]``, and where to mount it (``other``)
    NOT_MOUNTED = "not-mounted"
    LOCKED = "locked"  # another tool's lock
    DIRTY = "dirty"  # changed or untracked files
    # what the HEAD reflog (``ref``) alone keeps is unknown: git's words (``text``), its
    # HEAD names ``branch``, which does not exist, or a reflog file it cannot trust or a
    # config or ref storage not read from files (``parts``)
    REFLOG_UNKNOWN = "reflog-unknown"
    # the repository's config or ref storage (its common git dir ``path``) is not read
    # from its files (``kind``: router.git.files.UnreadLayout)
    UNREAD_LAYOUT = "unread-layout"
    ODD_REFLOG = "odd-reflog"  # reflog file ``path`` cannot be read (``flag``), or has an odd line
    REFLOG_ONLY = "reflog-only"  # the HEAD reflog is the only record of commits
    IN_USE = "in-use"  # processes (``parts``: each PROCESS) work in the worktree
    # -- who may be working there (``parts`` of HELD and HELD_ELSEWHERE)
    HOLDER = "holder"  # a live session: process ``count``, the host's session id in ``text``
    # (``flag``: it holds another topic of the repository)
    PROCESS_IN = "process-in"  # process ``count`` (its command name in ``text``) works in ``path``
    PROCESS = "process"  # process ``count`` (its command name in ``text``), where its reason says
    NO_PROC = "no-proc"  # no /proc shows that no other process works in ``path``
    # -- pr-cleanup --abandon's snapshot and stack
    NOTHING_TO_KEEP = "nothing-to-keep"  # the branch is gone: no tip to snapshot
    TIP_KEPT = "tip-kept"  # the branch's tip is kept in its snapshot ref
    STACK_UNKNOWN = "stack-unknown"  # gh could not list the stacked PRs
    NO_STACK = "no-stack"
    STACK_DELETED = "stack-deleted"  # each stacked branch deleted here and on origin
    STACK_KEPT = "stack-kept"  # some stacked branches kept (``parts``: each STACK_BRANCH_KEPT)
    STACK_BRANCH_KEPT = "stack-branch-kept"  # stacked ``branch`` is kept, ``inner``: its cause
    PROTECTED_BRANCH = "protected-branch"  # ``branch`` is never deleted (``default``: the repo's)
    STACK_CHECKED_OUT = "stack-checked-out"  # ``branch`` is checked out in ``path``
    NOT_SURVEYED = "not-surveyed"  # reading the branch refused (the refusal's message in ``text``)
    # -- pr-cleanup's close-prs, and a repo that cannot be used
    # gh unavailable (why: a GH_UNAVAILABLE part; an older record's in ``text``), or
    # (``flag``) its listing failed
    NO_PR_LIST = "no-pr-list"
    NO_OPEN_PR = "no-open-pr"
    PRS_CLOSED = "prs-closed"  # children before parents
    PRS_NOT_CLOSED = "prs-not-closed"  # gh could not close some (``parts``: each PR_NOT_CLOSED)
    # PR ``count``, and why gh could not close it (a GH_UNAVAILABLE part; an older record's
    # words in ``text``)
    PR_NOT_CLOSED = "pr-not-closed"
    # a listed repo that cannot be used: the error code (``code``), and why (``kind``:
    # router.topic.containment.Uncontained) about ``path`` (``items``: the other paths it names)
    REPO_UNUSABLE = "repo-unusable"
    # -- pr-cleanup's own plan refusals (nothing touched)
    IN_PRIMARY = "in-primary"  # the primary clone has the branch checked out
    REBASING = "rebasing"  # a rebase or bisect works on the branch (in ``path``)
    PRIMARY_DIRTY = "primary-dirty"  # the primary clone, whose default branch moves, has changes
    UNCOMMITTED = "uncommitted"  # the worktree has changes: no --force snapshots them here
    NOT_MERGED = "not-merged"  # no proof of the merge (``flag``: nothing was ever merged)
    NO_MERGED_PR = "no-merged-pr"  # gh knows no merged PR: the content proof needs --yes
    # -- notes said after a step's reason
    COPIES = (
        "copies"  # .worktreeinclude copies (``items``) the removal deletes, edited (``others``)
    )
    NESTED = "nested"  # repositories inside (``parts``: each NESTED_REPO) go with the worktree
    LOCK_LOST = "lock-lost"  # a worktree that stays could not be locked again
    CONFIG_KEPT = "config-kept"  # the branch's config section stays
    PLAN_DIR_KEPT = "plan-dir-kept"
    UNTOUCHED = "untouched"  # a refused plan touched nothing
    # -- the parts a reason is about (``parts``), each with its facts
    ARTIFACTS = "artifacts"  # a plan dir (``path``) and the unshipped run's files in it
    RESIDUE = "residue"  # a directory git no longer knows, holding an unshipped run's files
    ARTIFACTS_KEPT = "artifacts-kept"  # the run's files (``items``) in a snapshot ref (``ref``)
    # a merge proof (router.teardown.proof), against ``ref``
    ANCESTOR = "ancestor"  # the branch's tip is an ancestor of it
    PATCHES = "patches"  # every patch is on it (git cherry)
    SQUASH = "squash"  # merging the branch into it changes nothing
    NOTHING_SINCE_CUT = "nothing-since-cut"  # no proof needed: nothing on it since it was cut
    # pr-cleanup's evidence of a merge (router.teardown.merged): the content, then gh
    GONE_EVERYWHERE = "gone-everywhere"  # the branch is gone here and on origin
    NO_ORIGIN_DEFAULT = "no-origin-default"  # origin has no default branch (``default``)
    CUT_EMPTY = "cut-empty"  # nothing on the branch since it was cut at ``commit``
    NO_CONTENT_PROOF = "no-content-proof"  # none on ``ref``
    GH_SILENT = "gh-silent"  # gh could not be asked (why: a GH_UNAVAILABLE part, or ``text``)
    # why gh could not be asked: ``kind`` (router.github.GhTrouble), gh's first line or the
    # system's error in ``text``, its command in ``command``
    GH_UNAVAILABLE = "gh-unavailable"
    GH_NO_PR = "gh-no-pr"  # gh knows no PR from this repo's branch
    GH_AGREES = "gh-agrees"  # PR ``count`` merged this head
    GH_DISAGREES = "gh-disagrees"  # each PR of ours (``parts``) says otherwise
    PR_NOT_MERGED = "pr-not-merged"  # PR ``count`` is in state ``text`` (gh's word)
    PR_OTHER_HEAD = (
        "pr-other-head"  # PR ``count`` merged ``items[0]``, the branch is at ``items[1]``
    )
    PR_MERGED_ELSEWHERE = "pr-merged-elsewhere"  # its merge commit is not on ``ref``
    # -- creation's rerun: a half-made `git worktree add` it keeps (``half-made-worktree``)
    HALF_MADE = "half-made"  # git registered it: ``inner`` = how it is half-made, why it is kept
    # git's registration (``items``) is torn (``kind``: its file missing or empty, or
    # "placeholder": its HEAD is git's placeholder); ``inner``: why it is kept
    HALF_MADE_TORN = "half-made-torn"
    HALF_MADE_RESTORE = "half-made-restore"  # a restore's add of ``branch``; ``inner``: why kept
    ADD_LOCKED = "add-locked"  # git left it locked (its lock reason in ``text``)
    ADD_UNFINISHED = "add-unfinished"  # the record shows its `git worktree add` never finished
    NO_HEAD = "no-head"
    NOT_A_CHECKOUT = "not-a-checkout"  # git does not recognise it as a checkout
    NO_INDEX = "no-index"  # its files were never checked out
    # -- why a half-made add is not ours to undo (router.create.ouradd)
    NOT_CREATING = "not-creating"  # the record shows no creation of ours under way
    BRANCH_MOVED = "branch-moved"  # the branch has commits since it was cut
    LOCKED_ELSEWHERE = "locked-elsewhere"  # its registration is locked, not by team-router
    OTHER_GITDIR = "other-gitdir"  # its registration names another worktree (``path``)
    THROUGH_SYMLINK = "through-symlink"  # the path is reached through a symlink
    NOT_ITS_FILES = "not-its-files"  # files that are not git's checkout of the branch
    ADD_RUNNING = "add-running"  # processes (``items``) still use it
    LOCK_LEFT = "lock-left"  # git's lock file (``path``) is in it, no process list to judge


@record
class Why:
    """A reason and what it is about; the renderer says it in words.

    The facts a reason is about are fields, or ``parts`` and ``inner`` (each a
    :class:`Why` of its own); ``items`` are paths or commits (or a closed set's
    words, one per thing), named up to a few and counted beyond; ``kind`` is
    one of a closed set. ``text`` holds only words from outside team-router,
    as they came: git's or gh's first line, gh's word for a PR's state, a
    system error (its strerror, or the I/O error as router.ioerror names it),
    a lock reason git wrote, a git operation's name, a process's command name,
    the host's session id, a line a user declared.

    Not a field yet, still words another module built, in ``text``: the message of
    the refusal reading a stacked branch met (``not-surveyed``: any refusal the
    branch's survey raises, each worded where it is raised).

    A :class:`Why` an older record kept may hold, in ``text`` (or ``other``, or
    ``items``), the words of facts that are fields or parts now (a snapshot that
    failed, a sweep's ``refusal``, a half-removed worktree's, ``reflog-unknown``'s,
    ``in-use``'s processes, ``nested``'s repositories): the renderer says those
    words when the fields are empty. ``planned``: the dry run's words, what the
    real run would do; ``notes``: said after it, and ``before``: said before
    it, each joined by ``"; "``.
    """

    reason: Reason
    path: str = ""
    branch: str = ""
    default: str = ""  # the default branch's name
    count: int = 0
    items: tuple[str, ...] = ()
    others: tuple[str, ...] = ()  # a second list (what is kept beside what went)
    ref: str = ""  # a snapshot ref
    commit: str = ""
    command: str = ""  # the git command that failed
    again: str = ""  # the command a rerun is, as the words name it
    step: str = ""  # another step the reason is about (the one that held this back)
    topic: str = ""  # the topic's id
    repo: str = ""  # the repo's name in the topic
    primary: str = ""  # the repo's primary clone
    text: str = ""
    other: str = ""  # a second piece of words from elsewhere (a second git message)
    flag: bool = False  # a reason's one yes/no variant (its renderer says which)
    code: str = ""  # an error code (router.errors.ErrorCode's value) a refusal named
    signal: int = 0  # the signal that stopped a step (router.interrupt's numbers)
    kind: str = ""  # which one of a closed set (its reason names the set)
    planned: bool = False
    inner: tuple[Why, ...] = ()  # the reason this one wraps (what a refused step would do)
    parts: tuple[Why, ...] = ()  # what it is about, one by one (the plan dirs a run holds)
    notes: tuple[Why, ...] = ()
    before: tuple[Why, ...] = ()

    def noting(self, *notes: Why) -> Why:
        """This reason, with ``notes`` said after it."""
        return replace(self, notes=(*self.notes, *notes))

    def after(self, *first: Why) -> Why:
        """This reason, with ``first`` said before it."""
        return replace(self, before=(*first, *self.before))

    def to_json(self) -> dict[str, object]:
        """Only what is set: the reason and the fields its words use."""
        data: dict[str, object] = {"reason": str(self.reason)}
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if f.name in _NESTED:
                value = [w.to_json() for w in value]
            elif isinstance(value, tuple):
                value = list(value)
            data[f.name] = value
        return data

    @classmethod
    def from_json(cls, data: object) -> Why:
        """A :class:`Why` the record kept; ValueError when it is not one this version knows."""
        if not isinstance(data, dict):
            raise ValueError("a step's why must be an object")
        kinds = {f.name: type(f.default) for f in fields(cls)[1:]}
        values: dict[str, object] = {"reason": Reason(str(data.get("reason")))}
        for key, value in data.items():
            if key == "reason":
                continue
            if key not in kinds:
                raise ValueError(f"a step's why has no field {key!r}")
            if key in _NESTED:
                if not isinstance(value, list):
                    raise ValueError(f"why.{key} must be a list")
                value = tuple(cls.from_json(v) for v in value)
            elif kinds[key] is tuple:
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"why.{key} must be a list of strings")
                value = tuple(value)
            elif type(value) is not kinds[key]:
                raise ValueError(f"why.{key} must be a {kinds[key].__name__}")
            values[key] = value
        return cls(**values)  # type: ignore[arg-type]


_NESTED = ("notes", "before", "inner", "parts")  # the fields that hold Whys
