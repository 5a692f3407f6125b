import json
import socket
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from collectors.models import Host, IngestBatch, ScrapeWindow
from collectors.services import run_periodic_jobs
from collectors.services.pull import due_pull_hosts, pull_host
from tests.factories.batches import make_batch
from tests.support import Served

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _loopback_allowed(outbound_loopback):
    """The targets here are loopback servers: allow-listed, as a deployment would."""


@pytest.fixture
def served():
    server = Served()
    yield server
    server.close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/metrics"


def test_pulling_an_engine_twice_makes_a_window_and_marks_the_host_up(served, service, vllm_texts):
    host = Host.objects.create(
        name="pulled-1", pull_url=served.url, pull_kind="vllm", pull_service=service
    )
    now = timezone.now()
    served.body = vllm_texts[0].encode()
    assert pull_host(host_id=host.pk, now=now - timedelta(seconds=15)).ok
    served.body = vllm_texts[1].encode()
    assert pull_host(host_id=host.pk, now=now).ok
    window = ScrapeWindow.objects.get()
    assert window.rates["requests_finished"] == pytest.approx(12.0)
    host.refresh_from_db()
    assert (host.status, host.last_error) == ("up", "")
    assert host.last_seen_at == now


def test_a_target_answering_another_engines_metrics_is_up_with_the_reason(
    served, service, vllm_texts
):
    # A vLLM endpoint pulled as Triton: stored, but nothing in it is read.
    host = Host.objects.create(
        name="pulled-1", pull_url=served.url, pull_kind="triton", pull_service=service
    )
    served.body = vllm_texts[0].encode()
    assert pull_host(host_id=host.pk).ok
    host.refresh_from_db()
    assert host.status == "up"
    assert "is a metric PerfHub reads for source 'triton'" in host.health_detail(timezone.now())


def test_a_failing_target_is_marked_down_with_its_error(service):
    host = Host.objects.create(
        name="dead-1", pull_url=closed_port_url(), pull_kind="vllm", pull_service=service
    )
    outcome = pull_host(host_id=host.pk)
    assert not outcome.ok
    host.refresh_from_db()
    assert host.status == "down"
    assert "could not connect" in host.last_error


def test_a_malformed_scrape_marks_the_target_down_naming_the_line(served, service):
    host = Host.objects.create(
        name="bad-1", pull_url=served.url, pull_kind="vllm", pull_service=service
    )
    served.body = b'vllm:num_requests_running{engine="0" 3\n'
    assert not pull_host(host_id=host.pk).ok
    host.refresh_from_db()
    assert host.status == "down"
    assert "line 1" in host.last_error


def test_pulling_an_agent_feeds_its_batch_and_dedups_the_replay(served, service):
    host = Host.objects.create(name="gpu-node-07", pull_url=served.url, pull_kind="agent")
    served.content_type = "application/json"
    served.body = json.dumps(make_batch(batch_id=str(uuid.uuid4()))).encode()
    first = pull_host(host_id=host.pk)
    second = pull_host(host_id=host.pk)
    assert first.ok and not first.result.duplicate
    assert second.ok and second.result.duplicate
    assert IngestBatch.objects.count() == 1


def test_due_targets_are_claimed_once_per_interval(service):
    host = Host.objects.create(
        name="due-1", pull_url=closed_port_url(), pull_kind="vllm", pull_service=service
    )
    now = timezone.now()
    assert due_pull_hosts(now=now) == [host.pk]
    assert due_pull_hosts(now=now + timedelta(seconds=5)) == []
    assert due_pull_hosts(now=now + timedelta(seconds=15)) == [host.pk]


def test_run_periodic_jobs_pulls_rolls_up_and_survives_a_dead_target(served, service, vllm_texts):
    served.body = vllm_texts[0].encode()
    Host.objects.create(name="ok-1", pull_url=served.url, pull_kind="vllm", pull_service=service)
    Host.objects.create(
        name="dead-2", pull_url=closed_port_url(), pull_kind="vllm", pull_service=service
    )
    report = run_periodic_jobs()
    assert (report["pulled"], report["pull_failures"]) == (2, 1)
    assert report["rolled_up_batches"] == 1
    assert dict(Host.objects.values_list("name", "status")) == {"ok-1": "up", "dead-2": "down"}


def test_a_rejected_answer_is_recorded_by_field_and_line_never_quoted(served, service):
    host = Host.objects.create(
        name="bad-2", pull_url=served.url, pull_kind="vllm", pull_service=service
    )
    served.body = b'vllm:num_requests_running{engine="s3cr3t-label" 3\n'
    pull_host(host_id=host.pk)
    host.refresh_from_db()
    assert host.last_error == "rejected (400): invalid scrapes[0].exposition (line 1)"
