"""Envelope controls: a real atlas session captured by the strict client, then replayed
through a stand-in server with one damaged reply at a time, in a normal and a ``python -O``
interpreter. Each damaged replay must fail at its named check; a failure anywhere else, or
a replay that passes, is a wrong outcome.

``capture()`` records the session against the real atlas server. ``run_controls()`` writes
one capture file per case and starts one client process per interpreter mode
(``python [-O] -m course_lib.chapters.envelope_controls replay DIR``); that process replays every case against
its own stand-in process (``course_lib/servers/_standin.py``) and prints one JSON line per case.
"""
from __future__ import annotations

import copy
import json
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio

from course_lib.errors import CheckFailed, CourseError
from course_lib._runtime.process import STDERR_LOG, started_server
from course_lib.paths import ROOT, fixture
from course_lib.line_checks import CHECKS, asserts_active, check_reply, python_argv
from course_lib.line_client import LineClient
from course_lib.protocol import INTERNAL_ERROR, LEGACY, LEGACY_VERSION

STANDIN = Path(__file__).parents[1] / "servers" / "_standin.py"
MODES = ("normal", "-O")
CHECKERS = ("strict", "asserts")


def load_expected() -> dict:
    return json.loads(fixture("atlas", "expected.json").read_text(encoding="utf-8"))


class ContentMismatch(CourseError):
    """A reply passed the envelope checks but its content is not what the oracle says."""

    reason = "content"


def _verify(condition: bool, label: str) -> None:
    if not condition:  # explicit, like the envelope checks
        raise ContentMismatch(f"content check failed: {label}")


async def atlas_session(wire: LineClient, expected: dict | None = None) -> int:
    """A fixed atlas session with content checks against the oracle; returns the check count."""
    expected = expected or load_expected()
    checks = 0

    def verify(condition: bool, label: str) -> None:
        nonlocal checks
        _verify(condition, label)
        checks += 1

    if wire.era == LEGACY:
        init = wire.exchanges[0].reply["result"]
        verify(init["protocolVersion"] == LEGACY_VERSION, "negotiated protocol")
        caps = init["capabilities"]
        verify("resources" in caps and "prompts" in caps and "tools" not in caps, "capabilities: no tools")
    listed = (await wire.result("resources/list"))["resources"]
    verify([r["uri"] for r in listed] == [r["uri"] for r in expected["resources"]], "resource list")
    texts = {}
    for resource in expected["resources"]:
        contents = (await wire.result("resources/read", {"uri": resource["uri"]}))["contents"]
        verify(len(contents) == 1 and contents[0]["uri"] == resource["uri"]
               and contents[0]["mimeType"] == expected["mime_type"]
               and resource["marker"] in contents[0]["text"], "read " + resource["uri"])
        texts[resource["uri"]] = contents[0]["text"]
    templates = (await wire.result("resources/templates/list"))["resourceTemplates"]
    verify([t["uriTemplate"] for t in templates] == [expected["template"]], "template")
    refused = await wire.request("resources/read", {"uri": "file:///etc/passwd"})
    verify(refused.get("error", {}).get("code") == expected["not_found"]["classic"][wire.era], "file URI refused")
    prompt = (await wire.result("prompts/get", {"name": expected["prompt"]["name"],
                                                "arguments": {"focus": "consistency"}}))["messages"]
    verify({m["content"]["resource"]["uri"]: m["content"]["resource"]["text"] for m in prompt[1:]} == texts,
           "embedded resources equal the reads")
    bad = await wire.request("prompts/get", {"name": expected["prompt"]["name"], "arguments": {}})
    verify(bad.get("error", {}).get("code") == expected["prompt"]["error_code"], "missing focus refused")
    tools = await wire.request("tools/list")
    verify(tools.get("error", {}).get("code") == expected["tools_list"]["code"], "no tools")
    return checks


async def capture(era: str = "legacy") -> dict:
    """Run the atlas session on the real server with the strict client; return the capture."""
    async with LineClient.for_server("atlas", era=era) as wire:
        checks = await atlas_session(wire)
    return {"sdk": wire.sdk, "era": era, "content_checks": checks, "exit": asdict(wire.exit),
            "exchanges": [{"request": x.request, **({} if x.reply is None else {"reply": x.reply})}
                          for x in wire.exchanges]}


def damaged(recorded: dict, case: str) -> dict:
    """A copy of the capture with one thing wrong; the first reply (to request id 1) is damaged."""
    out = copy.deepcopy(recorded)
    out.pop("exit", None)
    first = next(x for x in out["exchanges"] if "reply" in x)
    reply = first["reply"]
    if case == "valid":
        pass
    elif case == "wrong-jsonrpc":
        reply["jsonrpc"] = "1.0"
    elif case == "wrong-id":
        reply["id"] = 999
    elif case == "boolean-id":
        reply["id"] = True  # the request id is 1, and True == 1 in Python
    elif case == "result-and-error":
        reply["error"] = {"code": INTERNAL_ERROR, "message": "injected"}
    elif case == "non-object":
        first["reply"] = []
    elif case == "wrong-sdk":
        out["sdk"] = "1.29.0"  # the capture claims another SDK than the installed one
    elif case == "stdout-banner":
        out["faults"] = {"banner": "atlas server ready"}
    elif case == "stderr-line":
        out["faults"] = {"stderr": "warning: cache is cold"}
    elif case == "linger":
        out["faults"] = {"linger": 30}
        out["exit_grace"] = 1.0
    elif case == "trailing-line":
        out["faults"] = {"trailing": "bye"}
    elif case == "exit-code":
        out["faults"] = {"exit_code": 1}
    elif case == "request-mismatch":
        out["exchanges"][3]["request"]["params"]["uri"] += "-edited"  # the client will not send this
    elif case == "mute":
        out["faults"] = {"mute": True}
        out["reply_timeout"] = 1.0
    else:
        raise ValueError(f"unknown case {case!r}")
    return out


