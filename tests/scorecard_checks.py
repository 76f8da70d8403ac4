"""What every grader test asks of a known-wrong solution's scorecard."""


def assert_flagged(card, failing: str, control: str, observed: str):
    """The wrong solution fails ``failing`` (observation starting with ``observed``, with a hint)
    and passes ``control`` (unless it is the same scenario); returns the failing verdict."""
    verdict = card.verdict_of(failing)
    assert not verdict.passed
    assert verdict.observed.startswith(observed), verdict.observed
    assert verdict.scenario.hint  # every failure comes with a hint
    if control != failing:
        assert card.verdict_of(control).passed, card.text()
    return verdict
