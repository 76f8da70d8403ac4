"""Start-up cost that is not ours to pay up front.

``jsonschema`` (imported by nbformat, nbval, and the SDK client on its first output-schema
check) imports ``rfc3987_syntax`` when it is installed, and that module builds an Earley
parser for the whole IRI grammar at import time: seconds of CPU in every kernel and every
pytest process, for a format checker (``"iri"``) that no course schema uses. ``defer`` puts a
stand-in in ``sys.modules`` whose ``is_valid_syntax`` imports the real module on its first
call, so the checker behaves exactly the same when it is used and costs nothing when it is not.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types

_SLOW = "rfc3987_syntax"


_real = None


def _load_real():
    global _real
    if _real is None:
        stand_in = sys.modules.get(_SLOW)
        if isinstance(stand_in, _StandIn):
            del sys.modules[_SLOW]
        try:
            _real = importlib.import_module(_SLOW)
        except BaseException:
            sys.modules.setdefault(_SLOW, stand_in)
            raise
    return _real


class _StandIn(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):  # the import system probes __path__ etc.: not a use
            raise AttributeError(name)
        return getattr(_load_real(), name)


def _is_valid_syntax(term: str, value: str):
    return _load_real().is_valid_syntax(term, value)


def defer() -> None:
    """Install the stand-in, unless the real module is loaded already or not installed."""
    if _SLOW in sys.modules or "jsonschema" in sys.modules:
        return
    try:
        if importlib.util.find_spec(_SLOW) is None:
            return
    except (ImportError, ValueError):
        return
    stand_in = _StandIn(_SLOW, "Stand-in that imports rfc3987_syntax on first use.")
    stand_in.is_valid_syntax = _is_valid_syntax
    sys.modules[_SLOW] = stand_in
