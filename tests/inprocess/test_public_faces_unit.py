"""The chapters and the students import from ``course_lib.widgets`` and ``course_lib.labs``: each
name there is the very object of the module it lives in, so a cell written against either face
keeps working wherever the code behind it sits."""
import importlib

import pytest

# name -> the module it lives in (hand-written: the faces the chapters and TROUBLESHOOTING.md name)
FACES = {
    "course_lib.widgets": {
        "WireViewer": "wire_viewer", "DIRECTIONS": "wire_viewer",
        "PageStepper": "page_stepper", "Step": "page_stepper", "StepWalk": "page_stepper",
        "ScenarioPicker": "scenario_picker", "Scenario": "scenario_picker", "SCENARIOS": "scenario_picker",
        "run_scenario": "scenario_picker", "walk_tools": "scenario_picker", "forged_cursor": "scenario_picker",
        "LiveLab": "live_lab", "Scheduler": "live_lab", "REQUEST_TIMEOUT": "live_lab",
        "FirstState": "widget_html", "static_html": "widget_html", "html_table": "widget_html",
        "SNAPSHOT_NOTE": "widget_html",
    },
    "course_lib.labs": {
        "connect": "labs", "NOISE_POLICIES": "labs",
        "Lab": "lab_state", "MAX_FRAME_BYTES": "lab_state",
        "Wire": "wire", "Frame": "wire",
        "EraRefused": "lab_failures", "EXIT_DRAIN": "lab_tap",
        "pid_alive": "_runtime.portable", "EXIT_GRACE": "_runtime.process", "TERM_GRACE": "_runtime.process",
        "STDERR_LOG": "_runtime.process",
    },
}


@pytest.mark.parametrize("face", sorted(FACES))
def test_every_public_name_stays_importable_from_its_face(face):
    module = importlib.import_module(face)
    moved = {name: home for name, home in FACES[face].items()
             if getattr(module, name, None) is not getattr(importlib.import_module(f"course_lib.{home}"), name)}
    assert moved == {}, f"import these into {face} from their modules again"


def test_the_package_names_the_lab_from_its_face():
    import course_lib
    from course_lib import labs

    assert (course_lib.Lab, course_lib.connect) == (labs.Lab, labs.connect)
