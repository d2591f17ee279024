"""``team-router record``: the gate records of a run (DESIGN §5).

Each writer validates its value before it touches anything (a value outside
its set is exit 2 ``invalid-value`` and nothing is written), then holds the
topic's lock while it numbers and writes the record, so two reviewers
recording at once get rounds n and n + 1, never the same file.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from router.errors import ErrorCode, RouterError
from router.plandir import artifacts as a
from router.records import record
from router.topic import state
from router.topic.runs import PlanDir
from router.topic.target import resolve_existing
from router.topic.workspace import Repo

if TYPE_CHECKING:
    from collections.abc import Callable

_URL_RE = re.compile(r"^https?://[^\s\"'<>\\`]+$")


@record
class RecordResult:
    kind: str  # verdict | review | tests | verify | pr | temp
    path: Path
    value: str
    existing: bool = False  # the record already said exactly this (temp paths)
    warnings: tuple[str, ...] = ()
    tips: tuple[KeptTip, ...] = ()  # record pr --local: every repo's branch tip
    prs: tuple[a.RecordedPr, ...] = ()  # record pr URL: every repo's PR recorded so far

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "kind": self.kind,
            "path": str(self.path),
            "value": self.value,
            "existing": self.existing,
        }
        if self.kind == "pr":
            data["local"] = self.value == "local"
            data["repos"] = [t.to_json() for t in self.tips]
            data["prs"] = [{"repo": p.repo, "url": p.url} for p in self.prs]
        return data


def _refuse_unrevised(inv: a.Inventory) -> None:
    """A verdict owed to the redraft must not judge the draft the last round rejected.

    Recorded, round n + 1 would stand for a revision that was never written: an
    APPROVE of the rejected draft moved the run on to STRUCTURE, a second REQUEST
    CHANGES (a reviewer run twice) spent a round of the cap on nothing.
    """
    from router.phase.infer import redraft_pending

    if not inv.has(a.DESIGN):
        # A verdict with no draft to judge would pass the first draft written after it.
        raise RouterError(
            ErrorCode.NO_DESIGN,
            f"{inv.path(a.DESIGN)} does not exist, so there is no draft to judge; nothing was "
            "written. Write the design first (`team-router next` gives the brief), then review it",
        )
    owed = redraft_pending(inv)
    if owed is not None:
        raise RouterError(
            ErrorCode.DESIGN_NOT_REVISED,
            f"{owed.path} requested changes and {inv.path(a.DESIGN)} has not answered it yet "
            f"(revision {inv.design_revision or 0}); nothing was written. Redraft design.md "
            f"with `revision: {owed.n}` in its frontmatter, then record this review's verdict",
        )


def _refuse_unplanned(inv: a.Inventory) -> None:
    """The test-first gate, the verifier and the review judge the work against the plan.

    Recorded without one, a review's PASS moved the run straight to PR (the PASS row
    comes first) past DESIGN, STRUCTURE and PLAN.
    """
    if not inv.has(a.PLAN):
        raise RouterError(
            ErrorCode.NO_PLAN,
            f"{inv.path(a.PLAN)} does not exist, so there are no slices to test, verify or "
            "review; "
            "nothing was written. Finish the phase `team-router next` names, then review",
        )


def record_pr(
    cwd: Path,
    target: str,
    url: str | None,
    *,
    local: bool = False,
    repo_name: str | None = None,
    wait: float = state.DEFAULT_WAIT,
) -> RecordResult:
    """Write ``pr.md``: a repo's PR was opened, or (``local``) the work is kept on its branches.

    Either way the run is SHIPPED from now on. Each repo's PR is an entry of ``prs:``
    (``repo_name``, the home repo when None); the first one recorded is also ``url:``.
    A URL replaces a local finish, so a run finished locally is finished with a PR by
    recording its URL then.
    """
    if local == (url is not None):
        raise RouterError(
            ErrorCode.USAGE,
            "record pr takes a PR URL or --local (the work kept without a PR), not both",
        )
    if local and repo_name is not None:
        raise RouterError(
            ErrorCode.USAGE, "--repo names the repo of a PR URL; --local records every repo's tip"
        )
    if url is not None and not _URL_RE.fullmatch(url):
        raise RouterError(
            ErrorCode.INVALID_VALUE,
            f"{url!r} is not a PR URL; pass the http(s) URL `gh pr create` printed",
        )
    repo, plan = _existing_plan(cwd, target)
    with state.held_lock(repo.common_dir, plan.id, wait=wait):
        path = plan.path / a.PR
        recorded = _recorded(path)
        name = _topic_repo_name(repo, plan, repo_name or a.HOME) if url else None
        if recorded is None:  # the run ships now; replacing a finish was judged then
            _refuse_unbuilt(repo, plan)
        if url is not None and name is not None:
            prs = _with_pr(path, recorded, a.RecordedPr(name, url))
            if prs is None:
                return RecordResult("pr", path, url, existing=True, prs=recorded or ())
            state.write_atomic(path, _render("pr.md.j2", plan, url=prs[0].url, prs=prs))
            return RecordResult("pr", path, url, prs=prs)
        if recorded:
            _refuse_dropping_prs(path, recorded)
        warnings: list[str] = []
        tips = kept_tips(repo, plan, warnings)
        _refuse_dropping_tips(path, tips)
        branch = tips[0].branch if tips else plan.id
        text = _render("pr.md.j2", plan, url=None, branch=branch, tips=tips)
        state.write_atomic(path, text)
    return RecordResult("pr", path, "local", tips=tuple(tips), warnings=tuple(warnings))


def _refuse_unbuilt(repo: Repo, plan: PlanDir) -> None:
    """A PR needs something built: a commit on the topic's branch in some repo of it.

    Recorded before that, ``pr.md`` moved a run at STRUCTURE straight to SHIPPED
    (the first row of the phase table), and a shipped run's artifacts are no
    longer kept from teardown.
    """
    from router.phase.infer import any_commits, topic_repos

    if any_commits(topic_repos(repo, plan, [])):
        return
    raise RouterError(
        ErrorCode.NOTHING_BUILT,
        f"no repo of {plan.id} has a commit on the topic's branch since the default branch, "
        "so there is nothing to ship; nothing was written. Finish the phase `team-router "
        f"next {plan.id}` names and commit the work, then record the PR",
    )


def _recorded(path: Path) -> tuple[a.RecordedPr, ...] | None:
    """The PRs ``pr.md`` records (() for a local finish); None when there is no pr.md.

    A ``pr.md`` that ``record pr`` did not write is not ours to write over: refused.
    """
    if not os.path.lexists(path):
        return None
    fm = a.read_frontmatter(str(path))
    fields = fm.fields if fm.error is None else {}
    if fields.get("phase") != "pr" or not (fields.get("url") or fields.get("local") == "true"):
        raise RouterError(
            ErrorCode.PR_RECORDED,
            f"{path} exists and is not a record `record pr` wrote (no `phase: pr` with a url "
            "or `local: true`); nothing was written. Move it aside, then record the PR again",
        )
    return a.recorded_prs(path) if fields.get("url") else ()


def _with_pr(
    path: Path, recorded: tuple[a.RecordedPr, ...] | None, new: a.RecordedPr
) -> tuple[a.RecordedPr, ...] | None:
    """The PRs with ``new`` added; None when it is recorded already.

    Each repo has one PR: a second URL for a repo would drop the first, the one way
    pr-cleanup and the user find it again, so it is refused.
    """
    prs = recorded or ()
    for old in prs:
        if old.repo != new.repo:
            continue
        if old.url == new.url:
            return None
        raise RouterError(
            ErrorCode.PR_RECORDED,
            f"{path} already records {old.repo}'s PR {old.url}; a second URL ({new.url}) for "
            f"{old.repo} would drop it, so nothing was written. If that PR was closed for "
            f"good, delete pr.md (or only its {old.repo} entry under prs:), then record again",
        )
    return (*prs, new)


def _refuse_dropping_prs(path: Path, recorded: tuple[a.RecordedPr, ...]) -> None:
    shown = ", ".join(f"{p.repo}: {p.url}" for p in recorded)
    raise RouterError(
        ErrorCode.PR_RECORDED,
        f"{path} already records the PR(s) {shown}; --local would drop them, so nothing "
        "was written. If they were closed for good, delete pr.md, then record again",
    )


def _topic_repo_name(repo: Repo, plan: PlanDir, name: str) -> str:
    """``name`` when it is one of the topic's repos (home, or a repo of repos.md)."""
    from router.phase.infer import topic_repos

    names = [r.name for r in topic_repos(repo, plan, [], listed=True)]
    if name not in names:
        raise RouterError(
            ErrorCode.INVALID_VALUE,
            f"--repo {name!r} is not a repo of {plan.id} ({', '.join(names)}); "
            "name the repo as repos.md and `team-router next` name it",
        )
    return name


