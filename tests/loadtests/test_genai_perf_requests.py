"""GenAI-Perf's per-request export (`profile_export.json`, written by its perf_analyzer): the
real files made here (tests/fixtures/real/genai-perf, SOURCES.md) read right, and bad requests
refused naming the request."""

import gzip
import json
from pathlib import Path

import pytest

from loadtests.formats import LoadTestFormatError, load_documents, parse_loadtest
from loadtests.importing import import_loadtest_file
from loadtests.lint import lint_runs
from loadtests.sweeps import sweeps_for_service

GENAI_PERF = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "genai-perf"
OWN_RUN = "e2e-genai-perf-0.0.8-c1-profile_export.json.gz"  # GenAI-Perf's own run
SUMMARY = "e2e-genai-perf-0.0.8-c1-profile_export_genai_perf.json"  # its summary of that run
CONCURRENCY_SWEEP = "e2e-perf-analyzer-2.50-c1-4-profile_export.json.gz"
RATE_SWEEP = "e2e-perf-analyzer-2.50-rate-10-30-profile_export.json.gz"
WITH_USAGE = "e2e-perf-analyzer-2.50-c2-usage-profile_export.json.gz"
CHAT = "e2e-perf-analyzer-2.50-chat-c2-profile_export.json.gz"


def text(name: str) -> str:
    return gzip.decompress((GENAI_PERF / name).read_bytes()).decode()


def data(name: str) -> dict:
    return json.loads(text(name))


def runs(name: str):
    return parse_loadtest(text(name), filename=name.removesuffix(".gz"))


def ttft_of_copies(document: dict, request: dict) -> float:
    """The TTFT P50 of a run of 40 copies of `request` (enough requests for a P50)."""
    document["experiments"][0]["requests"] = [request] * 40
    (run,) = parse_loadtest(json.dumps(document))
    return run.fields["ttft_p50_ms"]


def after(request: dict, response: int) -> float:
    """Milliseconds from sending `request` to its response number `response`."""
    return (request["response_timestamps"][response] - request["timestamp"]) / 1e6


def test_the_file_is_told_from_genai_perfs_summary_by_its_content():
    (run,) = parse_loadtest(text(OWN_RUN))
    assert run.format == "genai-perf-requests"


def test_latencies_agree_with_genai_perfs_own_summary_of_the_same_run():
    (run,) = runs(OWN_RUN)
    summary = json.loads((GENAI_PERF / SUMMARY).read_text())
    for field, key, p in (("e2e", "request_latency", "p50"), ("e2e", "request_latency", "p90"),
                          ("ttft", "time_to_first_token", "p50")):  # fmt: skip
        # DDSketch's 1% and the nearest-rank vs interpolated percentile over 83 requests.
        assert run.fields[f"{field}_{p}_ms"] == pytest.approx(summary[key][p], rel=0.03)
    assert run.fields["qps"] == pytest.approx(summary["request_throughput"]["avg"], rel=0.01)


def test_a_first_token_that_decodes_to_no_text_is_the_first_token():
    document = data(OWN_RUN)
    request = document["experiments"][0]["requests"][0]
    first = request["response_outputs"][0]["response"]
    request["response_outputs"][0]["response"] = first.replace(
        first[first.index('"text":') : first.index(',"logprobs"')], '"text":""'
    )
    # GenAI-Perf would wait for the second response, the first with text
    assert ttft_of_copies(document, request) == pytest.approx(after(request, 0), rel=0.01)


def test_an_answer_stopped_at_its_length_has_max_tokens_tokens_where_genai_perf_recounts():
    (run,) = runs(OWN_RUN)
    summary = json.loads((GENAI_PERF / SUMMARY).read_text())
    assert summary["output_sequence_length"]["avg"] > 9  # its tokenizer, not the model's
    assert run.fields["output_tokens_mean"] == 8.0  # vLLM generated max_tokens=8 each
    assert "finish_reason" in run.sources["output_tokens_mean"]


