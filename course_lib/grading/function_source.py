"""A student's function copied into a module that a child interpreter can import.

Graders that run the student's code in another process (chapter 7's envelope checker under
``python`` and ``python -O``, chapter 3's page function inside a real stdio server) write the
function's source with every global it uses: a module by its import, an importable object by
``module.qualname``, another function by its source, a literal by its ``repr``. Anything else is a
``SourceError`` the scorecard shows as the student's crash.
"""
from __future__ import annotations

import builtins
import importlib
import inspect
import sysconfig
import textwrap
import types
from pathlib import Path
from typing import Callable

from course_lib.paths import ROOT


class SourceError(Exception):
    """The function cannot be written to a module (no source, or a name the child cannot get)."""


def _names_used(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_used(const)
    return names


def _literal(value) -> bool:
    if isinstance(value, (bool, int, float, str, bytes, type(None))):
        return True
    if isinstance(value, (tuple, list, set, frozenset)):
        return all(_literal(v) for v in value)
    if isinstance(value, dict):
        return all(_literal(k) and _literal(v) for k, v in value.items())
    return False


_SITE = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}


def _importable(value) -> str | None:
    """``module:qualname`` when the child can import ``value`` by name, else None."""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    try:
        found = importlib.import_module(module)
        where = Path(getattr(found, "__file__", "") or "").resolve()
        installed = any(where.is_relative_to(Path(p).resolve()) for p in _SITE)  # e.g. ./.venv
        if where.is_relative_to(ROOT) and not where.is_relative_to(ROOT / "course_lib") and not installed:
            return None  # a module of this folder the child's path does not reach (a test, a script)
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:
        return None
    return f"{module}:{qualname}" if found is value else None


def _source_of(func) -> str:
    try:
        return textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        raise SourceError(f"the source of {getattr(func, '__name__', func)!r} cannot be read: "
                          "define it with def in a notebook cell") from None


def module_source(func: Callable) -> str:
    """A module that defines ``func`` (by its own name) and every global it uses."""
    if not inspect.isfunction(func):
        raise SourceError(f"{func!r} is not a function defined with def")
    parts: list[str] = []
    done: set[str] = set()

    def add(f) -> None:
        done.add(f.__name__)
        for name in sorted(_names_used(f.__code__)):
            if name in done or name not in f.__globals__ or not name.isidentifier():
                continue  # (a name that is no identifier was added by a tool that rewrote the code)
            value = f.__globals__[name]
            done.add(name)
            if isinstance(value, types.ModuleType):
                parts.append(f"import {value.__name__} as {name}")
            elif (where := _importable(value)) is not None:
                module, qualname = where.split(":")
                parts.append(f"import {module} as _m_{name}\n{name} = _m_{name}.{qualname}")
            elif inspect.isfunction(value):
                add(value)
            elif _literal(value):
                parts.append(f"{name} = {value!r}")
            elif name in vars(builtins):
                continue
            else:
                raise SourceError(f"your function uses {name!r} ({type(value).__name__}), which the child process "
                                  "cannot import: define or import it in your function's cell")
        parts.append(_source_of(f))

    add(func)
    return "\n\n".join(parts) + "\n"
