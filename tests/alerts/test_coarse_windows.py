"""Windows read from 5-minute and hourly roll-ups say what the minute rows say (issue 26).

Evaluation reads an hour window from the 5-minute rows inside it and minute rows at its
edges; these tests feed the same minutes through collectors' own roll-up and read each window
both ways. Percentiles come from merged distributions either way, never averaged.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from alerts import sources
from collectors.models import FIVE_MINUTES, HOUR, MINUTE, GpuRollup, Host
from dossiers.models import Team
from tests.factories.alerts import feed, minute
from tests.factories.catalog import chat_7b
from tests.support import module_rows

QUANTILES = (0.5, 0.9, 0.99, 0.999)


@pytest.fixture(scope="module")
def fed_once(django_db_setup, django_db_blocker):
    """Two hosts with a different latency and GPU use every minute, host b also scraped (its
    queue and KV cache, and so its requests counted by the engine); b goes quiet after
    minute 62 (inside the 5-minute period 60-65). Fed once per module (150 minutes through
    the roll-up took 20 s a test), in a transaction rolled back after the module, as
    `demo_fleet` is; the tests only read."""

    def build():
        service = chat_7b(Team.objects.create(slug="coarse", name="Coarse"), replicas=4)
        _feed_hosts(service)
        return service

    yield from module_rows(django_db_blocker, build)


@pytest.fixture
def fed(fed_once, db):
    """The fed service, inside the test's own database access."""
    return fed_once


def _feed_hosts(service) -> None:
    a = Host.objects.create(name="gpu-a")
    b = Host.objects.create(name="gpu-b")
    for i in range(75):
        for host, last in ((a, 74), (b, 62)):
            if i > last:
                continue
            feed(
                service, host, i,
                e2e_ms=400 + (i * 37 + host.pk * 101) % 900,
                requests=20 + (i * 7) % 30,
                gpu={"util": 0.3 + (i % 11) / 20, "sm_active": 0.2 + (i % 7) / 20},
                gauges=(
                    {"requests_waiting": float(i % 5), "kv_cache_usage": (i % 9) / 10}
                    if host == b else None
                ),
            )  # fmt: skip


def both_ways(service, start, end, **kwargs):
    coarse = sources.service_windows([service.pk], start, end, quantiles=QUANTILES, **kwargs)
    fine = sources.service_windows(
        [service.pk], start, end, quantiles=QUANTILES, resolutions=(MINUTE,), **kwargs
    )
    return coarse[service.pk], fine[service.pk]


def figures(w: sources.ServiceWindow) -> dict:
    """Every number a rule reads from a window (hosts apart: see `test_same_hosts`)."""
    return {
        "requests": w.requests,
        "finished": w.finished,
        "errored": w.errored,
        "qps": w.qps,
        "busy_output_tps": w.busy_output_tps,
        "data_seconds": w.data_seconds,
        "output_tokens": w.output_tokens,
        "gauge_samples": w.gauge_samples,
        "waiting_mean": w.waiting_mean,
        "kv_cache_mean": w.kv_cache_mean,
        "gpu_samples": w.gpu_samples,
        "gpu_util": w.gpu_util,
        "sm_active": w.sm_active,
    }


def test_an_hour_window_not_on_a_5_minute_edge_is_5_minute_rows_between_minutes():
    end = datetime(2026, 3, 2, 10, 13, tzinfo=UTC)
    assert sources.covering_spans(end - timedelta(hours=1), end) == [
        (MINUTE, datetime(2026, 3, 2, 9, 13, tzinfo=UTC), datetime(2026, 3, 2, 9, 15, tzinfo=UTC)),
        (FIVE_MINUTES, datetime(2026, 3, 2, 9, 15, tzinfo=UTC),
         datetime(2026, 3, 2, 10, 10, tzinfo=UTC)),
        (MINUTE, datetime(2026, 3, 2, 10, 10, tzinfo=UTC), end),
    ]  # fmt: skip


def test_an_hour_window_on_a_5_minute_edge_is_twelve_5_minute_rows():
    end = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    assert sources.covering_spans(end - timedelta(hours=1), end) == [
        (FIVE_MINUTES, end - timedelta(hours=1), end)
    ]


def test_whole_hours_are_read_from_hourly_rows_when_asked():
    start, end = datetime(2026, 3, 2, 8, 58, tzinfo=UTC), datetime(2026, 3, 2, 11, 2, tzinfo=UTC)
    assert sources.covering_spans(start, end, (HOUR, MINUTE)) == [
        (MINUTE, start, datetime(2026, 3, 2, 9, 0, tzinfo=UTC)),
        (HOUR, datetime(2026, 3, 2, 9, 0, tzinfo=UTC), datetime(2026, 3, 2, 11, 0, tzinfo=UTC)),
        (MINUTE, datetime(2026, 3, 2, 11, 0, tzinfo=UTC), end),
    ]


def test_hour_window_traffic_gpu_and_gauges_equal_the_minute_rows(fed):
    coarse, fine = both_ways(fed, minute(13), minute(73))
    assert figures(coarse) == pytest.approx(figures(fine), rel=1e-12)
    assert coarse.host_ids == fine.host_ids


@pytest.mark.parametrize("metric", ["e2e", "ttft", "tpot"])
def test_hour_window_percentiles_equal_the_merged_minute_distributions(fed, metric):
    coarse, fine = both_ways(fed, minute(13), minute(73), metrics=[metric])
    assert coarse.percentiles[metric] == fine.percentiles[metric]
    assert coarse.percentiles[metric][0.99].count > 0


def test_a_window_ending_on_the_hour_reads_the_same_as_its_minutes(fed):
    coarse, fine = both_ways(fed, minute(0), minute(60))
    assert figures(coarse) == pytest.approx(figures(fine), rel=1e-12)
    assert coarse.percentiles["e2e"] == fine.percentiles["e2e"]


def test_a_host_quiet_since_inside_a_5_minute_row_is_seen_to_its_last_minute(fed):
    coarse, fine = both_ways(fed, minute(13), minute(73), last_seen=True)
    last = {h.host_name: h.last_end for h in coarse.hosts_seen}
    assert last == {"gpu-a": minute(73), "gpu-b": minute(63)}
    assert coarse.hosts_seen == fine.hosts_seen


GPU_LENGTHS = (300, 900, 3600)


def gpu_figures(w: sources.ServiceWindow) -> tuple:
    return w.gpu_samples, w.gpu_util, w.sm_active


def test_gpu_of_several_window_lengths_read_at_once_equals_each_read_alone(fed):
    end = minute(73)
    together = {
        length: sources.service_windows([fed.pk], end - timedelta(seconds=length), end, gpu=False)
        for length in GPU_LENGTHS
    }
    sources.add_gpu(together, end)
    for length in GPU_LENGTHS:
        alone = sources.service_windows([fed.pk], end - timedelta(seconds=length), end)
        assert gpu_figures(together[length][fed.pk]) == pytest.approx(
            gpu_figures(alone[fed.pk]), rel=1e-12
        )
    # Each length sums its own rows, not the union's.
    assert len({gpu_figures(together[length][fed.pk]) for length in GPU_LENGTHS}) == 3


def test_gpu_rows_of_every_window_length_are_read_in_one_query(fed):
    end = minute(73)
    windows = {
        length: sources.service_windows([fed.pk], end - timedelta(seconds=length), end, gpu=False)
        for length in GPU_LENGTHS
    }
    with CaptureQueriesContext(connection) as ctx:
        sources.add_gpu(windows, end)
    assert len(ctx.captured_queries) == 1
    assert GpuRollup._meta.db_table in ctx.captured_queries[0]["sql"]
