from datetime import timedelta

import pytest
from django.utils import timezone

from collectors.models import MINUTE, GpuSample, IngestBatch, RequestSample, ServiceRollup
from collectors.services.retention import prune
from collectors.services.rollups import rollup_pending
from tests.factories.batches import make_batch, push

pytestmark = pytest.mark.django_db


def test_it_deletes_only_raw_rows_past_retention(agent_client, service, settings):
    settings.PERFHUB_RAW_RETENTION_DAYS = 14
    push(agent_client, make_batch())
    RequestSample.objects.filter(e2e_ms=1000.0).update(ts=timezone.now() - timedelta(days=15))
    deleted = prune()
    assert deleted["RequestSample"] == 1
    assert RequestSample.objects.count() == 2
    assert GpuSample.objects.count() == 1


def test_it_keeps_the_batch_ids_while_their_rows_are_kept(agent_client, service):
    push(agent_client, make_batch())
    rollup_pending()
    prune()
    assert IngestBatch.objects.count() == 1
    prune(now=timezone.now() + timedelta(days=15))
    assert IngestBatch.objects.count() == 0


def test_it_keeps_hourly_rollups_past_the_minute_retention(agent_client, service, settings):
    settings.PERFHUB_MINUTE_ROLLUP_RETENTION_DAYS = 30
    push(agent_client, make_batch())
    rollup_pending()
    prune(now=timezone.now() + timedelta(days=31))
    assert not ServiceRollup.objects.filter(resolution_s=MINUTE).exists()
    assert ServiceRollup.objects.filter(resolution_s=3600).count() == 1
