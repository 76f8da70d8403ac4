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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
