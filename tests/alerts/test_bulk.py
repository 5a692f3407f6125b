"""`alerts.bulk.update_rows`: each row gets its own values (None and times included), in
chunks, and rows not passed are left alone."""

from datetime import UTC, datetime

import pytest

from alerts import bulk
from alerts.models import Rule

pytestmark = pytest.mark.django_db

T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_each_row_gets_its_own_values_and_others_are_left_alone(service, monkeypatch):
    monkeypatch.setattr(bulk, "CHUNK", 2)  # three rows: two statements
    rules = [Rule.objects.create(service=service, name=f"r{i}", kind="p99_e2e", threshold=1)
             for i in range(4)]  # fmt: skip
    for i, rule in enumerate(rules[:3]):
        rule.health = "ok" if i else "no_data"
        rule.health_reason = f"reason {i}"
        rule.last_value = None if i == 1 else i * 1.5
        rule.last_evaluated_at = T
    bulk.update_rows(rules[:3], ["health", "health_reason", "last_value", "last_evaluated_at"])
    stored = {r.name: r for r in Rule.objects.all()}
    assert [(stored[f"r{i}"].health, stored[f"r{i}"].health_reason) for i in range(3)] == [
        ("no_data", "reason 0"), ("ok", "reason 1"), ("ok", "reason 2")
    ]  # fmt: skip
    assert [stored[f"r{i}"].last_value for i in range(3)] == [0.0, None, 3.0]
    assert {stored[f"r{i}"].last_evaluated_at for i in range(3)} == {T}
    assert stored["r3"].last_evaluated_at is None and stored["r3"].health_reason == ""
