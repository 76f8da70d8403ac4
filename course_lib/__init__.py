"""Companion package of the MCP robustness course.

Labs start real MCP servers as stdio subprocesses through ``connect`` and read lists with
the bounded walker ``walk``. Everything a notebook shows comes from these calls.
"""
from . import _startup

_startup.defer()  # before anything imports jsonschema

from .catalog import Catalog, walk  # noqa: E402
from .errors import CatalogError, CourseError, LabTimeout, LaunchError, ServerCrashed, unwrap  # noqa: E402
from .launch import Lab, connect  # noqa: E402

__all__ = ["Catalog", "CatalogError", "CourseError", "Lab", "LabTimeout", "LaunchError",
           "ServerCrashed", "connect", "unwrap", "walk"]
from .errors import ProtocolViolation  # noqa: E402

__all__ += ["ProtocolViolation"]
from .candidate import Candidate, candidate  # noqa: E402

__all__ += ["Candidate", "candidate"]
