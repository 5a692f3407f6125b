"""One registry of rule kinds: a new kind is one class; nothing else needs editing."""

import pytest

from alerts import kinds
from alerts.forms import RuleForm
from alerts.models import AlertInstance, Rule
from alerts.services import default_rule_specs
from analysis.alerting import Health, Observation

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue_kind():
    @kinds.register
    class QueueDepth(kinds.RuleKind):
        name = "queue_depth"
        label = "Requests waiting above (requests)"
        description = "Mean requests waiting in the engine's queue."
        unit = "requests"

        def default_specs(self, service):
            return [{"name": "Queue deep", "threshold": 5.0, "window_s": 60, "for_s": 0}]

        def observe_window(self, rule, w, inputs):
            if w.waiting_mean is None:
                return Observation(Health.NO_DATA, reason="no queue length scraped")
            return Observation(Health.OK, value=w.waiting_mean, reason="mean requests waiting")

    yield QueueDepth
    kinds.unregister("queue_depth")


def test_a_registered_kind_evaluates_and_fires(timeline, service, queue_kind):
    rule = Rule.objects.create(
        service=service, name="queue", kind="queue_depth", threshold=5, window_s=60, for_s=0
    )
    timeline.tick(0, gauges={"requests_waiting": 8})
    assert AlertInstance.objects.get(rule=rule, state="firing").value == pytest.approx(8)


def test_a_registered_kind_brings_its_default_rules(service, queue_kind):
    specs = default_rule_specs(service)
    assert {"kind": "queue_depth", "name": "Queue deep"}.items() <= next(
        s for s in specs if s["kind"] == "queue_depth"
    ).items()


def test_a_registered_kind_is_a_form_choice(service, queue_kind):
    assert "queue_depth" in dict(RuleForm(service=service).fields["kind"].choices)


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
