"""Prometheus as a data source, against the real `prometheus` binary: it scrapes a loopback
server serving the vLLM fixtures growing over time (and restarting once); PerfHub reads the
series back through the HTTP API and must reach the fixture's own P99 and request count."""

from __future__ import annotations

import itertools
import math
import re
import time
from datetime import UTC, datetime, timedelta

import pytest
import requests
from django.utils import timezone
from rest_framework.test import APIClient

from analysis import buckets
from collectors import exposition
from collectors.exposition.promql import expositions, parse_selector, series_query
from collectors.models import Host, PrometheusSource, ScrapeState, ScrapeWindow, ServiceRollup
from collectors.selectors import service_metrics
from collectors.services.prometheus import source_create, source_sync, source_update, sync_range
from collectors.services.rollups import rollup_pending
from collectors.services.tokens import token_issue
from collectors.tasks import schedule_prometheus_sources
from deploy.stack import free_port, wait_for
from tests.factories.batches import make_batch, rfc3339
from tests.promstack import Loopback, start_prometheus
from tests.support import FIXTURES

# The test Prometheus listens on loopback, which the outbound guard refuses unless allow-listed.
pytestmark = pytest.mark.usefixtures("outbound_loopback")

SAMPLE = re.compile(r"^(?P<series>[^ #][^ ]*) (?P<value>\S+)$")
GROWING = ("_total", "_bucket", "_sum", "_count")


class GrowingVllm:
    """Serves t0 + k x (t15 - t0) for counters and histograms, k counting the scrapes since
    the last restart (a restart starts again from zero, as a restarted engine does)."""

    def __init__(self) -> None:
        t0 = (FIXTURES / "vllm" / "metrics-t0.prom").read_text().splitlines()
        t15 = (FIXTURES / "vllm" / "metrics-t15.prom").read_text().splitlines()
        self.lines: list[tuple[str, float, float] | str] = []
        for a, b in zip(t0, t15, strict=True):
            ma, mb = SAMPLE.match(a), SAMPLE.match(b)
            if not ma:
                self.lines.append(a)
                continue
            assert ma["series"] == mb["series"], "the two fixtures list the same series"
            self.lines.append((ma["series"], float(ma["value"]), float(mb["value"])))
        self.k = 0
        self.served: list[int] = []

    def text(self) -> str:
        self.k += 1
        self.served.append(self.k)
        out = []
        for line in self.lines:
            if isinstance(line, str):
                out.append(line)
                continue
            series, v0, v15 = line
            name = series.split("{", 1)[0]
            value = self.k * (v15 - v0) if name.endswith(GROWING) else v15
            out.append(f"{series} {value!r}")
        return "\n".join(out) + "\n"

    def restart(self) -> None:
        self.k = 0


def fixture_window() -> exposition.ScrapeWindow:
    t0 = exposition.parse((FIXTURES / "vllm" / "metrics-t0.prom").read_text(), "vllm")
    t15 = exposition.parse((FIXTURES / "vllm" / "metrics-t15.prom").read_text(), "vllm")
    return exposition.window(t0, t15, 15.0)


def samples_stored(prom_url: str, query: str) -> int:
    answer = requests.get(prom_url + "/api/v1/query", params={"query": query}, timeout=2).json()
    result = answer["data"]["result"]
    return int(float(result[0]["value"][1])) if result else 0


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """Prometheus scraping the growing engine every 2 s: a few scrapes, a restart, a few more.

    PerfHub reads at a 1 s step, finer than the scrapes, so every stored sample is seen."""
    engine = GrowingVllm()
    server = Loopback(get=engine.text)
    config = f"""
global:
  scrape_interval: 2s
  evaluation_interval: 2s
scrape_configs:
  - job_name: vllm
    static_configs:
      - targets: ["127.0.0.1:{server.port}"]
"""
    prom = start_prometheus(tmp_path_factory.mktemp("prometheus"), config)
    count = 'count_over_time(vllm:request_success_total{finished_reason="stop"}[10m])'
    try:
        wait_for("4 scrapes", lambda: samples_stored(prom.url, count) >= 4, timeout=30, every=0.2)
        engine.restart()
        wait_for("7 scrapes", lambda: samples_stored(prom.url, count) >= 7, timeout=30, every=0.2)
        yield prom, engine
    finally:
        prom.stop()
        server.close()


