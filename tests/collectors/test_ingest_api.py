import io
import json
import threading
from datetime import timedelta, timezone

import pytest
from django.db import connection

from collectors.models import GpuSample, IngestBatch, RequestSample, ScrapeWindow
from tests.factories.batches import INGEST_URL, gpu_sample, make_batch, recent_minute, rfc3339

pytestmark = pytest.mark.django_db


def post(client, batch, **extra):
    return client.post(INGEST_URL, json.dumps(batch), content_type="application/json", **extra)


def test_it_stores_a_batch_and_answers_202_with_counts(agent_client, service, host):
    response = post(agent_client, make_batch())
    assert response.status_code == 202
    assert response.json()["counts"] == {"gpus": 1, "requests": 3, "scrapes": 0, "windows": 0}
    assert RequestSample.objects.filter(host=host, service=service).count() == 3
    assert GpuSample.objects.get().sm_active == pytest.approx(0.31)


def test_gpu_samples_are_stored_value_for_value(agent_client, service, host):
    ts = recent_minute()
    odd = {"index": 3, "uuid": 'GPU-"a",{b}\\c', "name": 'NVIDIA {H100}, "SXM"', "util": None}
    batch = make_batch(ts=ts, gpus=[gpu_sample(rfc3339(ts)), gpu_sample(rfc3339(ts), **odd)])
    assert post(agent_client, batch).status_code == 202
    stored = GpuSample.objects.get(gpu_index=3)
    assert (stored.uuid, stored.name, stored.util) == (odd["uuid"], odd["name"], None)
    assert stored.ts == ts
    assert stored.mem_used_bytes == 77720453120
    assert GpuSample.objects.get(gpu_index=0).sm_occupancy is None


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
    assert GpuSample.objects.count() == 1
    assert IngestBatch.objects.count() == 1


def test_it_accepts_empty_lists(agent_client, service):
    response = post(agent_client, make_batch(gpus=[], requests=[]))
    assert response.status_code == 202


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda b: b["requests"][1].update(e2e_ms=float("nan")), "requests[1].e2e_ms", "finite"),
        (lambda b: b["requests"][0].update(ttft_ms=-1), "requests[0].ttft_ms", "outside 0.."),
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


def test_it_stores_a_timestamp_with_any_offset_in_utc(agent_client, service):
    # -19:00 is a valid RFC 3339 offset that PostgreSQL itself would refuse.
    ts = recent_minute(30)
    batch = make_batch()
    batch["requests"][0]["ts"] = ts.astimezone(timezone(-timedelta(hours=19))).isoformat()
    assert post(agent_client, batch).status_code == 202
    stored = RequestSample.objects.order_by("ts").first().ts
    assert stored == ts
    assert stored.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "value",
    [
        "0001-01-01T00:00:00+05:00",
        "1970-01-01T00:00:00Z",
        "2020-11-30T00:00:00-19:00",  # a fine offset, but years before the window
        rfc3339(recent_minute(0) + timedelta(minutes=15)),
        rfc3339(recent_minute(0) - timedelta(days=8)),
    ],
)
def test_it_rejects_a_timestamp_outside_the_acceptance_window(agent_client, service, value):
    batch = make_batch()
    batch["requests"][2]["ts"] = value
    response = post(agent_client, batch)
    assert response.status_code == 400
    assert list(response.json()) == ["requests[2].ts"]
    message = response.json()["requests[2].ts"][0]
    assert "outside the acceptance window" in message
    assert "(now - 7 days .. now + 10 minutes)" in message
    assert not IngestBatch.objects.exists()


def test_it_rejects_a_sent_at_outside_the_window(agent_client, service):
    response = post(agent_client, make_batch(sent_at="0001-01-01T00:00:00+05:00"))
    assert response.status_code == 400
    assert "acceptance window" in response.json()["sent_at"][0]


def test_the_acceptance_window_is_a_setting(agent_client, service, settings):
    settings.PERFHUB_INGEST_MAX_AGE_S = 3600
    response = post(agent_client, make_batch(ts=recent_minute(120)))
    assert response.status_code == 400
    assert "(now - 1 hour .. now + 10 minutes)" in response.json()["sent_at"][0]


