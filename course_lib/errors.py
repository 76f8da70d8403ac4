"""Typed errors a lab can raise, and the unwrapping of SDK exception groups.

Every error names its cause in one line (``str(err)``) and carries a machine-readable
``reason`` so that tests and graders compare reasons, not prose.
"""
from __future__ import annotations

import anyio


class CourseError(Exception):
    """Base class of every error course_lib raises on purpose."""

    reason: str = "error"

    def __init__(self, message: str, *, reason: str | None = None, **details):
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        self.details = details


class CatalogError(CourseError):
    """A walk that could not produce a complete catalog. No partial result exists."""

    REASONS = ("cursor_repeated", "page_budget", "item_budget", "duplicate_name", "bad_page",
               "misspelled_cursor")

    def __init__(self, reason: str, message: str, **details):
        if reason not in self.REASONS:
            raise ValueError(f"unknown CatalogError reason {reason!r}")
        super().__init__(message, reason=reason, **details)


class LabTimeout(CourseError):
    """A request or the whole lab ran past its time budget."""

    reason = "timeout"


class ServerCrashed(CourseError):
    """The server process ended (or closed its stdout) while the lab still needed it."""

    reason = "server_crashed"


class ProtocolViolation(CourseError):
    """The server broke the stdio transport's rules (a line that is not a JSON-RPC message).

    ``reason`` is ``"bad_frame"`` (a line that starts like a frame but is not valid JSON-RPC),
    ``"stdout_noise"`` (any other non-JSON line, when the lab asked for ``noise="fail"``) or
    ``"frame_too_large"`` (a line longer than the lab's frame budget).
    """

    REASONS = ("bad_frame", "stdout_noise", "frame_too_large")

    def __init__(self, reason: str, message: str, **details):
        if reason not in self.REASONS:
            raise ValueError(f"unknown ProtocolViolation reason {reason!r}")
        super().__init__(message, reason=reason, **details)


class CheckFailed(CourseError):
    """A named check found something wrong. ``check`` names it; ``str(err)`` says what.

    ``str(err)`` is ``"[check] message"``; ``message`` alone is kept too. A subclass may list the
    names it accepts in ``CHECKS``, so a misspelled check name fails where it is raised.
    """

    reason = "check_failed"
    CHECKS: tuple[str, ...] | None = None

    def __init__(self, check: str, message: str, **details):
        if self.CHECKS is not None and check not in self.CHECKS:
            raise ValueError(f"unknown check {check!r} for {type(self).__name__}")
        super().__init__(f"[{check}] {message}", check=check, **details)
        self.check = check
        self.message = message

    @classmethod
    def require(cls, condition: object, check: str, message: str, **details) -> None:
        """Fail the named check unless ``condition`` holds (unlike ``assert``, it survives ``-O``)."""
        if not condition:
            raise cls(check, message, **details)


class EraNotSupported(CourseError):
    """The server does not speak the era the lab asked for (``era``): its first answer in that era
    was refused or unreadable, and it never answered as that era's servers do. ``answer`` is that
    first answer (an error's code and message, or the reason the result was unreadable)."""

    reason = "era_not_supported"


class LaunchError(CourseError):
    """The server could not be started at all (bad name, missing executable, bad arguments)."""

    reason = "launch_failed"


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """All non-group exceptions inside ``exc`` (depth first)."""
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(leaf_exceptions(inner))
        return out
    return [exc]


def unwrap(exc: BaseException) -> BaseException:
    """The one real cause inside an ExceptionGroup raised by nested SDK task groups.

    Cancellations that only accompany the real error are dropped. If more than one real
    error remains, the group is returned unchanged: hiding one of them would lie.
    """
    leaves = [e for e in leaf_exceptions(exc) if not isinstance(e, anyio.get_cancelled_exc_class())]
    if len(leaves) == 1:
        return leaves[0]
    return exc
