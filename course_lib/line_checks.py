"""The strict line client's named checks: one reply line's envelope, the installed SDK, and ``-O``.

``check_reply`` runs the envelope checks of one reply line (``stdout_noise`` to ``result_xor_error``,
in the order ``course_lib.line_client`` lists them) and returns the reply object; ``check_sdk``
(``sdk_version``) runs before any process starts. ``CHECKS`` names every check of the client, its
own (the wait, the frame size, the exit) too, and ``WireError.check`` is one of them.

Every check is an explicit ``if ... raise`` (``require``): running Python with ``-O`` removes
``assert`` statements, and these checks must survive it. ``python_argv`` starts a child interpreter
with or without ``-O``; ``asserts_active`` tells which one this is.
"""
from __future__ import annotations

import json
import sys
from importlib.metadata import PackageNotFoundError, version

from course_lib.errors import CheckFailed

PINNED_SDK = "2.3.0"

CHECKS = ("sdk_version", "reply_timeout", "stdout_noise", "response_object", "jsonrpc_version",
          "id_type", "id_match", "result_xor_error", "server_exit", "trailing_stdout", "stderr_empty",
          "frame_size")


class WireError(CheckFailed):
    """A strict-client check failed; ``check`` is its name (one of ``CHECKS``)."""

    CHECKS = CHECKS


require = WireError.require  # an explicit check: unlike ``assert``, it is still there under ``python -O``


def check_sdk(required: str = PINNED_SDK) -> str:
    """Stop unless the installed ``mcp`` is ``required``. Returns the installed version."""
    try:
        installed = version("mcp")
    except PackageNotFoundError:
        installed = None
    require(installed == required, "sdk_version",
            f"installed mcp is {installed}, these expectations were written for mcp {required}",
            installed=installed, required=required)
    return installed


def check_reply(line: bytes, request_id: int) -> dict:
    """All envelope checks of one reply line, in order; returns the reply object."""
    try:
        reply = json.loads(line)
    except ValueError:
        raise WireError("stdout_noise", f"reply to request {request_id} is not JSON: "
                        f"{line[:60].decode('utf-8', 'replace')!r}",
                        request_id=request_id) from None
    require(isinstance(reply, dict), "response_object",
            f"reply to request {request_id} is a JSON {type(reply).__name__}, not an object",
            request_id=request_id)
    require(reply.get("jsonrpc") == "2.0", "jsonrpc_version",
            f"reply to request {request_id} has jsonrpc={reply.get('jsonrpc')!r}, not '2.0'",
            request_id=request_id)
    require(type(reply.get("id")) is int, "id_type",
            f"reply to request {request_id} has id {reply.get('id')!r} of type "
            f"{type(reply.get('id')).__name__}, not int", request_id=request_id)
    require(reply["id"] == request_id, "id_match",
            f"reply has id {reply['id']}, the request had id {request_id}", request_id=request_id)
    require(("result" in reply) != ("error" in reply), "result_xor_error",
            f"reply to request {request_id} has " +
            ("both result and error" if "result" in reply else "neither result nor error"),
            request_id=request_id)
    return reply


def python_argv(*args: str, optimize: bool | None = None) -> list[str]:
    """``[sys.executable, (-O), *args]``; by default the child inherits this process's ``-O``."""
    optimize = bool(sys.flags.optimize) if optimize is None else optimize
    return [sys.executable, *(["-O"] if optimize else []), *args]


def asserts_active() -> bool:
    """False when this interpreter runs with ``-O`` (``assert`` statements are compiled away)."""
    try:
        assert False  # noqa: B011 - the point is to see whether it is there at all
    except AssertionError:
        return True
    return False


__all__ = ["CHECKS", "PINNED_SDK", "WireError", "asserts_active", "check_reply", "check_sdk", "python_argv",
           "require"]
