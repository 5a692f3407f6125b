import json
from datetime import timedelta

import pytest
from django.utils import timezone

from collectors.distributions import Traffic
from collectors.models import HOUR, MINUTE, GpuRollup, IngestBatch, ServiceRollup
from collectors.selectors import latency_percentiles
from collectors.services.ingest import epoch_minute
from collectors.services.rollups import rollup_host_minutes, rollup_pending
from tests.factories.batches import make_batch, push, recent_minute, rfc3339

pytestmark = pytest.mark.django_db


def test_it_rolls_pending_batches_into_minute_rows(agent_client, service, host):
    push(agent_client, make_batch())
    assert rollup_pending() == 1
    row = ServiceRollup.objects.get(resolution_s=MINUTE)
    assert (row.requests, row.e2e_count, row.output_tokens) == (3, 3, 600)
    assert row.e2e_min == pytest.approx(1000.0)
    assert row.e2e_max == pytest.approx(1020.0)
    assert row.qps == pytest.approx(3 / 60)


def test_it_writes_the_hour_row_beside_the_minutes(agent_client, service):
    push(agent_client, make_batch(ts=recent_minute(3)))
    push(agent_client, make_batch(ts=recent_minute(2)))
    rollup_pending()
    minutes = ServiceRollup.objects.filter(resolution_s=MINUTE)
    hours = ServiceRollup.objects.filter(resolution_s=HOUR)
    assert sum(r.requests for r in hours) == sum(r.requests for r in minutes) == 6


def test_it_rolls_gpu_minutes(agent_client, service):
    push(agent_client, make_batch())
    rollup_pending()
    row = GpuRollup.objects.get(resolution_s=MINUTE)
    assert (row.util_mean, row.sm_active_mean, row.sm_occupancy_mean) == (0.97, 0.31, None)
    assert row.mem_used_max == 77720453120


def test_it_marks_batches_done_and_does_not_take_them_twice(agent_client, service):
    push(agent_client, make_batch())
    assert rollup_pending() == 1
    assert rollup_pending() == 0
    assert IngestBatch.objects.get().rolled_up_at is not None


def test_it_skips_a_batch_another_worker_claimed_recently(agent_client, service):
    push(agent_client, make_batch())
    IngestBatch.objects.update(claimed_at=timezone.now())
    assert rollup_pending() == 0
    assert rollup_pending(now=timezone.now() + timedelta(minutes=11)) == 1


def test_a_dead_workers_claim_is_taken_over_after_the_claim_timeout(
    agent_client, service, settings
):
    settings.PERFHUB_ROLLUP_CLAIM_TIMEOUT_S = 8
    push(agent_client, make_batch())
    IngestBatch.objects.update(claimed_at=timezone.now())  # claimed by a worker since killed
    assert rollup_pending(now=timezone.now() + timedelta(seconds=5)) == 0
    assert rollup_pending(now=timezone.now() + timedelta(seconds=9)) == 1
    assert ServiceRollup.objects.get(resolution_s=MINUTE).requests == 3


def test_a_late_sample_re_rolls_its_minute(agent_client, service):
    minute = recent_minute(4)
    push(agent_client, make_batch(ts=minute))
    rollup_pending()
    push(agent_client, make_batch(ts=minute, gpus=[]))
    rollup_pending()
    row = ServiceRollup.objects.get(resolution_s=MINUTE)
    assert row.requests == 6


def test_recomputing_a_minute_is_idempotent(agent_client, service, host):
    minute = recent_minute()
    push(agent_client, make_batch(ts=minute))
    rollup_pending()
    before = ServiceRollup.objects.get(resolution_s=MINUTE)
    rollup_host_minutes(host_id=host.pk, minutes=[epoch_minute(minute)])
    after = ServiceRollup.objects.get(resolution_s=MINUTE)
    assert (after.requests, after.e2e_count, bytes(after.e2e_sketch)) == (
        before.requests,
        before.e2e_count,
        bytes(before.e2e_sketch),
    )


def test_scraped_windows_roll_into_qps_and_bucket_percentiles(
    agent_client, service, vllm_texts, fixtures_dir
):
    expected = json.loads((fixtures_dir / "EXPECTED.json").read_text())
    expected = expected["vllm/metrics-t0.prom -> metrics-t15.prom"]
    t0 = recent_minute() + timedelta(seconds=20)
    for ts, text in ((t0, vllm_texts[0]), (t0 + timedelta(seconds=15), vllm_texts[1])):
        scrape = {"ts": rfc3339(ts), "service": "chat-7b", "source": "vllm", "exposition": text}
        push(agent_client, make_batch(gpus=[], requests=[], scrapes=[scrape]))
    rollup_pending()
    row = ServiceRollup.objects.get(resolution_s=MINUTE)
    assert row.qps == pytest.approx(12.0)
    assert row.generation_tps == pytest.approx(expected["generation_tokens_per_second"])
    assert row.running_mean == 31
    traffic = Traffic()
    traffic.add_row(row)
    p99 = latency_percentiles(traffic, "ttft")[3]
    assert p99.method == "bucket-bounded"
    assert p99.count == 180
    assert p99.value == pytest.approx(
        expected["bucket_interpolated_quantiles_seconds"]["ttft"]["0.99"] * 1000
    )