def _refuse_dropping_tips(path: Path, tips: list[KeptTip]) -> None:
    """A local finish recorded again must not drop a tip whose branch is gone since.

    ``pr.md`` then holds the only name of those commits (a branch deleted by hand,
    or by a cleanup in that repo): written again, its ``tip`` would read null and
    the commits would be left to ``git gc``.
    """
    if not os.path.lexists(path):
        return
    recorded = a.read_frontmatter(path, typed=True).data.get("repos")
    if not isinstance(recorded, list):
        return  # a URL record, or one this cannot read: _recorded judged it already
    now = {t.name: t for t in tips}
    for old in recorded:
        if not isinstance(old, dict) or not old.get("tip"):
            continue
        new = now.get(str(old.get("name")))
        if new is not None and new.tip is None:
            raise RouterError(
                ErrorCode.PR_RECORDED,
                f"{path} records {new.name}'s tip {old['tip']} on {new.branch}, a branch gone "
                "since: recording again would drop the only name of those commits, so nothing "
                f"was written; `git -C {new.checkout or '<that repo>'} branch {new.branch} "
                f"{old['tip']}` brings the branch back, then record again (or keep this record)",
            )


@record
class KeptTip:
    """Where a repo's topic work stands when the run is finished without a PR."""

    name: str
    checkout: str | None  # the worktree (or the repo) holding the branch; None: not found
    branch: str
    tip: str | None  # None: the branch is gone in that repo
    ahead: int | None  # commits since the merge-base with the default branch; None: unknown
    pushed: bool  # origin's tracking ref (as of the last push or fetch) holds the tip

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "checkout": self.checkout,
            "branch": self.branch,
            "tip": self.tip,
            "ahead": self.ahead,
            "pushed": self.pushed,
        }


