"""Errors from the engine's counters drive the error-rate rule; a P99 says where it was
measured (issue 20, items 1 and 4)."""

from datetime import timedelta

import pytest

from alerts.models import AlertInstance, Rule
from collectors import storage
from collectors.models import ScrapeWindow
from collectors.services.ingest import WINDOW_FIELDS, epoch_minute
from collectors.services.rollups import rollup_host_minutes
from tests.factories.alerts import minute

pytestmark = pytest.mark.django_db


def scraped(service, host, i: int, *, ok: float, errors: float, aborts: float = 0.0) -> None:
    """Minute i: three 15 s scrape windows of vLLM counters, nothing pushed."""
    start = minute(i)
    counters = {"requests_finished": ok / 3, "request_errors": errors / 3,
                "request_aborts": aborts / 3}  # fmt: skip
    rows = [
        (host.pk, service.pk, "vllm", start + timedelta(seconds=s - 15),
         start + timedelta(seconds=s), 15.0, counters, {}, {}, {}, False)
        for s in (15, 30, 45)
    ]  # fmt: skip
    storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, rows)
    rollup_host_minutes(host_id=host.pk, minutes=[epoch_minute(start)])


def error_rule(service, threshold=0.05) -> Rule:
    return Rule.objects.create(
        service=service, name="errors", kind="error_rate", threshold=threshold, window_s=60,
        for_s=0, min_requests=100,
    )  # fmt: skip


def test_engine_errors_fire_the_error_rate_rule(timeline, service, host):
    rule = error_rule(service)
    scraped(service, host, 0, ok=270, errors=30)
    timeline.tick(0)
    assert AlertInstance.objects.get(rule=rule, state="firing").value == pytest.approx(0.1)


def test_client_aborts_are_not_errors(timeline, service, host):
    rule = error_rule(service)
    scraped(service, host, 0, ok=270, errors=0, aborts=30)
    timeline.tick(0)
    assert not AlertInstance.objects.filter(rule=rule, state="firing").exists()


def test_too_few_finished_requests_for_an_error_rate_is_insufficient_data(timeline, service, host):
    rule = error_rule(service)
    scraped(service, host, 0, ok=9, errors=3)
    timeline.tick(0)
    rule.refresh_from_db()
    assert rule.health == "insufficient_data"


def test_a_p99_reason_says_where_it_was_measured(timeline, p99_rule):
    timeline.tick(0, e2e_ms=2500.0)
    p99_rule.refresh_from_db()
    assert "client-side" in p99_rule.health_reason


def test_the_error_rate_rule_exports_as_errors_over_every_finished_request(service):
    from alerts.kinds.error_rate import ErrorRate
    from alerts.promql import Metrics

    expr = ErrorRate().promql(error_rule(service), Metrics("vllm"))
    assert 'finished_reason="abort"' in expr and 'finished_reason="error"' in expr


def test_tritons_error_rate_exports_its_counters_by_their_bare_names(service):
    # Triton (prometheus-cpp) exposes `nv_inference_request_failure`, with no `_total`.
    from alerts.kinds.error_rate import ErrorRate
    from alerts.promql import Metrics

    expr = ErrorRate().promql(error_rule(service), Metrics("triton"))
    assert "increase(nv_inference_request_failure{" in expr and "_total" not in expr


def test_exported_triton_counts_read_the_ensemble_alone_as_the_parser_does(tmp_path):
    # TensorRT-LLM's ensemble calls preprocessing (and more), which count each request again.
    import yaml

    from alerts.promql import Metrics
    from tests import fleet_tsdb

    expr = Metrics("triton").counter_increase("requests_finished", "1m")
    (tmp_path / "rules.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "t", "rules": [{"record": "done", "expr": expr}]}]})
    )
    series = {"ensemble": "0+10x5", "preprocessing": "0+10x5", "postprocessing": "0+10x5"}
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": f'nv_inference_request_success{{model="{m}",version="1"}}', "values": v}
                for m, v in series.items()
            ],
            "promql_expr_test": [
                {"expr": "done", "eval_time": "3m",
                 "exp_samples": [{"labels": "done", "value": 10}]}
            ],
        }],
    }  # fmt: skip
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    assert "SUCCESS" in fleet_tsdb.promtool("test", "rules", str(tmp_path / "test.yml"))
