"""What a lab block sees: the :class:`Lab` that ``connect`` yields, and keeps after the block.

The client and its session, the wire transcript, the server's stderr and the files it wrote,
the negotiated protocol version, how the server ended and what had to be swept after it.
"""
from __future__ import annotations

from pathlib import Path

from mcp import Client

from course_lib.errors import ProtocolViolation
from course_lib._runtime.process import STDERR_LOG, pid_alive
from course_lib.wire import Wire

# The longest line the tap accepts from a server; a longer one ends the lab (ProtocolViolation).
MAX_FRAME_BYTES = 4 * 1024 * 1024


class Lab:
    """What a lab block sees: the client, the session, the wire, the server's stderr."""

    def __init__(self, argv: list[str], era: str, workdir: Path | None):
        self.argv = argv
        self.era = era
        self.workdir = workdir
        self.wire = Wire()
        self.client: Client | None = None
        self.protocol_version: str | None = None  # negotiated; kept after the lab ends
        self.pid: int | None = None
        self.returncode: int | None = None
        self.launch_path: str | None = None  # "fast" (forked by the fork server) or "cold"
        self.noise: list[str] = []  # stdout lines that were not JSON-RPC
        self._files: dict[str, str] | None = None  # workdir contents, kept after close
        self._answered = False
        self._request_budget: float | None = None
        self.noise_policy = "keep"  # "keep": record and skip them; "fail": end the lab
        self.max_frame_bytes = MAX_FRAME_BYTES
        self.violation: ProtocolViolation | None = None  # why the tap stopped reading, if it did
        self.swept: list[int] = []  # leftover processes of this lab that had to be killed
        self.forced_stop: str | None = None  # the signal the stop needed ("SIGTERM"/"SIGKILL"), if any

    @property
    def session(self):
        return self.client.session

    def _arm_request_budget(self, seconds: float) -> None:
        """Switch from the start-up budget to the per-request budget once the server has answered.

        The session reads its timeout when a request is sent, so requests sent before the
        server's first answer (a cold start) keep the start-up budget.
        """
        self._request_budget = seconds
        if self._answered:
            self.client.session._session_read_timeout_seconds = seconds

    def _first_answer(self) -> None:
        self._answered = True
        budget = self._request_budget
        if budget is not None and self.client is not None:
            self.client.session._session_read_timeout_seconds = budget

    @property
    def alive(self) -> bool:
        """Whether the server process still runs."""
        return pid_alive(self.pid)

    def file(self, name: str) -> str:
        """Text of a file the server wrote into its lab directory (readable after close too)."""
        if self._files is not None:
            if name not in self._files:
                raise FileNotFoundError(f"the server wrote no {name!r}")
            return self._files[name]
        return (self.workdir / name).read_text(encoding="utf-8")

    @property
    def stderr(self) -> str:
        try:
            return self.file(STDERR_LOG)
        except FileNotFoundError:
            return ""

    def _keep_files(self) -> None:
        files = {}
        for path in sorted(self.workdir.glob("*")):
            if path.is_file():
                files[path.name] = path.read_text(encoding="utf-8", errors="replace")
        self._files = files
