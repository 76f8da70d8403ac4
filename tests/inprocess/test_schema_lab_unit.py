"""In-process: the checks of tests/stdio/test_schema_lab.py's subject that start no process."""

import pytest

from course_lib import walk
from course_lib.chapters import negative_controls as negative, schema_mutants, schema_oracles
from course_lib.chapters.negative_controls import Binding, Mutant

pytestmark = pytest.mark.anyio


def test_audit_differences_name_every_change():
    a = {"requests": [{"method": "tools/list", "cursor": None}, {"method": "tools/call", "name": "alpha"}],
         "closed": True}
    b = {"requests": [{"method": "tools/call", "name": "alpha"}], "closed": False}
    assert schema_oracles.audit_differences(a, a) == []
    assert schema_oracles.audit_differences(a, b) == ["missing request #1: tools/list cursor=None",
                                                   "closed is False, expected True"]
    assert schema_oracles.audit_differences(b | {"closed": True}, a) == ["extra request #1: tools/list cursor=None"]


def test_broken_mutants_are_not_kills():
    def broken(old, new="def walk(): pass"):
        return Mutant("broken", "course_lib/walker.py", old, new,
                      "course_lib.chapters.schema_lab:probe_in_place", "refresh_rejected", "bad catalog accepted")

    with pytest.raises(negative.BadMutant, match="anchor found 0 times"):
        negative.run_mutant(broken("this text is not there", "x"))
    with pytest.raises(negative.BadMutant, match="binds no 'no_such_function'"):
        negative.run_mutant(broken(Binding("no_such_function")))
    with pytest.raises(negative.BadMutant, match="binds no 'Catalog.no_such_method'"):
        negative.run_mutant(broken(Binding("Catalog.no_such_method")))
    with pytest.raises(negative.BadMutant, match="its definition binds no 'walk'"):
        negative.run_mutant(broken(Binding("walk"), "def walker(): pass"))
    with pytest.raises(negative.BadMutant, match="its definition does not compile"):
        negative.run_mutant(broken(Binding("walk"), "def walk(:"))
    # A mutant whose copy does not even import is reported, not counted:
    # tests/stdio/test_schema_cache_facts.py::test_a_mutant_that_does_not_import_is_not_a_kill runs one.


def test_judging_counts_only_the_designated_check():
    m = schema_mutants.MUTANTS[0]
    judge = negative._judge
    assert judge(m, {"status": "check_failed", "check": m.check, "message": m.message + " (details)"}).killed
    assert judge(m, {"status": "check_failed", "check": "case_oracle", "message": m.message}).verdict == "wrong_check"
    assert judge(m, {"status": "check_failed", "check": m.check, "message": "other text"}).verdict == "wrong_check"
    assert judge(m, {"status": "error", "detail": "NameError: x"}).verdict == "not_a_kill"
    assert judge(m, {"status": "timeout", "detail": "probe ran past 1 s"}).verdict == "not_a_kill"
    assert judge(m, {"status": "passed"}).verdict == "survived"
