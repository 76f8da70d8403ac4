"""The checks the mutation tool's own tests run on ``course_lib.tooling.mutants_sample`` (and on its
mutants): they leave its length check unheld on purpose. Not collected by the suite (no ``test_``
prefix); ``CHECKS`` take the judge, so the in-process test can hand them a mutant."""
from course_lib.tooling.mutants_sample import judge_answer


def right_list_passes(judge):
    assert judge({"names": ["a"]}, ["a"]) == (True, "returned ['a']")


def other_list_fails(judge):
    assert judge({"names": ["a"]}, ["b"]) == (False, "returned ['b']")


def not_a_list_fails(judge):
    assert judge({"names": ["a"]}, "a") == (False, "not a list")


CHECKS = (right_list_passes, other_list_fails, not_a_list_fails)


def test_the_sample_judge():
    for check in CHECKS:
        check(judge_answer)
