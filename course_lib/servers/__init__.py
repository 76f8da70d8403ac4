"""The course's lab servers. Each is a small module with ``main(argv)``; a mode or a
fixture file selects its behaviour. Run one with ``python -m course_lib.servers NAME ...``."""
import importlib
import pkgutil


def names() -> list[str]:
    """The course servers that can be launched by name."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def load(name: str):
    if name not in names():
        raise LookupError(f"no course server named {name!r}; known: {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")
