"""Two evaluators at once on PostgreSQL: every rule is evaluated once, nothing is sent twice."""

import threading

import pytest
from django.db import connection

from alerts import services
from alerts.models import AlertEvent, Notification, Receiver
from dossiers.models import Service
from tests.factories.alerts import evaluation_time, feed

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_concurrent_evaluations_claim_each_rule_once(team, host, make_services, webhook_server):
    Receiver.objects.create(team=team, name="hook", kind="webhook", url=webhook_server.url)
    for service in make_services(6):
        services.ensure_default_rules(service)
        feed(service, host, 0, e2e_ms=9000)
    services.evaluate_all(evaluation_time(0))  # warm up: pending / no-data changes recorded

    at = evaluation_time(5)
    for service in Service.objects.all():
        feed(service, host, 5, e2e_ms=9000)
    counts, errors = [], []
    barrier = threading.Barrier(4)

    def run():
        try:
            barrier.wait()
            counts.append(services.evaluate_all(at).rules)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(counts) == 6 * 13
    firing = AlertEvent.objects.filter(kind="firing", at=at.replace(second=0, microsecond=0))
    # P99 e2e, TTFT and TPOT of every service, and the fast SLO burn pair (its 5-minute short
    # window now covered; the slow and ticket pairs wait for 30 min and 6 h of data): once each
    assert firing.count() == 6 * 4
    # ... and the outage pair, which fired at the warm-up (a minute of data covers its window)
    assert Notification.objects.filter(alert_status="firing").count() == 6 * 5
    assert len(webhook_server.bodies) == Notification.objects.count()
