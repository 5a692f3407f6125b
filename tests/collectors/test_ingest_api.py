import json
import threading
from datetime import timedelta

import pytest
from django.db import connection

from collectors.models import GpuSample, IngestBatch, RequestSample, ScrapeWindow
from tests.collectors.conftest import INGEST_URL, make_batch, recent_minute, rfc3339

pytestmark = pytest.mark.django_db


def post(client, batch, **extra):
    return client.post(INGEST_URL, json.dumps(batch), content_type="application/json", **extra)


def test_it_stores_a_batch_and_answers_202_with_counts(agent_client, service, host):
    response = post(agent_client, make_batch())
    assert response.status_code == 202
    assert response.json()["counts"] == {"gpus": 1, "requests": 3, "scrapes": 0, "windows": 0}
    assert RequestSample.objects.filter(host=host, service=service).count() == 3
    assert GpuSample.objects.get().sm_active == pytest.approx(0.31)


def test_it_marks_the_host_seen(agent_client, service, host):
    post(agent_client, make_batch())
    host.refresh_from_db()
    assert host.last_seen_at is not None


def test_it_answers_a_replay_with_duplicate_and_stores_nothing_more(agent_client, service):
    batch = make_batch()
    post(agent_client, batch)
    response = post(agent_client, batch)
    assert response.status_code == 200
    assert response.json() == {"duplicate": True}
    assert RequestSample.objects.count() == 3
    assert IngestBatch.objects.count() == 1


def test_it_accepts_empty_lists(agent_client, service):
    response = post(agent_client, make_batch(gpus=[], requests=[]))
    assert response.status_code == 202


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda b: b["requests"][1].update(e2e_ms=float("nan")), "requests[1].e2e_ms", "finite"),
        (lambda b: b["requests"][0].update(ttft_ms=-1), "requests[0].ttft_ms", "greater than"),
        (lambda b: b["requests"][2].update(service="nope"), "requests[2].service", "Unknown"),
        (lambda b: b["gpus"][0].update(util=1.2), "gpus[0].util", "less than or equal to 1"),
        (lambda b: b["gpus"][0].update(dram_active="0.5"), "gpus[0].dram_active", "number"),
        (lambda b: b["requests"][0].update(ts="2025-01-01 10:00"), "requests[0].ts", "RFC 3339"),
        (lambda b: b["requests"][0].update(ts="2025-01-01T10:00:00"), "requests[0].ts", "zone"),
        (lambda b: b.update(batch_id="not-a-uuid"), "batch_id", "UUID"),
    ],
)
def test_it_rejects_bad_fields_naming_their_path(agent_client, service, mutate, path, words):
    batch = make_batch()
    mutate(batch)
    response = post(agent_client, batch)
    assert response.status_code == 400
    body = response.json()
    assert list(body) == [path]
    assert words in body[path][0]


def test_it_rejects_a_timestamp_more_than_5_minutes_ahead(agent_client, service):
    batch = make_batch()
    batch["gpus"][0]["ts"] = rfc3339(recent_minute(0) + timedelta(minutes=7))
    response = post(agent_client, batch)
    assert response.status_code == 400
    assert "future" in response.json()["gpus[0].ts"][0]


def test_it_rejects_an_unknown_scrape_service(agent_client, service, vllm_texts):
    scrape = {"ts": rfc3339(recent_minute()), "service": "ghost", "source": "vllm"}
    response = post(agent_client, make_batch(scrapes=[{**scrape, "exposition": vllm_texts[0]}]))
    assert response.status_code == 400
    assert response.json() == {"scrapes[0].service": ["Unknown service 'ghost'."]}


def test_it_rejects_an_unknown_source(agent_client, service):
    scrape = {"ts": rfc3339(recent_minute()), "service": "chat-7b", "source": "ollama"}
    response = post(agent_client, make_batch(scrapes=[{**scrape, "exposition": ""}]))
    assert response.status_code == 400
    assert "scrapes[0].source" in response.json()


