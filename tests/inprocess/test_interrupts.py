"""The one line an interrupt prints (in-process; the real kernel is in test_troubleshooting.py)."""
import asyncio
import os

import pytest

from course_lib._runtime import interrupts


def stopped_by(exc: BaseException, *blocks: tuple[str, str], pid: int | None = None) -> list:
    """Run nested ``running`` blocks that ``exc`` unwinds; return what was recorded for it."""
    interrupts._stopped.clear()

    def enter(rest):
        if not rest:
            interrupts.note_process(pid)
            raise exc
        with interrupts.running(*rest[0]):
            enter(rest[1:])

    with pytest.raises(type(exc)):
        enter(list(blocks))
    return [a for a in interrupts._stopped if a.stopped_by == id(exc)]


def test_a_check_and_its_lab_are_named_once():
    stopped = stopped_by(asyncio.CancelledError(), ("check", "exercise 2"), ("lab", "catalog"), pid=None)
    assert [a.label for a in stopped] == ["lab `catalog`", "check `exercise 2`"]
    assert interrupts.summary(stopped) == "Interrupted: check `exercise 2` stopped; its server processes are gone."


def test_a_process_still_running_is_named_instead():
    stopped = stopped_by(KeyboardInterrupt(), ("lab", "catalog"), pid=os.getpid())  # alive: this process
    assert interrupts.summary(stopped) == f"Interrupted: lab `catalog` stopped; still running: pid {os.getpid()}."


def test_nothing_said_without_course_work_or_for_other_errors():
    assert interrupts.summary([]) is None
    assert stopped_by(ValueError("no"), ("lab", "catalog")) == []
    assert interrupts._active.get() == ()  # every block left as it was entered


def test_an_interrupted_check_is_named_by_its_card_title():
    """The stop button cancels the cell's task while a check's scenarios run."""
    from course_lib.grading.runner import each_scenario

    async def waits(s):
        await asyncio.sleep(60)

    async def cell():
        task = asyncio.ensure_future(each_scenario(waits, ["only"], "Exercise 1 · refuse a repeated cursor"))
        await asyncio.sleep(0.2)
        task.cancel()
        await task

    interrupts._stopped.clear()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cell())
    assert interrupts.summary(list(interrupts._stopped)) == (
        "Interrupted: check `Exercise 1 · refuse a repeated cursor` stopped; its server processes are gone.")