@pytest.fixture
def no_lag(settings):
    settings.PERFHUB_PROMETHEUS_LAG_S = 0


def raw_increase(prom_url: str, series: str, until: float) -> float:
    """Reset-aware increase over every sample Prometheus stored up to `until`, per series."""
    answer = requests.get(
        prom_url + "/api/v1/query", params={"query": f"{series}[1h]"}, timeout=2
    ).json()
    total = 0.0
    for result in answer["data"]["result"]:
        values = [float(v) for t, v in result["values"] if float(t) <= until]
        for before, after in itertools.pairwise(values):
            total += after if after < before else after - before
    return total


def test_a_prometheus_source_reaches_the_fixtures_p99(stack, service, no_lag):
    prom, _ = stack
    source = source_create(
        name="prom-e2e",
        service=service,
        base_url=prom.url,
        engine_selector='job="vllm"',
        step_s=1,
        backfill_hours=1,
    )
    outcome = source_sync(source_id=source.pk)
    assert outcome.ok, outcome.error
    rollup_pending()

    now = timezone.now()
    metrics = service_metrics(service=service, start=now - timedelta(hours=1), end=now)
    [p99] = [p for p in metrics.overall["ttft"] if p.q == 0.99]
    # Every window is a whole number of fixture windows, so the merged P99 is the fixture's.
    expected = buckets.quantile(fixture_window().histograms["ttft_seconds"], 0.99)
    assert p99.method == "bucket-bounded"
    assert p99.value == pytest.approx(expected.value * 1000, rel=1e-9)
    assert expected.lower * 1000 <= p99.value <= expected.upper * 1000


def test_prometheus_fed_and_agent_fed_p99s_agree_on_the_same_fixture(stack, service, no_lag):
    prom, _ = stack
    source = source_create(name="prom-vs-agent", service=service, base_url=prom.url,
                           engine_selector='job="vllm"', step_s=1, backfill_hours=1)  # fmt: skip
    assert source_sync(source_id=source.pk).ok
    # The agent pushes the fixture's two scrapes, 15 s apart, through the ingest API.
    agent_host = Host.objects.create(name="agent-host")
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(host=agent_host)[1]}")
    t0 = timezone.now().replace(microsecond=0) - timedelta(minutes=2)
    scrapes = [
        {"ts": rfc3339(t0 + timedelta(seconds=15 * i)), "service": service.slug, "source": "vllm",
         "exposition": (FIXTURES / "vllm" / name).read_text()}
        for i, name in enumerate(["metrics-t0.prom", "metrics-t15.prom"])
    ]  # fmt: skip
    batch = make_batch(host="agent-host", gpus=[], requests=[], scrapes=scrapes)
    assert agent.post("/api/v1/ingest/", batch, format="json").status_code == 202
    rollup_pending()

    now = timezone.now()

    def p99(host: str):
        metrics = service_metrics(
            service=service, start=now - timedelta(hours=1), end=now, hosts=[host]
        )
        return next(p for p in metrics.overall["ttft"] if p.q == 0.99)

    through_prometheus, pushed = p99(source.host.name), p99("agent-host")
    assert pushed.count == 180  # the fixture's window
    assert through_prometheus.count > pushed.count
    assert pushed.lower <= through_prometheus.value <= pushed.upper
    assert through_prometheus.value == pytest.approx(pushed.value, rel=1e-9)


def test_a_restart_between_steps_is_counted_not_subtracted(stack, service, no_lag):
    prom, _ = stack
    source = source_create(
        name="prom-reset", service=service, base_url=prom.url, engine_selector='job="vllm"',
        step_s=1, backfill_hours=1,
    )  # fmt: skip
    assert source_sync(source_id=source.pk).ok
    rollup_pending()
    source.refresh_from_db()
    assert ScrapeWindow.objects.filter(reset_detected=True).exists()
    stored = raw_increase(prom.url, "vllm:request_success_total", source.cursor.timestamp())
    perfhub = sum(ServiceRollup.objects.filter(resolution_s=60).values_list(
        "scraped_requests", flat=True))  # fmt: skip
    assert stored > 0
    assert perfhub == pytest.approx(stored)


