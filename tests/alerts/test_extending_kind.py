"""docs/extending.md, "An alert rule kind", followed literally: the block as a module in
alerts/kinds/, discovered, offered, evaluated and fired."""

import pytest

from alerts import kinds
from alerts.forms import RuleForm
from alerts.models import AlertInstance, Rule
from alerts.services import default_rule_specs
from tests.extending_doc import module_from_doc

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue_depth(tmp_path):
    with module_from_doc("An alert rule kind", tmp_path, lambda: kinds.unregister("queue_depth")):
        yield kinds.get("queue_depth")


def test_the_documented_kind_evaluates_and_fires(timeline, service, queue_depth):
    rule = Rule.objects.create(
        service=service, name="queue", kind="queue_depth", threshold=5, window_s=60, for_s=0
    )
    timeline.tick(0, gauges={"requests_waiting": 8})
    assert AlertInstance.objects.get(rule=rule, state="firing").value == pytest.approx(8)


def test_the_documented_kind_is_a_form_choice(service, queue_depth):
    assert "queue_depth" in dict(RuleForm(service=service).fields["kind"].choices)


def test_the_documented_kind_brings_its_default_rule(service, queue_depth):
    assert any(spec["kind"] == "queue_depth" for spec in default_rule_specs(service))