def unstreamed(document: dict) -> dict:
    """One request of `document` answered in a single response (no stream), 40 times."""
    request = document["experiments"][0]["requests"][0]
    body = {"id": "cmpl-1", "object": "text_completion", "model": "tiny-llama",
            "choices": [{"index": 0, "text": "flglQ abc de", "finish_reason": "length"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}}  # fmt: skip
    one = {**request, "response_timestamps": request["response_timestamps"][-1:],
           "response_outputs": [{"response": json.dumps(body)}]}  # fmt: skip
    document["experiments"][0]["requests"] = [one] * 40
    return one


def test_an_answer_in_one_response_has_no_ttft_or_tpot():
    document = data(WITH_USAGE)
    unstreamed(document)
    (run,) = parse_loadtest(json.dumps(document))
    assert (run.fields["ttft_p50_ms"], run.fields["tpot_p50_ms"]) == (None, None)


def test_an_answer_in_one_response_keeps_its_end_to_end_latency():
    document = data(WITH_USAGE)
    one = unstreamed(document)
    (run,) = parse_loadtest(json.dumps(document))
    assert run.fields["e2e_p50_ms"] == pytest.approx(after(one, 0), rel=0.01)


def test_the_servers_usage_gives_the_output_and_prompt_tokens():
    (run,) = runs(WITH_USAGE)
    assert run.fields["output_tokens_mean"] == 8.0
    assert run.fields["prompt_tokens_mean"] == pytest.approx(64.67, abs=0.01)
    assert run.sources["prompt_tokens_mean"].startswith("usage.prompt_tokens")


def test_without_usage_the_run_says_it_has_no_prompt_length():
    (run,) = runs(OWN_RUN)
    assert run.fields["prompt_tokens_mean"] is None
    assert any("no prompt length" in note for note in run.extra["notes"])


def test_a_chat_streams_role_chunk_is_not_its_first_token():
    document = data(CHAT)
    request = document["experiments"][0]["requests"][0]
    assert '"role":"assistant","content":""' in request["response_outputs"][0]["response"]
    # a server that names the role at once, long before the first token (vLLM sends both
    # together, so the file itself cannot tell)
    request["response_timestamps"][0] = request["timestamp"] + 1_000
    assert ttft_of_copies(document, request) == pytest.approx(after(request, 1), rel=0.01)


def test_a_chat_answer_stopped_at_its_length_has_max_tokens_tokens():
    (run,) = runs(CHAT)
    # vLLM's chat stream sends nothing for a token that decodes to no text: 7.46 events for 8
    assert run.fields["output_tokens_mean"] == 8.0


def test_one_file_of_a_concurrency_range_is_one_run_per_level():
    found = runs(CONCURRENCY_SWEEP)
    assert [run.fields["concurrency"] for run in found] == [1, 2, 3, 4]
    assert [run.fields["request_count"] for run in found] == [45, 91, 104, 167]
    assert all(run.request_rate_inf for run in found)  # closed loop: as the summary says


def test_throughput_is_perf_analyzers_own_over_its_measurement_windows():
    # what perf_analyzer printed for these runs (SOURCES.md): requests over the windows' span
    printed = {CONCURRENCY_SWEEP: [41.6429, 84.1933, 96.2027, 154.235],
               RATE_SWEEP: [9.44185, 19.4243, 29.4271]}  # fmt: skip
    for name, figures in printed.items():
        assert [run.fields["qps"] for run in runs(name)] == pytest.approx(figures, rel=1e-4)


def test_windows_out_of_order_are_refused_naming_them():
    document = json.loads(_one_request())
    document["experiments"][0]["window_boundaries"].reverse()
    with pytest.raises(LoadTestFormatError, match=r"window_boundaries: expected increasing"):
        parse_loadtest(json.dumps(document))


def test_a_request_rate_range_gives_runs_at_each_rate():
    found = runs(RATE_SWEEP)
    assert [run.fields["request_rate"] for run in found] == [10.0, 20.0, 30.0]
    assert all(run.fields["concurrency"] is None and not run.request_rate_inf for run in found)


@pytest.mark.django_db
def test_an_imported_concurrency_range_is_a_sweep_of_the_service(service):
    name = CONCURRENCY_SWEEP.removesuffix(".gz")
    stored = import_loadtest_file(service=service, content=text(CONCURRENCY_SWEEP).encode(),
                                  filename=name)  # fmt: skip
    (sweep,) = sweeps_for_service(service)
    assert sweep.axis == "concurrency"
    assert [run.pk for run in sweep.runs] == [run.pk for run in stored]


def test_the_lint_reads_the_payloads_forced_length():
    content = text(OWN_RUN)
    documents = load_documents(content)
    (lint,) = lint_runs(documents, parse_loadtest(content))
    assert lint.fingerprint.ignore_eos is True
    assert lint.fingerprint.streaming is True
    assert not lint.refusing


def test_a_forced_length_not_honoured_is_refused_by_the_lint():
    document = data(OWN_RUN)
    for request in document["experiments"][0]["requests"]:
        # every answer stops after 4 of its 8 tokens (EOS not ignored after all)
        text_events = [
            i for i, o in enumerate(request["response_outputs"]) if "text" in o["response"]
        ]
        keep = set(text_events[:4])
        pairs = [
            (stamp, out)
            for i, (stamp, out) in enumerate(
                zip(request["response_timestamps"], request["response_outputs"], strict=True)
            )
            if i in keep
        ]
        request["response_timestamps"] = [stamp for stamp, _ in pairs]
        request["response_outputs"] = [
            {
                "response": out["response"].replace(
                    '"finish_reason":"length"', '"finish_reason":"stop"'
                )
            }
            for _, out in pairs
        ]
    content = json.dumps(document)
    (run,) = parse_loadtest(content)
    assert run.fields["output_tokens_mean"] == 4.0
    (lint,) = lint_runs(load_documents(content), [run])
    assert [f.check for f in lint.refusing] == ["output_length"]


def _one_request(**changes) -> str:
    document = data(WITH_USAGE)
    experiment = document["experiments"][0]
    experiment["requests"] = experiment["requests"][:5]
    experiment["requests"][3].update(changes)
    return json.dumps(document)


def test_timestamps_and_outputs_of_different_lengths_are_refused_naming_the_request():
    with pytest.raises(LoadTestFormatError, match=r"experiments\[0\]\.requests\[3\]: .* but"):
        parse_loadtest(_one_request(response_timestamps=[1]))


def test_a_response_before_its_request_is_refused_naming_it():
    document = json.loads(_one_request())
    request = document["experiments"][0]["requests"][3]
    request["timestamp"] = request["response_timestamps"][-1] + 1
    with pytest.raises(LoadTestFormatError, match=r"requests\[3\]\.response_timestamps\[0\]"):
        parse_loadtest(json.dumps(document))


def test_an_event_that_is_not_json_is_refused_naming_the_response():
    with pytest.raises(
        LoadTestFormatError, match=r"requests\[3\]\.response_outputs\[0\]\.response: not a JSON"
    ):
        bad = [{"response": "data: {oops"}] * 10
        parse_loadtest(_one_request(response_outputs=bad, response_timestamps=[10**19] * 10))


def test_an_unknown_service_kind_is_refused():
    document = json.loads(_one_request())
    document["service_kind"] = "grpc-magic"
    with pytest.raises(LoadTestFormatError, match="service_kind: expected 'openai' or 'triton'"):
        parse_loadtest(json.dumps(document))


def test_requests_without_any_token_are_skipped_and_counted_in_the_notes():
    done_only = {"response_outputs": [{"response": "data: [DONE]\n\n"}],
                 "response_timestamps": [10**19]}  # fmt: skip
    (run,) = parse_loadtest(_one_request(**done_only))
    assert run.fields["request_count"] == 4
    assert any("1 request(s) without any token" in note for note in run.extra["notes"])
