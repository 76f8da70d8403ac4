"""The student copy: no solution cell or text, every other output kept, a student's work never
overwritten, and a chapter copy that runs from its own folder."""
import subprocess

import nbformat
from nbclient import NotebookClient

from course_lib.paths import ROOT
from course_lib.tooling.student_copy import generate, tags

from test_student_copy_unit import card_of


def test_make_lab_writes_the_copy_then_opens_it_and_instructor_opens_the_chapters():
    def dry(target):
        run = subprocess.run(["make", "-n", "-s", target], cwd=ROOT,  # a dry run: prints, runs nothing
                             capture_output=True, text=True, check=True)
        return run.stdout.splitlines()

    lab = dry("lab")
    (copy,) = [i for i, line in enumerate(lab) if "-m course_lib.tooling.student_copy" in line]
    (jupyter,) = [i for i, line in enumerate(lab) if "-m course_lib.tooling.lab " in line]
    assert copy < jupyter and "-m course_lib.tooling.lab student " in lab[jupyter]
    (instructor,) = [line for line in dry("instructor") if "-m course_lib.tooling.lab " in line]
    assert "-m course_lib.tooling.lab notebooks " in instructor
    assert "student/" in (ROOT / ".gitignore").read_text().splitlines(), "the copy is never committed"
    assert not [line for line in dry("clean") if "student" in line], "make clean keeps the students' work"


def test_a_chapter_copy_runs_from_the_student_folder(tmp_path):
    """Imports and fixtures resolve from the copy's folder; the check shows the starter's own error."""
    written, _ = generate(tmp_path / "student")
    (copy,) = [p for p in written if p.name.startswith("01_")]
    nb = nbformat.read(copy, as_version=4)
    (stored,) = [card_of(c) for c in nb.cells if "check" in tags(c)]
    NotebookClient(nb, kernel_name="python3", timeout=300,
                   resources={"metadata": {"path": str(copy.parent)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    (card,) = [card_of(c) for c in nb.cells if "check" in tags(c)]
    assert "NotImplementedError:" in card  # the starter's own error, wrapped in its column
    assert card.endswith("0/12 scenarios pass")
    assert card == stored, "the stored example is what the student sees"
