"""Diagnosis pages: proposals with evidence; an owner confirms one into a Bottleneck."""

import pytest
from django.urls import reverse

from dossiers import services
from dossiers.models import Bottleneck
from loadtests.importing import import_loadtest_file
from tests.factories.catalog import baseline_values

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy_baseline(service):
    # GPU-Util 97% while SMs are active 31% and DRAM 72%: memory-bound kernels.
    return services.baseline_record(service=service, label="busy", **baseline_values())


def diagnosis_url(baseline, suffix=""):
    return reverse(f"loadtests:{suffix or 'diagnosis'}", args=["chat-7b", "baseline", baseline.pk])


def test_a_proposal_shows_with_its_evidence(owner_client, busy_baseline):
    response = owner_client.get(diagnosis_url(busy_baseline))
    assert [p.rule for p in response.context["proposals"]] == ["busy_gpu_idle_sms"]
    assert b"GPU-Util 97% but SM active 31%; DRAM active 72%" in response.content


def test_a_proposal_is_not_a_bottleneck_until_confirmed(owner_client, busy_baseline):
    owner_client.get(diagnosis_url(busy_baseline))
    assert not Bottleneck.objects.exists()


def test_confirming_creates_a_confirmed_bottleneck_with_the_evidence_baseline(
    owner_client, busy_baseline
):
    owner_client.post(diagnosis_url(busy_baseline, "confirm"), {"rule": "busy_gpu_idle_sms"})
    bottleneck = Bottleneck.objects.get()
    assert (bottleneck.status, bottleneck.layer, bottleneck.kind) == (
        "confirmed",
        "hardware",
        "memory_bandwidth",
    )
    assert "SM active 31%" in bottleneck.evidence
    assert list(bottleneck.evidence_baselines.all()) == [busy_baseline]


def test_a_rule_that_does_not_fire_confirms_nothing(owner_client, busy_baseline):
    owner_client.post(diagnosis_url(busy_baseline, "confirm"), {"rule": "memory_creep"})
    assert not Bottleneck.objects.exists()


def test_an_outsider_cannot_confirm(outsider_client, busy_baseline):
    response = outsider_client.post(
        diagnosis_url(busy_baseline, "confirm"), {"rule": "busy_gpu_idle_sms"}
    )
    assert response.status_code == 403 and not Bottleneck.objects.exists()


def test_an_outsider_reads_proposals_without_a_confirm_button(outsider_client, busy_baseline):
    response = outsider_client.get(diagnosis_url(busy_baseline))
    assert response.status_code == 200 and b"Confirm as a bottleneck" not in response.content


def test_a_saturated_sweep_proposes_flat_throughput(owner_client, service, fixtures_dir):
    content = (fixtures_dir / "loadtests" / "vllm-bench-concurrency-sweep.jsonl").read_bytes()
    runs = import_loadtest_file(service=service, content=content)
    url = reverse("loadtests:diagnosis", args=["chat-7b", "loadtest", runs[-1].pk])
    rules = [p.rule for p in owner_client.get(url).context["proposals"]]
    assert "throughput_flat" in rules
