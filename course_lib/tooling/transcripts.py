"""Recorded transcripts: every row a judge read in a real run, as data the judges are tested on.

``fixtures/grading/transcripts/<exercise>.expected.json`` (written by hand, before any run) names the
solutions of one exercise (``source``: ``path.py:function``, ``notebook.ipynb:reference_name``, or
``notebook.ipynb:visible:function`` for a function a visible cell defines), the grading options
(``battery``, ``only``, ``servers``: the capstone's audited functions) and the verdict each row must
get (``verdicts``: ``"*"`` for every row, a row's name, or ``name@era``; ``"pass"`` or a failure kind).
``make record`` re-runs them on the real servers and writes ``<exercise>.json``: per solution, its
``fingerprint`` and every row's outcome (``encode``), with its lab's whole wire; ``decode`` rebuilds it.

A recording is stale when the fingerprint of what it depends on (the solution's sources, the battery,
the servers' source files and the private modules they import, the files its expected file's
``depends`` names, the SDK's version) no longer matches: ``stale`` names it.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import json
import re
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path

import nbformat

from course_lib.grading import outcome as o
from course_lib.grading.audited_server import scenarios_of
from course_lib.grading.battery import load_battery
from course_lib.wire import Wire
from course_lib.paths import ROOT, fixture

FOLDER = fixture("grading", "transcripts")
COMMAND = "make record"
SERVERS_SHARED = ("__init__.py", "__main__.py", "_base.py", "_run.py")
ALL = "*"
HUNG_FRAMES = 100


# -- an outcome as data -----------------------------------------------------------------------

def _data(value) -> bool:
    try:
        return json.loads(json.dumps(value)) == value
    except (TypeError, ValueError):
        return False


def encode_error(exc: BaseException | None) -> dict | None:
    if exc is None:
        return None
    attrs = {k: v for k, v in getattr(exc, "__dict__", {}).items() if k != "error" and _data(v)}
    error = getattr(exc, "error", None)
    return {"type": [f"{c.__module__}:{c.__qualname__}" for c in type(exc).__mro__], "str": str(exc),
            "args": list(exc.args) if _data(list(exc.args)) else [str(exc)], "attrs": attrs,
            **({"error": error.model_dump(mode="json")} if hasattr(error, "model_dump") else {})}


def _class(dotted: str):
    module, _, name = dotted.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def _rebuilt(data: dict) -> BaseException:
    cls = _class(data["type"][0])
    if cls is None:
        base = next(c for c in map(_class, data["type"][1:]) if c is not None)
        cls = type(data["type"][0].rpartition(":")[2].rpartition(".")[2], (base,), {"__module__": "student"})
    exc = cls.__new__(cls)
    exc.args = tuple(data["args"])
    vars(exc).update(data["attrs"])
    if "error" in data:
        from mcp.types import ErrorData

        exc.error = ErrorData.model_validate(data["error"])
    return exc


def decode_error(data: dict | None) -> BaseException | None:
    """The exception again: its own class when it can be imported, else a class of the same name
    on the nearest class of its ancestry that can (a judge reads the type's names and attributes);
    one that cannot be rebuilt so (a compiled library's) is an ``Exception`` of its name and words."""
    if data is None:
        return None
    try:
        exc = _rebuilt(data)
        if str(exc) == data["str"]:
            return exc
    except Exception:  # noqa: BLE001 (its class cannot be made from data)
        pass
    name = data["type"][0].rpartition(":")[2].rpartition(".")[2]
    return type(name, (Exception,), {"__module__": "student", "__str__": lambda self: data["str"]})(data["str"])


def encode_value(value):
    """A returned value as JSON: a tuple, a dict, a dataclass and a typed model (an SDK ``Tool``) say
    what they were."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode_value(v) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode_value(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        return {"dataclass": f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f.name: encode_value(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if hasattr(value, "model_dump"):
        cls = type(value)
        return {"model": f"{cls.__module__}:{cls.__qualname__}", "data": value.model_dump(mode="json", by_alias=True)}
    raise TypeError(f"a returned {type(value).__name__} cannot be recorded")


def decode_value(data):
    if isinstance(data, list):
        return [decode_value(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "tuple" in data:
        return tuple(decode_value(v) for v in data["tuple"])
    if "dict" in data:
        return {decode_value(k): decode_value(v) for k, v in data["dict"]}
    if "dataclass" in data:
        return _class(data["dataclass"])(**{k: decode_value(v) for k, v in data["fields"].items()})
    return _class(data["model"]).model_validate(data["data"])


def encode(outcome: o.Outcome) -> dict:
    """The row's outcome as JSON: its kind, value, error, budget, the frames it sent (by their index
    on the lab's wire) and what the lab left (``state``; its ``wire`` as every line that crossed it).
    A call stopped at its budget sent as many requests as the time allowed: its first
    ``HUNG_FRAMES`` lines are kept (and how many there were, ``wire_frames``)."""
    state = dict(outcome.state)
    wire = state.pop("wire", None)
    frames, sent = (list(wire) if wire is not None else None), [f.index for f in outcome.sent]
    cut = outcome.kind == o.HUNG and frames is not None and len(frames) > HUNG_FRAMES
    data = {"kind": outcome.kind, "value": encode_value(outcome.value), "error": encode_error(outcome.error),
            "budget": outcome.budget, "not_asked": outcome.not_asked, "state": state,
            "sent": [i for i in sent if not cut or i < HUNG_FRAMES],
            "wire": None if frames is None else [[f.direction, f.raw] for f in frames[:HUNG_FRAMES if cut else None]],
            **({"wire_frames": len(frames)} if cut else {})}
    if json.loads(json.dumps(data)) != data:  # a tuple, or anything else JSON would change
        raise TypeError(f"this outcome cannot be recorded as it is: {outcome!r}"[:300])
    return data


def decode(data: dict) -> o.Outcome:
    wire = None
    if data["wire"] is not None:
        wire = Wire()
        for direction, raw in data["wire"]:
            wire.record(direction, raw)
    state = {**data["state"], **({"wire": wire} if wire is not None else {})}
    return o.Outcome(data["kind"], decode_value(data["value"]), decode_error(data["error"]), data["budget"],
                     tuple(wire.frames[i] for i in data["sent"]) if wire else (), state, data["not_asked"])


def judge_bundles(s, outcome: o.Outcome):
    """Chapter 5's judge as ``grade_bundles`` calls it (with the revisions' texts and the battery's hint)."""
    from course_lib.grading.battery import read_spec
    from course_lib.grading.bundle_judge import judge_bundle, revisions

    return judge_bundle(s, outcome, oracle=revisions(), latest_hint=read_spec("bundles")["latest_hint"])


# -- what a recording depends on --------------------------------------------------------------

def _python_source(path: Path, name: str) -> str:
    """The function's source and that of the module's functions (and names) it uses, transitively."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    defs.update({t.id: n for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)})
    todo, done = [name], []
    while todo:
        name = todo.pop()
        node = defs[name]
        done.append(name)
        todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in defs
                 and n.id not in done and n.id not in todo]
    return "\n".join(ast.unparse(defs[n]) for n in sorted(done))


def _notebook_source(path: Path) -> str:
    """Every code cell of the chapter (their sources, not their outputs)."""
    nb = nbformat.read(path, as_version=4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def solution_source(source: str) -> str:
    path, _, name = source.partition(":")
    return _notebook_source(ROOT / path) if path.endswith(".ipynb") else _python_source(ROOT / path, name)


def _server_helpers(servers: list[str]) -> list[str]:
    """The private modules (``_name.py``, beyond the shared ones) that these servers import at module
    level, transitively: code moved out of a server's module stays in its recordings' fingerprint."""
    shared = {n.removesuffix(".py") for n in SERVERS_SHARED}
    found: list[str] = []
    todo = list(servers)
    while todo:
        tree = ast.parse((ROOT / "course_lib" / "servers" / f"{todo.pop()}.py").read_text("utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course_lib.servers._"):
                helper = node.module.rsplit(".", 1)[-1]
                if helper not in shared and helper not in found:
                    found.append(helper)
                    todo.append(helper)
    return sorted(found)


def fingerprint(entry: dict, depends=()) -> str:
    """What a solution's recording depends on, hashed (``depends``: more files, such as the harness
    that serves a served exercise's function)."""
    _, scenarios, _ = load_battery(entry["battery"])
    # (a battery that configures the harness's server instead names none: its configuration is in the battery)
    named = sorted({s.server for s in scenarios if isinstance(s.server, str)})
    servers = named + [n.removesuffix(".py") for n in SERVERS_SHARED] + _server_helpers(named)
    parts = [*map(solution_source, [entry["source"], *entry.get("servers", ())]),
             fixture("grading", f"{entry['battery']}.json").read_text("utf-8"),
             *((ROOT / "course_lib" / "servers" / f"{n}.py").read_text("utf-8") for n in servers),
             *((ROOT / p).read_text("utf-8") for p in depends), version("mcp"), json.dumps(entry.get("only"))]
    digests = "".join(hashlib.sha256(part.encode()).hexdigest() for part in parts)
    return hashlib.sha256(digests.encode()).hexdigest()[:16]


# -- the fixtures -----------------------------------------------------------------------------

def exercises() -> list[str]:
    return sorted(p.name.removesuffix(".expected.json") for p in FOLDER.glob("*.expected.json"))


@lru_cache(maxsize=8)
def _read(path: Path, mtime_ns: int) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _json(path: Path) -> dict:
    """A fixture's data, read once while the file is unchanged (do not modify what it returns)."""
    return _read(path, path.stat().st_mtime_ns)


def expected(exercise: str, folder: Path = FOLDER) -> dict:
    return _json(folder / f"{exercise}.expected.json")


def recording(exercise: str, folder: Path = FOLDER) -> dict:
    path = folder / f"{exercise}.json"
    return _json(path) if path.exists() else {"solutions": {}}


def stale(exercise: str, folder: Path = FOLDER) -> list[str]:
    """The solutions whose recording is missing or no longer matches what it depends on."""
    recorded = recording(exercise, folder)["solutions"]
    spec = expected(exercise, folder)
    return [label for label, entry in spec["solutions"].items()
            if recorded.get(label, {}).get("fingerprint") != fingerprint(entry, spec.get("depends", ()))]


def expected_verdict(verdicts: dict, name: str, era: str) -> str:
    """``"pass"`` or the failure kind a row must get."""
    for key in (f"{name}@{era}", name, ALL):
        if key in verdicts:
            return verdicts[key]
    raise KeyError(f"no expected verdict for {name!r} in {era}")


def scenarios(battery: str) -> list:
    """The battery's scenarios as its grader runs them: with its hints, then the audits of the servers it names."""
    _, found, spec = load_battery(battery)
    return [dataclasses.replace(s, hints={**spec.get("hints", {}), **s.hints}) for s in found + scenarios_of(spec)]


def rows(exercise: str, label: str) -> list[tuple]:
    """The recorded rows of one solution: (scenario, outcome) in battery order."""
    by_key = {(s.name, s.era): s for s in scenarios(expected(exercise)["solutions"][label]["battery"])}
    return [(by_key[(row["scenario"], row["era"])], decode(row["outcome"]))
            for row in recording(exercise)["solutions"][label]["rows"]]


def sanitized(text: str) -> str:
    """A recording's text without what differs from run to run: the servers' random cursors (named by
    order of appearance; a tampered one, one character changed, after it), how many lines a call stopped
    at its budget sent, and the seconds an audit line measured (an exit, a late reply, the card's time)."""
    tokens = list(dict.fromkeys(re.findall(r'\\"nextCursor\\":\\"([^"\\]+)\\"', text)))
    for sent in dict.fromkeys(re.findall(r'\\"cursor\\":\\"([^"\\]+)\\"', text)):
        near = [n for n, token in enumerate(tokens)
                if len(sent) == len(token) and sum(map(str.__ne__, sent, token)) == 1]
        if sent not in tokens and near:
            text = text.replace(sent, f"<cursor {near[0]}, one character changed>")
    for n, token in enumerate(tokens):
        text = text.replace(token, f"<cursor {n}>")
    text = re.sub(r"\d+\.\d( s (?:later|after)| s; exit status)", r"N\1", text)
    return re.sub(r'"wire_frames": \d+', '"wire_frames": "N"', text)
