"""The course's protocol vocabulary agrees with the pinned SDK, and stays free of it at import."""
from __future__ import annotations

import subprocess
import sys

import mcp_types

from course_lib import protocol
from course_lib.paths import ROOT


def test_the_vocabulary_and_the_launcher_import_without_the_sdk():
    # As a stand-in replay starts: the package's ``__init__`` (which imports the SDK) skipped.
    code = ("import sys, types; package = types.ModuleType('course_lib'); package.__path__ = [sys.argv[1]]; "
            "sys.modules['course_lib'] = package; import course_lib.protocol, course_lib._runtime.process; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'pydantic')))")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "course_lib")], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"
