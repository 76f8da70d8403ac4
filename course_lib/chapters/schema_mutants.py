"""The schema chapter's mutants: known-wrong edits of the walker, the candidate refresh and the server.

Each names the probe of :mod:`course_lib.chapters.schema_lab` that runs it and the named check
that must kill it; :mod:`course_lib.chapters.negative_controls` applies and runs them.
"""
from __future__ import annotations

from course_lib.chapters.negative_controls import Binding, Mutant


# Each mutant rebinds a name its module keeps through refactors (``negative_controls.Binding``).
MUTANTS = [
    Mutant("ignore_duplicates", "course_lib/walker.py", Binding("walk"), """
        async def walk(source, kind="tools", *, max_pages=32, max_items=10_000):
            import mcp_types as types
            from course_lib.walker import Catalog

            items, sizes, cursor = [], [], None
            for _ in range(max_pages):  # every cursor rule kept, no memory of names
                params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
                page = await source.session.list_tools(params=params)
                items += page.tools
                sizes.append(len(page.tools))
                cursor = page.next_cursor
                if cursor is None:
                    return Catalog(kind, tuple(items), tuple(sizes))
            raise RuntimeError("no last page")
        """,
           "course_lib.chapters.schema_lab:probe_in_place", "refresh_rejected", "bad catalog accepted",
           "the walker forgets to reject a name seen on an earlier page"),
    Mutant("publish_first_page", "course_lib/refresh.py", Binding("walk"), """
        async def walk(source, kind="tools", **limits):
            from course_lib.walker import Catalog

            page = await source.session.list_tools()
            return Catalog(kind, tuple(page.tools), (len(page.tools),))
        """,
           "course_lib.chapters.schema_lab:probe_failed_candidate", "candidate_never_yields",
           "candidate unexpectedly yielded",
           "the candidate hands out page 1 as if it were the catalog"),
    Mutant("swallow_catalog_rejection", "course_lib/refresh.py", Binding("walk"), """
        async def walk(source, kind="tools", **limits):
            from course_lib.walker import Catalog

            try:
                return await original(source, kind, **limits)
            except Exception:
                return Catalog(kind, (), ())
        """,
           "course_lib.chapters.schema_lab:probe_failed_candidate", "candidate_never_yields",
           "candidate unexpectedly yielded",
           "the candidate catches the walk's error and yields an empty catalog"),
    Mutant("swallow_caller_failure", "course_lib/refresh.py", Binding("Candidate.__aexit__"), """
        async def __aexit__(self, exc_type, exc, tb):
            await original(self, exc_type, exc, tb)
            return True
        """,
           "course_lib.chapters.schema_lab:probe_caller_failure", "caller_failure_propagates",
           "caller failure was swallowed",
           "the candidate's exit suppresses the caller's exception"),
    Mutant("close_after_raising", "course_lib/refresh.py", Binding("Candidate.__aenter__"), """
        async def __aenter__(self):
            from contextlib import AsyncExitStack
            from course_lib.labs import connect
            from course_lib.walker import walk

            stack = AsyncExitStack()
            self.lab = await stack.enter_async_context(connect(self.server, **self.connect_options))
            catalog = await walk(self.lab, self.kind)  # its error leaves with the process still running
            self._stack = stack
            return Ready(self.lab, catalog)
        """,
           "course_lib.chapters.schema_lab:probe_failed_candidate", "candidate_closed_before_error",
           "candidate process still running",
           "the walk's error escapes before the candidate's process is stopped"),
    Mutant("audit_skips_cursor_pages", "course_lib/servers/schema.py", Binding("build"), """
        def build(fixture, audit):
            class FirstPagesOnly:  # records every request except a page asked for by cursor
                def record(self, **entry):
                    if entry.get("cursor") is None:
                        audit.record(**entry)

            return original(fixture, FirstPagesOnly())
        """,
           "course_lib.chapters.schema_lab:probe_accepted_candidate", "audit_oracle",
           "missing request #2: tools/list cursor='next'",
           "the server's audit omits cursor pages; only an exact comparison notices"),
]
