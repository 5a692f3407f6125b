import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from collectors import storage
from collectors.models import RequestSample, ScrapeWindow
from collectors.services.ingest import WINDOW_FIELDS

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
