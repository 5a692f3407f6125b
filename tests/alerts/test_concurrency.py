"""Evaluators on PostgreSQL: every rule is evaluated once a round, even beside another evaluator
that fails, nothing is sent twice, and the round's rule writes are heap-only."""

import threading

import pytest
from django.db import connection, transaction

from alerts import evaluation, services
from alerts.models import AlertEvent, Notification, Receiver, Rule
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


def test_rules_another_evaluator_let_go_unstamped_are_evaluated_in_the_same_round(
    settings, host, make_services, monkeypatch
):
    # Each chunk reads on from the last one's position; rules skipped there because another
    # evaluator held them, which it then let go without stamping (it failed and rolled
    # back), lie behind that position: the round's last pass from the first rule takes them.
    settings.PERFHUB_ALERTS_EVALUATION_CHUNK = 4
    first, *_ = make_services(3)
    for service in Service.objects.all():
        services.ensure_default_rules(service)
        feed(service, host, 0, e2e_ms=9000)
    held, release, failed = threading.Event(), threading.Event(), []

    def other_evaluator():
        try:
            with transaction.atomic():
                list(Rule.objects.select_for_update().filter(service=first))
                held.set()
                release.wait(timeout=30)
                raise RuntimeError("the other evaluator fails")  # rolls back, unstamped
        except RuntimeError as exc:
            failed.append(exc)
        finally:
            connection.close()

    other = threading.Thread(target=other_evaluator)
    other.start()
    assert held.wait(timeout=30)
    evaluate_claimed = evaluation._evaluate_claimed

    def first_chunk_then_let_go(claimed, t, report):
        evaluate_claimed(claimed, t, report)
        release.set()
        other.join(timeout=30)

    monkeypatch.setattr(evaluation, "_evaluate_claimed", first_chunk_then_let_go)
    at = evaluation_time(0)
    assert services.evaluate_all(at).rules == 39
    assert len(failed) == 1
    assert set(Rule.objects.values_list("last_evaluated_at", flat=True)) == {at}


def _rule_updates() -> tuple[int, int]:
    """(heap-only, all) updates of the rules table so far, from PostgreSQL's statistics."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")  # ours, once this backend idles
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT n_tup_hot_upd, n_tup_upd FROM pg_stat_user_tables WHERE relname = %s",
            ["alerts_rule"],
        )
        return cursor.fetchone()


def test_a_rounds_writes_to_the_rules_are_heap_only_where_the_pages_have_room(host, make_services):
    # Every rule is written each minute; written in place on its page (heap-only), the
    # write adds no entry to the table's indexes and the table does not grow between vacuums.
    for service in make_services(3):
        services.ensure_default_rules(service)
        feed(service, host, 0, e2e_ms=9000)
    hot_before, all_before = _rule_updates()
    assert services.evaluate_all(evaluation_time(0)).rules == 39
    hot, every = _rule_updates()
    assert every - all_before == 39
    # The new versions fit in the room the pages were filled to leave (once vacuum or
    # pruning frees the old ones, every write does); with an index on a written column (the
    # old claim index), none is heap-only.
    assert hot - hot_before >= 0.25 * 39
