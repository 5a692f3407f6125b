"""Each figure read from an engine names that service's engine's own metrics (the mapping
tables), never vLLM's on a TGI, SGLang or Triton service."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from analysis.buckets import BucketCounts
from analysis.slo import SloWindow
from collectors.exposition.engines import measured_by
from dashboards.claims import OUTCOME_CANONICALS, outcome_source
from dossiers.models import Slo
from dossiers.slo_kinds import PUSHED
from tests.factories.catalog import make_baseline, make_service
from tests.factories.traffic import seed_traffic

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("engine", "metric"),
    [
        ("tgi", "tgi_request_failure"),
        ("sglang", "sglang:http_responses_total"),
        ("triton", "nv_inference_request_failure"),
        ("vllm", 'vllm:request_success_total{finished_reason="error"}'),
    ],
)
def test_the_error_rate_names_the_engines_own_error_counter(engine, metric):
    said = outcome_source(engine, {"engine"})
    assert metric in said
    if engine != "vllm":
        assert "vllm" not in said.lower()
        assert "finished_reason" not in said


def test_an_engine_without_an_error_counter_says_so():
    # TensorRT-LLM's server counts finished requests by reason but exports no errors.
    assert "exports no request_errors" in measured_by("trtllm", OUTCOME_CANONICALS)


@pytest.mark.django_db
def test_the_kv_cache_note_names_the_services_engine_not_vllms(team):
    # The memory chart said "(vLLM: gpu_cache_usage_perc)" on every service without a KV gauge.
    from dashboards.figures.service import memory_figure
    from dashboards.selectors import service_dashboard

    svc = make_service(team, "tgi-kv", engine="tgi")
    seed_traffic(service=svc, start=NOW - timedelta(minutes=30), minutes=5, kv=None)
    d = service_dashboard(service=svc, start=NOW - timedelta(hours=1), end=NOW)
    text = str(memory_figure(d))
    assert "TGI exports no kv_cache_usage" in text
    assert "vLLM" not in text


@pytest.mark.django_db
def test_the_live_error_rate_of_a_tgi_service_cites_no_vllm_metric(client, owner, team,
                                                                  time_machine):  # fmt: skip
    # The line read "engine counters, e.g. vLLM's finished_reason="error"" on every service.
    svc = make_service(team, "tgi-svc", engine="tgi")
    make_baseline(svc, measured_at=NOW - timedelta(days=1), qps=1.0, e2e_p99_ms=1000.0)
    time_machine.move_to(NOW + timedelta(seconds=30))
    seed_traffic(service=svc, start=NOW - timedelta(minutes=60), minutes=60)
    client.force_login(owner)
    html = client.get(reverse("dashboards:service_claims", args=[svc.slug])).content.decode()
    line = html[html.index("data-live-errors") :]
    line = line[: line.index("</p>")]
    assert "vLLM" not in line
    assert "finished_reason" not in line
    assert "data-error-source>pushed requests" in line


@pytest.mark.django_db
def test_an_availability_slo_counted_by_the_engine_names_its_counters(team):
    svc = make_service(team, "tgi-slo", engine="tgi")
    slo = Slo.objects.create(service=svc, name="Up", kind="availability", target_percent=99.5)
    w = SloWindow(service_id=svc.pk, scraped_requests=990.0, scraped_errors=10.0)
    source = _count(slo, w)
    assert "tgi_request_failure" in source
    assert "tgi_request_success" in source


@pytest.mark.django_db
def test_a_latency_slo_read_from_engine_histograms_names_the_histogram(team):
    svc = make_service(team, "sglang-slo", engine="sglang")
    slo = Slo.objects.create(
        service=svc, name="Fast", kind="latency", target_percent=99.0, e2e_ms=2000.0
    )
    bc = BucketCounts(edges=(1.0, 2.0, 5.0), counts=(50, 40, 10, 0), sum=150.0)
    w = SloWindow(service_id=svc.pk, buckets={"e2e": bc})
    assert "sglang:e2e_request_latency_seconds" in _count(slo, w)


def _count(slo: Slo, w: SloWindow) -> str:
    from dossiers.slo_kinds import KINDS

    return KINDS[slo.kind].count(slo, w).source


def test_pushed_outcomes_name_the_pushed_requests():
    assert outcome_source("tgi", {"pushed"}) == PUSHED
