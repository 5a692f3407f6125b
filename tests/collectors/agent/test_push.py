import logging

import pytest

from collectors.agent.batch import new_batch
from collectors.agent.push import Delivery, Outcome, Pusher
from collectors.agent.spool import Spool
from tests.factories.agent import TOKEN


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


def delivery_to(url: str, tmp_path, clock, *, max_bytes: int = 10_000_000) -> Delivery:
    return Delivery(
        Pusher(f"{url}/api/v1/ingest/", TOKEN, timeout=2),
        Spool(tmp_path / "spool", max_bytes),
        backoff_base_s=1.0,
        backoff_max_s=60.0,
        clock=clock,
        jitter=lambda: 0.0,
    )


def run(delivery: Delivery, clock: FakeClock, batches: list[dict]) -> list[Outcome]:
    """Submit batches one 'interval' apart, then let retries run until the spool is empty."""
    outcomes = []
    for batch in batches:
        outcomes.append(delivery.submit(batch))
        clock.now += 10.0
    for _ in range(20):
        if not len(delivery.spool):
            break
        clock.now += 60.0
        delivery.drain()
    return outcomes


def test_it_pushes_with_the_token_and_gets_202(ingest, tmp_path, clock):
    url, state = ingest
    batch = new_batch(host="gpu-01")

    assert delivery_to(url, tmp_path, clock).submit(batch) is Outcome.ACCEPTED
    assert state.stored == [batch["batch_id"]]


def test_it_replays_spooled_batches_in_order_with_nothing_lost_or_doubled(ingest, tmp_path, clock):
    url, state = ingest
    state.fail_first = 3
    delivery = delivery_to(url, tmp_path, clock)
    sent = [new_batch(host="gpu-01") for _ in range(6)]

    outcomes = run(delivery, clock, sent)

    assert outcomes[:2] == [Outcome.SPOOLED, Outcome.SPOOLED]
    assert state.stored == [b["batch_id"] for b in sent]
    assert len(delivery.spool) == 0


def test_it_counts_a_batch_once_when_the_servers_answer_was_lost(ingest, tmp_path, clock):
    url, state = ingest
    state.fail_first = 2
    state.store_before_failing = True  # stored, but the agent saw 503
    delivery = delivery_to(url, tmp_path, clock)
    sent = [new_batch(host="gpu-01") for _ in range(3)]

    run(delivery, clock, sent)

    assert state.stored == [b["batch_id"] for b in sent]
    assert state.duplicates >= 1  # the replay was answered {"duplicate": true} and settled
    assert delivery.delivered == 3
    assert len(delivery.spool) == 0


def test_it_queues_new_batches_behind_the_spool_while_backing_off(ingest, tmp_path, clock):
    url, state = ingest
    state.fail_first = 1
    delivery = delivery_to(url, tmp_path, clock)
    first, second = new_batch(host="gpu-01"), new_batch(host="gpu-01")

    assert delivery.submit(first) is Outcome.SPOOLED
    clock.now += 0.5  # before the 1 s backoff expires: no attempt, just queued
    assert delivery.submit(second) is Outcome.SPOOLED
    assert state.attempts == 1
    clock.now += 1.0
    assert delivery.submit(new_batch(host="gpu-01")) is Outcome.ACCEPTED

    assert state.stored[:2] == [first["batch_id"], second["batch_id"]]


def test_it_backs_off_exponentially_while_the_server_is_down(closed_port_url, tmp_path, clock):
    delivery = delivery_to(closed_port_url, tmp_path, clock)
    delivery.submit(new_batch(host="gpu-01"))
    delays = [delivery.retry_at - clock.now]
    for _ in range(7):
        clock.now = delivery.retry_at
        delivery.drain()
        delays.append(delivery.retry_at - clock.now)

    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_it_honours_retry_after_on_429(ingest, tmp_path, clock):
    url, state = ingest
    state.reject_with = 429
    state.retry_after = "30"
    delivery = delivery_to(url, tmp_path, clock)

    assert delivery.submit(new_batch(host="gpu-01")) is Outcome.SPOOLED
    assert delivery.retry_at == clock.now + 30.0


