"""`GET /metrics`: PerfHub's own metrics for the Prometheus a team already runs.

The instruments (`collectors.instruments`, `alerts.instruments`) count what processes did;
the gauges below describe shared state and are read from the database and Redis when scraped,
so every gunicorn worker answers the same. Access: a bearer token
(PERFHUB_METRICS_TOKEN) or a client address inside PERFHUB_METRICS_ALLOW (CIDRs; default
loopback only). REMOTE_ADDR is what counts: behind a proxy, use the token.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Iterator

import redis
from django.conf import settings
from django.db.models import Min
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

import alerts.instruments  # noqa: F401  (registers the alerts' instruments)
from collectors.models import Host, IngestBatch, PrometheusSource

CELERY_QUEUES = ("celery",)


class StateCollector:
    """Gauges read at scrape time (a custom collector, as prometheus_client intends)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = timezone.now()
        waiting = IngestBatch.objects.filter(rolled_up_at__isnull=True, quarantined_at__isnull=True)
        pending = waiting.aggregate(oldest=Min("received_at"))["oldest"]
        yield GaugeMetricFamily(
            "perfhub_rollup_lag_seconds",
            "Age of the oldest ingested batch not yet rolled up (0 when none waits).",
            value=max(0.0, (now - pending).total_seconds()) if pending else 0.0,
        )
        yield GaugeMetricFamily(
            "perfhub_rollup_pending_batches",
            "Ingested batches waiting for the roll-up task.",
            value=waiting.count(),
        )
        yield GaugeMetricFamily(
            "perfhub_quarantined_batches",
            "Accepted batches the roll-up could not process, set aside with their reason "
            "(the host's page lists them; manage.py requeue_quarantined retries them).",
            value=IngestBatch.objects.filter(
                quarantined_at__isnull=False, rolled_up_at__isnull=True
            ).count(),
        )
        yield GaugeMetricFamily(
            "perfhub_pull_targets_down",
            "Pulled hosts whose last pull failed.",
            value=Host.objects.exclude(pull_url="").filter(status=Host.Status.DOWN).count(),
        )
        yield GaugeMetricFamily(
            "perfhub_prometheus_sources_failing",
            "Prometheus sources whose last query failed.",
            value=PrometheusSource.objects.filter(status=PrometheusSource.Status.ERROR).count(),
        )
        depth = GaugeMetricFamily(
            "perfhub_celery_queue_length",
            "Tasks waiting in the Celery broker's queue (Redis LLEN).",
            labels=["queue"],
        )
        for queue, length in _queue_lengths():
            depth.add_metric([queue], length)
        yield depth


def _queue_lengths() -> list[tuple[str, int]]:
    if not settings.REDIS_URL:
        return []  # the embedded default runs tasks eagerly: there is no queue
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2)
    try:
        return [(queue, client.llen(queue)) for queue in CELERY_QUEUES]
    except redis.RedisError:
        return []
    finally:
        client.close()


_STATE = CollectorRegistry()  # no auto_describe: collect() reads the database
_STATE.register(StateCollector())


def instruments_text() -> bytes:
    """The instruments: this process's, or every process's summed in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def exposition() -> bytes:
    """The text Prometheus scrapes: the instruments, then the gauges read now."""
    return instruments_text() + generate_latest(_STATE)


def allowed(request: HttpRequest) -> bool:
    token = settings.PERFHUB_METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(header.encode(), f"Bearer {token}".encode()):
        return True
    try:
        client = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(client in ipaddress.ip_network(net) for net in settings.PERFHUB_METRICS_ALLOW)


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        response = HttpResponse("forbidden: send the metrics bearer token\n", status=403)
        response["WWW-Authenticate"] = 'Bearer realm="perfhub-metrics"'
        return response
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
