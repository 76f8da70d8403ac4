"""``python -m course_lib.audit [--env K=V]... [--cwd DIR] [--era ERA] [--json] [--budget S]
[--request-timeout S] [--exit-budget S] [--expected FILE] [--junit FILE] -- CMD ARGS…`` (or ``--url URL`` instead of
``-- CMD ARGS…``)

Prints the report card of the stdio server ``CMD ARGS…`` (``--json``: the report as JSON, valid
against ``fixtures/audit/report.schema.json``). ``--expected FILE``: the findings it names are known
and do not fail the exit status; those that no longer occur are reported as stale. ``--junit FILE``:
the card as JUnit XML, one test case per line (see ``course_lib.audit.ci``). Exit status: 0 when no
MUST fails (but a known one), 1 when one does, 2 for a usage error.

``--url http://HOST:PORT/PATH`` audits a Streamable HTTP server that is already running: every
check that does not depend on stdio (eras, lists, cursors, URIs, tools, malformed frames, the
envelope), each frame one POST (``course_lib.audit.http``: the era's session and version headers,
a JSON or an SSE answer). The stdio checks (stdout, stderr, exits, leftovers, a client that dies)
are INFO lines "not checked over HTTP". An HTTP answer that is no reply (a refused connection, an
error status, a body that is not JSON) is the verdict of the check that sent it. ``--url`` and a
command are a usage error together, as are ``--url`` with ``--env`` or ``--cwd``.
"""
from __future__ import annotations

import argparse
import sys

import anyio

from pathlib import Path

from course_lib.audit import BUDGET, ERA_CHOICES, EXIT_BUDGET, audit
from course_lib.audit.ci import ExpectedFileError, junit, read_expected


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="course-audit", description="A robustness report card for an MCP server: a stdio command, or a Streamable HTTP URL.")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="set a variable for the server")
    p.add_argument("--cwd", help="the server's working directory")
    p.add_argument("--era", default="all", choices=ERA_CHOICES)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--budget", type=float, default=BUDGET, help="seconds per probe")
    p.add_argument("--request-timeout", type=float, default=None, metavar="S",
                   help="seconds each reply may take (default: the budget, at most 10)")
    p.add_argument("--exit-budget", type=float, default=EXIT_BUDGET, metavar="S",
                   help=f"seconds the server may take to exit by itself (default {EXIT_BUDGET:g}, as the SDK client waits)")
    p.add_argument("--expected", metavar="FILE", help="known findings (JSON): they do not fail the exit status")
    p.add_argument("--junit", metavar="FILE", help="also write the card as JUnit XML")
    p.add_argument("--url", help="audit the Streamable HTTP server at URL (no command)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS…")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.url is not None and (command or args.env or args.cwd):
        p.error("--url audits a running HTTP server: give no command, --env or --cwd with it")
    if args.url is not None and not args.url.startswith(("http://", "https://")):
        p.error(f"--url takes http://HOST:PORT/PATH, got {args.url!r}")
    if not command and args.url is None:
        p.error("no command to audit: give it after -- (or --url URL)")
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            p.error(f"--env takes K=V, got {item!r}")
        env[key] = value
    args.command, args.env = command, env
    try:
        args.expected = read_expected(args.expected) if args.expected else None
    except ExpectedFileError as exc:
        p.error(str(exc))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    report = anyio.run(lambda: audit(args.command, env=args.env or None, cwd=args.cwd, era=args.era,
                                     budget=args.budget, request_timeout=args.request_timeout,
                                     exit_budget=args.exit_budget, url=args.url))
    report.expected = args.expected
    if args.junit:
        Path(args.junit).write_text(junit(report), encoding="utf-8")
    print(report.to_json() if args.json else report.table())
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
