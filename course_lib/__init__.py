"""Companion package of the MCP robustness course.

Labs start real MCP servers as stdio subprocesses through ``connect`` and read lists with
the bounded walker ``walk``. Everything a notebook shows comes from these calls.
"""
from . import _startup

_startup.defer()  # before anything imports jsonschema

from .candidate import Candidate, candidate  # noqa: E402
from .catalog import Catalog, walk  # noqa: E402
from .errors import (CatalogError, CourseError, LabTimeout, LaunchError, ProtocolViolation,  # noqa: E402
                     ServerCrashed, unwrap)
from .launch import Lab, connect  # noqa: E402

__all__ = ["Candidate", "Catalog", "CatalogError", "CourseError", "Lab", "LabTimeout", "LaunchError",
           "ProtocolViolation", "ServerCrashed", "candidate", "connect", "unwrap", "walk"]
