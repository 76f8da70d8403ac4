"""Companion package of the MCP robustness course.

Labs start real MCP servers as stdio subprocesses through ``connect`` and read lists with
the bounded walker ``walk``. Everything a notebook shows comes from these calls.
"""
from .catalog import Catalog, walk
from .errors import CatalogError, CourseError, LabTimeout, LaunchError, ServerCrashed, unwrap
from .launch import Lab, connect

__all__ = ["Catalog", "CatalogError", "CourseError", "Lab", "LabTimeout", "LaunchError",
           "ServerCrashed", "connect", "unwrap", "walk"]
from .errors import ProtocolViolation  # noqa: E402

__all__ += ["ProtocolViolation"]
