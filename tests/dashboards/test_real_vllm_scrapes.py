"""Real vLLM 0.32 scrapes (tests/fixtures/real/metrics, SOURCES.md) pushed through the ingest
API and rolled up: what the claims check and the diagnosis page then say."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dashboards.figures.service import latency_figure
from dashboards.selectors import service_dashboard
from tests.factories.batches import claims_after_push, push_capture_pair, recent_minute
from tests.factories.catalog import make_baseline

pytestmark = pytest.mark.django_db

DIAGNOSIS_URL = "/dashboards/services/chat-7b/diagnosis/?range=1h"


# 60 benchmark requests and 8 streams whose client hung up; 63 finished (SOURCES.md). Their
# own mean, from vLLM's per-request histograms: 7,988 / 63 prompt and 3,153 / 63 output tokens;
# the token counters add the 5 dropped streams' tokens: 8,493 and 3,946 over the same 63.
CUT = ("e2e-vllm-0.32.0-cpu-disconnects-before.prom", "e2e-vllm-0.32.0-cpu-disconnects-after.prom")
CUT_SECONDS = 161.0


def test_live_tokens_per_request_leave_out_the_tokens_of_clients_that_hung_up(
    agent_client, service, fixtures_dir
):
    push_capture_pair(agent_client, service, fixtures_dir, CUT, source="vllm", seconds=CUT_SECONDS)
    check = claims_after_push(service, None)
    assert check.live_workload.prompt_tokens == pytest.approx(7988 / 63)
    assert check.live_workload.output_tokens == pytest.approx(3153 / 63)


def test_a_baseline_at_the_same_requests_lengths_is_not_called_a_changed_workload(
    agent_client, service, fixtures_dir
):
    service.replicas = 1
    service.save()
    push_capture_pair(agent_client, service, fixtures_dir, CUT, source="vllm", seconds=CUT_SECONDS)
    baseline = make_baseline(
        service, qps=63 / CUT_SECONDS, prompt_tokens_mean=126.8, output_tokens_mean=50.0
    )
    check = claims_after_push(service, baseline)
    assert check.workload_note == ""  # the counters read "output tokens per request +25%"


# 48 requests of 128 + 128 tokens at concurrency 16 into 24 KV blocks of 32 tokens: vLLM
# preempted running requests 34 times; its KV-cache gauge read 0% at both scrapes (idle).
PREEMPT = (
    "e2e-vllm-0.32.0-cpu-preemptions-before.prom",
    "e2e-vllm-0.32.0-cpu-preemptions-after.prom",
)


def test_diagnosis_proposes_kv_cache_room_from_the_engines_preemptions(
    agent_client, service, fixtures_dir, outsider_client
):
    push_capture_pair(agent_client, service, fixtures_dir, PREEMPT, source="vllm", seconds=26.6)
    diagnosis = outsider_client.get(DIAGNOSIS_URL).context["diagnosis"]
    (proposal,) = [p for p in diagnosis.proposals if p.rule == "memory_capacity"]
    assert proposal.evidence == ("34 preemptions for KV-cache room (71% of 48 finished requests)")


def test_the_diagnosis_page_shows_the_preemptions_it_read(
    agent_client, service, fixtures_dir, outsider_client
):
    push_capture_pair(agent_client, service, fixtures_dir, PREEMPT, source="vllm", seconds=26.6)
    numbers = {
        n.label: n.shown for n in outsider_client.get(DIAGNOSIS_URL).context["diagnosis"].numbers
    }
    assert (numbers["Requests preempted"], numbers["KV cache usage (max)"]) == ("34", "0%")


def test_the_live_latency_chart_says_its_points_come_from_the_engines_histograms(
    agent_client, service, fixtures_dir
):
    push_capture_pair(agent_client, service, fixtures_dir, CUT, source="vllm", seconds=CUT_SECONDS)
    start = recent_minute() - timedelta(minutes=1)
    board = service_dashboard(service=service, start=start, end=start + timedelta(minutes=5))
    title = latency_figure(board, "e2e")["layout"]["title"]["text"]
    assert title.endswith(": live, server-side (the engine's histograms)")
