"""Companion package of the MCP robustness course.

Labs start real MCP servers as stdio subprocesses through ``connect`` and read lists with
the bounded walker ``walk``. Everything a notebook shows comes from these calls.
"""
from course_lib._runtime import startup

startup.defer()  # before anything imports jsonschema

from course_lib.refresh import Candidate, candidate  # noqa: E402
from course_lib.walker import Catalog, walk  # noqa: E402
from course_lib.errors import (CatalogError, CourseError, LabTimeout, LaunchError, ProtocolViolation,  # noqa: E402
                     ServerCrashed, unwrap)
from course_lib.labs import Lab, connect  # noqa: E402

__all__ = ["Candidate", "Catalog", "CatalogError", "CourseError", "Lab", "LabTimeout", "LaunchError",
           "ProtocolViolation", "ServerCrashed", "candidate", "connect", "unwrap", "walk"]