def test_it_rejects_a_malformed_exposition_line_naming_it(agent_client, service, vllm_texts):
    lines = vllm_texts[0].splitlines()
    lines[9] = 'vllm:num_requests_running{engine="0" 31'
    scrape = {"ts": rfc3339(recent_minute()), "service": "chat-7b", "source": "vllm"}
    batch = make_batch(scrapes=[{**scrape, "exposition": "\n".join(lines) + "\n"}])
    response = post(agent_client, batch)
    assert response.status_code == 400
    assert response.json()["scrapes[0].exposition"][0].startswith("line 10:")


def test_a_rejected_batch_stores_nothing(agent_client, service, host):
    batch = make_batch()
    batch["requests"][2]["e2e_ms"] = -5
    assert post(agent_client, batch).status_code == 400
    assert not RequestSample.objects.exists()
    assert not GpuSample.objects.exists()
    assert not IngestBatch.objects.exists()
    host.refresh_from_db()
    assert host.last_seen_at is None


def test_it_answers_413_over_the_size_limit(agent_client, service, settings):
    settings.PERFHUB_INGEST_MAX_BYTES = 500
    response = post(agent_client, make_batch())
    assert response.status_code == 413
    assert not IngestBatch.objects.exists()


def test_it_answers_413_when_the_body_is_longer_than_declared(agent_client, service, settings):
    settings.PERFHUB_INGEST_MAX_BYTES = 500
    body = json.dumps(make_batch())
    response = agent_client.generic(
        "POST", INGEST_URL, body, content_type="application/json", CONTENT_LENGTH="100"
    )
    # Django reads at most the declared length: the truncated JSON is a 400, never a store.
    assert response.status_code in (400, 413)
    assert not IngestBatch.objects.exists()


def test_it_rejects_a_body_that_is_not_json(agent_client, service):
    response = agent_client.post(INGEST_URL, "{nope", content_type="application/json")
    assert response.status_code == 400


@pytest.mark.postgres  # SQLite's shared in-memory test database cannot take concurrent writers
def test_two_identical_posts_at_once_store_once(transactional_db, service, host, agent_token):
    from rest_framework.test import APIClient

    batch = make_batch()
    answers = []

    def push():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {agent_token}")
        answers.append(post(client, batch).status_code)
        connection.close()

    threads = [threading.Thread(target=push) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [200, 202]
    assert RequestSample.objects.count() == 3


def test_two_vllm_scrapes_make_a_window_of_12_requests_per_second(
    agent_client, service, vllm_texts
):
    t0 = recent_minute()
    for ts, text in ((t0, vllm_texts[0]), (t0 + timedelta(seconds=15), vllm_texts[1])):
        scrape = {"ts": rfc3339(ts), "service": "chat-7b", "source": "vllm", "exposition": text}
        assert (
            post(agent_client, make_batch(gpus=[], requests=[], scrapes=[scrape])).status_code
            == 202
        )
    window = ScrapeWindow.objects.get()
    assert window.seconds == 15.0
    assert window.rates["requests_finished"] == pytest.approx(12.0)
    assert window.rates["generation_tokens"] == pytest.approx(2860.4666666666667)
    assert window.gauges["kv_cache_usage"] == pytest.approx(0.87)
    assert set(window.histograms) >= {"ttft_seconds", "e2e_seconds", "itl_seconds"}


def test_the_first_scrape_only_seeds_the_state(agent_client, service, vllm_texts):
    scrape = {"ts": rfc3339(recent_minute()), "service": "chat-7b", "source": "vllm"}
    response = post(agent_client, make_batch(scrapes=[{**scrape, "exposition": vllm_texts[0]}]))
    assert response.json()["counts"]["windows"] == 0
    assert not ScrapeWindow.objects.exists()


def test_a_dcgm_scrape_becomes_gpu_samples(agent_client, service, fixtures_dir):
    text = (fixtures_dir / "dcgm" / "metrics.prom").read_text()
    scrape = {"ts": rfc3339(recent_minute()), "source": "dcgm", "exposition": text}
    response = post(agent_client, make_batch(gpus=[], requests=[], scrapes=[scrape]))
    assert response.status_code == 202
    gpu0 = GpuSample.objects.get(gpu_index=0)
    assert gpu0.util == pytest.approx(0.97)
    assert gpu0.dram_active == pytest.approx(0.72)
    assert gpu0.mem_used_bytes == 77720453120
