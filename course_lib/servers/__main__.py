import sys

from course_lib.servers._run import run_as_process
from course_lib.servers import load


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
    """Run a server as the whole process, then leave at once (see ``run_as_process``)."""
    run_as_process(lambda: main(argv))


if __name__ == "__main__":
    run(sys.argv[1:])