def test_the_first_sync_backfills_and_the_next_reads_only_new_steps(stack, service, no_lag):
    prom, _ = stack
    source = source_create(
        name="prom-cursor", service=service, base_url=prom.url, engine_selector='job="vllm"',
        step_s=1, backfill_hours=1,
    )  # fmt: skip
    first = source_sync(source_id=source.pk)
    after_first = time.monotonic()
    time.sleep(1.1)
    second = source_sync(source_id=source.pk)
    # The steps since the first sync's cursor, one a second (more when the machine is slow).
    since = math.ceil(time.monotonic() - after_first) + 2
    # Prometheus holds ~15 s of samples: the backfill reads all of them, one scrape a step.
    assert first.steps >= 10
    assert 0 < second.steps <= since


def test_a_selector_matching_nothing_is_shown_as_no_series(stack, service, no_lag, client, owner):
    prom, _ = stack
    source = source_create(
        name="prom-none", service=service, base_url=prom.url, engine_selector='job="nope"',
        step_s=1, backfill_hours=1,
    )  # fmt: skip
    outcome = source_sync(source_id=source.pk)
    assert not outcome.ok
    assert outcome.error.startswith('no series match (vllm: {job="nope"})')
    source.refresh_from_db()
    assert (source.status, source.cursor) == ("error", None)  # the backfill waits for data
    client.force_login(owner)
    page = client.get(source.get_absolute_url()).content.decode()
    assert "no series match" in page


def test_a_query_prometheus_refuses_is_shown_with_its_reason(stack, service, no_lag):
    prom, _ = stack
    source = source_create(
        name="prom-bad", service=service, base_url=prom.url, engine_selector='job=~"("',
        step_s=1, backfill_hours=1,
    )  # fmt: skip
    outcome = source_sync(source_id=source.pk)
    assert outcome.error.startswith("Prometheus refused the query (bad_data)")
    assert PrometheusSource.objects.get().last_error == outcome.error


def test_an_unreachable_prometheus_is_an_error_on_the_source(service, no_lag):
    source = source_create(
        name="prom-down", service=service, base_url=f"http://127.0.0.1:{free_port()}",
        engine_selector='job="vllm"',
    )  # fmt: skip
    outcome = source_sync(source_id=source.pk)
    assert outcome.error == "unreachable: could not connect"
    source.refresh_from_db()
    assert source.status == "error"
    assert source.host.status == "down"


def test_selectors_are_label_matchers_only():
    assert parse_selector('job="vllm", ns=~"a|b"') == [("job", "=", "vllm"), ("ns", "=~", "a|b")]
    with pytest.raises(ValueError, match="cannot read a label matcher"):
        parse_selector("job=vllm")
    with pytest.raises(ValueError, match="__name__"):
        parse_selector('__name__="up"')


def test_the_query_names_exactly_what_the_mapping_tables_read():
    query = series_query("vllm", 'job="vllm"')
    names = re.search(r'__name__=~"([^"]+)"', query)[1].split("|")
    assert set(names) == set(exposition.metric_names("vllm"))
    assert "vllm:time_to_first_token_seconds_bucket" in names


def test_a_matrix_becomes_one_exposition_per_step():
    matrix = [
        {"metric": {"__name__": "vllm:num_requests_running", "job": "v"},
         "values": [[10, "3"], [11, "4"]]},
        {"metric": {"__name__": "vllm:num_requests_waiting", "job": 'a"b'}, "values": [[11, "1"]]},
    ]  # fmt: skip
    texts = expositions(matrix)
    assert list(texts) == [10.0, 11.0]
    assert texts[10.0] == 'vllm:num_requests_running{job="v"} 3\n'
    parsed = exposition.parse(texts[11.0], "vllm")
    assert parsed.gauges == {"requests_running": 4.0, "requests_waiting": 1.0}
    assert not math.isnan(parsed.gauges["requests_running"])


