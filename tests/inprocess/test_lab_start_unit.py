"""In-process: the checks of tests/world/test_lab_start.py's subject that start no process."""
import json
import sys
from pathlib import Path

from course_lib.paths import ROOT
from course_lib.tooling import lab

NOTIFICATION = "@jupyterlab/apputils-extension:notification"


def test_the_make_targets_start_jupyterlab_through_the_course_options():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target, folder in (("lab", "student"), ("instructor", "notebooks")):
        recipe = makefile.split(f"\n{target}: ", 1)[1].split("\n\n", 1)[0]
        assert f"-m course_lib.tooling.lab {folder} " in recipe, target
    overrides = json.loads((lab.SETTINGS / "overrides.json").read_text(encoding="utf-8"))
    assert overrides[NOTIFICATION] == {"fetchNews": "false", "checkForUpdates": False}
    # Without the override JupyterLab asks ("none"): the schema it ships says so.
    schema = json.loads((Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas" / "@jupyterlab"
                         / "apputils-extension" / "notification.json").read_text(encoding="utf-8"))
    assert schema["properties"]["fetchNews"]["default"] == "none"
