"""The HTML a widget shows: its panes (preformatted text, tables) and the still of its first state.

No server and no SDK here: :mod:`course_lib.selfcheck`'s questions use the still as well.
"""
from __future__ import annotations

import html

import ipywidgets as W

from course_lib.display import Table


def _pre(text: str) -> str:
    return f"<pre style='margin:0'>{html.escape(text)}</pre>"  # the code size of its page: 16 px on a slide


def html_table(table: Table) -> str:
    """A display.Table as an HTML table: its own HTML form (same cells, PASS/FAIL and refusals highlighted)."""
    return table.html()


# --------------------------------------------------------------------------- the first state, as static HTML

SNAPSHOT_NOTE = "a still of this widget as it first appears; it responds when the cell runs in JupyterLab"
_CONTROL = ("display:inline-block; border:1px solid #bbb; border-radius:3px; padding:1px 8px; margin:2px 4px 2px 0;"
            " background:#f4f4f4; color:#333; font-size:0.9em")


def static_html(widget: W.Widget) -> str:
    """What ``widget`` shows now, as plain HTML: boxes, their HTML panes (tables, transcripts),
    and inert pictures of the controls (a dropdown's choice, a button's label). Deterministic:
    it reads the widgets' values only, never their model ids."""
    esc = lambda v: html.escape(str(v), quote=False)
    if isinstance(widget, W.Box):
        inner = "".join(static_html(child) for child in widget.children)
        if isinstance(widget, W.HBox):
            return f"<div style='display:flex; flex-wrap:wrap; align-items:center; gap:4px'>{inner}</div>"
        return f"<div>{inner}</div>"
    if isinstance(widget, W.HTML):
        return f"<div>{widget.value}</div>" if widget.value else ""
    label = f"<span style='margin-right:4px'>{esc(widget.description)}</span>" if getattr(widget, "description", "") else ""
    if isinstance(widget, W.ToggleButtons):
        buttons = "".join(f"<span style='{_CONTROL}{'; background:#ddd; font-weight:bold' if o == widget.value else ''}'>"
                          f"{esc(o)}</span>" for o in widget.options)
        return f"<span>{label}{buttons}</span>"
    if isinstance(widget, W.Dropdown):
        return f"<span>{label}<span style='{_CONTROL}'>{esc(widget.label)} ▾</span></span>"
    if isinstance(widget, W.Button):
        faded = "; opacity:0.5" if widget.disabled else ""
        return f"<span style='{_CONTROL}{faded}'>{esc(widget.description)}</span>"
    return f"<span>{esc(type(widget).__name__)}</span>"


class FirstState:
    """Mixin: the display bundle also carries ``text/html``, a still of the widget's first state.

    JupyterLab renders the live widget view (its renderer ranks above HTML) and ignores the
    still; a saved notebook (whose stored view ``make regen`` drops) and the static slides show
    the still instead of a placeholder."""

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = (f"<div class='course-widget-still'>{static_html(self)}"
                               f"<div style='font-size:0.8em; font-style:italic; color:#666'>{SNAPSHOT_NOTE}</div></div>")
        return bundle
