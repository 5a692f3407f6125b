"""The demo starts with two weeks of history: every range draws, and one regression is told."""

from datetime import UTC, datetime, timedelta

import pytest

from alerts import lifecycle
from alerts.models import AlertEvent, AlertInstance, Notification, Receiver
from collectors.models import (
    FIVE_MINUTES,
    HOUR,
    MINUTE,
    GpuRollup,
    ServiceMergedRollup,
    ServiceRollup,
)
from demo import history
from demo.history import Regression, backfill_service
from demo.profile import KV_PRESSED_SERVICE
from tests.factories.catalog import make_baseline, make_service

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def svc(team):
    service = make_service(team, "history-svc")
    make_baseline(service, qps=0.5, prompt_tokens_mean=500, output_tokens_mean=200, gpu_util=0.8)
    return service


def fill(svc, **extra):
    return backfill_service(service=svc, baseline=svc.baselines.get(), host_name="demo-gpu-01",
                            days=3, now=NOW, **extra)  # fmt: skip


def test_the_told_regression_fired_and_resolved(svc):
    start = NOW - timedelta(days=2)
    fill(svc, regression=Regression(start, start + timedelta(hours=4)))
    kinds = list(
        AlertEvent.objects.filter(service=svc).order_by("at").values_list("kind", flat=True)
    )
    assert kinds == ["pending", "firing", "resolved"]


def _identity(row: ServiceRollup | GpuRollup) -> tuple:
    """A roll-up row by its unique key and content (rows are stored by COPY: no pk read back)."""
    if isinstance(row, ServiceRollup):
        return (ServiceRollup, row.service_id, row.host_id, row.resolution_s, row.start,
                row.requests, row.output_tokens)  # fmt: skip
    return (GpuRollup, row.host_id, row.gpu_index, row.resolution_s, row.start, row.samples,
            row.util_mean)  # fmt: skip


def test_every_row_goes_through_the_roll_up_and_alert_writers(svc, monkeypatch):
    """The history writes no roll-up or alert row beside the services: every minute and hour
    row it made was stored by `store_rollups`, the rest derived there from them, and its
    alert rows were written by the alerts app's lifecycle."""
    passed, staged = [], []
    store = history.store_rollups
    monkeypatch.setattr(
        history,
        "store_rollups",
        lambda **kw: passed.extend(kw["service_rows"] + kw["gpu_rows"]) or store(**kw),
    )
    write = lifecycle.Staged.write
    monkeypatch.setattr(
        lifecycle.Staged, "write", lambda self: write(self) or staged.extend(self.new_instances)
    )
    start = NOW - timedelta(days=2)
    fill(svc, regression=Regression(start, start + timedelta(hours=4)))

    made = {_identity(r) for r in passed}
    minutes = ServiceRollup.objects.filter(service=svc, resolution_s=MINUTE)
    first_minute = minutes.order_by("start").first().start
    for model in (ServiceRollup, GpuRollup):
        for row in model.objects.filter(resolution_s=MINUTE):
            assert _identity(row) in made
        for row in model.objects.filter(resolution_s=HOUR, start__lt=first_minute):
            assert _identity(row) in made
    # The last day's hours and every 5 minutes: merged from the stored minutes, as live ones.
    for resolution in (FIVE_MINUTES, HOUR):
        derived = ServiceRollup.objects.filter(
            service=svc, resolution_s=resolution, start__gte=first_minute
        )
        assert derived.exists()
        for row in derived:
            inside = minutes.filter(
                start__gte=row.start, start__lt=row.start + timedelta(seconds=resolution)
            )
            assert row.requests == sum(inside.values_list("requests", flat=True))
    assert {i.pk for i in staged} == set(
        AlertInstance.objects.filter(service=svc).values_list("pk", flat=True)
    )
    assert not AlertEvent.objects.filter(service=svc, instance__isnull=True).exists()


def test_the_told_alert_is_history_and_notifies_nobody(svc, team):
    Receiver.objects.create(team=team, name="on-call", kind="email", emails="oncall@example.com")
    start = NOW - timedelta(days=2)
    fill(svc, regression=Regression(start, start + timedelta(hours=4)))
    alert = AlertInstance.objects.get(service=svc)
    assert alert.state == "resolved" and alert.fired_at - alert.pending_since >= timedelta(
        seconds=alert.rule.for_s
    )
    assert not Notification.objects.exists()


def test_only_the_kv_pressed_services_history_has_preemptions(team, svc):
    pressed = make_service(team, KV_PRESSED_SERVICE)
    make_baseline(pressed, qps=0.5, prompt_tokens_mean=500, output_tokens_mean=200)
    for service in (svc, pressed):
        backfill_service(service=service, baseline=service.baselines.get(),
                         host_name=f"demo-{service.slug}", days=3, now=NOW)  # fmt: skip
    shares = {}
    for service in (svc, pressed):
        merged = ServiceMergedRollup.objects.filter(service=service, resolution_s=HOUR)
        shares[service.slug] = round(
            sum(m.preempted for m in merged) / sum(m.finished for m in merged), 3
        )
    assert shares == {svc.slug: 0.0, KV_PRESSED_SERVICE: 0.03}
