"""Live roll-ups keep each statistic apart, store errors and aborts, and take rates over the
seconds that have data (issue 20: vantage, TPOT vs ITL, errors, one time base)."""

import json
from datetime import timedelta

import pytest

from alerts.sources import service_windows
from collectors.distributions import Traffic, latency_percentiles
from collectors.models import MINUTE, ServiceMergedRollup, ServiceRollup
from collectors.selectors import service_metrics
from collectors.services.rollups import rollup_pending
from tests.factories.batches import INGEST_URL, make_batch, recent_minute, rfc3339

pytestmark = pytest.mark.django_db


def histogram(name: str, les: tuple, cumulative: tuple, total: float) -> list[str]:
    rows = [f"# TYPE vllm:{name} histogram"]
    rows += [f'vllm:{name}_bucket{{le="{le}"}} {c}' for le, c in zip(les, cumulative, strict=True)]
    rows += [f"vllm:{name}_sum {total}", f"vllm:{name}_count {cumulative[-1]}"]
    return rows


def exposition(scale: int) -> str:
    """A vLLM 0.11+ scrape after `scale` x 100 finished requests (of 100 tokens each)."""
    n = 100 * scale
    rows = [
        "# TYPE vllm:request_success_total counter",
        f'vllm:request_success_total{{finished_reason="stop"}} {n}',
        f'vllm:request_success_total{{finished_reason="error"}} {4 * scale}',
        f'vllm:request_success_total{{finished_reason="abort"}} {6 * scale}',
        f"vllm:generation_tokens_total {100 * n}",
    ]
    # Per request: every TPOT <= 10 ms. Per gap: 99 gaps a request, 1% of them slow.
    rows += histogram(
        "request_time_per_output_token_seconds", ("0.01", "0.025", "+Inf"), (n, n, n), 0.008 * n
    )
    gaps = 99 * n
    rows += histogram(
        "inter_token_latency_seconds",
        ("0.01", "0.025", "+Inf"),
        (gaps - gaps // 100, gaps, gaps),
        0.009 * gaps,
    )
    # Queue times all inside vLLM's first queue bucket (0.3 s).
    rows += histogram("request_queue_time_seconds", ("0.3", "0.5", "+Inf"), (n, n, n), 0.01 * n)
    return "\n".join(rows) + "\n"


@pytest.fixture
def scraped(agent_client, service):
    """Two scrapes 15 s apart (100 requests finished between them), rolled up."""
    t0 = recent_minute() + timedelta(seconds=20)
    for ts, scale in ((t0, 1), (t0 + timedelta(seconds=15), 2)):
        scrape = {"ts": rfc3339(ts), "service": "chat-7b", "source": "vllm",
                  "exposition": exposition(scale)}  # fmt: skip
        batch = make_batch(gpus=[], requests=[], scrapes=[scrape])
        response = agent_client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
        assert response.status_code == 202, response.content
    rollup_pending()
    return t0


def _minute_traffic() -> Traffic:
    traffic = Traffic()
    traffic.add_row(ServiceRollup.objects.get(resolution_s=MINUTE))
    return traffic


def test_live_tpot_rests_on_requests_not_on_token_gaps(scraped):
    assert latency_percentiles(_minute_traffic(), "tpot")[3].count == 100


def test_live_itl_is_kept_beside_tpot_over_every_gap(scraped):
    assert latency_percentiles(_minute_traffic(), "itl")[3].count == 9900


def test_a_slow_gap_in_every_hundred_moves_itl_p999_but_not_tpot_p999(scraped):
    traffic = _minute_traffic()
    tpot, itl = latency_percentiles(traffic, "tpot")[4], latency_percentiles(traffic, "itl")[4]
    assert (tpot.upper, itl.lower) == (pytest.approx(10.0), pytest.approx(10.0))


def test_live_engine_figures_say_they_are_server_side(scraped):
    assert latency_percentiles(_minute_traffic(), "tpot")[3].vantage == "server"


def test_engine_errors_and_aborts_are_stored_in_the_roll_up(scraped):
    row = ServiceRollup.objects.get(resolution_s=MINUTE)
    assert (row.scraped_requests, row.scraped_errors, row.scraped_aborts) == (100, 4, 6)


def test_the_live_error_rate_counts_errors_over_every_finished_request(scraped):
    point = service_metrics(
        service=ServiceMergedRollup.objects.get(resolution_s=MINUTE).service,
        start=scraped - timedelta(minutes=5),
        end=scraped + timedelta(minutes=5),
    ).points[0]
    assert point.error_rate == pytest.approx(4 / 110)


def test_a_window_reports_its_error_rate_for_alert_rules(scraped, service):
    w = service_windows(
        [service.pk], scraped - timedelta(minutes=30), scraped + timedelta(minutes=30)
    )
    assert w[service.pk].error_rate == pytest.approx(4 / 110)


def test_a_window_rate_is_over_the_seconds_with_data_not_the_nominal_window(scraped, service):
    w = service_windows(
        [service.pk], scraped - timedelta(minutes=30), scraped + timedelta(minutes=30)
    )
    assert (w[service.pk].qps, w[service.pk].data_seconds) == (pytest.approx(100 / 15), 15)


def test_a_queue_percentile_inside_the_first_bucket_is_shown_below_its_edge(scraped):
    p50 = latency_percentiles(_minute_traffic(), "queue")[0]
    assert (p50.value, p50.text()) == (None, "< 300 ms")


def test_a_first_bucket_percentile_reads_back_from_the_merged_row_as_a_bound(scraped, service):
    point = service_metrics(
        service=service, start=scraped - timedelta(minutes=5), end=scraped + timedelta(minutes=5)
    ).points[0]
    assert point.latency["queue"][0].below_first_edge == pytest.approx(300.0)


def test_an_idle_scrape_window_does_not_dilute_the_rate_a_claim_compares(
    scraped, agent_client, service
):
    idle = {"ts": rfc3339(scraped + timedelta(seconds=30)), "service": "chat-7b",
            "source": "vllm", "exposition": exposition(2)}  # fmt: skip
    batch = make_batch(gpus=[], requests=[], scrapes=[idle])
    agent_client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
    rollup_pending()
    w = service_windows(
        [service.pk], scraped - timedelta(minutes=30), scraped + timedelta(minutes=30)
    )
    assert (w[service.pk].qps, w[service.pk].data_seconds) == (pytest.approx(100 / 15), 15)


def test_the_live_page_shows_a_first_bucket_queue_time_below_its_edge(scraped, client, owner):
    from django.urls import reverse

    client.force_login(owner)
    page = client.get(reverse("collectors:service_live", args=["chat-7b"])).content.decode()
    assert "&lt; 300" in page and "server-side: engine histograms" in page


def test_the_live_page_counts_itl_in_token_gaps(scraped, client, owner):
    from django.urls import reverse

    client.force_login(owner)
    page = client.get(reverse("collectors:service_live", args=["chat-7b"])).content.decode()
    assert "9,900 token gaps" in page


def test_the_live_page_shows_each_minute_error_rate(scraped, client, owner):
    from django.urls import reverse

    client.force_login(owner)
    page = client.get(reverse("collectors:service_live", args=["chat-7b"])).content.decode()
    assert 'title="4 errors, 6 aborts of 110 finished">3.6%' in page
