"""The planner's chart: latency axes labelled at round values a reader can read off."""

import pytest

from planning.charts import log_ticks, plan_figure
from planning.objectives import parse_objectives
from planning.plan import plan_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("low", "high", "labels"),
    [
        (40, 1500, ["50", "100", "200", "500", "1,000"]),  # 1.6 decades: 1-2-5
        (300, 2500, ["300", "500", "1,000", "2,000"]),  # under a decade: 1-2-3-5
        (5, 200_000, ["10", "100", "1,000", "10,000", "100,000"]),  # past three: powers of ten
    ],
)
def test_a_log_latency_axis_is_labelled_at_round_values_only(low, high, labels):
    assert log_ticks(low, high)[1] == labels


def test_a_latency_row_spans_and_labels_an_slo_line_above_its_curves(owner, swept):
    """TPOT here stays near 100 ms at most: a 1,000 ms line is still on the axis, labelled."""
    plan = plan_for(swept, objectives=parse_objectives(["tpot_p99_ms=1000"]), load=10)
    layout = plan_figure(plan).layout
    labels = [layout[name].ticktext for name in layout if name.startswith("yaxis")]
    assert any(row and "1,000" in row and "20" in row for row in labels), labels
