"""Interactive views of a lab: a page stepper, a scenario picker and a wire-transcript viewer.

Every widget drives real servers through ``course_lib.connect`` and never blocks the kernel:

* a connection that must live across button clicks belongs to one *owner task*
  (:class:`LiveLab`) that enters **and** exits the ``async with connect(...)`` block, so the
  SDK's cancel scopes open and close in the same task;
* a click only schedules a coroutine and returns at once; the coroutine runs on the loop the
  widget was made on (the kernel's main loop), whichever thread the click arrived on
  (JupyterLab sends widget messages over a kernel subshell: see :class:`Scheduler`);
* the same coroutines are public methods (``await stepper.next_page()``), so a notebook cell
  or a test can drive a widget without a browser, and ``await widget.settle()`` waits for
  whatever clicks scheduled.

What a widget shows is built from the deterministic tables of :mod:`course_lib.display`:
cursors appear as stable labels (``c1``, ``c2`` …), never as their random values.
"""

# The chapters import every widget from here; each part lives in a module of its own.
from course_lib.live_lab import REQUEST_TIMEOUT, LiveLab, Scheduler  # noqa: F401
from course_lib.page_stepper import PageStepper, Step, StepWalk  # noqa: F401
from course_lib.scenario_picker import (SCENARIOS, Scenario, ScenarioPicker, forged_cursor,  # noqa: F401
                                        run_scenario, walk_tools)
from course_lib.widget_html import SNAPSHOT_NOTE, FirstState, html_table, static_html  # noqa: F401
from course_lib.wire_viewer import DIRECTIONS, WireViewer  # noqa: F401
