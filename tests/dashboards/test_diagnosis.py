"""Diagnosis over a time window: rules fed from roll-ups, the page, and an owner's confirm.

`feed` writes raw requests, GPU samples and engine scrape windows (gauges, counter resets)
through collectors' storage path and rolls them up with collectors' own `rollup_host_minutes`,
so the page reads exactly what production would. `seed_traffic` (the dashboards' seeding) is
reused where gauges and restarts do not matter.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from collectors import storage
from collectors.models import GpuSample, Host, RequestSample, ScrapeWindow
from collectors.services.ingest import GPU_FIELDS, REQUEST_FIELDS, WINDOW_FIELDS, epoch_minute
from collectors.services.rollups import rollup_host_minutes
from dashboards.diagnosis import window_observation
from dossiers.models import Bottleneck
from tests.factories.traffic import GB, floor_minute, seed_traffic

pytestmark = pytest.mark.django_db

URL = "/dashboards/services/chat-7b/diagnosis/"
CONFIRM_URL = "/dashboards/services/chat-7b/diagnosis/confirm/"


def feed(
    service,
    *,
    start: datetime,
    minutes: int,
    host: str = "gpu-host-1",
    requests: int = 40,
    e2e_ms=lambda i: 1000.0,
    util: float = 0.9,
    sm_active: float = 0.8,
    dram_active: float = 0.5,
    waiting: float = 0.0,
    running: float = 4.0,
    kv: float = 0.5,
    mem_used=lambda i: 60 * GB,
    restart_at: int | None = None,
) -> Host:
    """`minutes` of traffic from `start`: requests spread over [0.5, 1.5] x e2e_ms(i), two GPU
    samples and four vLLM scrape windows a minute; the first window of minute `restart_at`
    saw the engine's counters go down."""
    host_obj, _ = Host.objects.get_or_create(name=host)
    start = floor_minute(start)
    request_rows, gpu_rows, window_rows = [], [], []
    for i in range(minutes):
        t = start + timedelta(minutes=i)
        base = e2e_ms(i)
        for k in range(requests):
            e2e = base * (0.5 + k / requests)
            request_rows.append(
                (service.pk, host_obj.pk, t + timedelta(seconds=k * 59 / requests), e2e / 5,
                 e2e / 100, e2e, 1.0, 500, 200, True)
            )  # fmt: skip
        for s in (10, 40):
            gpu_rows.append(
                (host_obj.pk, t + timedelta(seconds=s), 0, "GPU-0", "NVIDIA A100 80GB", util,
                 0.5, mem_used(i), 80 * GB, 300.0, 60.0, 1400.0, sm_active, 0.5, dram_active)
            )  # fmt: skip
        gauges = {"requests_waiting": waiting, "requests_running": running, "kv_cache_usage": kv}
        for s in (15, 30, 45, 59):
            window_rows.append(
                (host_obj.pk, service.pk, "vllm", t + timedelta(seconds=s - 15),
                 t + timedelta(seconds=s), 15.0, {}, {}, {}, gauges,
                 restart_at == i and s == 15)
            )  # fmt: skip
    storage.bulk_insert(RequestSample, REQUEST_FIELDS, request_rows)
    storage.bulk_insert(GpuSample, GPU_FIELDS, gpu_rows)
    storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, window_rows)
    rollup_host_minutes(
        host_id=host_obj.pk,
        minutes=[epoch_minute(start + timedelta(minutes=i)) for i in range(minutes)],
    )
    return host_obj


@pytest.fixture
def waiting_gpu(service, now):
    """Half an hour in which the GPU idles while six requests wait and two run."""
    feed(service, start=now - timedelta(minutes=35), minutes=30, util=0.3, waiting=6, running=2)


def _confirm_form(response, rule: str) -> dict:
    found = response.context["diagnosis"]
    return {"rule": rule, "start": found.start.isoformat(), "end": found.end.isoformat()}


# --- What the rules see ----------------------------------------------------------------------


def test_the_window_observation_has_the_means_gauges_and_slo(service, now, waiting_gpu):
    obs = window_observation(service=service, start=now - timedelta(hours=1), end=now)
    assert obs.gpu_util == pytest.approx(0.3)
    assert obs.sm_active == pytest.approx(0.8)
    assert obs.requests_waiting == pytest.approx(6)
    assert obs.requests_running == pytest.approx(2)
    assert obs.kv_cache_usage == pytest.approx(0.5)
    assert obs.e2e_slo_ms == 2000
    assert obs.e2e_p50_ms == pytest.approx(1000, rel=0.05)
    assert obs.ttft_p99_ms == pytest.approx(1480 / 5, rel=0.03)
    assert obs.oom_errors is None and obs.sweep is None


