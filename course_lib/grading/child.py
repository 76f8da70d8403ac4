"""The one place for the student's code in a child interpreter.

``write_module`` writes the function's source with every global it uses into a module of a folder: a
module by its import, an importable object (a class's method too) by ``module.qualname``, a function by
its source, a literal by its ``repr``, a name the exercise makes unavailable by a stand-in; anything else
is a ``SourceError``, shown as the student's crash. ``child_argv`` is the command line.
"""
from __future__ import annotations

import builtins
import importlib
import importlib.util
import inspect
import sys
import sysconfig
import textwrap
import types
from pathlib import Path
from typing import Callable, Iterable

from course_lib.grading.unavailable import resolve
from course_lib.paths import ROOT


class SourceError(Exception):
    """The function cannot be written to a module (no source, or a name the child cannot get)."""


def _names_used(code: types.CodeType) -> set[str]:
    return set(code.co_names).union(*(_names_used(c) for c in code.co_consts if isinstance(c, types.CodeType)))


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
    owner = getattr(value, "__self__", None)
    if inspect.ismethod(value) and inspect.isclass(owner):  # ``require = WireError.require``
        where = _importable(owner)
        return None if where is None else f"{where}.{value.__name__}"
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


def module_source(func: Callable, unavailable: Iterable[str] = ()) -> str:
    """A module that defines ``func`` (by its own name) and every global it uses; each dotted name
    in ``unavailable`` is stood in for (as a global, a module's attribute, or an import)."""
    if not inspect.isfunction(func):
        raise SourceError(f"{func!r} is not a function defined with def")
    forbidden = {dotted: resolve(dotted) for dotted in unavailable}
    parts: list[str] = ["from __future__ import annotations  # annotations name what the body may never use"]
    if forbidden:
        parts.append("import builtins as _b\nfrom course_lib.grading import unavailable as _u\n"
                     f"_F = {{d: _u.resolve(d) for d in {sorted(forbidden)!r}}}\n"
                     "__builtins__ = {**vars(_b), '__import__': _u._importer(_F)}")
    done: set[str] = set()

    def add(f) -> None:
        done.add(f.__name__)
        for name in sorted(_names_used(f.__code__)):
            if name in done or name not in f.__globals__ or not name.isidentifier():
                continue  # (a name that is no identifier was added by a tool that rewrote the code)
            value = f.__globals__[name]
            done.add(name)
            stood = [d for d, obj in forbidden.items() if value is obj]
            if stood:
                parts.append(f"{name} = _u.stand_in({stood[0]!r})")
            elif isinstance(value, types.ModuleType) and any(d.startswith(value.__name__ + ".") for d in forbidden):
                parts.append(f"import {value.__name__} as _m_{name}\n{name} = _u.ModuleView(_m_{name}, _F)")
            elif isinstance(value, types.ModuleType):
                parts.append(f"import {value.__name__} as {name}")
            elif (where := _importable(value)) is not None:
                module, qualname = where.split(":", 1)
                parts.append(f"import {module} as _m_{name}\n{name} = _m_{name}.{qualname}")
            elif inspect.isfunction(value):
                add(value)
            elif _literal(value):
                parts.append(f"{name} = {value!r}")
            elif name in vars(builtins):
                continue
            else:
                raise SourceError(f"your function uses {name!r} ({type(value).__name__}), which a child interpreter "
                                  "cannot rebuild: only modules, importable names, functions and literals can be")
        try:
            parts.append(textwrap.dedent(inspect.getsource(f)))
        except (OSError, TypeError):
            raise SourceError(f"the source of {getattr(f, '__name__', f)!r} cannot be read: "
                              "define it with def in a notebook cell") from None

    add(func)
    return "\n\n".join(parts) + "\n"


def write_module(folder: Path, name: str, func: Callable, unavailable: Iterable[str] = ()) -> Path:
    """``folder/NAME.py``: ``func`` and what it uses (``module_source``)."""
    path = Path(folder) / f"{name}.py"
    path.write_text(module_source(func, unavailable), encoding="utf-8")
    return path


def load(path, function: str):
    """``function`` of the module written at ``path``, loaded from its file (a traceback keeps its lines)."""
    where = importlib.util.spec_from_file_location("student_module", path)
    module = importlib.util.module_from_spec(where)
    where.loader.exec_module(module)
    return getattr(module, function)


def child_argv(*args: str, optimize: bool = False) -> list[str]:
    """A child interpreter of this environment (``-O``: asserts compiled away) running ``args``."""
    return [sys.executable, *(["-O"] if optimize else []), *args]
