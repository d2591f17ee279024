"""router.github: origin URLs to --repo, PR JSON, and gh unavailable as a value, not a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.fakegh import OWNER, hide_gh, install_fake_gh, pr

from router import github
from router.github import GhFailed, GhTrouble, GitHub, RepoSlug, Unavailable
from router.reasons import Reason, Why

OID = "a" * 40
MERGE = "b" * 40
URL = f"https://github.com/{OWNER}/web.git"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("https://github.com/acme/web", RepoSlug("github.com", "acme", "web")),
        ("https://github.com/acme/web/", RepoSlug("github.com", "acme", "web")),
        ("https://user:token@github.com/acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("ssh://git@github.com/acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("ssh://git@github.com:22/acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("git@github.com:acme/web.git", RepoSlug("github.com", "acme", "web")),
        ("git@github.com:acme/a.github.io.git", RepoSlug("github.com", "acme", "a.github.io")),
        ("git@ghe.example.com:Team-1/svc_api", RepoSlug("ghe.example.com", "Team-1", "svc_api")),
    ],
)
def test_remote_url_forms_name_the_repo(url: str, expected: RepoSlug) -> None:
    assert github.parse_remote_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        None,
        "",
        "/srv/git/web.git",
        "file:///srv/git/web.git",
        "http://github.com/acme/web.git",
        "https://github.com/acme/web.git?x=1",
        "https://github.com/acme/web/extra.git",
        "https://github.com/acme/..",
        "git@github.com:/acme/web.git",
        "https://github.com/-acme/web.git",
        "https://github.com/acme/we b.git",
        "ext::sh -c touch% x",
    ],
)
def test_anything_else_names_no_repo(url: str | None) -> None:
    assert github.parse_remote_url(url) is None


def test_repo_arg_carries_the_host_only_off_github_com() -> None:
    assert RepoSlug("github.com", "acme", "web").arg == "acme/web"
    assert RepoSlug("ghe.example.com", "acme", "web").arg == "ghe.example.com/acme/web"


def test_pr_urls_parse_strictly() -> None:
    parsed = github.parse_pr_url("https://github.com/acme/web/pull/42")
    assert parsed == github.PrUrl(RepoSlug("github.com", "acme", "web"), 42)
    assert github.parse_pr_url("https://github.com/acme/web/pull/42/") is not None
    for bad in (
        "https://github.com/acme/web/pull/42/files",
        "https://github.com/acme/web/pull/4x",
        "https://github.com/acme/web/issues/42",
        "http://github.com/acme/web/pull/42",
        "https://github.com/acme/web/pull/٤٢",
        "https://github.com/acme/web/pull/42\n",
    ):
        assert github.parse_pr_url(bad) is None, bad


def test_missing_gh_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_gh(tmp_path, monkeypatch)
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, Unavailable)
    assert "not installed" in str(hub)
    assert str(hub).startswith("gh unavailable")


def test_unauthenticated_gh_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_gh(tmp_path, monkeypatch, authenticated=False)
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, Unavailable)
    assert "not authenticated" in hub.reason
    assert fake.calls() == [["auth", "status", "--hostname=github.com"]]


def test_why_gh_is_unavailable_is_a_kind_with_ghs_own_line_verbatim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The record keeps what gh said and which trouble it was, never a sentence of ours.
    install_fake_gh(tmp_path, monkeypatch, authenticated=False)
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, Unavailable)
    line = "You are not logged into any GitHub hosts. To log in, run: gh auth login"
    failed = Why(Reason.GH_UNAVAILABLE, kind="failed", command="auth status", text=line)
    assert hub.why == Why(
        Reason.GH_UNAVAILABLE, kind="not-authenticated", other="github.com", parts=(failed,)
    )
    assert str(hub) == (
        f"gh unavailable: gh is not authenticated for github.com (gh auth status failed: {line})"
    )
    assert Why.from_json(hub.why.to_json()) == hub.why
    hide_gh(tmp_path, monkeypatch)
    missing = github.connect(URL, cwd=tmp_path)
    assert isinstance(missing, Unavailable)
    assert missing.why == Why(Reason.GH_UNAVAILABLE, kind=GhTrouble.NOT_INSTALLED)
    assert str(missing) == "gh unavailable: gh is not installed or not on PATH"
    elsewhere = github.connect("/srv/git/web.git", cwd=tmp_path)
    assert isinstance(elsewhere, Unavailable)
    assert elsewhere.why == Why(Reason.GH_UNAVAILABLE, kind=GhTrouble.NOT_ON_GITHUB)
    assert elsewhere.reason == "origin's URL does not name a GitHub repository"


def test_a_non_github_origin_never_reaches_gh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_gh(tmp_path, monkeypatch)
    hub = github.connect("/srv/git/web.git", cwd=tmp_path)
    assert isinstance(hub, Unavailable)
    assert fake.calls() == []


def test_every_pr_call_names_the_repo_and_asks_for_fields_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_gh(
        tmp_path,
        monkeypatch,
        prs=(
            pr(7, "topic", OID, merge_commit=MERGE),
            pr(8, "child", OID, state="OPEN", base="topic"),
        ),
    )
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, GitHub)
    seven = hub.view(7)
    assert (seven.number, seven.state, seven.head_ref, seven.head_oid) == (
        7,
        "MERGED",
        "topic",
        OID,
    )
    assert seven.merge_commit == MERGE and seven.merged and seven.same_repo(hub.slug)
    assert [p.number for p in hub.list_by_head("topic")] == [7]
    assert [p.number for p in hub.list_by_base("topic")] == [8]
    hub.close(8)
    assert fake.pr_state(8) == "CLOSED"
    pr_calls = [c for c in fake.calls() if c[0] == "pr"]
    assert len(pr_calls) == 4
    for call in pr_calls:
        assert "--repo=acme/web" in call
        assert not any("title" in a or "body" in a for a in call)


def test_a_fork_pr_is_not_same_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_gh(tmp_path, monkeypatch, prs=(pr(9, "topic", OID, fork_owner="mallory"),))
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, GitHub)
    (fork,) = hub.list_by_head("topic")
    assert fork.cross_repo and not fork.same_repo(hub.slug)
    # Even a PR that claims not to be cross-repo is not ours when its head owner differs.
    spoofed = github.parse_pr(
        {**pr(9, "topic", OID, fork_owner="mallory"), "isCrossRepository": False}
    )
    assert not spoofed.same_repo(hub.slug)


def test_a_failing_gh_raises_gh_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_gh(tmp_path, monkeypatch, prs=(pr(7, "topic", OID),))
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, GitHub)
    fake.update(fail=True)
    with pytest.raises(GhFailed, match="502") as raised:
        hub.view(7)
    line = "HTTP 502: Bad Gateway (https://api.github.com/graphql)"
    assert raised.value.why == Why(
        Reason.GH_UNAVAILABLE, kind="failed", command="pr view", text=line
    )
    assert str(raised.value) == f"gh unavailable: gh pr view failed: {line}"
    with pytest.raises(GhFailed):
        hub.list_by_head("topic")


def test_an_unknown_pr_raises_gh_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_gh(tmp_path, monkeypatch)
    hub = github.connect(URL, cwd=tmp_path)
    assert isinstance(hub, GitHub)
    with pytest.raises(GhFailed, match="Could not resolve"):
        hub.view(404)


def test_a_hung_gh_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_gh(tmp_path, monkeypatch, prs=(pr(7, "topic", OID),))
    # The timeout leaves the answering gh room on a loaded machine; the hung one sleeps far longer.
    hub = github.connect(URL, cwd=tmp_path, timeout=3)
    assert isinstance(hub, GitHub), hub
    fake.update(sleep=60)
    with pytest.raises(GhFailed, match="timed out") as raised:
        hub.view(7)
    assert raised.value.why == Why(
        Reason.GH_UNAVAILABLE, kind="timed-out", command="pr view", count=3
    )
    assert str(raised.value) == "gh unavailable: gh pr view timed out after 3s"


@pytest.mark.parametrize(
    "broken",
    [
        [],
        {"number": "7"},
        {**pr(7, "t", OID), "state": "WEIRD"},
        {**pr(7, "t", OID), "headRefName": None},
        {**pr(7, "t", OID), "isCrossRepository": "no"},
        {**pr(7, "t", OID), "number": True},
    ],
)
def test_malformed_pr_json_is_refused(broken: object) -> None:
    with pytest.raises(GhFailed):
        github.parse_pr(broken)


@pytest.mark.parametrize(
    ("broken", "kind", "words"),
    [
        ([], GhTrouble.PR_NOT_OBJECT, "gh answered a PR that is not a JSON object"),
        ({"number": "7"}, GhTrouble.PR_UNNUMBERED, "gh answered a PR without a valid number"),
        (
            {**pr(7, "t", OID), "state": "WEIRD"},
            GhTrouble.PR_STATE_UNKNOWN,
            "gh answered PR #7 with an unknown state",
        ),
        (
            {**pr(7, "t", OID), "headRefName": None},
            GhTrouble.PR_NO_HEAD,
            "gh answered PR #7 without its head and base",
        ),
        (
            {**pr(7, "t", OID), "isCrossRepository": "no"},
            GhTrouble.PR_NO_CROSS,
            "gh answered PR #7 without isCrossRepository",
        ),
    ],
)
def test_a_malformed_pr_is_a_kind_said_as_before(
    broken: object, kind: GhTrouble, words: str
) -> None:
    with pytest.raises(GhFailed) as raised:
        github.parse_pr(broken)
    assert raised.value.why.kind == kind
    assert raised.value.why.text == ""
    assert str(raised.value) == f"gh unavailable: {words}"


def test_a_malformed_merge_commit_is_no_merge_commit() -> None:
    parsed = github.parse_pr({**pr(7, "t", OID), "mergeCommit": {"oid": "not-a-sha; rm -rf /"}})
    assert parsed.merge_commit is None
