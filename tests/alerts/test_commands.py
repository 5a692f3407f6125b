from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_evaluate_alerts_reports_what_it_did(service):
    out = StringIO()
    call_command("evaluate_alerts", "--at", "2026-03-02T09:05:30Z", stdout=out)
    assert out.getvalue().startswith("evaluated 13 rule(s) at 2026-03-02T09:05:00+00:00")


@pytest.mark.parametrize("at", ["2026-03-02T09:05:30", "yesterday"])
def test_evaluate_alerts_exits_2_on_a_time_without_a_zone_or_not_a_time(service, at):
    """docs/contracts.md: 2 on a bad --at (exit 1 is Django's default for any CommandError)."""
    with pytest.raises(CommandError, match="--at") as refused:
        call_command("evaluate_alerts", "--at", at)
    assert refused.value.returncode == 2


def test_the_beat_task_evaluates(service):
    from alerts.tasks import evaluate

    result = evaluate.delay().get()
    assert result["rules"] == 13
