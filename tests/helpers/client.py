"""The real Claude Code client for the end-to-end test: a pinned install, a scripted
stand-in for the Messages API on 127.0.0.1, and one bounded ``claude -p`` run.

The model is the only fake. The client binary, the plugin (loaded from this checkout
with ``--plugin-dir``), git and team-router are real: what a test asserts is what the
client really sent to the model and what it really did with the model's tool calls.

``python tests/helpers/client.py install`` installs the pinned client (``.ci/run`` does this
before the tests, so registry trouble shows up as an install failure, not a test one);
the test fixture calls the same installer, which is a no-op once the pinned version is
in place, so a plain ``pytest`` from a fresh checkout works too.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from filelock import FileLock

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "@anthropic-ai/claude-code"
# package.json pins the exact version; package-lock.json pins every tarball's integrity.
PIN_DIR = PROJECT_ROOT / "tests" / "e2e"
# Outside the checkout: a marketplace install from a local directory copies the whole
# directory, and the client is ~400 MB. One copy per pinned version, shared by every
# checkout and worktree. Read once at import, before any test points HOME elsewhere.
CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
INSTALL_COMMAND = f"{sys.executable} tests/helpers/client.py install"
NPM_TIMEOUT = 600

Block = dict[str, Any]


class ClientMissing(RuntimeError):
    """The pinned client is not installed and could not be installed."""


# -- the pinned install ------------------------------------------------------------------


def pinned_version() -> str:
    manifest = json.loads((PIN_DIR / "package.json").read_text(encoding="utf-8"))
    return str(manifest["dependencies"][PACKAGE])


INSTALL_DIR = CACHE_HOME / "team-router" / f"claude-code-{pinned_version()}"


def _native_binary() -> Path | None:
    # --ignore-scripts skips the postinstall that copies the platform binary over the
    # wrapper's bin/claude.exe stub, so run the platform package's binary directly (it
    # needs no Node at run time).
    scope = INSTALL_DIR / "node_modules" / "@anthropic-ai"
    for package in sorted(scope.glob("claude-code-*")):
        for name in ("claude", "claude.exe"):
            if (package / name).is_file():
                return package / name
    return None


def client_version(binary: Path) -> str | None:
    try:
        proc = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    words = proc.stdout.split()
    return words[0] if proc.returncode == 0 and words else None


def ensure_client() -> Path:
    """The pinned client's binary, installed with ``npm ci`` first if it is missing.

    A file lock makes concurrent callers (pytest-xdist workers) install once.
    """
    INSTALL_DIR.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(INSTALL_DIR.parent / "claude-install.lock")):
        pin = pinned_version()
        binary = _native_binary()
        if binary is not None and client_version(binary) == pin:
            return binary
        _npm_ci(pin)
        binary = _native_binary()
        found = client_version(binary) if binary is not None else None
        if binary is None or found != pin:
            raise ClientMissing(
                f"npm ci left no runnable {PACKAGE} {pin} in {INSTALL_DIR} (found {found}); "
                f"run `{INSTALL_COMMAND}` and read its output"
            )
        return binary


def _npm_ci(pin: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise ClientMissing(
            f"npm is not on PATH: the end-to-end test needs {PACKAGE} {pin}; install Node.js "
            f"(npm) and run `{INSTALL_COMMAND}`"
        )
    INSTALL_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(PIN_DIR / name, INSTALL_DIR / name)
    proc = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", str(INSTALL_DIR)],
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT,
        check=False,
    )
    if proc.returncode != 0:
        raise ClientMissing(
            f"npm ci of {PACKAGE} {pin} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
        )


# -- the scripted stand-in for the Messages API ------------------------------------------


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool(name: str, **tool_input: Any) -> Block:
    return {"type": "tool_use", "name": name, "input": tool_input}


@dataclass(frozen=True)
class Request:
    """One POST the client sent, with its JSON body."""

    path: str
    body: dict[str, Any]

    @property
    def has_tools(self) -> bool:
        return bool(self.body.get("tools"))

    @property
    def messages_text(self) -> str:
        """Every message of the conversation as JSON text, to look for what reached the model."""
        return json.dumps(self.body.get("messages", []), ensure_ascii=False)

    @property
    def system_text(self) -> str:
        return _plain(self.body.get("system"))

    def first_user_text(self) -> str:
        for message in self.body.get("messages", []):
            if message.get("role") == "user":
                return _plain(message.get("content"))
        return ""

    def tool_results(self) -> list[Block]:
        return [
            block
            for message in self.body.get("messages", [])
            if message.get("role") == "user" and isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]


def result_text(block: Block) -> str:
    return _plain(block.get("content"))


def _plain(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_plain(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


Turns = Generator[list[Block], list[str], None]


class Conversation:
    """A script written as a generator: it yields each turn's blocks and is sent the
    texts of the tool results that turn got back, in the order of its tool calls.

    The client re-sends the whole conversation on every request, so the turn a request
    asks for is the number of assistant messages in it; a repeated request (a retry)
    gets the answer it got before.
    """

    def __init__(self, turns: Turns) -> None:
        self._turns = turns
        self._answers: list[list[Block]] = []
        self._lock = threading.Lock()

    def __call__(self, request: Request) -> list[Block]:
        messages = request.body.get("messages", [])
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        with self._lock:
            if turn < len(self._answers):
                return self._answers[turn]
            try:
                blocks = (
                    next(self._turns) if turn == 0 else self._turns.send(_last_results(messages))
                )
            except StopIteration:
                blocks = [text("done")]
            self._answers.append(blocks)
            return blocks


def _last_results(messages: list[dict[str, Any]]) -> list[str]:
    got = {
        b["tool_use_id"]: result_text(b)
        for m in messages
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    }
    asked = [m for m in messages if m.get("role") == "assistant" and isinstance(m["content"], list)]
    if not asked:
        return []
    return [got.get(b["id"], "") for b in asked[-1]["content"] if b.get("type") == "tool_use"]


# The script answers each request that carries tools (the conversation, or a subagent's);
# requests without tools (titles, summaries) get a plain text answer.
Script = Callable[[Request], list[Block]]


@dataclass
class StandIn:
    """A Messages API on 127.0.0.1 that answers from ``script`` and records every request."""

    script: Script
    # count_tokens: 1 for everything, or (estimate=True) a quarter of the characters sent,
    # the ratio the client itself uses where it estimates (skills), so that what it
    # reports for agents and skills is on one scale.
    estimate: bool = False
    requests: list[Request] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> StandIn:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def conversation(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.has_tools and r.path.startswith("/v1/messages")]

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def answer(self, request: Request) -> tuple[list[Block], str]:
        self.record(request)
        if not request.has_tools:
            return [text("ok")], "end_turn"
        try:
            blocks = self.script(request)
        except Exception as exc:  # a script bug must end the run, not hang it in retries
            self.errors.append(f"{type(exc).__name__}: {exc}")
            blocks = [text(f"stand-in script failed: {exc}")]
        blocks = [self._with_id(b) for b in blocks]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return blocks, stop

    def _with_id(self, block: Block) -> Block:
        if block["type"] != "tool_use" or "id" in block:
            return block
        with self._lock:
            return {**block, "id": f"toolu_e2e_{next(self._ids):04d}"}

    def tokens_of(self, body: dict[str, Any]) -> int:
        if not self.estimate:
            return 1
        sent = "".join(_plain(m.get("content")) for m in body.get("messages", []))
        sent += json.dumps(body.get("tools") or "") + _plain(body.get("system"))
        return -(-len(sent) // 4)

    def message_id(self) -> str:
        with self._lock:
            return f"msg_e2e_{next(self._ids):04d}"


def _handler(standin: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._json({})

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(size) or b"{}")
            except ValueError:
                body = {}
            path = self.path
            if not path.startswith("/v1/messages") or "count_tokens" in path:
                standin.record(Request(path, body))
                self._json({"input_tokens": standin.tokens_of(body)})
                return
            blocks, stop = standin.answer(Request(path, body))
            message = {
                "id": standin.message_id(),
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "stand-in"),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
            if body.get("stream"):
                self._stream(message, blocks, stop)
            else:
                self._json({**message, "content": blocks, "stop_reason": stop})

        def _json(self, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, message: dict[str, Any], blocks: list[Block], stop: str) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self._event("message_start", message=message)
            for index, block in enumerate(blocks):
                if block["type"] == "text":
                    start: Block = text("")
                    delta: Block = {"type": "text_delta", "text": block["text"]}
                else:
                    start = {**block, "input": {}}
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                self._event("content_block_start", index=index, content_block=start)
                self._event("content_block_delta", index=index, delta=delta)
                self._event("content_block_stop", index=index)
            self._event(
                "message_delta",
                delta={"stop_reason": stop, "stop_sequence": None},
                usage={"output_tokens": 1},
            )
            self._event("message_stop")
            self.close_connection = True

        def _event(self, kind: str, **data: Any) -> None:
            payload = json.dumps({"type": kind, **data})
            self.wfile.write(f"event: {kind}\ndata: {payload}\n\n".encode())
            self.wfile.flush()

    return Handler


# -- one bounded client run --------------------------------------------------------------


@dataclass(frozen=True)
class ClientRun:
    code: int
    events: list[dict[str, Any]]
    stderr: str

    def init(self) -> dict[str, Any]:
        return next(e for e in self.events if e.get("subtype") == "init")

    def result(self) -> dict[str, Any]:
        return next(e for e in self.events if e.get("type") == "result")


# Variables of the developer's own client setup that would point the run elsewhere.
_FOREIGN = ("ANTHROPIC_", "CLAUDE_", "CLAUDECODE", "AWS_BEARER_TOKEN_BEDROCK")


def run_client(
    binary: Path,
    standin: StandIn,
    prompt: str,
    *,
    cwd: Path,
    home: Path,
    allowed_tools: str = "Bash(team-router:*)",
    extra: tuple[str, ...] = (),
    timeout: float = 45,
    path_first: tuple[Path, ...] = (),
    plugin_dir: Path | None = PROJECT_ROOT,
) -> ClientRun:
    """``claude -p prompt`` against the stand-in, in ``cwd``: this checkout as a plugin
    (``--plugin-dir``), or with ``plugin_dir`` None the plugins installed under ``home``.

    ``path_first``: directories before the venv's on PATH (a wrapper that logs the calls).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
    env.update(
        HOME=str(home),
        # The venv's bin first: the plugin's hook and the model's Bash calls find the
        # team-router under test.
        PATH=os.pathsep.join(
            [*map(str, path_first), str(Path(sys.executable).parent), env.get("PATH", "")]
        ),
        ANTHROPIC_BASE_URL=standin.url,
        ANTHROPIC_API_KEY="sk-ant-e2e-dummy",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    argv = [str(binary), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    if plugin_dir is not None:
        argv += ["--plugin-dir", str(plugin_dir)]
    argv += ["--allowedTools", allowed_tools, *extra]
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(
            f"claude -p did not finish in {timeout}s; stand-in saw {len(standin.requests)} "
            f"requests; stderr:\n{err[-2000:]}"
        ) from None
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return ClientRun(proc.returncode, events, err)


def run_plain(binary: Path, *args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """A client subcommand that talks to no model (``claude plugin validate ...``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
    env.update(HOME=str(home), DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1")
    env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    return subprocess.run(
        [str(binary), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit(f"usage: {sys.argv[0]} install")
    print(f"{PACKAGE} {pinned_version()}: {ensure_client()}")