def kept_tips(repo: Repo, plan: PlanDir, warnings: list[str]) -> list[KeptTip]:
    """Every repo's branch tip, pushed or not; no fetch, so it works offline."""
    from router.git import Git
    from router.phase.infer import commits_ahead, location, topic_repos

    tips = []
    for topic_repo in topic_repos(repo, plan, warnings):
        where, rev = location(topic_repo)
        git = Git(Path(where)) if where else None
        tip = git.rev_parse(rev) if git else None
        tracking = f"refs/remotes/origin/{topic_repo.branch}"
        pushed = bool(git and tip and git.rev_parse(tracking) and git.is_ancestor(tip, tracking))
        if tip is None:
            warnings.append(f"{topic_repo.name}: no {topic_repo.branch} branch found; no tip kept")
        tips.append(
            KeptTip(
                topic_repo.name, where, topic_repo.branch, tip, commits_ahead(topic_repo), pushed
            )
        )
    if not any(t.ahead for t in tips):
        warnings.append(f"no repo has commits on {plan.id}: the record keeps no work")
    return tips


def record_temp(
    cwd: Path, target: str, value: str, *, wait: float = state.DEFAULT_WAIT
) -> RecordResult:
    """Append an absolute temporary path to ``temp-paths`` (teardown removes it, §12)."""
    if not os.path.isabs(value) or any(ch in value for ch in "\n\r\0"):
        raise RouterError(
            ErrorCode.INVALID_VALUE,
            f"{value!r} is not an absolute path; record the full path of the temp dir",
        )
    if os.path.normpath(value) != value.rstrip("/") or "//" in value:
        # Teardown refuses such a path anyway ("$TMPDIR/." is the temp dir itself).
        raise RouterError(
            ErrorCode.INVALID_VALUE,
            f"{value!r} is not a normalized path; record it without '.', '..' or '//'",
        )
    repo, plan = _existing_plan(cwd, target)
    path = plan.path / a.TEMP_PATHS
    with state.held_lock(repo.common_dir, plan.id, wait=wait):
        lines = a.read_temp_paths(plan.path)
        if value in lines:
            return RecordResult("temp", path, value, existing=True)
        text = "".join(f"{line}\n" for line in [*lines, value])
        state.write_atomic(path, text, errors="surrogateescape")  # a path need not be UTF-8
    return RecordResult("temp", path, value)


# -- helpers ------------------------------------------------------------------------


