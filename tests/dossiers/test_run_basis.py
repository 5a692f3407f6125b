"""A baseline's throughput and utilization say what they are over and where GPU-Util came from.

Both are read from the data: the basis from the service's hardware (a run's figures are one
replica's, docs/method.md), the GPU source from the run (`gpu_source`), set where the figures
are recorded: a load-test file's telemetry, or the hosts of a live window (the agent's NVML or
dcgm-exporter).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from collectors.models import Host
from dashboards.claims import record_live_baseline
from loadtests.importing import import_loadtest_file
from tests.factories.catalog import make_baseline, make_service
from tests.factories.traffic import seed_traffic
from tests.support import REAL

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
GENAI_PERF = REAL / "genai-perf" / "wellflat-2025-09-30-profile_export_genai_perf.json"


def _caption(page: str, basis: str) -> str:
    match = re.search(rf'<span[^>]*data-basis="{basis}"[^>]*>(.*?)</span>', page, re.S)
    assert match, f"no {basis} basis on the page"
    return " ".join(match.group(1).split())


def test_throughput_says_per_replica_on_the_services_hardware(outsider_client, team):
    svc = make_service(team, "basis-svc", gpus_per_replica=2, replicas=3, gpu_model="H100")
    make_baseline(svc)
    page = outsider_client.get(svc.get_absolute_url()).content.decode()
    assert (
        _caption(page, "throughput")
        == "per replica (2 \N{MULTIPLICATION SIGN} H100, of the service&#x27;s 3 replicas)"
    )


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("nvml", "measured by NVML on the PerfHub agent"),
        ("dcgm", "measured by dcgm-exporter"),
        ("loadtest", "measured by the load-test file&#x27;s GPU telemetry"),
        ("", "where it was measured is not recorded"),
    ],
)
def test_gpu_util_says_where_it_was_measured(outsider_client, team, source, words):
    svc = make_service(team, "basis-svc", gpus_per_replica=2)
    baseline = make_baseline(svc, gpu_util=0.6, gpu_source=source)
    for url in (svc.get_absolute_url(), baseline.get_absolute_url()):
        page = outsider_client.get(url).content.decode()
        caption = _caption(page, "gpu")
        assert caption.startswith("per GPU, mean over the GPUs measured (a replica has 2 GPUs)")
        assert words in caption, url


def test_a_load_test_files_gpu_telemetry_is_its_source_and_promotion_keeps_it(team):
    svc = make_service(team, "basis-svc")
    (run,) = import_loadtest_file(service=svc, content=GENAI_PERF.read_bytes(), baseline=True)
    assert run.gpu_util is not None
    assert run.gpu_source == "loadtest"
    assert run.promoted_to.gpu_source == "loadtest"


@pytest.mark.parametrize(
    ("host", "source"),
    [
        ({}, "nvml"),  # the agent pushes: NVML
        ({"pull_url": "http://gpu-host-1:9400/metrics", "pull_kind": "dcgm"}, "dcgm"),
    ],
)
def test_a_live_baseline_takes_its_gpu_source_from_the_windows_hosts(
    team, time_machine, host, source
):
    svc = make_service(team, "basis-svc")
    Host.objects.create(name="gpu-host-1", **host)
    time_machine.move_to(NOW + timedelta(seconds=30))
    seed_traffic(service=svc, host="gpu-host-1", start=NOW - timedelta(minutes=60), minutes=60)
    baseline = record_live_baseline(service=svc)
    assert baseline.gpu_util is not None
    assert baseline.gpu_source == source


def test_the_baseline_form_keeps_the_source_when_a_post_leaves_it_out(owner_client, service):
    baseline = make_baseline(service, gpu_source="dcgm")
    url = reverse("dossiers:baseline_edit", args=[service.slug, baseline.pk])
    form = owner_client.get(url).context["form"]
    data = {k: v for k, v in form.initial.items() if v is not None and k != "gpu_source"}
    data["measured_at"] = baseline.measured_at.strftime("%Y-%m-%dT%H:%M")
    data["config_version"] = ""
    response = owner_client.post(url, data)
    assert response.status_code == 302, response.context["form"].errors
    baseline.refresh_from_db()
    assert baseline.gpu_source == "dcgm"
