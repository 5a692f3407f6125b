"""One registry of rule kinds: what it refuses. A new kind used end to end, as
docs/extending.md says, is tests/alerts/test_extending_kind.py."""

import pytest

from alerts.forms import RuleForm
from alerts.models import Rule

pytestmark = pytest.mark.django_db


def test_the_form_refuses_a_kind_nobody_registered(service):
    form = RuleForm(
        data={"name": "x", "kind": "nonsense", "threshold": 1, "window_s": 60, "for_s": 0,
              "keep_firing_for_s": 0, "min_requests": 0, "severity": "warning",
              "labels": "{}", "enabled": True},
        service=service,
    )  # fmt: skip
    assert not form.is_valid()
    assert "kind" in form.errors


def test_a_stored_kind_no_module_registers_shows_as_rule_health_error(timeline, service):
    rule = Rule.objects.create(
        service=service, name="stale", kind="retired_kind", threshold=1, window_s=60, for_s=0
    )
    timeline.tick(0, gauges={"requests_waiting": 1})
    rule.refresh_from_db()
    assert (rule.health, "retired_kind" in rule.health_reason) == ("error", True)
