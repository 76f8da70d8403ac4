"""The audit over Streamable HTTP (``--url``) against its hand-written oracle, fixtures/audit/http.json.

Each case serves a course server mode on 127.0.0.1 (``course_lib.loopback.serve_http``: a real
subprocess, stopped when its block ends) and audits its URL with ``era="all"``; the card must hold
exactly the oracle's keys and verdicts. One case goes through the command line. Then what an HTTP
answer that is no reply gives: a refused connection, an error status with a body that is not
JSON, a server that never answers; and the command line's usage errors.
"""
import http.server
import json
import socket
import subprocess
import sys
import threading

import anyio
import pytest

from course_lib.audit import audit
from course_lib.audit.http import header_value
from course_lib.loopback import serve_http
from course_lib.paths import ROOT, fixture

from test_audit_unit import assert_card, card as stdio_card

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("audit", "http.json").read_text(encoding="utf-8"))
STDIO_ONLY = ("stdout.before-input", "stderr", "exit.eof", "stdout.noise", "stdout.frames", "exit.client-died",
              "exit.leftovers")


def card(name: str) -> dict[str, str]:
    return stdio_card(name, ORACLE)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "course_lib.audit", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


async def audited(name: str) -> dict:
    case = ORACLE["cases"][name]
    server, mode = case["server"][0], case["server"][2]
    options = {k: case[k] for k in ("budget", "request_timeout") if k in case}
    async with serve_http(server, mode=mode) as site:
        if case.get("cli"):
            done = await anyio.to_thread.run_sync(lambda: cli("--json", "--url", site.url))
            data = json.loads(done.stdout)
            assert done.returncode == data["exit_code"]
        else:
            data = (await audit(url=site.url, **options)).to_dict()
    assert site.returncode is not None and site.swept == [], "the served process was stopped, nothing left"
    return data


@pytest.mark.parametrize("name", sorted(ORACLE["cases"]))
async def test_the_audit_over_http_gives_each_mode_its_card(name):
    data = await audited(name)
    assert_card(data, name, ORACLE)
    assert data["processes"] == 0, "over HTTP the audit starts no server process"
    for line in data["lines"]:
        if line["check"] in STDIO_ONLY:
            assert line["verdict"] == "INFO" and line["detail"].startswith("not checked over HTTP: stdio only")


def test_the_oracle_is_written_by_hand_for_every_verdict_it_needs():
    """The negative controls: a check fails on purpose (catalog cycle, modern's echo, a hang)."""
    failing = {k for name in ORACLE["cases"] for k, v in card(name).items() if v == "FAIL"}
    assert {"list.walk[tools]@legacy", "list.walk[tools]@2026-07-28", "tool.invalid-input[echo]@legacy"} <= failing


