"""The wire transcript of a lab: every JSON-RPC line that crossed its pipes, in both directions, in order.

Plain data, no SDK: the raw pipe (:mod:`course_lib.raw`), the transcripts and the graders read
and build transcripts with it as ``connect``'s tap does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property


@dataclass
class Frame:
    """One line on the wire. ``direction`` is ``"→"`` (client to server) or ``"←"``."""

    index: int
    direction: str
    raw: str

    @cached_property
    def message(self) -> dict | None:
        """The parsed JSON object, or None when the line was not a JSON object.

        Parsed when first read: a long transcript then holds its lines as plain strings, which
        the garbage collector never has to walk.
        """
        try:
            message = json.loads(self.raw)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    @property
    def method(self) -> str | None:
        return (self.message or {}).get("method")

    @property
    def params(self) -> dict:
        return (self.message or {}).get("params") or {}

    @property
    def id(self):
        return (self.message or {}).get("id")

    @property
    def kind(self) -> str:
        m = self.message
        if m is None:
            return "noise"
        if "method" in m:
            return "request" if "id" in m else "notification"
        return "error" if "error" in m else "result"


@dataclass
class Wire:
    """The transcript of one lab: every frame in the order it crossed the pipe."""

    frames: list[Frame] = field(default_factory=list)

    def record(self, direction: str, raw: str) -> Frame:
        frame = Frame(len(self.frames), direction, raw)
        self.frames.append(frame)
        return frame

    def __iter__(self):
        return iter(self.frames)

    def __len__(self):
        return len(self.frames)

    def requests(self, method: str | None = None) -> list[Frame]:
        """Client-to-server requests, optionally of one method."""
        return [f for f in self.frames if f.direction == "→" and f.kind == "request"
                and (method is None or f.method == method)]

    def methods(self) -> list[str]:
        """The methods the client sent (requests and notifications), in order."""
        return [f.method for f in self.frames if f.direction == "→" and f.method]

    def response_to(self, request: Frame) -> Frame | None:
        for f in self.frames[request.index + 1:]:
            if f.direction == "←" and f.kind in ("result", "error") and f.id == request.id:
                return f
        return None