def test_the_window_p99_is_merged_over_the_window_never_averaged(service, now):
    # 20 fast minutes then 20 slow ones: the window's P99 is the slow minutes' tail (~1490 ms),
    # where averaging per-point P99s would give ~820 ms.
    start = now - timedelta(minutes=45)
    feed(service, start=start, minutes=40, e2e_ms=lambda i: 100.0 if i < 20 else 1000.0)
    obs = window_observation(service=service, start=now - timedelta(hours=1), end=now)
    assert obs.e2e_p99_ms == pytest.approx(1480, rel=0.03)


def test_a_24h_window_reads_roll_ups_and_follows_memory_per_point(service, now):
    seed_traffic(service=service, start=now - timedelta(hours=3), minutes=120)
    obs = window_observation(service=service, start=now - timedelta(hours=24), end=now)
    assert obs.gpu_util == pytest.approx(0.95)
    # 2 h at one point per 5 min (25 when the first minute is not on a 5-minute boundary)
    assert len(obs.memory_over_time) in (24, 25)
    assert obs.memory_over_time[0][0] == pytest.approx(21, abs=0.1)  # hours since the start
    assert all(used == 60 * GB for _, used in obs.memory_over_time)
    assert obs.latency_since_restart is None  # no restart visible


def test_a_restart_gives_latency_per_minute_since_it(service, now):
    feed(service, start=now - timedelta(minutes=40), minutes=30, restart_at=2)
    obs = window_observation(service=service, start=now - timedelta(hours=1), end=now)
    minutes = [m for m, _ in obs.latency_since_restart]
    assert minutes == [float(m) for m in range(28)]


# --- The page --------------------------------------------------------------------------------


def test_the_page_needs_a_login(client, service):
    response = client.get(URL)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_it_shows_gpu_waiting_with_its_evidence(outsider_client, service, waiting_gpu):
    response = outsider_client.get(URL + "?range=1h")
    assert response.status_code == 200
    proposals = response.context["diagnosis"].proposals
    assert [(p.rule, p.layer, p.kind) for p in proposals] == [
        ("gpu_waiting", "scheduling", "queueing")
    ]
    html = response.content.decode()
    assert 'id="proposal-gpu_waiting"' in html
    assert "GPU utilization 30% (&lt; 50%); 6 requests waiting on average; 2 running" in html


def test_healthy_data_proposes_nothing(outsider_client, service, now):
    feed(service, start=now - timedelta(minutes=35), minutes=30)
    response = outsider_client.get(URL + "?range=1h")
    assert response.context["diagnosis"].proposals == []
    html = response.content.decode()
    assert 'id="proposal-' not in html
    assert "No rule fires over this window" in html


def test_it_shows_the_numbers_the_rules_saw_and_no_data_when_missing(
    outsider_client, service, waiting_gpu
):
    html = outsider_client.get(URL + "?range=1h").content.decode()
    assert '<tr id="number-gpu_util"><th scope="row">GPU util (mean)</th><td>30%</td></tr>' in html
    assert (
        '<tr id="number-oom_errors"><th scope="row">OOM errors</th>'
        '<td><span class="muted">no data</span></td></tr>'
    ) in html
    assert "not evaluated: no data for Latency since restart" in html


def test_a_cold_start_after_a_restart_is_proposed(outsider_client, service, now):
    feed(
        service,
        start=now - timedelta(minutes=40),
        minutes=35,
        restart_at=0,
        e2e_ms=lambda i: 5000.0 if i < 3 else 1000.0,
    )
    rules = [p.rule for p in outsider_client.get(URL + "?range=1h").context["diagnosis"].proposals]
    assert "cold_start" in rules


def test_memory_rising_over_hours_is_proposed(outsider_client, service, now):
    feed(
        service,
        start=now - timedelta(hours=4),
        minutes=180,
        requests=4,
        mem_used=lambda i: int(40 * GB + i * GB / 30),  # +2 GB an hour
    )
    rules = [p.rule for p in outsider_client.get(URL + "?range=24h").context["diagnosis"].proposals]
    assert rules == ["memory_creep"]


def test_outsiders_see_no_confirm_button(outsider_client, service, waiting_gpu):
    html = outsider_client.get(URL + "?range=1h").content.decode()
    assert "Confirm as bottleneck" not in html


def test_owners_see_a_confirm_button_carrying_the_window(owner_client, service, waiting_gpu):
    response = owner_client.get(URL + "?range=1h")
    html = response.content.decode()
    assert "Confirm as bottleneck" in html
    assert f'name="start" value="{response.context["diagnosis"].start.isoformat()}"' in html


def test_a_bad_range_is_a_400_naming_the_field(outsider_client, service):
    response = outsider_client.get(URL + "?range=2w")
    assert response.status_code == 400
    assert "range: &#x27;2w&#x27; is not one of 1h, 24h, 7d, 30d, custom." in (
        response.content.decode()
    )


