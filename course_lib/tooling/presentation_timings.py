"""The measured run time of a chapter: ``python -m course_lib.tooling.presentation --measure``.

Every cell executed with nbclient in a real kernel and timed; each chapter's figures (rounded so a
re-run rarely changes them) are kept in ``docs/timings.json``, which the tracks read
(:mod:`course_lib.tooling.presentation_tracks`). Cells that take ``SLOW_CELL`` seconds or more are
flagged: an instructor runs them before class.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling.student_copy import SOLUTION, dropped, tags


WORDS_PER_MINUTE = 130
CODE_CELL_MINUTES = 1.5


def chapters(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def cell_source(cell) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def minutes(nb) -> float:
    """Presenting minutes: markdown words at ``WORDS_PER_MINUTE`` plus ``CODE_CELL_MINUTES`` for
    each non-empty code cell; a solution cell (and the markdown that introduces it) counts nothing."""
    cells = [c for c in nb.cells if SOLUTION not in tags(c)]
    words = sum(len(cell_source(c).split()) for c in cells if c.cell_type == "markdown")
    code = sum(c.cell_type == "code" and bool(cell_source(c).strip()) for c in cells)
    return words / WORDS_PER_MINUTE + CODE_CELL_MINUTES * code


TIMINGS = ROOT / "docs" / "timings.json"
SLOW_CELL = 10  # seconds: a cell this slow is run before class (its outputs are then ready)


def timings() -> dict:
    """The measured run times (``--measure`` writes them): ``{"chapters": {stem: {...}}, ...}``."""
    return json.loads(TIMINGS.read_text(encoding="utf-8")) if TIMINGS.exists() else {"chapters": {}}


def _round(seconds: float, step: int) -> int:
    return int(step * round(seconds / step))


def measure(path: Path, timeout: int = 600) -> dict:
    """Execute a chapter top to bottom in a real kernel (nbclient, nothing written back) and time
    each cell; the chapter's run time counts the cells a deck shows (no solution or answers cell),
    rounded to 5 s; each cell of ``SLOW_CELL`` s or more is flagged, rounded to 5 s."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env_before = os.environ.pop("PYTEST_CURRENT_TEST", None)
    seconds: dict[int, float] = {}
    started = time.monotonic()
    try:
        client = NotebookClient(nb, kernel_name="python3", timeout=timeout, record_timing=False,
                                store_widget_state=False, resources={"metadata": {"path": str(path.parent)}})
        with client.setup_kernel():
            for i, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                t = time.monotonic()
                client.execute_cell(cell, i)
                seconds[i] = time.monotonic() - t
    finally:
        if env_before is not None:
            os.environ["PYTEST_CURRENT_TEST"] = env_before
    shown = [i for i in seconds if not dropped(nb.cells[i])]
    return {"run_seconds": _round(sum(seconds[i] for i in shown), 5),
            "wall_seconds": _round(time.monotonic() - started, 5),
            "slow_cells": [{"cell": i, "seconds": max(_round(seconds[i], 5), SLOW_CELL)}
                           for i in shown if seconds[i] >= SLOW_CELL]}


def write_timings(paths: list[Path]) -> dict:
    """Measure ``paths`` one after the other and rewrite their entries in ``docs/timings.json``."""
    data = timings()
    data.setdefault("chapters", {})
    for path in paths:
        data["chapters"][path.stem] = measure(path)
        print(f"measured {path.stem}: {data['chapters'][path.stem]}", flush=True)
    data["chapters"] = dict(sorted(data["chapters"].items()))
    data["load_average"] = round(os.getloadavg()[0] * 2) / 2
    data["cores"] = os.cpu_count()
    data["how"] = ("python -m course_lib.tooling.presentation --measure: every cell executed with nbclient in a "
                   "real kernel; run_seconds counts the cells a deck shows; load_average: the machine's at the end")
    TIMINGS.parent.mkdir(parents=True, exist_ok=True)
    TIMINGS.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return data
