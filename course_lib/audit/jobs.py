"""How the audit's probes are scheduled: at most ``PARALLEL`` server processes at a time, each probe's
lines in a slot of its own (the card takes the slots in order), and per era the probes that start from
the list walk on one process."""
from __future__ import annotations

import anyio

from course_lib.audit import cursors, frames, resources, tools
from course_lib.audit.report import Report
from course_lib.audit.session import Context, in_sessions
from course_lib.protocol import MODERN_VERSION

PARALLEL = 4  # probes (server processes) at a time: a 2-core machine, servers that start in a second;
# the launch probe, the era probes and the frame probe mostly wait (for input, an exit, a late reply)


def slot_of(era: str, k: int) -> int:
    """Where the lines of an era's probes go on the card: its lists (0), the probes that start from
    them (1), its frames (2); the legacy era's before the 2026-07-28 era's, both after the eras."""
    return 10 + 3 * (era == MODERN_VERSION) + k


async def cancellable(scope: anyio.CancelScope, job) -> None:
    with scope:
        await job


async def chain(jobs: "Jobs", slot: int, ctx: Context, era: str, walked: anyio.Event, stdio: bool,
                walks: dict | None = None) -> None:
    """Once the era probe's process has walked the lists of ``era``, the cursor, URI and tool probes
    on one server process of their own (none needs a fresh one; the cursors need another process
    than the walk's; a probe that ends its process leaves the next a fresh one); on stdio the frame
    probe last on the same process (on a process of its own when none is left to it).
    ``walks`` (an era asked for by name): the process starts at once, beside the era probe, and its
    probes begin when the walk has ended (nothing when the era is not walked: ``walks[era]``)."""
    def works() -> list:
        return [probe.work(ctx, era) for probe in (cursors, resources, tools)]

    async def ready() -> list | None:
        await walked.wait()
        return works() if walks.get(era) else None

    if walks is None:
        await walked.wait()
    last = frames.work(ctx, era, jobs.slot(slot + 2)) if stdio else None
    done = await jobs.run(slot + 1, lambda ctx, era, report: in_sessions(
        ctx, era, report, [] if walks is not None else works(), last, ready if walks is not None else None), ctx, era)
    if done is False and last:
        await jobs.run(slot + 2, frames.run, ctx, era)


class Jobs:
    """Probes run side by side, at most ``PARALLEL`` server processes at a time (in the order they
    ask); each writes its lines to its own slot, and the card takes the slots in order."""

    def __init__(self, argv: list[str], era: str):
        self.argv, self.era, self.outputs = argv, era, {}
        self.limiter = anyio.CapacityLimiter(PARALLEL)

    def slot(self, slot: int) -> Report:
        """The lines of ``slot``, for a probe that runs on another probe's process."""
        out = self.outputs[slot] = Report(self.argv, self.era)
        return out

    async def run(self, slot: int, function, *args):
        out = self.slot(slot)
        async with self.limiter:
            return await function(*args, out)
