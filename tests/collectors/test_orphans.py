"""Raw rows never name a host or service that does not exist, through any write path (issue 26).

The raw tables carry no per-row foreign keys: `collectors.storage` checks each
batch's distinct keys once (and locks them until commit on PostgreSQL). Each test tries to
store an orphan through one path and finds nothing stored.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from collectors import decoding, storage
from collectors.models import GpuSample, IngestBatch, RequestSample, ScrapeWindow
from collectors.services.ingest import GPU_FIELDS, REQUEST_FIELDS, WINDOW_FIELDS, ingest_document
from tests.factories.batches import INGEST_URL, make_batch

pytestmark = pytest.mark.django_db
TS = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
MISSING = 987_654


def stored() -> int:
    return sum(m.objects.count() for m in (RequestSample, GpuSample, ScrapeWindow, IngestBatch))


def test_copy_refuses_a_request_row_naming_no_service(host):
    row = (MISSING, host.pk, TS, 1.0, 1.0, 10.0, None, 10, 10, True)
    with pytest.raises(storage.OrphanRows, match=r"RequestSample\.service"):
        storage.bulk_insert(RequestSample, REQUEST_FIELDS, [row])
    assert stored() == 0


def test_copy_refuses_a_gpu_row_naming_no_host():
    row = (MISSING, TS, 0, "", "", 0.5, None, None, None, None, None, None, None, None, None)
    with pytest.raises(storage.OrphanRows, match=r"GpuSample\.host"):
        storage.bulk_insert(GpuSample, GPU_FIELDS, [row])
    assert stored() == 0


def test_copy_refuses_a_scrape_window_naming_no_service(host):
    row = (host.pk, MISSING, "vllm", TS, TS, 15.0, {}, {}, {}, {}, False)
    with pytest.raises(storage.OrphanRows, match=r"ScrapeWindow\.service"):
        storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, [row])
    assert stored() == 0


def test_copy_refuses_the_whole_call_for_one_orphan_among_good_rows(host, service):
    good = (service.pk, host.pk, TS, 1.0, 1.0, 10.0, None, 10, 10, True)
    bad = (MISSING, host.pk, TS, 1.0, 1.0, 10.0, None, 10, 10, True)
    with pytest.raises(storage.OrphanRows):
        storage.bulk_insert(RequestSample, REQUEST_FIELDS, [good, bad])
    assert stored() == 0


def test_tables_checked_together_store_nothing_when_a_later_table_names_no_service(host, service):
    gpu = (host.pk, TS, 0, "", "", 0.5, None, None, None, None, None, None, None, None, None)
    request = (service.pk, host.pk, TS, 1.0, 1.0, 10.0, None, 10, 10, True)
    window = (host.pk, MISSING, "vllm", TS, TS, 15.0, {}, {}, {}, {}, False)
    tables = [
        (GpuSample, GPU_FIELDS, [gpu]),
        (RequestSample, REQUEST_FIELDS, [request]),
        (ScrapeWindow, WINDOW_FIELDS, [window]),
    ]
    # The missing service is named by the window, not by the request that names a real one.
    with pytest.raises(storage.OrphanRows, match=r"ScrapeWindow\.service"):
        storage.bulk_insert_all(tables)
    assert stored() == 0


def test_a_push_whose_service_is_deleted_after_its_fields_were_checked_names_it_and_stores_nothing(
    agent_client, service, monkeypatch
):
    validate = decoding.validate_body

    def validate_then_delete(raw, host):
        data = validate(raw, host=host)
        service.delete()  # between the field checks and the write, which looks it up
        return data

    monkeypatch.setattr(decoding, "validate_body", validate_then_delete)
    body = json.dumps(make_batch(host="gpu-node-07"))
    response = agent_client.post(INGEST_URL, body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["requests[0].service"] == [f"Unknown service {service.slug!r}."]
    assert stored() == 0


def test_a_pull_for_a_host_deleted_meanwhile_stores_nothing(host, service):
    document = make_batch(host=host.name, requests=[])
    gone = type(host).objects.get(pk=host.pk)
    type(host).objects.filter(pk=host.pk).delete()
    with pytest.raises(storage.OrphanRows, match="host"):
        ingest_document(host=gone, document=document)
    assert stored() == 0


def test_deleting_a_service_still_deletes_its_raw_rows(agent_client, service):
    response = agent_client.post(
        INGEST_URL, json.dumps(make_batch(host="gpu-node-07")), content_type="application/json"
    )
    assert response.status_code == 202
    assert RequestSample.objects.filter(service_id=service.pk).exists()
    service.delete()
    assert not RequestSample.objects.filter(service_id=service.pk).exists()
