"""The demo's Prometheus path (`run_demo --prometheus`): a simulated engine, scraped by the
real `prometheus`, read back by a Prometheus source into live roll-ups."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from collectors.selectors import service_metrics
from collectors.services.prometheus import due_sources, source_sync
from collectors.services.rollups import rollup_pending
from demo.prometheus import DemoPrometheus
from deploy.stack import wait_for
from tests.promstack import binary

pytestmark = pytest.mark.django_db


def scrapes(url: str) -> int:
    query = 'count_over_time(vllm:num_requests_running{job="demo-vllm"}[10m])'
    result = requests.get(url + "/api/v1/query", params={"query": query}, timeout=2).json()
    return int(result["data"]["result"][0]["value"][1]) if result["data"]["result"] else 0


def test_the_demo_feeds_a_service_through_prometheus(service, tmp_path, settings):
    binary("prometheus")
    settings.PERFHUB_PROMETHEUS_LAG_S = 0
    demo = DemoPrometheus(service, tmp_path, None, scrape_s=1)
    try:
        source = demo.start()
        wait_for("4 scrapes", lambda: scrapes(source.base_url) >= 4, timeout=30, every=0.2)
        assert due_sources() == [source.pk]
        assert due_sources() == []  # claimed until its interval passes
        outcome = source_sync(source_id=source.pk)
    finally:
        demo.stop()
    assert outcome.ok, outcome.error
    rollup_pending()
    now = timezone.now()
    metrics = service_metrics(service=service, start=now - timedelta(minutes=10), end=now)
    assert metrics.hosts == ["prometheus:demo-prometheus"]
    assert any(point.qps for point in metrics.points)