def test_it_rejects_a_gpu_sample_more_than_10_minutes_ahead(agent_client, service):
    batch = make_batch()
    batch["gpus"][0]["ts"] = rfc3339(recent_minute(0) + timedelta(minutes=12))
    response = post(agent_client, batch)
    assert response.status_code == 400
    assert "check the host's clock" in response.json()["gpus[0].ts"][0]


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda b: b.update(batch_id=12345), "batch_id", "valid UUID"),
        (lambda b: b["requests"][1].update(ok="yes"), "requests[1].ok", "JSON boolean"),
        (lambda b: b["requests"][0].update(ok=1), "requests[0].ok", "JSON boolean"),
        (lambda b: b["requests"][0].update(service="chat\x007b"), "requests[0].service", "Control"),
        (lambda b: b["requests"][0].update(service="chat\x1b7b"), "requests[0].service", "Control"),
        (lambda b: b["gpus"][0].update(name="H100\x07"), "gpus[0].name", "Control"),
        (
            lambda b: b["requests"][0].update(prompt_tokens="5"),
            "requests[0].prompt_tokens",
            "whole",
        ),
        (
            lambda b: b["requests"][0].update(prompt_tokens=5.5),
            "requests[0].prompt_tokens",
            "whole",
        ),
        (lambda b: b["gpus"][0].update(index=True), "gpus[0].index", "whole"),
        (lambda b: b.update(agent_version=1), "agent_version", "string"),
        (lambda b: b["requests"][0].update(e2e_ms=[[1]]), "requests[0].e2e_ms", "number"),
    ],
)
def test_it_accepts_only_the_json_types_of_the_contract(agent_client, service, mutate, path, words):
    batch = make_batch()
    mutate(batch)
    response = post(agent_client, batch)
    assert response.status_code == 400
    assert list(response.json()) == [path]
    assert words in response.json()[path][0]


def test_it_refuses_json_nested_beyond_the_limit_with_a_json_answer(agent_client, service):
    response = agent_client.post(INGEST_URL, "[" * 50_000, content_type="application/json")
    assert response.status_code == 400
    assert "nested" in response.json()["detail"]


def test_it_refuses_a_nested_value_inside_a_valid_looking_batch(agent_client, service):
    deep: list = []
    for _ in range(40):
        deep = [deep]
    response = post(agent_client, make_batch(gpus=deep))
    assert response.status_code == 400
    assert "nested more than 32 levels" in response.json()["detail"]


@pytest.mark.parametrize("depth", [33, 100, 200])
def test_an_unknown_field_nested_too_deep_is_refused_before_any_field_is_read(
    agent_client, service, depth
):
    batch = make_batch()
    body = json.dumps(batch)[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}"
    response = agent_client.post(INGEST_URL, body, content_type="application/json")
    assert response.status_code == 400
    assert "nested more than 32 levels" in response.json()["detail"]
    assert not IngestBatch.objects.exists()


def test_an_unknown_field_within_the_depth_limit_is_ignored(agent_client, service):
    body = json.dumps(make_batch())[:-1] + ', "extra": ' + "[" * 31 + "]" * 31 + "}"
    response = agent_client.post(INGEST_URL, body, content_type="application/json")
    assert response.status_code == 202


def test_a_newer_agents_unknown_field_in_each_sample_is_ignored(agent_client, service):
    batch = make_batch()
    for sample in batch["requests"] + batch["gpus"]:
        sample["added_later"] = {"by": "a newer agent"}
    response = post(agent_client, batch)
    assert response.status_code == 202
    assert RequestSample.objects.count() == 3
    assert GpuSample.objects.count() == 1


@pytest.mark.parametrize("where", ["requests", "gpus"])
def test_an_unknown_field_nested_too_deep_inside_a_sample_is_refused(agent_client, service, where):
    batch = make_batch()
    batch[where][0]["extra"] = "DEEP"
    body = json.dumps(batch).replace('"DEEP"', "[" * 40 + "]" * 40)
    response = agent_client.post(INGEST_URL, body, content_type="application/json")
    assert response.status_code == 400
    assert "nested more than 32 levels" in response.json()["detail"]
    assert not IngestBatch.objects.exists()


