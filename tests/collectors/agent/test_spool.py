import json
import logging

from collectors.agent.batch import new_batch
from collectors.agent.spool import Spool


def batches(n: int, padding: int = 0) -> list[dict]:
    return [
        new_batch(host="h", requests=[{"pad": "x" * padding}] if padding else []) for _ in range(n)
    ]


def test_it_returns_batches_in_the_order_they_were_spooled(tmp_path):
    spool = Spool(tmp_path, max_bytes=10_000_000)
    sent = batches(12)
    for batch in sent:
        spool.put(batch)

    loaded = [spool.load(p)["batch_id"] for p in spool.pending()]

    assert loaded == [b["batch_id"] for b in sent]


def test_it_keeps_the_order_across_a_restart(tmp_path):
    first, second = batches(3), batches(3)
    spool = Spool(tmp_path, max_bytes=10_000_000)
    for batch in first:
        spool.put(batch)

    reopened = Spool(tmp_path, max_bytes=10_000_000)
    for batch in second:
        reopened.put(batch)

    loaded = [reopened.load(p)["batch_id"] for p in reopened.pending()]
    assert loaded == [b["batch_id"] for b in first + second]


def test_it_writes_one_complete_file_per_batch_and_no_temporary_files(tmp_path):
    spool = Spool(tmp_path, max_bytes=10_000_000)
    [batch] = batches(1)

    path = spool.put(batch)

    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    assert json.loads(path.read_text()) == batch


def test_it_removes_half_written_files_left_by_a_crash(tmp_path):
    (tmp_path / ".000000000001-abc.json.tmp").write_text('{"batch_')

    spool = Spool(tmp_path, max_bytes=10_000_000)

    assert list(tmp_path.iterdir()) == []
    assert len(spool) == 0


def test_it_drops_the_oldest_batches_with_a_warning_naming_how_many(tmp_path, caplog):
    sent = batches(6, padding=1000)
    size = len(json.dumps(sent[0], separators=(",", ":")))
    spool = Spool(tmp_path, max_bytes=size * 4)

    with caplog.at_level(logging.WARNING, logger="collectors.agent"):
        for batch in sent:
            spool.put(batch)

    kept = [spool.load(p)["batch_id"] for p in spool.pending()]
    assert kept == [b["batch_id"] for b in sent[2:]]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2  # one per put that overflowed
    assert "dropped the 1 oldest batch(es)" in messages[0]
    assert sent[0]["batch_id"] in messages[0]


def test_it_keeps_the_newest_batch_even_when_it_alone_is_over_the_bound(tmp_path, caplog):
    spool = Spool(tmp_path, max_bytes=10)
    old, new = batches(2)

    with caplog.at_level(logging.WARNING, logger="collectors.agent"):
        spool.put(old)
        spool.put(new)

    assert [spool.load(p)["batch_id"] for p in spool.pending()] == [new["batch_id"]]
    assert "dropped the 1 oldest batch(es)" in caplog.records[0].getMessage()


def test_it_discards_an_unreadable_file_with_an_error(tmp_path, caplog):
    spool = Spool(tmp_path, max_bytes=10_000_000)
    path = spool.put(batches(1)[0])
    path.write_text("{not json")

    with caplog.at_level(logging.ERROR, logger="collectors.agent"):
        assert spool.load(path) is None

    assert not path.exists()
    assert "is unreadable" in caplog.records[0].getMessage()
