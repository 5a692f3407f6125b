"""Default rules come from the service's SLOs, and every new service gets them."""

import pytest

from alerts import services
from alerts.models import Rule

pytestmark = pytest.mark.django_db


def test_default_p99_rules_use_the_slos(service):
    services.ensure_default_rules(service)
    rules = {r.kind: r for r in Rule.objects.filter(service=service)}
    assert rules["p99_e2e"].threshold == 2000
    assert rules["p99_ttft"].threshold == 500
    assert rules["p99_tpot"].threshold == 50
    assert rules["p99_e2e"].resolve_threshold == 1800


def test_a_service_without_an_slo_gets_no_rule_for_it(service):
    service.slo_p99_tpot_ms = None
    service.save(update_fields=["slo_p99_tpot_ms"])
    services.ensure_default_rules(service)
    assert not Rule.objects.filter(service=service, kind="p99_tpot").exists()


def test_every_default_kind_is_created(service):
    services.ensure_default_rules(service)
    assert set(Rule.objects.filter(service=service).values_list("kind", flat=True)) == {
        "p99_e2e", "p99_ttft", "p99_tpot", "gpu_waiting", "sm_gap", "kv_cache",
        "cost_vs_baseline", "margin", "no_data", "slo_burn",
    }  # fmt: skip


def test_ensuring_defaults_twice_creates_nothing_more(service):
    services.ensure_default_rules(service)
    assert services.ensure_default_rules(service) == []
    assert Rule.objects.filter(service=service).count() == 13


def test_evaluation_creates_defaults_for_a_new_service(service):
    from tests.factories.alerts import evaluation_time

    services.evaluate_all(evaluation_time(0))
    assert Rule.objects.filter(service=service, is_default=True).count() == 13


def test_default_rules_pass_model_validation(service):
    services.ensure_default_rules(service)
    for rule in Rule.objects.filter(service=service):
        rule.full_clean()