def check_reply_with_asserts(line: bytes, request_id: int) -> dict:
    """The envelope checks written the tempting way: ``assert`` and ``==``. Do not use."""
    reply = json.loads(line)
    assert isinstance(reply, dict), "response object"
    assert reply["jsonrpc"] == "2.0", "jsonrpc version"
    assert reply["id"] == request_id, "response id"  # True == 1
    assert ("result" in reply) != ("error" in reply), "result xor error"
    return reply


@dataclass
class ControlRun:
    """The outcome of one replay."""

    case: str
    mode: str
    checker: str
    optimize: int
    asserts_active: bool
    started: bool
    failed_at: str | None  # a check name, "passed", or the type of an unexpected exception
    message: str
    replies_checked: int
    exit_clean: bool | None


async def _replay_one(path: Path, checker: str) -> dict:
    recorded = json.loads(path.read_text(encoding="utf-8"))
    argv = python_argv(str(STANDIN), str(path))
    wire = LineClient(argv, era=recorded["era"], sdk=recorded["sdk"], server_messages="judge",
                      reply_timeout=recorded.get("reply_timeout", 30.0),
                      exit_grace=recorded.get("exit_grace", 10.0),
                      checker=check_reply if checker == "strict" else check_reply_with_asserts)
    failed_at, message = "passed", ""
    try:
        async with wire:
            await atlas_session(wire)
    except CheckFailed as exc:
        failed_at, message = exc.check, exc.message
    except CourseError as exc:
        failed_at, message = exc.reason, str(exc)
    except Exception as exc:  # the assert-based checker fails (or not) in other ways
        failed_at, message = type(exc).__name__, str(exc)
    return {"case": path.stem, "checker": checker, "optimize": sys.flags.optimize,
            "asserts_active": asserts_active(), "started": wire.started, "failed_at": failed_at,
            "message": message, "replies_checked": wire.replies_checked,
            "exit_clean": None if wire.exit is None else wire.exit.clean}


async def _replay_dir(directory: Path, checkers: list[str]) -> None:
    for checker in checkers:
        for path in sorted(directory.glob("*.json")):
            print(json.dumps(await _replay_one(path, checker)), flush=True)


async def run_controls(recorded: dict, cases: list[str], *, modes=MODES, checkers=("strict",),
                       timeout: float = 300.0) -> list[ControlRun]:
    """Replay ``recorded`` damaged by each case, in each interpreter mode, with each checker."""
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    for checker in checkers:
        if checker not in CHECKERS:
            raise ValueError(f"checker must be one of {CHECKERS}, got {checker!r}")
    runs: list[ControlRun] = []
    for mode in modes:
        directory = Path(tempfile.mkdtemp(prefix="course-envelope-"))
        try:
            for case in cases:
                (directory / f"{case}.json").write_text(json.dumps(damaged(recorded, case)), encoding="utf-8")
            argv = python_argv("-m", "course_lib.chapters.envelope_controls", "replay", str(directory), *checkers,
                               optimize=mode == "-O")
            out = bytearray()
            with anyio.fail_after(timeout):
                async with started_server(argv, workdir=directory, name="envelope replay") as process:
                    await process.stdin.aclose()
                    async for chunk in process.stdout:
                        out.extend(chunk)
                    await process.wait_exit(timeout)
            if process.returncode != 0:
                stderr = (directory / STDERR_LOG).read_text(errors="replace")
                raise CourseError(f"the replay process failed ({process.returncode}): "
                                  f"{stderr.strip()[-300:]}", reason="replay_failed")
            for line in out.decode().splitlines():
                row = json.loads(line)
                started_file = (directory / row["case"]).with_suffix(".started").exists()
                if started_file != row["started"]:
                    raise CourseError(f"{row['case']}: the client and the stand-in disagree on whether "
                                      "a process started", reason="replay_failed")
                runs.append(ControlRun(mode=mode, **row))
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    order = {case: i for i, case in enumerate(cases)}
    runs.sort(key=lambda r: (CHECKERS.index(r.checker), order[r.case], MODES.index(r.mode)))
    return runs


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "replay":
        anyio.run(_replay_dir, Path(argv[1]), argv[2:] or ["strict"])
        return 0
    print("usage: python [-O] -m course_lib.chapters.envelope_controls replay DIR [strict] [asserts]", file=sys.stderr)
    return 2


__all__ = ["CHECKS", "CHECKERS", "ContentMismatch", "ControlRun", "MODES", "atlas_session", "capture",
           "check_reply_with_asserts", "damaged", "run_controls"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
