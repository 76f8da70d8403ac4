import os
import signal
import sys

from . import load


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print("usage: python -m course_lib.servers NAME [--mode M] [--fixture F]", file=sys.stderr)
        return 2
    try:
        module = load(argv[0])
    except LookupError as exc:
        print(exc, file=sys.stderr)
        return 2
    return module.main(argv[1:]) or 0


def run(argv: list[str]):
    """Run a server as the whole process, then leave at once.

    The exit code and what reaches stderr are those of a normal interpreter exit, and atexit
    handlers run; only the interpreter's teardown (about half a second of freeing the SDK's
    models) is skipped. Used by ``python -m course_lib.servers`` and by the fork server.
    """
    try:
        code = main(argv)
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
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


if __name__ == "__main__":
    run(sys.argv[1:])
