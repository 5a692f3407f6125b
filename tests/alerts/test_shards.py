"""Sharing a minute's evaluation between workers by shard (issue 26)."""

from __future__ import annotations

import pytest
import time_machine

from alerts import services, tasks
from alerts.models import Rule
from tests.factories.alerts import evaluation_time, feed


@pytest.fixture
def three(team, host, make_services):
    made = make_services(3)
    for service in made:
        services.ensure_default_rules(service)
        feed(service, host, 0, e2e_ms=9000)
    return made


def evaluated(at) -> set[int]:
    return set(Rule.objects.filter(last_evaluated_at=at).values_list("service_id", flat=True))


def test_a_shard_evaluates_only_its_services(three):
    at = evaluation_time(0)
    services.evaluate_all(at, shard=(1, 2))
    assert evaluated(at) == {s.pk for s in three if s.pk % 2 == 1}


def test_the_shards_together_evaluate_every_rule_once(three):
    at = evaluation_time(0)
    counts = [services.evaluate_all(at, shard=(k, 2)).rules for k in (0, 1)]
    assert sum(counts) == Rule.objects.count()
    assert services.evaluate_all(at).rules == 0  # nothing left for a whole evaluation


def test_a_shard_evaluated_twice_does_nothing_the_second_time(three):
    at = evaluation_time(0)
    services.evaluate_all(at, shard=(0, 2))
    assert services.evaluate_all(at, shard=(0, 2)).rules == 0


def test_a_shard_outside_its_count_is_refused(three):
    with pytest.raises(ValueError, match="shard"):
        services.evaluate_all(evaluation_time(0), shard=(2, 2))


def test_the_beat_task_fans_out_one_task_per_shard(settings, three):
    settings.PERFHUB_ALERTS_SHARDS = 2
    at = evaluation_time(0)
    with time_machine.travel(at, tick=False):
        assert tasks.evaluate() == {"evaluated_at": at.isoformat(), "shards": 2}
    assert evaluated(at) == {s.pk for s in three}
