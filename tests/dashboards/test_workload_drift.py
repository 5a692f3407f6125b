"""Production vs benchmark: live prompt and output lengths against the baseline's fingerprint."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from analysis.claims import Status
from collectors.models import Host, RequestSample
from dashboards.claims import check_claims
from dashboards.workload_claims import workload_claims
from loadtests.importing import import_loadtest_file

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def c16(fixtures_dir):
    return json.loads((fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json").read_text())


@pytest.fixture
def baseline(service, c16):
    (run,) = import_loadtest_file(
        service=service, content=json.dumps(c16).encode(), filename="c16.json", baseline=True
    )
    return run.promoted_to


def push(service, prompts, outputs) -> None:
    host, _ = Host.objects.get_or_create(name="gpu-node-1")
    RequestSample.objects.bulk_create(
        RequestSample(
            service=service, host=host, ts=NOW - timedelta(minutes=30, seconds=i),
            e2e_ms=1000.0, prompt_tokens=p, output_tokens=o,
        )
        for i, (p, o) in enumerate(zip(prompts, outputs, strict=True))
    )  # fmt: skip


def claims_for(service, baseline):
    check = check_claims([service], {service.pk: baseline}, now=NOW)[service.pk]
    workload_claims(check)
    return check


def test_longer_production_outputs_make_the_baseline_unrepresentative(service, baseline, c16):
    push(service, c16["input_lens"], [round(o * 2) for o in c16["output_lens"]])
    claim = claims_for(service, baseline).claim("output_length")
    assert claim.status == Status.UNREPRESENTATIVE
    assert "the baseline no longer represents production: output length" in claim.note
    assert "254 -> 508 tokens" in claim.note


def test_production_like_the_benchmark_holds(service, baseline, c16):
    push(service, c16["input_lens"], c16["output_lens"])
    check = claims_for(service, baseline)
    assert check.claim("output_length").status == Status.HOLDS
    assert check.claim("prompt_length").status == Status.HOLDS


def test_the_service_status_says_not_representative(service, baseline, c16):
    push(service, c16["input_lens"], [round(o * 2) for o in c16["output_lens"]])
    check = claims_for(service, baseline)
    assert check.status == Status.UNREPRESENTATIVE  # no latency roll-ups: nothing worse


def test_without_pushed_requests_there_is_no_live_distribution(service, baseline):
    assert claims_for(service, baseline).claim("output_length").status == Status.NO_LIVE_DATA


def test_the_page_says_the_length_means_come_from_pushed_requests(
    owner_client, service, baseline, c16
):
    # The dossier shows the window's request total above the table (167,862 in the demo);
    # "3,544 live requests" under the lengths read as a second total that contradicted it.
    push(service, c16["input_lens"], c16["output_lens"])
    window = {
        "start": (NOW - timedelta(hours=1)).isoformat(),
        "end": NOW.isoformat(),
    }
    url = reverse("dashboards:service_claims", args=[service.slug])
    page = owner_client.get(url, window).content.decode()
    assert f"over {len(c16['input_lens']):,} pushed requests with token counts" in page
