"""Materialized merges (issue 14): the roll-up writes per-host 5-minute rows and service-merged
rows at every resolution; pages read one row per point, whatever the hosts or the range."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from collectors.models import FIVE_MINUTES, HOUR, MINUTE, ServiceMergedRollup, ServiceRollup
from collectors.selectors import service_metrics
from dashboards.figures.common import panels_json
from dashboards.figures.service import service_panels
from dashboards.selectors import service_dashboard
from tests.collectors.helpers import START, fill

pytestmark = pytest.mark.django_db


def test_the_rollup_writes_five_minute_and_merged_rows(service):
    fill(service, hosts=2, minutes=10)
    assert ServiceRollup.objects.filter(resolution_s=FIVE_MINUTES).count() == 2 * 2
    merged = ServiceMergedRollup.objects.filter(service=service)
    assert merged.filter(resolution_s=MINUTE).count() == 10
    assert merged.filter(resolution_s=FIVE_MINUTES).count() == 2
    assert merged.filter(resolution_s=HOUR).count() == 1


def test_a_merged_point_equals_the_merge_of_its_hosts(service):
    fill(service, hosts=3, minutes=10)
    end = START + timedelta(minutes=10)
    merged = service_metrics(service=service, start=START, end=end, resolution=300)
    on_read = service_metrics(
        service=service, start=START, end=end, resolution=300, hosts=["gpu-0", "gpu-1", "gpu-2"]
    )
    for a, b in zip(merged.points, on_read.points, strict=True):
        assert (a.t, a.requests, a.qps) == (b.t, b.requests, pytest.approx(b.qps))
        assert [p.value for p in a.latency["e2e"]] == [p.value for p in b.latency["e2e"]]


def dashboard_queries(service, start, end) -> int:
    with CaptureQueriesContext(connection) as ctx:
        d = service_dashboard(service=service, start=start, end=end)
        panels_json(service_panels(d))
    return len(ctx.captured_queries)


def test_the_dashboards_queries_do_not_grow_with_hosts_or_range(service):
    fill(service, hosts=1, minutes=5)
    few = dashboard_queries(service, START, START + timedelta(minutes=5))
    ServiceRollup.objects.all().delete()
    ServiceMergedRollup.objects.all().delete()
    from collectors.models import Host

    Host.objects.all().delete()
    fill(service, hosts=4, minutes=60)
    many = dashboard_queries(service, START, START + timedelta(minutes=60))
    longer = dashboard_queries(service, START - timedelta(days=29), START + timedelta(hours=1))
    assert few == many == longer


def test_a_range_that_starts_and_ends_mid_minute_draws_every_minute_it_touches(service):
    # The merged read is LIMITed to the buckets in the range (a hint for the planner): a
    # bound one short would silently drop the newest point.
    fill(service, hosts=1, minutes=10)
    start, end = START + timedelta(seconds=30), START + timedelta(minutes=9, microseconds=1)
    metrics = service_metrics(service=service, start=start, end=end, resolution=MINUTE)
    assert [p.t for p in metrics.points] == [START + timedelta(minutes=m) for m in range(10)]
