"""The server around chapter 11's sealer: the ``modern`` server's tools, its ``request_state``
made by the student's code.

``python -m course_lib.grading.state_harness MODULE.py FUNCTION`` imports the student's module
(written by ``grading.child``) and serves the ``modern`` server (``provision``, ``forever`` ...)
over stdio with ``seal, unseal = FUNCTION(key)`` as its codec: ``seal(state, call)`` makes the
``request_state`` of a call, ``unseal(token, call)`` reads one back (``call`` is
``{"name": ..., "arguments": ...}``). The key is random per process, and ``FUNCTION`` is called
at the first state, so a factory that fails is answered like a codec that fails: ``-32603
crashed: Type: message`` (its traceback goes to stderr). ``MCPError`` passes through.
"""
from __future__ import annotations

import secrets
import sys
import traceback

import mcp_types as types
from mcp import MCPError

from course_lib.grading.paging_harness import CRASHED, load
from course_lib.servers import modern
from course_lib.servers._base import serve


def crash(exc: Exception) -> MCPError:
    """The student's own error as the wire shows it: -32603, its type in ``data.crashed``."""
    traceback.print_exc()
    said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return MCPError(types.INTERNAL_ERROR, CRASHED + said, {"crashed": type(exc).__name__})


class StudentCodec:
    """``dump`` and ``load`` as ``modern.Modern`` calls them, answered by the student's functions."""

    def __init__(self, factory):
        self.factory, self.key, self.pair = factory, secrets.token_bytes(32), None

    def _run(self, index: int, *args):
        try:
            if self.pair is None:
                self.pair = tuple(self.factory(self.key))
            return self.pair[index](*args)
        except MCPError:
            raise
        except Exception as exc:
            raise crash(exc) from None

    def dump(self, state: dict, call: dict) -> str:
        token = self._run(0, dict(state), dict(call))
        if not isinstance(token, str):
            raise crash(TypeError(f"seal returned {type(token).__name__}, not a str"))
        return token

    def load(self, token: str, call: dict) -> dict:
        state = self._run(1, token, dict(call))
        if not isinstance(state, dict):
            raise crash(TypeError(f"unseal returned {type(state).__name__}, not a dict"))
        return state


if __name__ == "__main__":
    path, function = sys.argv[1:3]
    sys.exit(serve(modern.build("modern", codec=StudentCodec(load(path, function)))))
