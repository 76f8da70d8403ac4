"""The exercise graders: a student's function against a fixed battery of real servers.

``core`` holds what every grader shares (batteries, verdicts, the scorecard, the walker
exercise); one module per exercise holds the rest: ``paging_server`` (a page function inside
real stdio servers), ``refresher`` (the refresh and the capstone), ``candidate_refresh``,
``allowlist``, ``envelope_checker``, ``bundle_reader`` and ``cache_refresh``;
``function_source`` copies a student's function into a module a child interpreter imports.
"""