def _one_of(value: str, allowed: tuple[str, ...], what: str) -> str:
    verdict = a.read_verdict(value, allowed)
    if verdict is None:
        choices = " | ".join(f'"{v}"' if " " in v else v for v in allowed)
        raise RouterError(
            ErrorCode.INVALID_VALUE, f"{value!r} is not a {what}; use one of {choices}"
        )
    return verdict


@record
class _Round:
    """A numbered gate record: what it accepts, its file, and what must hold before it."""

    verdicts: tuple[str, ...]
    what: str  # how the error names a value outside ``verdicts``
    prefix: str  # the record's file name: <prefix>-<n>.md
    template: str
    rounds: Callable[[a.Inventory], tuple[a.Verdict, ...]]  # the rounds the inventory holds
    check: Callable[[a.Inventory], None]  # refuses, under the lock, before the write


def _rounds() -> dict[str, _Round]:
    # Built on use: the refusals are defined below, and `phase` never records.
    return {
        # design-review-<n>.md (n = highest + 1): the design review's verdict
        "verdict": _Round(
            a.DESIGN_VERDICTS,
            "design review verdict",
            "design-review",
            "design-review.md.j2",
            lambda inv: inv.design_reviews,
            _refuse_unrevised,
        ),
        # review-<n>.md: the implement phase's aggregate gate
        "review": _Round(
            a.REVIEW_VERDICTS,
            "review verdict",
            "review",
            "review.md.j2",
            lambda inv: inv.reviews,
            _refuse_unplanned,
        ),
        # tests-<n>.md: the test-first gate the orchestrator ran; RED (the new tests fail by
        # assertion, the static checks pass) moves IMPLEMENT from `tests` to `slices`
        "tests": _Round(
            a.TESTS_VERDICTS,
            "test-first gate verdict",
            "tests",
            "gate.md.j2",
            lambda inv: inv.tests,
            _refuse_unplanned,
        ),
        # verify-<n>.md: every repo's declared checks after the slices
        "verify": _Round(
            a.VERIFY_VERDICTS,
            "verifier result",
            "verify",
            "gate.md.j2",
            lambda inv: inv.verifications,
            _refuse_unplanned,
        ),
    }


def record_round(
    kind: str,
    cwd: Path,
    target: str,
    value: str,
    *,
    body_file: Path | None = None,
    wait: float = state.DEFAULT_WAIT,
) -> RecordResult:
    """Write the next numbered gate record of ``kind`` (verdict, review, tests, verify).

    The value is checked before anything is touched; the numbering and the
    kind's check run under the topic's lock.
    """
    spec = _rounds()[kind]
    verdict = _one_of(value, spec.verdicts, spec.what)
    body = _body(body_file)
    repo, plan = _existing_plan(cwd, target)
    with state.held_lock(repo.common_dir, plan.id, wait=wait):
        inv = a.inventory(str(plan.path), plan.id)
        spec.check(inv)  # under the lock: the files it judges cannot change before the write
        n = a.next_round(spec.rounds(inv))
        path = plan.path / f"{spec.prefix}-{n}.md"
        if os.path.lexists(path):  # numbered from a listing taken under the lock: cannot happen
            raise RouterError(
                ErrorCode.INVALID_VALUE, f"{path} already exists; nothing was written"
            )
        text = _render(spec.template, plan, verdict=verdict, n=n, body=body, kind=kind)
        state.write_atomic(path, text)
    return RecordResult(kind, path, verdict)


def _body(body_file: Path | None) -> str:
    if body_file is None:
        return ""
    if str(body_file) == "-":
        # A reviewer's findings piped in: no scratch file to write and clean up.
        return sys.stdin.read().strip("\n")
    try:
        return body_file.read_text(encoding="utf-8").strip("\n")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise RouterError(
            ErrorCode.INVALID_VALUE, f"--body-file {body_file}: cannot be read ({why})"
        ) from None


def _existing_plan(cwd: Path, target: str) -> tuple[Repo, PlanDir]:
    return resolve_existing(cwd, target, needs=lambda _id: "a record needs the topic's plan dir")


def _render(template: str, plan: PlanDir, **context: object) -> str:
    from router.plandir.templates import render

    return render(
        f"artifacts/{template}",
        topic=a.topic_of(plan.id) or plan.id,
        id=plan.id,
        date=_dt.date.today().isoformat(),
        **context,
    )
