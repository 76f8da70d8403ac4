"""The notebook suite is strict: one wrong stored output makes it fail, at that cell only."""
import subprocess
import sys

import nbformat

from course_lib.paths import NOTEBOOKS, ROOT


def test_a_wrong_stored_output_fails_the_suite(tmp_path):
    nb = nbformat.read(NOTEBOOKS / "00_orientation.ipynb", as_version=4)
    target = None
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for index, cell in enumerate(code_cells):  # nbval numbers code cells from 0
        for output in cell.get("outputs", []):
            if output.get("name") == "stdout" and "protocol       : 2025-11-25" in output["text"]:
                output["text"] = output["text"].replace("2025-11-25", "2024-11-05")
                target = index
    assert target is not None, "the chapter no longer prints the negotiated protocol"
    # The cells after the damaged one cannot change the verdict: the copy ends there.
    nb.cells = nb.cells[:nb.cells.index(code_cells[target]) + 1]
    copy = tmp_path / "00_orientation.ipynb"
    nbformat.write(nb, copy)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                          "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), str(copy)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 1, run.stdout[-3000:]
    assert "mismatch 'stdout'" in run.stdout
    assert f"::Cell {target} " in run.stdout, run.stdout[-3000:]
    summary = run.stdout.strip().splitlines()[-1]
    assert summary.startswith("1 failed"), summary
