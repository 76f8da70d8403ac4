"""``tool.schema``: a lint of the tools the list probe listed, without calling any of them.

Each tool's ``inputSchema`` and ``outputSchema`` must be a valid JSON Schema of its dialect: its
``$schema``, 2020-12 when it has none (spec: basic, JSON Schema usage: "Schemas MUST be valid
according to their declared or default dialect"), checked with the ``jsonschema`` library against
that dialect's metaschema. A dialect the library does not know is "not checked" for that schema.
``inputSchema`` has ``type: "object"`` at the top (the era's schema.json: ``Tool.inputSchema``);
in 2025-11-25 ``outputSchema`` too (``Tool.outputSchema``; 2026-07-28 allows any schema there).
Names follow the era's rule (spec: server/tools, Tool Names, all SHOULD): 1 to 128 characters,
only ``A-Z a-z 0-9 _ - .``.

One line per era: FAIL when a MUST is broken (a WARN when only a name is), naming each tool and
what is wrong with it, the server's own values quoted.
"""
from __future__ import annotations

import functools
import json
import re

from jsonschema import validators
from jsonschema.exceptions import best_match

from course_lib.audit.specschema import version_of

VALID = "MUST (spec: basic, JSON Schema usage; schema.json: Tool)"
NAMES = "SHOULD (spec {version}: server/tools, tool names)"
# The tool-name rule of each era, as server/tools.mdx states it (the same in both).
NAME_RULE = {era: re.compile(r"[A-Za-z0-9_.\-]{1,128}") for era in ("2025-11-25", "2026-07-28")}
OBJECT_AT_TOP = {"2025-11-25": ("inputSchema", "outputSchema"), "2026-07-28": ("inputSchema",)}
SHOWN = 3  # tools named on the line; the rest are counted
ROOM = 100  # characters of a validator's message


def _quote(value, room: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= room else text[: room - 1] + "…"


def schema_faults(field: str, schema, object_at_top: bool) -> tuple[list[str], list[str]]:
    """``(faults, notes)`` of one schema: what breaks a MUST, and what was not checked. A schema the
    same, key for key and in the same order, as one checked before gets the same words at once (a
    catalog of 10,000 tools often has a handful of schemas)."""
    try:
        text = json.dumps(schema, ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON: not from a reply, checked as it is
        return _schema_faults(field, schema, object_at_top)
    faults, notes = _checked(field, text, object_at_top)
    return list(faults), list(notes)


@functools.lru_cache(maxsize=256)
def _checked(field: str, text: str, object_at_top: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    faults, notes = _schema_faults(field, json.loads(text), object_at_top)
    return tuple(faults), tuple(notes)


def _schema_faults(field: str, schema, object_at_top: bool) -> tuple[list[str], list[str]]:
    if not isinstance(schema, dict):
        return [f"{field} is {_quote(schema)}, not a JSON Schema object"], []
    faults, notes = [], []
    cls = validators.validator_for(schema, default=validators.Draft202012Validator) if "$schema" not in schema \
        else validators.validator_for(schema, default=None)
    if cls is None:
        notes.append(f"{field}: dialect {_quote(schema['$schema'])} not known to the validator, not checked")
    else:
        error = best_match(cls(cls.META_SCHEMA).iter_errors(schema))
        if error is not None:
            message = " ".join(error.message.split())
            dialect = schema.get("$schema", "2020-12 (default)")
            faults.append(f"{field}{error.json_path[1:]} is not valid {dialect}: {message[:ROOM]}")
    if object_at_top and schema.get("type") != "object":
        faults.append(f"{field} has type {_quote(schema.get('type'))} at the top, not \"object\"")
    return faults, notes


def lint(era: str, tool) -> tuple[list[str], list[str], list[str]]:
    """``(faults, name warnings, notes)`` of one tool as listed."""
    version = version_of(era)
    if not isinstance(tool, dict):
        return [f"a tool that is not an object: {_quote(tool)}"], [], []
    faults, warnings, notes = [], [], []
    for field in ("inputSchema", "outputSchema"):
        if field == "outputSchema" and field not in tool:
            continue
        found, unchecked = schema_faults(field, tool.get(field), field in OBJECT_AT_TOP.get(version, ("inputSchema",)))
        faults += found
        notes += unchecked
    name = tool.get("name")
    rule = NAME_RULE.get(version, NAME_RULE["2025-11-25"])
    if not isinstance(name, str) or not rule.fullmatch(name):
        bad = sorted({c for c in name if not re.fullmatch(r"[A-Za-z0-9_.\-]", c)}) if isinstance(name, str) else []
        warnings.append("name " + (f"has {len(name)} characters (1 to 128)" if isinstance(name, str) and
                                   not 1 <= len(name) <= 128 else f"has {_quote(''.join(bad))}, outside "
                                   "A-Z a-z 0-9 _ - ." if bad else f"is {_quote(name)}, not a string"))
    return faults, warnings, notes


def run(ctx, era: str, report) -> None:
    """The ``tool.schema`` line of ``era``, from the tools its list probe listed."""
    listing = (ctx.lists.get(era) or {}).get("tools")
    if listing is None or not listing.items:
        report.add("tool.schema", "INFO", VALID, era, "not checked: no tool was listed")
        return
    tools = listing.items
    judged = [(tool, *lint(era, tool)) for tool in tools]
    bad = [(tool, faults, warnings) for tool, faults, warnings, _ in judged if faults or warnings]
    notes = [note for *_, tool_notes in judged for note in tool_notes]
    if not bad:
        report.add("tool.schema", "PASS", VALID, era, f"{len(tools)} tools: schemas valid, an object at the top, "
                   "names legal" + (f"; {len(notes)} schema(s) not checked: {notes[0]}" if notes else ""))
        return
    failing = any(faults for _, faults, _ in bad)
    said = "; ".join(f"{_name(tool)}: {', '.join(faults + warnings)}" for tool, faults, warnings in bad[:SHOWN])
    more = f" (and {len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
    report.add("tool.schema", "FAIL" if failing else "WARN",
               VALID if failing else NAMES.format(version=version_of(era)), era,
               f"{len(bad)} of {len(tools)} tools: {said}{more}")


def _name(tool) -> str:
    return f"tool {_quote(tool.get('name') if isinstance(tool, dict) else None)}"


__all__ = ["lint", "run", "schema_faults"]