def test_the_service_dashboard_links_to_the_diagnosis_of_its_range(outsider_client, service):
    response = outsider_client.get(reverse("dashboards:service", args=["chat-7b"]) + "?range=7d")
    assert f'href="{URL}?range=7d"' in response.content.decode()


def test_the_page_runs_a_bounded_number_of_queries(owner_client, service, now):
    seed_traffic(service=service, start=now - timedelta(hours=20), minutes=600)
    feed(service, start=now - timedelta(minutes=40), minutes=30, restart_at=1)
    owner_client.get(URL + "?range=24h")  # warm the session
    with CaptureQueriesContext(connection) as queries:
        response = owner_client.get(URL + "?range=24h")
    assert response.status_code == 200
    # session, user, service, hosts, merged rows, their distributions (whole-range
    # percentiles), host names, GPU rows, restart, its two reads, can_edit
    assert len(queries) <= 12, [q["sql"] for q in queries]


# --- Confirming ------------------------------------------------------------------------------


def test_confirming_creates_one_confirmed_bottleneck_with_evidence(
    owner_client, service, waiting_gpu
):
    page = owner_client.get(URL + "?range=1h")
    response = owner_client.post(CONFIRM_URL, _confirm_form(page, "gpu_waiting"))
    bottleneck = Bottleneck.objects.get(service=service)
    assert response.status_code == 302
    assert response["Location"].endswith(f"#bottleneck-{bottleneck.pk}")
    assert bottleneck.status == Bottleneck.Status.CONFIRMED
    assert (bottleneck.layer, bottleneck.kind) == ("scheduling", "queueing")
    assert bottleneck.title == "Batches too small: requests queue while the GPU idles"
    assert bottleneck.symptom == "low GPU utilization while requests wait"
    assert bottleneck.evidence.startswith("GPU utilization 30% (< 50%); 6 requests waiting")
    start = page.context["diagnosis"].start
    assert f"over {start:%Y-%m-%d %H:%M} to " in bottleneck.evidence
    assert "confirmed by alice" in bottleneck.evidence
    assert "Requests waiting (mean) 6.00" in bottleneck.evidence


def test_a_confirmed_bottleneck_says_the_engine_did_not_count_preemptions(
    owner_client, service, waiting_gpu
):
    # `feed`'s scrape windows hold no counter at all: preemptions were not counted, not 0.
    page = owner_client.get(URL + "?range=1h")
    owner_client.post(CONFIRM_URL, _confirm_form(page, "gpu_waiting"))
    evidence = Bottleneck.objects.get(service=service).evidence
    assert "; Requests preempted not counted by this engine; " in evidence


def test_a_proposal_is_not_a_bottleneck_until_confirmed(owner_client, service, waiting_gpu):
    owner_client.get(URL + "?range=1h")
    assert not Bottleneck.objects.exists()


def test_confirming_a_rule_that_does_not_fire_records_nothing(owner_client, service, waiting_gpu):
    page = owner_client.get(URL + "?range=1h")
    response = owner_client.post(CONFIRM_URL, _confirm_form(page, "long_tail"))
    assert response.status_code == 302
    assert response["Location"].startswith(URL + "?range=custom&start=")
    assert not Bottleneck.objects.exists()


def test_confirming_refuses_an_unknown_rule(owner_client, service, waiting_gpu):
    page = owner_client.get(URL + "?range=1h")
    response = owner_client.post(CONFIRM_URL, _confirm_form(page, "vibes"))
    assert response.status_code == 400
    assert response.content.decode().startswith("rule: 'vibes' is not one of gpu_waiting")


def test_confirming_refuses_a_window_without_an_end(owner_client, service, waiting_gpu):
    page = owner_client.get(URL + "?range=1h")
    form = {**_confirm_form(page, "gpu_waiting"), "end": ""}
    response = owner_client.post(CONFIRM_URL, form)
    assert response.status_code == 400
    assert response.content.decode().startswith("end: Required")


def test_confirming_refuses_a_malformed_start(owner_client, service, waiting_gpu):
    form = {"rule": "gpu_waiting", "start": "yesterday", "end": "2026-11-01T00:00"}
    response = owner_client.post(CONFIRM_URL, form)
    assert response.status_code == 400
    assert response.content.decode().startswith("start: 'yesterday' is not a date and time")


def test_outsiders_cannot_confirm(outsider_client, service, waiting_gpu):
    page = outsider_client.get(URL + "?range=1h")
    response = outsider_client.post(CONFIRM_URL, _confirm_form(page, "gpu_waiting"))
    assert response.status_code == 403
    assert not Bottleneck.objects.exists()


def test_anonymous_confirm_goes_to_the_login(client, service):
    response = client.post(CONFIRM_URL, {"rule": "gpu_waiting"})
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]
