"""No poison (issue 10): a batch the roll-up cannot process is quarantined with its reason,
shown on its host's page, and every other batch and host still rolls up."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse

from collectors.hosts import host_rows
from collectors.models import (
    MINUTE,
    GpuRollup,
    GpuSample,
    Host,
    IngestBatch,
    RequestSample,
    ServiceRollup,
)
from collectors.services import periodic
from collectors.services.retention import prune
from collectors.services.rollups import rollup_pending, rollup_pending_report
from collectors.services.tokens import token_issue
from tests.factories.batches import make_batch, push

pytestmark = pytest.mark.django_db

YEAR_ONE = datetime(1, 1, 1, 0, 0, tzinfo=UTC) + timedelta(hours=5)


@pytest.fixture
def other_hosts(service):
    from rest_framework.test import APIClient

    clients = []
    for name in ("gpu-node-08", "gpu-node-09"):
        client = APIClient()
        token = token_issue(host=Host.objects.create(name=name))[1]
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        clients.append((name, client))
    return clients


def poison(host: Host, service) -> IngestBatch:
    """An unprocessable batch written straight into the database: a sample stamped year 1."""
    RequestSample.objects.create(
        service=service, host=host, ts=YEAR_ONE, e2e_ms=1.0, ok=True, output_tokens=1
    )
    return IngestBatch.objects.create(
        batch_id="00000000-0000-0000-0000-00000000dead",
        host=host,
        minutes=[int(YEAR_ONE.timestamp()) // 60 - 10**9],  # minute_start cannot represent it
    )


def test_every_other_host_rolls_up_past_a_poisoned_batch(agent_client, host, service, other_hosts):
    bad = poison(host, service)
    for name, client in other_hosts:
        push(client, make_batch(host=name))
    report = rollup_pending_report()
    assert report.rolled_up == 2
    rolled = set(
        ServiceRollup.objects.filter(resolution_s=MINUTE).values_list("host__name", flat=True)
    )
    assert rolled == {"gpu-node-08", "gpu-node-09"}
    assert [pk for pk, _ in report.quarantined] == [bad.pk]


def test_the_poisoned_hosts_good_batch_still_rolls_up(agent_client, host, service):
    poison(host, service)
    push(agent_client, make_batch())
    assert rollup_pending() == 1
    assert ServiceRollup.objects.filter(host=host, resolution_s=MINUTE).get().requests == 3


def test_a_quarantined_batch_keeps_its_reason_and_is_not_claimed_again(host, service):
    bad = poison(host, service)
    rollup_pending()
    bad.refresh_from_db()
    assert bad.quarantined_at is not None
    assert "ValueError" in bad.quarantine_reason
    assert rollup_pending_report().quarantined == []


def test_the_hosts_page_counts_quarantined_batches(client, owner, host, service):
    poison(host, service)
    rollup_pending()
    client.force_login(owner)
    assert [r.quarantined for r in host_rows(now=datetime.now(UTC))] == [1]
    page = client.get(reverse("collectors:hosts")).content.decode()
    assert "1 batch quarantined" in page


def test_the_host_page_shows_the_reason(client, owner, host, service):
    poison(host, service)
    rollup_pending()
    client.force_login(owner)
    page = client.get(reverse("collectors:host_detail", args=[host.pk])).content.decode()
    assert "00000000-0000-0000-0000-00000000dead" in page
    assert "ValueError" in page


def test_requeue_puts_quarantined_batches_back(host, service, capsys):
    poison(host, service)
    rollup_pending()
    call_command("requeue_quarantined", "--host", host.name)
    assert capsys.readouterr().out.strip() == "1 batch requeued"
    assert IngestBatch.objects.get().quarantined_at is None


def test_periodic_jobs_go_on_when_one_job_fails(host, service, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("pull table unreadable")

    monkeypatch.setattr(periodic.pull, "due_pull_hosts", broken)
    poison(host, service)
    report = periodic.run_periodic_jobs()
    assert report["errors"] == {"pull": "pull table unreadable"}
    assert report["quarantined_batches"] == 1


def test_prune_removes_quarantined_batches_with_their_rows(host, service, settings):
    poison(host, service)
    rollup_pending()
    IngestBatch.objects.update(received_at=datetime.now(UTC) - timedelta(days=30))
    assert prune()["IngestBatch"] == 1


def overflowing(host: Host) -> IngestBatch:
    """A batch whose rows are each finite but whose roll-up is not: two GPU samples of 1e308 W
    (written straight into the database, as before ingest checked ranges) average to Infinity."""
    ts = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=3)
    for second in (0, 10):
        GpuSample.objects.create(
            host=host, ts=ts + timedelta(seconds=second), gpu_index=0, power_w=1e308
        )
    return IngestBatch.objects.create(
        batch_id="00000000-0000-0000-0000-0000000000f1",
        host=host,
        minutes=[int(ts.timestamp()) // 60],
    )


def test_a_batch_whose_roll_up_would_not_be_finite_is_quarantined_with_the_field(host, service):
    bad = overflowing(host)
    report = rollup_pending_report()
    bad.refresh_from_db()
    assert report.rolled_up == 0 and bad.rolled_up_at is None
    assert "GpuRollup.power_mean" in bad.quarantine_reason
    assert "inf" in bad.quarantine_reason
    assert not GpuRollup.objects.exists()  # nothing non-finite stored


def test_metrics_count_quarantined_batches_apart_from_waiting_ones(client, host, service):
    poison(host, service)
    overflowing(host)
    rollup_pending()
    text = client.get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    assert "perfhub_quarantined_batches 2.0" in text
    assert "perfhub_rollup_pending_batches 0.0" in text
