"""How a mutant's edit is applied: a named binding is replaced whatever the code around it looks like."""
import runpy
import textwrap

import pytest

from course_lib.chapters.negative_controls import BadMutant, Binding, Mutant, apply

MODULE = textwrap.dedent('''
    from json import dumps as encode


    def double(x):
        result = x * 2
        return result


    class Counter:
        def step(self, n):
            return n + 1
''')


def edited(tmp_path, old, new, source=MODULE):
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    apply(Mutant("m", "m.py", old, new, "probe:f", "check", "message"), tmp_path)
    return runpy.run_path(str(tmp_path / "m.py"))


def test_a_function_is_replaced_and_may_call_the_original(tmp_path):
    module = edited(tmp_path, Binding("double"), """
        def double(x):
            return original(x) + 1
        """)
    assert module["double"](5) == 11


def test_a_method_is_replaced_on_its_class(tmp_path):
    module = edited(tmp_path, Binding("Counter.step"), """
        def step(self, n):
            return original(self, n) * 10
        """)
    assert module["Counter"]().step(1) == 20


def test_an_imported_name_is_replaced_for_the_module_that_uses_it(tmp_path):
    module = edited(tmp_path, Binding("encode"), "def encode(value):\n    return 'wrong'\n")
    assert module["encode"]({}) == "wrong"


def test_the_anchor_survives_a_rewritten_body(tmp_path):
    # The same mutant applies after a refactor renamed the local variable and reflowed the body.
    refactored = MODULE.replace("result = x * 2\n        return result", "return x + x")
    module = edited(tmp_path, Binding("double"), "def double(x):\n    return original(x) + 1\n", refactored)
    assert module["double"](5) == 11


@pytest.mark.parametrize("old, new, error", [
    (Binding("triple"), "def triple(x): pass", "m.py binds no 'triple'"),
    (Binding("Counter.reset"), "def reset(self): pass", "m.py binds no 'Counter.reset'"),
    (Binding("Missing.step"), "def step(self): pass", "m.py binds no 'Missing.step'"),
    (Binding("double"), "def triple(x): pass", "its definition binds no 'double'"),
    (Binding("double"), "def double(x:", "its definition does not compile"),
    ("result = x * 3", "x", "anchor found 0 times"),
    ("return", "x", "anchor found 2 times"),
])
def test_an_unusable_mutant_is_refused_before_anything_runs(tmp_path, old, new, error):
    with pytest.raises(BadMutant, match=error):
        edited(tmp_path, old, new)
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == MODULE  # nothing was written
