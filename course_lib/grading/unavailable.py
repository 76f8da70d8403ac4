"""Running the student's code with the ``course_lib`` functions that solve its exercise unavailable.

``without(function, names)`` copies the student's function (or class) so that its globals, helpers and
imports see a stand-in for each forbidden name: calling it raises ``Unavailable``, a crash with its own
hint. ``stand_in`` and ``ModuleView`` serve a child interpreter's module too (``grading.child``)."""
from __future__ import annotations

import builtins
import contextlib
import importlib
import inspect
import types
from typing import Any, Iterable


class Unavailable(Exception):
    """The student's code called a library function that this exercise asks them to write."""

    def __init__(self, dotted: str):
        super().__init__(f"{dotted} is unavailable in this exercise: write that part yourself")
        self.dotted = dotted


def stand_in(dotted: str):
    def unavailable(*args, **kwargs):
        raise Unavailable(dotted)

    unavailable.__qualname__ = unavailable.__name__ = dotted.rsplit(".", 1)[-1]
    unavailable.unavailable = dotted
    return unavailable


def resolve(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


class ModuleView(types.ModuleType):
    """A module as the student's code sees it: the same attributes, the forbidden ones stood in."""

    def __init__(self, module: types.ModuleType, forbidden: dict):
        super().__init__(module.__name__, module.__doc__)
        self._module, self._forbidden = module, forbidden

    def __getattr__(self, name: str) -> Any:
        return _seen(getattr(self._module, name), self._forbidden)


def _seen(value: Any, forbidden: dict) -> Any:
    """What the student's code gets instead of ``value`` (often ``value`` itself)."""
    for dotted, obj in forbidden.items():
        if value is obj:
            return stand_in(dotted)
    if isinstance(value, types.ModuleType) and any(d == value.__name__ or d.startswith(value.__name__ + ".")
                                                   for d in forbidden):
        return ModuleView(value, forbidden)
    return value


def _importer(forbidden: dict):
    real = builtins.__import__

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):
        return _seen(real(name, globals, locals, fromlist, level), forbidden)

    return __import__


def without(function: Any, names: Iterable[str]) -> Any:
    """``function`` (or a class) rebuilt so that ``names`` (dotted) are unavailable to it."""
    forbidden = {dotted: resolve(dotted) for dotted in names}
    if not forbidden:
        return function
    inner = getattr(function, "__wrapped__", None)
    if inspect.isasyncgenfunction(inner):  # an @asynccontextmanager: rebuild what it wraps
        return contextlib.asynccontextmanager(without(inner, names))
    namespace = getattr(function, "__globals__", None)
    if namespace is None:  # a class: its methods' globals
        methods = [v for v in vars(function).values() if inspect.isfunction(v)]
        namespace = methods[0].__globals__ if methods else {}
    view = {k: _seen(v, forbidden) for k, v in namespace.items() if k != "__builtins__"}
    view["__builtins__"] = {**vars(builtins), "__import__": _importer(forbidden)}
    copies: dict[int, Any] = {}

    def copy(value: Any) -> Any:
        if id(value) in copies:
            return copies[id(value)]
        if inspect.isfunction(value) and value.__globals__ is namespace:
            new = types.FunctionType(value.__code__, view, value.__name__, value.__defaults__, value.__closure__)
            new.__kwdefaults__, new.__qualname__ = value.__kwdefaults__, value.__qualname__
            new.__wrapped_original__ = value
        elif inspect.isclass(value) and value.__module__ == namespace.get("__name__"):
            body = {k: copy(v) for k, v in vars(value).items() if k not in ("__dict__", "__weakref__")}
            new = type(value.__name__, tuple(copy(b) for b in value.__bases__), body)
            new.__qualname__ = value.__qualname__
        else:
            return value
        copies[id(value)] = new
        return new

    for key, value in list(view.items()):
        if key != "__builtins__":
            view[key] = copy(value)
    return copy(function)
