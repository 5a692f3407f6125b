"""Host.health: push hosts by the age of their last push, pull hosts by their last pull."""

from datetime import UTC, datetime, timedelta

import pytest

from collectors.models import PUSH_FRESHNESS, Host

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def push_host(last_seen_at: datetime | None) -> Host:
    return Host(name="gpu-node-07", last_seen_at=last_seen_at)


def pull_host(status: str, last_error: str = "", last_pull_at: datetime | None = None) -> Host:
    return Host(
        name="pulled-9",
        pull_url="http://10.0.0.9:8000/metrics",
        pull_kind="vllm",
        status=status,
        last_error=last_error,
        last_pull_at=last_pull_at,
    )


def test_a_push_host_seen_within_the_window_is_receiving():
    host = push_host(NOW - timedelta(seconds=40))
    assert host.health(NOW) == Host.Health.RECEIVING
    assert host.health_detail(NOW) == "last push under a minute ago"


def test_a_push_host_seen_exactly_at_the_window_edge_is_still_receiving():
    assert push_host(NOW - PUSH_FRESHNESS).health(NOW) == Host.Health.RECEIVING


def test_a_push_host_quiet_past_the_window_is_silent():
    host = push_host(NOW - PUSH_FRESHNESS - timedelta(seconds=1))
    assert host.health(NOW) == Host.Health.SILENT


def test_a_silent_host_says_how_long_it_has_been_quiet():
    assert push_host(NOW - timedelta(hours=2)).health_detail(NOW) == "nothing for 2\xa0hours"


def test_a_push_host_never_seen_is_never_seen():
    host = push_host(None)
    assert host.health(NOW) == Host.Health.NEVER_SEEN
    assert host.health(NOW).label == "never seen"


def test_a_pull_host_that_answered_is_up_whatever_its_last_seen():
    host = pull_host("up", last_pull_at=NOW - timedelta(minutes=5))
    host.last_seen_at = NOW - timedelta(hours=1)
    assert host.health(NOW) == Host.Health.UP
    assert host.health_detail(NOW) == "pulled 5\xa0minutes ago"


def test_a_pull_host_that_failed_is_down_with_its_error():
    host = pull_host("down", last_error="ConnectTimeout: timed out")
    assert host.health(NOW) == Host.Health.DOWN
    assert host.health_detail(NOW) == "ConnectTimeout: timed out"


def test_a_pull_host_not_pulled_yet_says_so():
    host = pull_host("unknown")
    assert host.health(NOW) == Host.Health.NOT_PULLED
    assert host.health_detail(NOW) == "waiting for the first pull"


@pytest.mark.parametrize("status", ["up", "down", "unknown"])
def test_a_push_host_ignores_the_pull_status(status):
    host = push_host(NOW)
    host.status = status
    assert host.health(NOW) == Host.Health.RECEIVING