def unused_port() -> socket.socket:
    """A socket bound on 127.0.0.1 that does not listen: a connection to its port is refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


async def test_a_refused_connection_is_each_era_line_saying_so():
    with unused_port() as sock:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        report = await audit(url=url, budget=5, request_timeout=2)
    lines = {line.name: line for line in report.lines}
    for name in ("era.handshake@legacy", "era.envelope@2026-07-28"):
        assert lines[name].verdict == "FAIL"
        assert lines[name].detail.startswith("http_connect: no HTTP answer to request 1"), lines[name].detail
    assert lines["era.auto@auto"].verdict == "FAIL"
    assert report.exit_code == 1 and report.processes == 0


async def test_an_error_status_with_a_body_that_is_not_json_names_what_came_back():
    async with serve_http("catalog", mode="normal") as site:  # a path the server does not serve: 404, text
        report = await audit(url=site.url.replace("/mcp", "/course-audit-no-such-path"), budget=5, request_timeout=2)
    lines = {line.name: line for line in report.lines}
    assert lines["era.handshake@legacy"].verdict == "FAIL"
    assert lines["era.handshake@legacy"].detail.startswith("http_status: HTTP 404"), lines["era.handshake@legacy"]
    assert "the body is not JSON" in lines["era.handshake@legacy"].detail
    assert lines["era.envelope@2026-07-28"].verdict == "FAIL"


class Page(http.server.BaseHTTPRequestHandler):
    """Answers every POST with a page that is no JSON-RPC reply (as a misrouted proxy does)."""

    answers = {"/html": (200, "text/html", b"<html><body>Welcome</body></html>"),
               "/oops": (500, "text/plain", b"Internal Server Error")}

    def do_POST(self):  # noqa: N802 (the stdlib's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, kind, body = self.answers[self.path]
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("path, check, said", [("/html", "http_body", "HTTP 200 (text/html)"),
                                               ("/oops", "http_status", "HTTP 500 (text/plain)")])
async def test_a_page_that_is_not_json_rpc_is_named_by_its_status_and_body(path, check, said):
    """A plain HTTP server on 127.0.0.1 (in this interpreter): its answer is the era lines' verdict."""
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page) as site:
        thread = threading.Thread(target=site.serve_forever, daemon=True)
        thread.start()
        try:
            report = await audit(url=f"http://127.0.0.1:{site.server_address[1]}{path}", budget=5, request_timeout=2)
        finally:
            site.shutdown()
            thread.join()
    lines = {line.name: line for line in report.lines}
    for name, method in (("era.handshake@legacy", "initialize"), ("era.envelope@2026-07-28", "server/discover")):
        assert lines[name].verdict == "FAIL"
        assert lines[name].detail.startswith(f"{check}: {said} to request 1 ({method}): the body is not JSON: "), \
            lines[name].detail


async def test_a_server_that_never_answers_gets_its_verdict_within_the_request_budget():
    """A listening socket that accepts and never answers: every era line is a timeout that names its budget."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)  # the kernel accepts the connections; nothing ever reads them
        report = await audit(url=f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", budget=4, request_timeout=1)
    lines = {line.name: line for line in report.lines}
    for name in ("era.handshake@legacy", "era.envelope@2026-07-28"):
        assert lines[name].verdict == "FAIL"
        assert lines[name].detail == "reply_timeout: no reply to request 1 " + (
            "(initialize)" if "legacy" in name else "(server/discover)") + " within 1 s", lines[name].detail


@pytest.mark.parametrize("args", [("--url", "http://127.0.0.1:9/mcp", "--", sys.executable, "-V"),
                                  ("--url", "http://127.0.0.1:9/mcp", "--env", "A=1"),
                                  ("--url", "127.0.0.1:9/mcp"), ()])
def test_a_url_and_a_command_together_are_a_usage_error(args):
    done = cli(*args)
    assert done.returncode == 2, done.stderr
    assert "usage:" in done.stderr and done.stdout == ""


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_every_post_carries_the_headers_of_its_era(era):
    """What the served server recorded of each POST: 2026-07-28 mirrors the version and the method
    (and the name of a call) in headers; 2025-11-25 sends the negotiated version after initialize."""
    async with serve_http("modern", mode="modern") as site:
        report = await audit(url=site.url, era=era)
    assert report.eras[era] == "supported"
    posts = [entry for entry in site.headers() if entry["body_method"] is not None]
    assert posts, "the server recorded the audit's POSTs"
    for entry in posts:
        if era == "2026-07-28":
            assert entry["mcp-protocol-version"] == era and entry["mcp-method"] == entry["body_method"], entry
            assert (entry["mcp-name"] is not None) == (entry["body_method"] == "tools/call"), entry
        else:
            want = None if entry["body_method"] == "initialize" else "2025-11-25"
            assert entry["mcp-protocol-version"] == want and entry["mcp-method"] is None, entry


def test_a_name_that_is_not_header_safe_is_sent_as_the_base64_sentinel():
    """The spec's Value Encoding (plain ASCII as it is; anything else base64); in-process."""
    assert header_value("get_weather") == "get_weather"
    assert header_value("file:///a b.txt") == "file:///a b.txt"
    assert header_value("café") == "=?base64?Y2Fmw6k=?="
    assert header_value(" padded") == "=?base64?IHBhZGRlZA==?="
