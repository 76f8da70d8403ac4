"""Refresh a catalog in a separate process and session; adopt it only when it is complete.

The SDK's client session absorbs every listed page into its output-schema cache *before*
the caller can check the catalog, so a refresh on the active session changes how later
results are validated even when the caller rejects it. A candidate never touches the
active session: it starts its own server process, walks the whole catalog there, and only
then hands out the session and the catalog::

    refresh = candidate("schema", fixture=path, era="legacy")
    async with refresh as ready:          # the walk failed? the error arrives here,
        ready.catalog.names               # and the candidate is already closed
        await ready.client.call_tool(...)
    refresh.closed                        # True: the candidate's process is gone

``refresh.lab`` stays readable after the block (wire transcript, stderr, files the server
wrote), whether the walk succeeded or not.
"""
from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Sequence

from course_lib.walker import Catalog, walk
from course_lib.lab_state import Lab
from course_lib.labs import connect


@dataclass(frozen=True)
class Ready:
    """A complete candidate: valid only inside its ``async with`` block."""

    lab: Lab
    catalog: Catalog

    @property
    def client(self):
        return self.lab.client

    @property
    def session(self):
        return self.lab.session


class Candidate:
    """One refresh attempt. Enter it once; read ``lab`` and ``closed`` afterwards."""

    def __init__(self, server: str | Sequence[str], *, kind: str = "tools", max_pages: int = 32,
                 max_items: int = 10_000, **connect_options: Any):
        self.server = server
        self.kind = kind
        self.max_pages = max_pages
        self.max_items = max_items
        self.connect_options = connect_options
        self.lab: Lab | None = None
        self._stack: AsyncExitStack | None = None
        self._entered = False

    @property
    def closed(self) -> bool:
        """True once the candidate's server process has exited (or never started)."""
        return self.lab is None or self.lab.returncode is not None

    async def __aenter__(self) -> Ready:
        if self._entered:
            raise RuntimeError("a candidate is entered once; create a new one for another refresh")
        self._entered = True
        stack = AsyncExitStack()
        self.lab = await stack.enter_async_context(connect(self.server, **self.connect_options))
        try:
            catalog = await walk(self.lab, self.kind, max_pages=self.max_pages, max_items=self.max_items)
        except BaseException as exc:
            # Close the candidate before the error reaches the caller. connect() may turn the
            # error into a typed one (a timeout, a crashed server); that one is raised instead.
            await stack.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._stack = stack
        return Ready(self.lab, catalog)

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        stack, self._stack = self._stack, None
        # The caller's own exception goes through connect's cleanup and then propagates.
        return await stack.__aexit__(exc_type, exc, tb)


def candidate(server: str | Sequence[str], *, kind: str = "tools", max_pages: int = 32,
              max_items: int = 10_000, **connect_options: Any) -> Candidate:
    """A refresh in its own process and session (``connect`` options: ``era``, ``fixture`` ...).

    ``async with candidate(...) as ready`` yields only a complete catalog (``walk``'s rules).
    If the walk fails, the candidate's process is stopped first and the typed error
    (``CatalogError`` with a ``reason``) propagates; nothing partial is ever handed out.
    An exception raised inside the block propagates after the same cleanup.
    """
    return Candidate(server, kind=kind, max_pages=max_pages, max_items=max_items, **connect_options)