def test_it_drops_a_permanently_rejected_batch_with_the_servers_errors(
    ingest, tmp_path, clock, caplog
):
    url, state = ingest
    state.reject_with = 400
    delivery = delivery_to(url, tmp_path, clock)
    batch = new_batch(host="gpu-01")

    with caplog.at_level(logging.ERROR, logger="collectors.agent"):
        outcome = delivery.submit(batch)

    assert outcome is Outcome.REJECTED
    assert len(delivery.spool) == 0
    assert delivery.retry_at is None
    [record] = caplog.records
    assert batch["batch_id"] in record.getMessage()
    assert "HTTP 400" in record.getMessage()
    assert '{"gpus": ["0: util: not a number"]}' in record.getMessage()


def test_a_warning_the_server_answers_with_is_logged_once(ingest, tmp_path, clock, caplog):
    url, state = ingest
    state.warnings = ["scrapes[0]: none of its samples is a metric PerfHub reads"]
    delivery = delivery_to(url, tmp_path, clock)

    with caplog.at_level(logging.WARNING, logger="collectors.agent"):
        outcomes = run(delivery, clock, [new_batch(host="gpu-01") for _ in range(3)])

    assert outcomes == [Outcome.ACCEPTED] * 3
    [record] = caplog.records
    assert "none of its samples is a metric PerfHub reads" in record.getMessage()


def test_it_treats_a_wrong_token_as_permanent(ingest, tmp_path, clock):
    url, _ = ingest
    pusher = Pusher(f"{url}/api/v1/ingest/", "wrong", timeout=2)

    result = pusher.push(new_batch(host="gpu-01"))

    assert (result.outcome, result.status) == (Outcome.REJECTED, 401)


def test_it_settles_a_replay_the_server_already_has_as_a_duplicate(ingest, tmp_path, clock):
    url, state = ingest
    pusher = Pusher(f"{url}/api/v1/ingest/", TOKEN, timeout=2)
    batch = new_batch(host="gpu-01")

    assert pusher.push(batch).outcome is Outcome.ACCEPTED
    assert pusher.push(batch).outcome is Outcome.DUPLICATE
    assert state.stored == [batch["batch_id"]]


def test_it_replays_a_spool_left_by_a_previous_run_first(ingest, tmp_path, clock):
    url, state = ingest
    leftover = new_batch(host="gpu-01")
    Spool(tmp_path / "spool", 10_000_000).put(leftover)
    fresh = new_batch(host="gpu-01")

    delivery_to(url, tmp_path, clock).submit(fresh)

    assert state.stored == [leftover["batch_id"], fresh["batch_id"]]


class FullDisk(Spool):
    """A spool whose disk is full until `free()`: every write fails with ENOSPC."""

    full = True

    def put(self, batch: dict):
        if self.full:
            raise OSError(28, "No space left on device")
        return super().put(batch)


def test_a_full_spool_disk_during_an_outage_loses_no_batch(ingest, tmp_path, clock):
    url, state = ingest
    state.fail_first = 4  # the server is down for the first four pushes
    delivery = delivery_to(url, tmp_path, clock)
    delivery.spool = FullDisk(tmp_path / "spool", 10_000_000)
    sent = [new_batch(host="gpu-01") for _ in range(5)]

    run(delivery, clock, sent[:3])
    delivery.spool.full = False  # space again: later batches still queue behind the held ones
    run(delivery, clock, sent[3:])
    for _ in range(5):
        clock.now += 60.0
        delivery.drain()

    assert state.stored == [b["batch_id"] for b in sent]
    assert delivery.waiting() == 0


def test_a_failed_spool_write_leaves_no_partial_file(tmp_path, monkeypatch):
    spool = Spool(tmp_path / "spool", 10_000_000)

    def no_space(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("collectors.agent.spool.os.fsync", no_space)
    with pytest.raises(OSError):
        spool.put(new_batch(host="gpu-01"))

    assert list((tmp_path / "spool").iterdir()) == []
