"""Companion package of the MCP robustness course.

Labs start real MCP servers as stdio subprocesses through ``connect`` and read lists with
the bounded walker ``walk``. Everything a notebook shows comes from these calls.

The names below are loaded on first use, so ``import course_lib`` itself is cheap: the SDK
(over a second of imports) loads only when a lab needs it.
"""
from importlib import import_module

from course_lib._runtime import startup

startup.defer()  # before anything imports jsonschema

_HOMES = {
    "Candidate": "refresh", "candidate": "refresh",
    "Catalog": "walker", "walk": "walker",
    "Lab": "lab_state", "connect": "labs",
    "CatalogError": "errors", "CheckFailed": "errors", "CourseError": "errors", "LabTimeout": "errors",
    "EraNotSupported": "errors", "LaunchError": "errors", "ProtocolViolation": "errors", "ServerCrashed": "errors",
    "unwrap": "errors",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'course_lib' has no attribute {name!r}")
    value = getattr(import_module(f"course_lib.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
