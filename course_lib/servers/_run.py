"""Run a function as the whole process: what a course server does in place of an interpreter's
normal exit, and so does every child of the fork server (``run_as_process``)."""
from __future__ import annotations

import os
import signal
import sys


def run_as_process(main) -> None:
    """Run ``main()`` as the whole process, then leave at once. Never returns.

    The exit code (``main``'s return value or ``SystemExit``) and what reaches stderr are those
    of a normal interpreter exit, and atexit handlers run; only the interpreter's teardown
    (about half a second of freeing the SDK's models) is skipped. Used by course servers and by
    every child of the fork server.
    """
    try:
        code = main()
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    except BaseException:
        sys.excepthook(*sys.exc_info())  # the traceback an uncaught exception prints
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        import atexit

        atexit._run_exitfuncs()
    finally:
        _flush()
        os._exit(code & 0xFF)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
