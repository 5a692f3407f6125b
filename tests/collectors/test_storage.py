from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from collectors import storage
from collectors.models import RequestSample, ScrapeWindow, ServiceMergedRollup
from collectors.services.ingest import REQUEST_FIELDS, WINDOW_FIELDS
from tests.factories.catalog import make_service

pytestmark = pytest.mark.django_db


def rows(host, service, n):
    now = timezone.now()
    return [
        (host.pk, service.pk, "vllm", now, now, 15.0, {"requests_finished": float(i)}, {}, {},
         {"kv_cache_usage": 0.5}, False)
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.postgres
def test_it_writes_with_copy_on_postgresql(host, service):
    with CaptureQueriesContext(connection) as queries:
        method = storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, rows(host, service, 1000))
    assert method == "copy"
    assert not [q for q in queries if "INSERT" in q["sql"]]
    assert ScrapeWindow.objects.count() == 1000
    last = ScrapeWindow.objects.order_by("-counters__requests_finished").first()
    assert last.counters == {"requests_finished": 999.0}
    assert last.gauges == {"kv_cache_usage": 0.5}


@pytest.mark.postgres
def test_a_batch_of_request_rows_is_stored_whole_one_row_at_a_time(host, service):
    now = timezone.now()
    batch = [
        (service.pk, host.pk, now - timedelta(milliseconds=i), 10.0, 5.0, 100.0 + i, None, 64,
         32, True)
        for i in range(1000)
    ]  # fmt: skip
    # Before PostgreSQL 17 the COPY carries `WHERE random() >= 0` (storage._row_at_a_time).
    storage.bulk_insert(RequestSample, REQUEST_FIELDS, batch)
    assert RequestSample.objects.count() == 1000
    assert sorted(RequestSample.objects.values_list("e2e_ms", flat=True))[-1] == 1099.0


@pytest.mark.postgres
@pytest.mark.parametrize(("version", "clause"), [(150020, " WHERE random() >= 0"), (170000, "")])
def test_copy_goes_row_at_a_time_only_before_postgresql_17(monkeypatch, version, clause):
    monkeypatch.setattr(connection, "pg_version", version)
    assert storage._row_at_a_time() == clause


def test_it_falls_back_to_bulk_create_elsewhere(host, service):
    if connection.vendor == "postgresql":
        pytest.skip("the fallback is for SQLite")
    assert storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, rows(host, service, 3)) == "bulk_create"
    assert ScrapeWindow.objects.count() == 3


def test_it_writes_nothing_for_no_rows():
    assert storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, []) == "none"


def test_request_samples_carry_only_the_indexes_queries_use():
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, RequestSample._meta.db_table)
    indexed = sorted(
        info["columns"]
        for info in constraints.values()
        if info["index"] and not info["primary_key"]
    )
    assert indexed == [["host_id", "ts"], ["service_id", "host_id", "ts"]]


def _merged(service, start, **values) -> ServiceMergedRollup:
    return ServiceMergedRollup(service=service, resolution_s=60, start=start, **values)


def _stored(row: ServiceMergedRollup) -> tuple:
    return (row.start, row.hosts, row.slo_good, bytes(row.quantiles or b""), row.qps,
            row.gpu_mem_used, row.e2e_count, bytes(row.e2e_sketch or b""))  # fmt: skip


def test_instances_read_back_as_bulk_create_would_store_them(service):
    """JSON (lists, nested objects), bytes, nulls and aware timestamps survive the COPY path
    exactly: a second service gets the same rows through `bulk_create`, and both read back
    the same."""
    other = make_service(service.team, "other")
    start = timezone.now().replace(microsecond=123456)
    values = [
        {"hosts": [3, 1], "slo_good": {"ttft_p99": {"good": 7, "total": 9}},
         "quantiles": b"\x00\\\n\tq", "qps": 1.5, "gpu_mem_used": 2**40, "e2e_count": 4,
         "e2e_sketch": b"\xff\x00"},
        {"hosts": [], "slo_good": {}, "quantiles": None, "qps": None, "e2e_sketch": None},
    ]  # fmt: skip
    method = storage.insert_instances(
        ServiceMergedRollup, [_merged(service, start + timedelta(minutes=i), **v)
                              for i, v in enumerate(values)]
    )  # fmt: skip
    ServiceMergedRollup.objects.bulk_create(
        [_merged(other, start + timedelta(minutes=i), **v) for i, v in enumerate(values)]
    )
    assert method == ("copy" if connection.vendor == "postgresql" else "bulk_create")
    mine, theirs = (
        [_stored(r) for r in ServiceMergedRollup.objects.filter(service=s).order_by("start")]
        for s in (service, other)
    )
    assert mine == theirs
    assert mine[0][1:3] == ([3, 1], {"ttft_p99": {"good": 7, "total": 9}})


def test_an_instance_breaking_a_constraint_stores_none_of_the_batch(service):
    start = timezone.now()
    rows = [_merged(service, start), _merged(service, start)]  # one period twice
    with pytest.raises(IntegrityError), transaction.atomic():
        storage.insert_instances(ServiceMergedRollup, rows)
    assert not ServiceMergedRollup.objects.exists()
