"""Preemptions an engine does not count read as "not counted", never as 0.

Real scrapes (tests/fixtures/real/metrics, SOURCES.md) pushed through the ingest API and rolled
up: TGI, Triton and an SGLang of late 2024 expose no preemption counter, vLLM 0.32 does (34
preemptions for 48 finished requests in its preemptions capture). A host scraped by
dcgm-exporter only, or pushing only client-side request rows, counts none either.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from collectors.models import Host, ServiceMergedRollup, ServiceRollup
from collectors.services.rollups import rollup_pending
from collectors.services.tokens import token_issue
from tests.factories.batches import INGEST_URL, make_batch, recent_minute, rfc3339

pytestmark = pytest.mark.django_db

DIAGNOSIS_URL = "/dashboards/services/chat-7b/diagnosis/?range=1h"
METRICS_URL = "/api/v1/services/chat-7b/metrics/"
VLLM_PREEMPTS = (
    "vllm",
    "e2e-vllm-0.32.0-cpu-preemptions-before.prom",
    "e2e-vllm-0.32.0-cpu-preemptions-after.prom",
)
NOT_COUNTING = {  # engine -> a real scrape of it without any preemption counter
    "tgi": "tgi-datadog-payload-excerpt.prom",
    "triton": "triton-trtllm-readme.prom",
    "sglang": "sglang-docs-production_metrics.prom",
}


def agent(host: str) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Token {token_issue(host=Host.objects.create(name=host))[1]}"
    )
    return client


def push(client: APIClient, host: str, service, fixtures_dir, source: str, *names: str) -> None:
    """The captures as scrapes of `service` from `host`, 26.6 s apart (the vLLM preemption
    pair's own gap: SOURCES.md)."""
    t0 = recent_minute() + timedelta(seconds=5)
    for i, name in enumerate(names):
        text = (fixtures_dir / "real" / "metrics" / name).read_text()
        ts = t0 + timedelta(seconds=26.6 * i)
        scrape = {"ts": rfc3339(ts), "service": service.slug, "source": source, "exposition": text}
        batch = make_batch(host=host, gpus=[], requests=[], scrapes=[scrape])
        response = client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
        assert response.status_code == 202, response.content


def push_requests_only(client: APIClient, host: str) -> None:
    """Client-side request rows (three, `make_batch`'s), no engine scrape: nothing counted."""
    batch = make_batch(host=host, ts=recent_minute() + timedelta(seconds=5))
    response = client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
    assert response.status_code == 202, response.content


def diagnosis_of(client):
    return client.get(DIAGNOSIS_URL).context["diagnosis"]


@pytest.mark.parametrize("engine", sorted(NOT_COUNTING))
def test_an_engine_without_a_preemption_counter_rolls_up_preemptions_as_null(
    service, fixtures_dir, engine
):
    name = NOT_COUNTING[engine]
    push(agent("gpu-a"), "gpu-a", service, fixtures_dir, engine, name, name)
    rollup_pending()
    assert ServiceRollup.objects.filter(service=service).exists()
    assert set(ServiceRollup.objects.values_list("scraped_preemptions", flat=True)) == {None}
    assert set(ServiceMergedRollup.objects.values_list("preempted", flat=True)) == {None}


def test_an_engine_counting_no_preemption_reads_a_counted_zero_over_its_requests(
    service, fixtures_dir
):
    # vLLM 0.32 on its 400-request benchmark preempted none, and says so (its counter at 0).
    pair = ("e2e-vllm-0.32.0-cpu-before.prom", "e2e-vllm-0.32.0-cpu-after.prom")
    push(agent("gpu-a"), "gpu-a", service, fixtures_dir, "vllm", *pair)
    rollup_pending()
    merged = ServiceMergedRollup.objects.filter(service=service, resolution_s=3600).get()
    assert (merged.preempted, merged.finished_counting_preemptions) == (0, 400)


def test_mixed_engines_sum_only_the_counted_preemptions_over_their_own_requests(
    service, fixtures_dir
):
    push(agent("gpu-a"), "gpu-a", service, fixtures_dir, *VLLM_PREEMPTS)
    tgi = NOT_COUNTING["tgi"]
    push(agent("gpu-b"), "gpu-b", service, fixtures_dir, "tgi", tgi, tgi)
    push_requests_only(agent("gpu-c"), "gpu-c")
    rollup_pending()
    merged = ServiceMergedRollup.objects.filter(service=service, resolution_s=3600).get()
    # The TGI pair is one scrape twice (0 finished); gpu-c's 3 client-side rows finished.
    assert (merged.preempted, merged.finished_counting_preemptions, merged.finished) == (
        34,
        48,
        51,
    )


def test_the_metrics_api_says_null_preempted_where_no_engine_counted_them(
    service, fixtures_dir, outsider_client
):
    name = NOT_COUNTING["triton"]
    push(agent("gpu-a"), "gpu-a", service, fixtures_dir, "triton", name, name)
    rollup_pending()
    start = recent_minute() - timedelta(minutes=1)
    body = outsider_client.get(
        METRICS_URL, {"start": rfc3339(start), "end": rfc3339(start + timedelta(minutes=5))}
    ).json()
    assert body["points"]
    assert {(p["preempted"], p["finished_counting_preemptions"]) for p in body["points"]} == {
        (None, None)
    }


def test_the_diagnosis_page_says_preemptions_were_not_counted_for_client_side_rows_only(
    service, outsider_client
):
    push_requests_only(agent("gpu-a"), "gpu-a")  # a vLLM service, but no engine scrape at all
    rollup_pending()
    html = outsider_client.get(DIAGNOSIS_URL).content.decode()
    assert (
        '<tr id="number-preemptions"><th scope="row">Requests preempted</th>'
        '<td><span class="muted">not counted by this engine</span></td></tr>'
    ) in html


def test_the_memory_capacity_rule_lists_preemptions_as_missing_where_not_counted(
    service, fixtures_dir, outsider_client
):
    # Triton's KV-cache gauge is read (blocks used over max), its preemptions are not.
    name = NOT_COUNTING["triton"]
    push(agent("gpu-a"), "gpu-a", service, fixtures_dir, "triton", name, name)
    rollup_pending()
    diagnosis = diagnosis_of(outsider_client)
    assert diagnosis.observation.kv_cache_usage is not None
    rule = next(r for r in diagnosis.rules if r.rule == "memory_capacity")
    assert rule.unread_labels == ("Requests preempted (not counted by this engine)", "OOM errors")


def test_the_preemption_share_is_taken_over_the_requests_of_the_engines_counting_them(
    service, fixtures_dir, outsider_client
):
    push(agent("gpu-a"), "gpu-a", service, fixtures_dir, *VLLM_PREEMPTS)
    push_requests_only(agent("gpu-c"), "gpu-c")
    rollup_pending()
    proposal = next(
        p for p in diagnosis_of(outsider_client).proposals if p.rule == "memory_capacity"
    )
    assert proposal.evidence == (
        "34 preemptions for KV-cache room (71% of 48 finished requests counted; "
        "3 more finished where the engine does not count them)"
    )


def test_the_diagnosis_page_says_which_part_of_the_requests_had_preemptions_counted(
    service, fixtures_dir, outsider_client
):
    push(agent("gpu-a"), "gpu-a", service, fixtures_dir, *VLLM_PREEMPTS)
    push_requests_only(agent("gpu-c"), "gpu-c")
    rollup_pending()
    numbers = {n.name: n.shown for n in diagnosis_of(outsider_client).numbers}
    assert numbers["preemptions"] == (
        "34 (counted over 48 of 51 finished requests; the rest were served by an engine that "
        "does not count preemptions)"
    )
