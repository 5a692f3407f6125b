"""Alerts into the real Alertmanager (API v2): PerfHub posts, Alertmanager groups and routes to
a webhook on a loopback test server; a silence made in Alertmanager suppresses the alert."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
import requests

from alerts.models import Notification, Receiver
from deploy.stack import wait_for
from tests.promstack import Loopback, start_alertmanager

pytestmark = pytest.mark.django_db

FIRE = [3000] * 4  # pending at 0, firing at 3 (for = 180 s)
CALM = [1000] * 3


@pytest.fixture
def alertmanager(tmp_path):
    hook = Loopback()
    config = f"""
route:
  receiver: hook
  group_by: [alertname, service]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: {hook.url}/hook
        send_resolved: true
"""
    am = start_alertmanager(tmp_path, config)
    yield am, hook
    am.stop()
    hook.close()


@pytest.fixture
def to_alertmanager(team, alertmanager, settings, outbound_loopback) -> Receiver:
    # The timeline evaluates in 2026-03 (frozen clock); keep its firing alerts valid until now.
    settings.PERFHUB_ALERTMANAGER_VALID_FOR_S = 3600 * 24 * 400
    am, _ = alertmanager
    return Receiver.objects.create(team=team, name="alertmanager", kind="alertmanager", url=am.url)


def statuses(hook: Loopback) -> list[str]:
    return [b["status"] for b in hook.bodies]


def test_a_firing_then_resolved_alert_arrives_once_each_through_alertmanager(
    timeline, p99_rule, to_alertmanager, alertmanager
):
    _, hook = alertmanager
    timeline.run(FIRE + [3000] * 2)  # firing at 3, re-sent at 4 and 5
    assert Notification.objects.filter(status="sent").count() == 3
    wait_for("a firing notification", lambda: statuses(hook) == ["firing"], timeout=15, every=0.2)
    [alert] = hook.bodies[0]["alerts"]
    assert alert["labels"]["alertname"] == "P99 e2e above SLO"
    assert alert["labels"]["service"] == "chat-7b"
    assert alert["generatorURL"].startswith("https://perfhub.example.com/alerts/")
    assert alert["annotations"]["summary"].startswith("Chat 7B: P99 e2e above SLO")

    timeline.run(CALM, start=6)
    wait_for(
        "a resolved one", lambda: statuses(hook) == ["firing", "resolved"], timeout=15, every=0.2
    )
    time.sleep(2)  # two group intervals: nothing more may arrive
    assert statuses(hook) == ["firing", "resolved"]
    resolved = hook.bodies[1]["alerts"][0]
    assert resolved["status"] == "resolved"
    assert resolved["endsAt"].startswith("2026-03-02T09:")  # PerfHub's resolution time


def test_a_silence_made_in_alertmanager_suppresses_the_alert(
    timeline, p99_rule, to_alertmanager, alertmanager
):
    am, hook = alertmanager
    now = datetime.now(UTC)
    silence = {
        "matchers": [{"name": "service", "value": "chat-7b", "isRegex": False, "isEqual": True}],
        "startsAt": now.isoformat(),
        "endsAt": (now + timedelta(hours=1)).isoformat(),
        "createdBy": "test",
        "comment": "maintenance",
    }
    assert requests.post(am.url + "/api/v2/silences", json=silence, timeout=5).ok
    timeline.run(FIRE)

    def suppressed() -> bool:
        alerts = requests.get(am.url + "/api/v2/alerts", timeout=5).json()
        return bool(alerts) and alerts[0]["status"]["state"] == "suppressed"

    wait_for("Alertmanager to hold the alert as suppressed", suppressed, timeout=15, every=0.2)
    timeline.tick(4, e2e_ms=3000)  # re-sent while firing, still silenced
    wait_for("the alert to stay suppressed", suppressed, timeout=5, every=0.2)
    assert hook.bodies == []