def test_it_reads_a_chunked_body(agent_client, service):
    body = json.dumps(make_batch()).encode()
    response = agent_client.generic(
        "POST", INGEST_URL, body, content_type="application/json", CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked", **{"wsgi.input": io.BytesIO(body)},
    )  # fmt: skip
    assert response.status_code == 202
    assert response.json()["counts"]["requests"] == 3


def test_it_answers_413_to_a_chunked_body_over_the_limit(agent_client, service, settings):
    settings.PERFHUB_API_MAX_BYTES = 500
    body = json.dumps(make_batch()).encode()
    response = agent_client.generic(
        "POST", INGEST_URL, body, content_type="application/json", CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked", **{"wsgi.input": io.BytesIO(body)},
    )  # fmt: skip
    assert response.status_code == 413
    assert "500 bytes" in response.json()["detail"]
    assert not IngestBatch.objects.exists()


def test_it_answers_413_in_json_to_a_body_over_the_api_limit(agent_client, service, settings):
    settings.PERFHUB_API_MAX_BYTES = 500
    response = post(agent_client, make_batch())
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"


def test_it_answers_429_with_retry_after_over_the_push_rate(agent_client, service, settings):
    from django.core.cache import cache

    cache.clear()
    settings.PERFHUB_INGEST_RATE = "2/min"
    answers = [post(agent_client, make_batch()) for _ in range(3)]
    assert [a.status_code for a in answers] == [202, 202, 429]
    assert int(answers[2]["Retry-After"]) > 0
    assert "throttled" in answers[2].json()["detail"]
    cache.clear()


def test_an_unknown_api_path_answers_404_in_json(agent_client):
    response = agent_client.get("/api/v1/nope/")
    assert response.status_code == 404
    assert response.json() == {"detail": "No API endpoint at /api/v1/nope/."}


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


def test_a_scrape_of_another_engine_is_stored_with_a_warning_naming_the_source_that_reads_it(
    agent_client, service, vllm_texts
):
    # vLLM's text sent as Triton's: nothing in it is a metric the Triton mapping reads.
    scrape = {"ts": rfc3339(recent_minute()), "service": "chat-7b", "source": "triton"}
    response = post(agent_client, make_batch(scrapes=[{**scrape, "exposition": vllm_texts[0]}]))
    assert response.status_code == 202
    assert response.json()["warnings"] == [
        "scrapes[0]: none of its samples is a metric PerfHub reads for source 'triton'; "
        "source 'vllm' reads them (docs/integrations.md)"
    ]


def test_a_scrape_no_source_reads_is_stored_with_a_warning_asking_about_its_source(
    agent_client, service
):
    text = "# TYPE ray_serve_num_http_requests_total counter\nray_serve_num_http_requests_total 3\n"
    scrape = {"ts": rfc3339(recent_minute()), "service": "chat-7b", "source": "vllm"}
    response = post(agent_client, make_batch(scrapes=[{**scrape, "exposition": text}]))
    assert response.json()["warnings"] == [
        "scrapes[0]: none of its samples is a metric PerfHub reads for source 'vllm': "
        "is the source right, and are the engine's metrics on (vLLM's --disable-log-stats "
        "turns them off)? (docs/integrations.md)"
    ]


def test_a_scrape_of_its_own_engine_brings_no_warning(agent_client, service, vllm_texts):
    scrape = {"ts": rfc3339(recent_minute()), "service": "chat-7b", "source": "vllm"}
    response = post(agent_client, make_batch(scrapes=[{**scrape, "exposition": vllm_texts[0]}]))
    assert "warnings" not in response.json()


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
    assert response.json() == {"detail": "Request body over the limit of 500 bytes."}
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


def test_the_request_object_lets_go_of_the_body_once_stored(agent_client, service):
    # DRF's request lives on in reference cycles until a full garbage collection; a worker
    # that left the ~100 kB body on it grew by ~2 MiB a million samples (docs/ingest-speed.md).
    response = post(agent_client, make_batch())
    assert response.status_code == 202
    assert response.renderer_context["request"].data.take() == b""
