"""How pages write a configured length of time (`analysis.readable.span`)."""

import pytest

from analysis.readable import span


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(259200, "3 d"), (5400, "1 h 30 min"), (90, "1 min 30 s"), (45, "45 s"), (0, "0 s")],
)
def test_a_span_is_written_in_its_largest_units(seconds, shown):
    assert span(seconds) == shown


def test_a_span_of_three_units_is_rounded_to_two():
    assert span(86400 + 3600 + 60 + 1) == "1 d 1 h"