def test_a_counter_missing_for_a_few_steps_keeps_its_value_and_a_gauge_does_not():
    counter = "vllm:request_success_total"
    matrix = [
        {"metric": {"__name__": counter, "instance": "a"},
         "values": [[10, "100"], [13, "130"], [40, "400"]]},
        {"metric": {"__name__": "vllm:num_requests_running", "instance": "a"},
         "values": [[10, "3"], [13, "4"]]},
        {"metric": {"__name__": counter, "instance": "b"},
         "values": [[10, "1"], [11, "2"], [12, "3"], [13, "4"], [35, "4"], [40, "5"]]},
    ]  # fmt: skip
    texts = expositions(matrix, carry=frozenset({counter}), carry_s=20)
    during = exposition.parse(texts[12.0], "vllm")
    assert during.counter_total("requests_finished") == 103  # a's 100 carried, b's 3
    assert "requests_running" not in during.gauges
    after = exposition.parse(texts[13.0], "vllm")
    windowed = exposition.window(during, after, 1.0)
    assert windowed.counters["requests_finished"] == 31  # not 130 counted from zero
    assert not windowed.reset_detected
    # Longer than carry_s away, the series is gone (a deleted pod is not carried forever).
    assert f'{counter}{{instance="a"}}' not in texts[35.0]


def test_a_team_member_creates_a_source_from_the_page(client, owner, service):
    client.force_login(owner)
    response = client.post("/collectors/prometheus/new/", {
        "name": "chat-prom", "service": service.pk, "base_url": "http://prometheus:9090",
        "engine": "vllm", "engine_selector": 'job="vllm"', "dcgm_selector": "",
        "step_s": 15, "interval_s": 60, "backfill_hours": 6, "enabled": "on",
    })  # fmt: skip
    source = PrometheusSource.objects.get()
    assert response.status_code == 302
    assert response["Location"] == source.get_absolute_url()
    assert source.host.name == "prometheus:chat-prom"


def test_a_bad_selector_is_refused_naming_the_field(client, owner, service):
    client.force_login(owner)
    response = client.post("/collectors/prometheus/new/", {
        "name": "p", "service": service.pk, "base_url": "http://prometheus:9090",
        "engine": "vllm", "engine_selector": "job=vllm", "step_s": 15, "interval_s": 60,
        "backfill_hours": 6,
    })  # fmt: skip
    assert response.status_code == 200
    assert response.context["form"].errors["engine_selector"] == [
        "cannot read a label matcher at 'job=vllm' (use name=\"value\")"
    ]
    assert not PrometheusSource.objects.exists()


def test_an_outsider_can_read_a_source_but_not_sync_or_edit_it(client, outsider, service):
    source = source_create(name="p", service=service, base_url="http://prometheus:9090",
                           engine_selector='job="vllm"')  # fmt: skip
    client.force_login(outsider)
    assert client.get(source.get_absolute_url()).status_code == 200
    assert client.post(source.get_absolute_url()).status_code == 403
    assert client.get(f"/collectors/prometheus/{source.pk}/edit/").status_code == 403
    assert client.get("/collectors/prometheus/").status_code == 200


def test_new_selectors_start_from_fresh_state(service):
    source = source_create(name="p", service=service, base_url="http://prometheus:9090",
                           engine_selector='job="vllm"')  # fmt: skip
    ScrapeState.objects.create(host=source.host, service=service, source="vllm",
                               ts=timezone.now(), exposition="")  # fmt: skip
    source_update(source=source, changed=["interval_s"])
    assert ScrapeState.objects.count() == 1
    source_update(source=source, changed=["engine_selector"])
    assert ScrapeState.objects.count() == 0


def test_beat_syncs_each_due_source_in_its_own_task(service, no_lag):
    source = source_create(name="p", service=service, engine_selector='job="vllm"',
                           base_url=f"http://127.0.0.1:{free_port()}")  # fmt: skip
    assert schedule_prometheus_sources() == 1  # eager here: the task ran
    source.refresh_from_db()
    assert source.status == "error"
    assert source.last_attempt_at is not None
    assert schedule_prometheus_sources() == 0  # not due again before its interval


def test_a_source_back_after_a_long_pause_reads_no_further_back_than_its_backfill(service):
    source = source_create(name="p", service=service, base_url="http://prometheus:9090",
                           engine_selector='job="vllm"', step_s=15, backfill_hours=2)  # fmt: skip
    # a step boundary plus a fraction of a second: CI once hit exactly this case
    now = datetime(2026, 12, 1, 12, 36, 30, 523708, tzinfo=UTC)
    source.cursor = now - timedelta(days=9)
    start, _ = sync_range(source, now)
    assert now.timestamp() - start <= 2 * 3600
    source.cursor = now - timedelta(minutes=5)
    start, _ = sync_range(source, now)
    assert start == int(source.cursor.timestamp()) + 15
