"""The tags a chapter's cells carry (``metadata.tags``), as the student copy (``tooling.student_copy``)
and the capstone's reading of a student's earlier chapters (``grading.earlier``) both read them."""
from __future__ import annotations

SOLUTION = "solution"  # the reference solution and the heading that introduces it
ANSWERS = "answers"    # the answers of a chapter's self-check
REVEAL = "reveal"      # the cases that answer a self-check's transfer questions


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))
