"""The conformance corpus (tests/fixtures/real, sources in SOURCES.md) imports with its numbers.

Every expected value below was read by hand from the file named in the test (a key's value, or
arithmetic on keys: totals over the duration); none was copied from PerfHub's output.
Latencies are in ms, rates per second.
"""

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from collectors.exposition.scrape import parse as parse_scrape
from loadtests.formats import LoadTestFormatError, parse_loadtest
from loadtests.importing import import_loadtest_file, lint_file
from loadtests.sweeps import sweeps_for_service

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
LOADTEST_FILES = sorted(
    p
    for p in REAL.glob("*/*")
    if Path(p.name.removesuffix(".gz")).suffix
    in (".json", ".jsonl", ".yaml", ".log", ".md", ".csv", ".txt")
    and p.parent.name != "metrics"
)


def content_of(path: Path) -> bytes:
    """The file as the tool wrote it (large per-request files are kept gzip-compressed)."""
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


REFUSED = {"zhangxinyuehfad-serving_llama8B_tp1_qps_inf.json"}


def runs_of(relative: str):
    path = REAL / relative
    return parse_loadtest(path.read_bytes(), filename=path.name)


def only(relative: str):
    runs = runs_of(relative)
    assert len(runs) == 1
    return runs[0]


def check(run, **expected):
    """Each expected field equals the run's (floats to 1e-9 relative); None means absent."""
    got = {}
    for name in expected:
        if name in ("errors", "request_rate_inf", "tool_version", "measured_at", "failure"):
            got[name] = getattr(run, name)
        else:
            got[name] = run.fields[name]
    wanted = {
        name: pytest.approx(value, rel=1e-9) if isinstance(value, float) else value
        for name, value in expected.items()
    }
    assert got == wanted


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- vLLM -----------------------------------------------------------------------------------------


def test_vllm_bench_serve_025_default_run():
    run = only("vllm-bench/er0080-bench_serve_v0.25.1.json")
    duration = 1.5441598830002476
    check(
        run,
        request_count=8,
        errors=0,
        concurrency=2,
        request_rate_inf=True,
        qps=8 / duration,
        output_tps=128 / duration,
        input_tps=256 / duration,
        ttft_p50_ms=55.68139649994919,  # median_ttft_ms: the default run writes no p50_*
        ttft_p99_ms=734.4049174101428,
        tpot_p50_ms=11.20450286665194,
        tpot_p99_ms=11.979541883350674,
        e2e_p99_ms=None,  # no e2el in the default --percentile-metrics
        measured_at=utc("2026-08-16T16:08:53"),
    )


def test_vllm_bench_serve_where_every_request_failed_is_a_failed_run_without_statistics():
    run = only("vllm-bench/er0080-bench_serve_all_requests_failed_v0.25.1.json")
    check(
        run,
        failure="no request succeeded (0 completed)",
        request_count=0,
        errors=8,
        qps=None,
        output_tps=None,
        ttft_p50_ms=None,
        ttft_p99_ms=None,
        tpot_p99_ms=None,
    )


def test_vllm_bench_sweep_run_with_e2el():
    run = only("vllm-bench/er0080-sweep-max_num_seqs4-run0.json")
    duration = 1.3653671270003542
    check(
        run,
        request_count=8,
        concurrency=2,
        qps=8 / duration,
        output_tps=128 / duration,
        ttft_p50_ms=44.92285849846667,
        ttft_p99_ms=762.4942294094944,
        tpot_p50_ms=8.323490332986694,
        tpot_p99_ms=9.394318119331729,
        e2e_p50_ms=166.47808399284258,
        e2e_p99_ms=876.8009717071254,
    )


def test_vllm_bench_sweep_summary_is_a_list_of_runs_in_file_order():
    first, second = runs_of("vllm-bench/er0080-sweep-max_num_seqs8-summary.json")
    check(
        first,
        measured_at=utc("2026-08-18T02:13:58"),
        qps=8 / 0.6694539679883746,
        ttft_p50_ms=43.21107800205937,
        ttft_p99_ms=75.02528442884795,
        e2e_p50_ms=163.2172929967055,
        tpot_p99_ms=8.812129340338288,
    )
    check(second, ttft_p50_ms=36.01084349793382, tpot_p99_ms=12.104329406419614)


E2E_BENCH = "vllm-bench/e2e-vllm-0.32.0-cpu-bench-serve-detailed.json"


def test_vllm_032_cpu_bench_serve_with_per_request_arrays():
    run = only(E2E_BENCH)
    duration = 39.14948730500009
    check(
        run,
        request_count=400,
        errors=0,
        concurrency=4,
        request_rate_inf=True,
        qps=400 / duration,
        output_tps=12800 / duration,
        input_tps=51243 / duration,
        ttft_p50_ms=98.03875650004557,  # median_ttft_ms
        ttft_p99_ms=329.19706364991646,
        tpot_p50_ms=4.826721193547846,
        tpot_p99_ms=32.76087033904009,
        measured_at=utc("2026-12-01T21:29:05"),  # `date`, the machine's clock (UTC)
    )


def test_vllm_032_e2e_comes_from_the_latencies_array_when_the_summary_has_none():
    # numpy's median and 99th percentile of `latencies` x 1000: vLLM's own definitions
    check(only(E2E_BENCH), e2e_p50_ms=268.9053609999519, e2e_p99_ms=1160.3252595301815)


PARTIAL = "vllm-bench/e2e-vllm-0.32.0-cpu-c4-p50-p99-detailed.json"
EVERY_PERCENTILE = "vllm-bench/e2e-vllm-0.32.0-cpu-c4-all-percentiles-detailed.json"


def test_vllm_percentiles_the_file_leaves_out_come_from_its_per_request_values():
    # `--metric-percentiles 50,99 --save-detailed`: P90 and P95 are numpy's linear percentile of
    # the 200 successful requests' arrays (TPOT: (latency - ttft) / (output_len - 1), vLLM's
    # own definition), as vLLM would have written them; P50 and P99 stay the file's keys.
    check(
        only(PARTIAL),
        e2e_p50_ms=76.06348600000956,  # median_e2el_ms
        e2e_p90_ms=103.56568610000068,  # from `latencies`
        e2e_p95_ms=130.03273450001407,
        e2e_p99_ms=224.18582712999793,  # p99_e2el_ms
        ttft_p90_ms=75.3286234999905,  # from `ttfts`
        ttft_p95_ms=94.15351189995816,
        tpot_p90_ms=pytest.approx(3.2793657933363343, rel=1e-12),  # from `itls`, `output_lens`
        tpot_p95_ms=pytest.approx(3.838587893333927, rel=1e-12),
        e2e_p999_ms=None,  # 200 requests: a P99.9 needs 1,000
    )


def test_vllm_percentiles_computed_from_per_request_values_are_the_ones_vllm_writes():
    # A run where vLLM wrote every percentile: with its P90 and P95 keys taken out, the figures
    # computed from its arrays are the ones it had written.
    data = json.loads((REAL / EVERY_PERCENTILE).read_bytes())
    written = {key: data.pop(key) for key in list(data) if key.startswith(("p90_", "p95_"))}
    run = parse_loadtest(json.dumps(data).encode(), filename="vllm-run.json")[0]
    for metric, theirs in (("e2e", "e2el"), ("ttft", "ttft"), ("tpot", "tpot")):
        for p in ("p90", "p95"):
            computed = run.fields[f"{metric}_{p}_ms"]
            assert computed == pytest.approx(written[f"{p}_{theirs}_ms"], rel=1e-12)


def test_vllm_run_says_which_percentiles_were_computed_and_which_the_file_wrote():
    sources = only(PARTIAL).sources
    assert sources["ttft_p99_ms"] == "p99_ttft_ms"
    assert sources["ttft_p90_ms"] == (
        "computed: p90 of 200 per-request ttfts (numpy linear, as vLLM); gives back the "
        "file's p50, p99"
    )


def test_vllm_without_save_detailed_fills_only_e2e_from_its_latencies():
    # 0.32 writes `latencies` in every file, `ttfts` and `itls` only with --save-detailed.
    check(
        only("vllm-bench/e2e-vllm-0.32.0-cpu-c4-p50-p99-not-detailed.json"),
        e2e_p90_ms=162.95839870002737,
        e2e_p95_ms=173.76032880001154,
        ttft_p90_ms=None,
        tpot_p90_ms=None,
    )


def test_vllm_per_request_values_that_miss_the_files_own_figures_fill_nothing():
    # The same file with every TTFT 1 ms shorter: its arrays no longer give back the file's P50
    # and P99, so they are not the requests vLLM took them over, and P90 stays missing.
    data = json.loads((REAL / PARTIAL).read_bytes())
    data["ttfts"] = [t - 0.001 for t in data["ttfts"]]
    run = parse_loadtest(json.dumps(data).encode(), filename="vllm-run.json")[0]
    assert run.fields["ttft_p90_ms"] is None
    assert run.fields["e2e_p90_ms"] == pytest.approx(103.56568610000068)  # latencies agree


CLIENT_QUEUE = "vllm-bench/e2e-vllm-0.32.0-cpu-rate40-c2-client-queue-detailed.json"
CLIENT_QUEUE_DEFAULT = "vllm-bench/e2e-vllm-0.32.0-cpu-rate40-c2-default-metrics.json"


def test_vllm_queue_inclusive_e2e_is_kept_beside_the_e2e_from_sending():
    # `--request-rate 40 --max-concurrency 2 --percentile-metrics ...,client_queue_time,
    # e2el_including_client_queue`: E2E stays vLLM's e2el (from sending); the wait in the
    # client's queue and E2E with it are kept as the file wrote them.
    run = only(CLIENT_QUEUE)
    assert run.fields["e2e_p99_ms"] == pytest.approx(259.0108408599353)  # p99_e2el_ms
    queue = run.extra["latency_ms"]
    assert queue["e2e_including_client_queue"]["p99"] == pytest.approx(3547.0945741099736)
    assert queue["client_queue"]["median"] == pytest.approx(1363.1473505000145)


def test_vllm_client_queue_figures_computed_from_the_arrays_are_the_ones_vllm_writes():
    data = json.loads((REAL / CLIENT_QUEUE).read_bytes())
    written = {key: data.pop(key) for key in list(data) if "client_queue" in key}
    run = parse_loadtest(json.dumps(data).encode(), filename="vllm-run.json")[0]
    queue = run.extra["latency_ms"]
    for ours, theirs in (
        ("client_queue", "client_queue_time"),
        ("e2e_including_client_queue", "e2el_including_client_queue"),
    ):
        for label, key in (("mean", "mean"), ("std", "std"), ("p50", "p50"), ("p99", "p99")):
            expected = written[f"{key}_{theirs}_ms"]
            assert queue[ours][label] == pytest.approx(expected, rel=1e-12)


def test_vllm_run_whose_client_held_requests_back_says_what_users_would_have_waited():
    # The default --percentile-metrics writes no queue keys, but 0.32 writes `queue_times`
    # and `latencies` in every file: P99 of (queue + latency) over the 200 requests.
    (note,) = only(CLIENT_QUEUE_DEFAULT).extra["notes"]
    assert "with --max-concurrency 2 at 40 req/s" in note
    assert "E2E p99 is 2,913 ms" in note
    assert "computed from its queue_times and latencies" in note


def test_vllm_capped_run_at_an_unlimited_rate_has_no_client_queue_figures():
    # Every request is scheduled at the start: its wait is the burst's backlog, not a latency.
    run = only(E2E_BENCH)
    assert "client_queue" not in run.extra["latency_ms"]
    assert "notes" not in run.extra


SERVER_TIMINGS = "vllm-bench/e2e-vllm-0.34.0-client-c4-rate12-server-timings-detailed.json"
SERVER_TIMINGS_CONSOLE = "console/e2e-vllm-0.34.0-client-c4-rate12-console.log"


def test_vllm_034_engine_queue_and_prefill_per_request_are_kept_beside_the_client_ttft():
    # 0.33+ `--save-detailed` against `--enable-per-request-metrics`: `server_queue_times` and
    # `server_ttfts` (s), the engine's scheduled - queued and first token - scheduled. Expected
    # figures: numpy median and linear P99 of the 120 values times 1000, by hand.
    run = only(SERVER_TIMINGS)
    latency = run.extra["latency_ms"]
    assert latency["server_prefill"]["median"] == pytest.approx(12.228413000002547)
    assert latency["server_prefill"]["p99"] == pytest.approx(58.313260719967275)
    assert latency["server_queue"]["median"] == pytest.approx(0.011317999906168552)
    assert run.fields["ttft_p50_ms"] == pytest.approx(23.90850949996093)  # median_ttft_ms


def test_vllm_034_run_rewritten_with_sorted_keys_takes_no_timing_array_as_a_sweep_parameter():
    # A sweep's run re-written with sorted keys puts `server_queue_times` and `server_ttfts`
    # after `run_number`, where the sweep's parameters are: they are vLLM's own results.
    data = json.loads((REAL / SERVER_TIMINGS).read_bytes())
    data.update(run_number=0, tensor_parallel_size=2)
    text = json.dumps(data, sort_keys=True).encode()
    (run,) = parse_loadtest(text, filename="run=0.json")
    assert run.extra["overrides"] == {"tensor_parallel_size": 2}


def test_vllm_034_engine_timings_leave_out_failed_requests_and_requests_without_timings():
    # A request vLLM's client saw fail, and one the server sent no timings for (null), say
    # nothing of the engine's prefill of the requests that succeeded.
    data = json.loads((REAL / SERVER_TIMINGS).read_bytes())
    data["errors"][0] = "HTTP 500"
    data["server_ttfts"][1] = None
    kept = [v * 1000 for v in data["server_ttfts"][2:]]
    (run,) = parse_loadtest(json.dumps(data).encode(), filename="vllm-run.json")
    prefill = run.extra["latency_ms"]["server_prefill"]
    assert prefill["mean"] == pytest.approx(sum(kept) / len(kept))


def test_vllm_034_run_with_engine_timings_says_where_first_tokens_spent_their_time():
    notes = only(SERVER_TIMINGS).extra["notes"]
    (note,) = [note for note in notes if note.startswith("The engine timed each request")]
    assert "queue median 0.0 ms and its prefill (scheduled to first token) median 12.2 ms" in note
    assert "beside the client's TTFT median of 23.9 ms" in note


ENGINE_QUEUE = "vllm-bench/e2e-vllm-0.34.0-client-seqs2-c8-engine-queue-detailed.json"
ENGINE_QUEUE_SCRAPE = REAL / "metrics" / "e2e-vllm-0.32.0-cpu-seqs2-c8-engine-queue-after.prom"


def test_vllm_034_engine_timings_are_the_observations_of_the_engines_own_histograms():
    # The server's /metrics after the run (its only requests): 100 observations each, whose
    # sums are the file's 100 per-request values.
    run = only(ENGINE_QUEUE)
    scrape = parse_scrape(ENGINE_QUEUE_SCRAPE.read_text(), "vllm")
    for ours, canonical in (
        ("server_queue", "queue_seconds"),
        ("server_prefill", "prefill_seconds"),
    ):
        histogram = scrape.histogram(canonical)
        assert histogram.count == 100
        mean_s = run.extra["latency_ms"][ours]["mean"] / 1000
        assert mean_s * 100 == pytest.approx(histogram.sum, rel=1e-9), ours


def test_vllm_034_run_whose_engine_queued_says_its_ttft_was_mostly_the_engines_queue():
    # --max-num-seqs 2 under 8 in flight: the engine queues, the client does not.
    notes = only(ENGINE_QUEUE).extra["notes"]
    (note,) = notes  # no rate, so no client queue note
    assert (
        "its queue median 489.4 ms and its prefill (scheduled to first token) median 10.9 ms"
        in note
    )
    assert "beside the client's TTFT median of 519.2 ms" in note  # median_ttft_ms 519.2468


def test_vllm_034_console_summary_reads_as_its_json_twin():
    # 0.33 and 0.34 changed no line of the summary 0.32 prints (benchmarks/serve.py).
    (printed,) = runs_of(SERVER_TIMINGS_CONSOLE)
    saved = only(SERVER_TIMINGS)
    for name in ("ttft_p99_ms", "tpot_p50_ms", "e2e_p95_ms", "request_count"):
        assert printed.fields[name] == pytest.approx(saved.fields[name], abs=0.005), name


def test_vllm_ramp_up_run_names_no_single_load_and_says_it_ramped():
    # `--ramp-up-strategy linear --ramp-up-start-rps 1 --ramp-up-end-rps 10`, 30 prompts: vLLM
    # writes request_rate "inf", yet the client never held more than 7 requests.
    run = only("vllm-bench/e2e-vllm-0.32.0-cpu-ramp-up-1-to-10.json")
    assert (run.fields.get("concurrency"), run.fields.get("request_rate")) == (None, None)
    assert (run.request_rate_inf, run.label) == (False, "vllm bench ramp-up linear 1 to 10 req/s")


def test_vllm_file_with_latencies_but_no_counts_is_refused_naming_what_is_missing():
    with pytest.raises(LoadTestFormatError) as caught:
        runs_of("vllm-bench/zhangxinyuehfad-serving_llama8B_tp1_qps_inf.json")
    assert str(caught.value) == (
        "could not detect the format: looks like vllm-bench: missing 'completed', 'duration'"
    )


def test_vllm_04_file_with_a_failed_request():
    run = only("vllm-bench/written-here-benchmark_serving-0.4.0-with-failure.json")
    check(
        run,
        request_count=4,
        errors=1,  # one non-empty entry in `errors`
        qps=4 / 10.0,
        input_tps=2265 / 10.0,
        output_tps=498 / 10.0,
        prompt_tokens_mean=(512 + 433 + 1020 + 300) / 4,  # the failed request left out
        ttft_p50_ms=131.25,
        ttft_p99_ms=203.744,
        tpot_p50_ms=20.9,
    )
    assert run.samples["ttft"] == pytest.approx([112.3, 98.1, 205.4, 150.2])


def test_vllm_append_result_lines_are_runs():
    first, second = runs_of("vllm-bench/written-here-append-result-0.7.jsonl")
    check(first, request_rate=2.0, request_count=200, qps=200 / 101.52, ttft_p99_ms=81.7)
    check(
        second,
        request_rate=8.0,
        request_count=197,
        errors=200 - 197,  # num_prompts - completed: 0.7 wrote no `failed`
        qps=197 / 27.4,
        output_tps=39544 / 27.4,
        ttft_p50_ms=71.2,
        ttft_p99_ms=310.5,
    )


# -- SGLang bench_serving (read by the vllm-bench format) -----------------------------------------


def test_sglang_bench_serving_rate_sweep_reads_its_e2e_latency_keys():
    first, _, last = runs_of("sglang-bench/e2e-sglang-0.5.23-rate-sweep.jsonl")
    check(
        first,
        request_rate=4.0,
        request_count=200,
        qps=200 / 52.012190604000125,
        output_tps=2988 / 52.012190604000125,
        e2e_p50_ms=82.15559849998044,  # median_e2e_latency_ms
        e2e_p90_ms=161.66808200007378,
        e2e_p99_ms=211.9297159300226,
        ttft_p50_ms=18.074071999990338,
        ttft_p99_ms=60.26182892001537,
        tpot_p99_ms=11.348601479985533,
        measured_at=None,  # SGLang writes no time
    )
    check(last, request_rate=16.0, e2e_p99_ms=261.1389589199483)


def test_sglang_runs_are_named_after_their_tool_with_the_concurrency_it_measured():
    first = runs_of("sglang-bench/e2e-sglang-0.5.23-rate-sweep.jsonl")[0]
    assert first.label == "sglang bench 4 req/s"
    assert first.extra["tool"] == "sglang.bench_serving"
    assert first.extra["achieved_concurrency"] == pytest.approx(0.35031322217755567)


def test_sglang_run_with_an_infinite_rate_and_a_concurrency_cap():
    run = only("sglang-bench/e2e-sglang-0.5.23-c4-details.jsonl")
    check(
        run,
        concurrency=4,
        request_rate_inf=True,  # `"request_rate": Infinity`
        request_count=100,
        e2e_p99_ms=231.14591126992994,  # the summary's own, not rebuilt from ttfts + itls
    )
    # 9 of the 100 (35, 42, 49, ...) came back with ttft 0.0, no token gap and no text: the
    # client never timed them, so they give no sample (they were 0 ms TTFTs before).
    assert len(run.samples["ttft"]) == len(run.samples["e2e"]) == 91


def test_sglang_requests_its_client_never_timed_give_no_ttft_sample():
    # Requests 9, 14 and 19: a success with ttft 0.0 and no token gap (no content chunk seen).
    run = only("sglang-bench/e2e-sglang-0.5.23-rate8-details-untimed.jsonl")
    assert (len(run.samples["ttft"]), min(run.samples["ttft"]) > 0) == (27, True)
    assert len(run.samples["ttft"]) == len(run.samples["e2e"])


def test_published_sglang_file_with_medians_only():
    runs = runs_of("sglang-bench/datacrunch-h200-llama_3_3_70b_online_output.jsonl")
    assert [r.fields["request_rate"] for r in runs] == [1.0, 2.0, 4.0, 8.0, 16.0, 4.0, 8.0]
    check(
        runs[0],
        request_count=300,
        qps=300 / 298.3675805060193,
        output_tps=160347 / 298.3675805060193,
        e2e_p50_ms=7819.046192569658,
        ttft_p50_ms=85.74514742940664,
        e2e_p99_ms=None,
        ttft_p99_ms=None,
    )


# -- printed summaries (console logs, README blocks) -----------------------------------------------


def test_vllm_console_log_runs_with_the_rate_printed_before_each_block():
    first, second = runs_of("console/e2e-vllm-0.32.0-bench-serve-console.log")
    check(
        first,
        request_rate=4.0,  # "Traffic request rate: 4.0"
        concurrency=None,  # "Maximum request concurrency: None"
        request_count=200,
        errors=0,
        qps=200 / 50.18,
        output_tps=6400 / 50.18,
        input_tps=25623 / 50.18,
        ttft_p50_ms=15.63,
        ttft_p99_ms=100.89,
        tpot_p99_ms=6.93,
        measured_at=None,
    )
    check(second, request_rate=8.0, request_count=200)


def test_sglang_console_log_reads_like_its_json_lines():
    printed = runs_of("console/e2e-sglang-0.5.23-console.log")
    saved = runs_of("sglang-bench/e2e-sglang-0.5.23-rate-sweep.jsonl")
    assert [r.label for r in printed] == [r.label for r in saved]
    for run, twin in zip(printed, saved, strict=True):
        for name in ("request_rate", "request_count", "e2e_p99_ms", "ttft_p99_ms", "tpot_p99_ms"):
            # the console prints two decimals
            assert run.fields[name] == pytest.approx(twin.fields[name], abs=0.005), name


# `vllm bench serve --request-rate 40 --max-concurrency 2` with the client queue among
# `--percentile-metrics`: its console, and the JSON file the same run saved (SOURCES.md).
QUEUE_CONSOLE = "console/e2e-vllm-0.32.0-rate40-c2-client-queue-console.log"
QUEUE_TWIN = "vllm-bench/e2e-vllm-0.32.0-cpu-rate40-c2-client-queue-console-twin.json"


def test_vllm_console_log_keeps_the_client_queue_figures_as_its_json_does():
    (printed,) = runs_of(QUEUE_CONSOLE)
    (saved,) = runs_of(QUEUE_TWIN)
    for name in ("client_queue", "e2e_including_client_queue"):
        console, json_ = printed.extra["latency_ms"][name], saved.extra["latency_ms"][name]
        assert console.keys() == json_.keys() - {"std"}  # the console prints no std
        for label, value in console.items():
            assert value == pytest.approx(json_[label], abs=0.005), (name, label)  # 2 decimals
    assert printed.extra["latency_ms"]["e2e_including_client_queue"]["p99"] == 4871.63


def test_vllm_console_log_with_a_client_queue_says_what_users_waited_as_its_json_does():
    (printed,) = runs_of(QUEUE_CONSOLE)
    (saved,) = runs_of(QUEUE_TWIN)
    assert printed.extra["notes"] == saved.extra["notes"]
    assert "E2E p99 is 4,872 ms" in printed.extra["notes"][0]


def test_readme_blocks_are_runs_told_by_the_command_above_each():
    runs = runs_of("console/dennislee22-vllm-readme-test1.md")
    assert len(runs) == 12
    assert all(run.request_rate_inf for run in runs)  # no --request-rate: the script's default
    check(
        runs[3],  # --num-prompts 50, 1024 in / 1024 out
        concurrency=50,  # all sent at once: a burst of 50
        request_count=50,
        qps=50 / 86.87,
        output_tps=51119 / 86.87,
        ttft_p99_ms=14827.09,
        tpot_p50_ms=77.88,
    )


def test_a_published_sglang_fork_log_reads_its_printed_arguments():
    # A trace-driven fork of SGLang's bench: its own command, then `Namespace(...)`, then the
    # block, six times; the arrivals followed a trace, whatever the rate printed.
    runs = runs_of("console/william-qmul-sglang-dlora-sglang_results.md")
    assert [r.fields["request_rate"] for r in runs] == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    check(
        runs[0],
        request_count=996,
        qps=996 / 262.38,
        output_tps=218257 / 262.38,
        e2e_p50_ms=576.03,
        ttft_p99_ms=13317.90,
    )
    assert runs[0].label == "sglang bench 2 req/s"


# -- guidellm --------------------------------------------------------------------------------------


def test_guidellm_02_report_takes_p50_from_the_median_and_rates_from_totals():
    run = only("guidellm/guidellm-repo-0.2-benchmarks_stripped.json")
    duration = 29.997201442718506
    check(
        run,
        concurrency=1,  # synchronous
        request_count=46,
        errors=0,
        duration_s=duration,
        qps=46 / duration,
        output_tps=5888 / duration,
        input_tps=11827 / duration,  # not tokens_per_second.mean - output (2x too high)
        e2e_p50_ms=0.6424565315246582 * 1000,
        e2e_p99_ms=0.6891846656799316 * 1000,
        ttft_p50_ms=16.38054847717285,
        ttft_p99_ms=21.281957626342773,
        tpot_p50_ms=4.9241227427805505,  # inter_token_latency_ms.median: PerfHub's TPOT
        tpot_p99_ms=5.258346167136365,
        measured_at=datetime.fromtimestamp(1749157168.1827004, tz=UTC),
        tool_version=None,
    )


def test_guidellm_yaml_report_reads_like_its_json_twin():
    from_yaml = only("guidellm/guidellm-repo-0.2-benchmarks_stripped.yaml")
    from_json = only("guidellm/guidellm-repo-0.2-benchmarks_stripped.json")
    assert from_yaml.fields == from_json.fields
    assert from_yaml.measured_at == from_json.measured_at


def test_guidellm_05_concurrent_run_prompt_throughput_is_the_total_over_the_duration():
    run = only("guidellm/danielkorat-0.5.0dev-c4-sanity.json")
    duration = 24.909644603729248
    check(
        run,
        concurrency=4,
        request_count=4,
        errors=0,
        qps=4 / duration,
        input_tps=396 / duration,  # 15.9 tok/s; prompt_tokens_per_second.mean is 1,411,168
        output_tps=4096 / duration,
        ttft_p50_ms=171.52166366577148,
        ttft_p99_ms=172.63293266296387,
        tpot_p50_ms=24.178653868062757,  # inter_token_latency_ms, not time_per_output_token_ms
        e2e_p50_ms=24.90842366218567 * 1000,
        tool_version="0.5.0.dev0",
    )


def test_guidellm_05_counts_the_measured_window_not_warm_up_and_cool_down():
    run = only("guidellm/danielkorat-0.5.0dev-synchronous-qwen3-30b.json")
    check(
        run,
        concurrency=1,
        request_count=19,  # metrics.request_totals; scheduler_metrics.requests_made has 23
        duration_s=720.0,
        qps=19 / 720.0,
        output_tps=19456 / 720.0,
        ttft_p50_ms=58.10093879699707,
        ttft_p99_ms=72.79777526855469,
        tpot_p50_ms=39.0606662977709,
        e2e_p99_ms=40.430073499679565 * 1000,
    )


def gz_runs(relative: str):
    path = REAL / relative
    return parse_loadtest(content_of(path), filename=path.name.removesuffix(".gz"))


def test_guidellm_08_concurrent_sweep_is_three_runs_at_their_streams():
    runs = gz_runs("guidellm/e2e-guidellm-0.8.1-concurrent-sweep-benchmarks.json.gz")
    assert [run.fields["concurrency"] for run in runs] == [1, 4, 8]
    check(
        runs[1],
        tool_version="0.8.1",
        request_count=60,
        errors=0,
        duration_s=4.167417526245117,
        qps=60 / 4.167417526245117,
        output_tps=1948.0 / 4.167417526245117,
        e2e_p50_ms=0.29358482360839844 * 1000,
        e2e_p99_ms=0.4604973793029785 * 1000,
        ttft_p50_ms=23.282527923583984,
        # guidellm's ITL, (latency - TTFT) / (tokens - 1); its own TPOT (P50 9.15 ms) counts
        # the first token in
        tpot_p50_ms=8.813261985778809,
        tpot_p99_ms=10.561756789684296,
        measured_at=datetime.fromtimestamp(1796516736.2070181, tz=UTC),
    )


def test_guidellm_08_throughput_run_of_fewer_requests_than_its_cap_is_a_burst_of_them():
    # A sweep of 20 requests a benchmark: throughput mode's cap is guidellm's default 512.
    runs = gz_runs("guidellm/e2e-guidellm-0.8.1-sweep-20-requests-benchmarks.json.gz")
    throughput = next(run for run in runs if "throughput" in run.label)
    assert (throughput.fields["concurrency"], throughput.label) == (20, "guidellm throughput c=20")


def test_guidellm_08_constant_rate_run_counts_its_errors_and_keeps_the_tools_warning():
    runs = gz_runs("guidellm/e2e-guidellm-0.8.1-constant-errors-benchmarks.json.gz")
    check(runs[1], request_rate=5.0, request_count=31, errors=9, concurrency=None)
    assert runs[1].fields["e2e_p90_ms"] == pytest.approx(0.3287630081176758 * 1000)
    (note,) = runs[1].extra["notes"]
    assert note.startswith("guidellm warned: mean generation delay was")
    assert note.endswith("likely bottlenecked by the data generation.")


def test_guidellm_08_keeps_every_requests_record_so_the_run_has_per_request_samples():
    raw = json.loads(
        content_of(REAL / "guidellm/e2e-guidellm-0.8.1-concurrent-sweep-benchmarks.json.gz")
    )
    first = raw["benchmarks"][1]["requests"]["successful"][0]
    run = gz_runs("guidellm/e2e-guidellm-0.8.1-concurrent-sweep-benchmarks.json.gz")[1]
    assert {family: len(values) for family, values in run.samples.items()} == {
        "ttft": 60,
        "tpot": 60,
        "e2e": 60,
    }
    assert run.samples["tpot"][0] == first["inter_token_latency_ms"]  # PerfHub's TPOT
    assert run.samples["e2e"][0] == pytest.approx(first["request_latency"] * 1000)


def test_guidellm_records_of_a_sample_of_the_requests_give_no_samples_and_say_so():
    run = only("guidellm/guidellm-repo-0.2-benchmarks_stripped.json")
    assert run.samples == {}
    assert any("records of 1 of 46 successful requests" in n for n in run.extra["notes"])


# -- GenAI-Perf / AIPerf ------------------------------------------------------------------------


def test_genai_perf_flat_input_config_release():
    run = only("genai-perf/wellflat-2025-09-16-profile_export_genai_perf.json")
    qps = 0.31455262548511714
    check(
        run,
        concurrency=1,
        request_rate_inf=True,
        request_count=66,
        qps=qps,
        output_tps=25.824770552328115,
        input_tps=qps * 152.5,
        duration_s=66 / qps,
        ttft_p50_ms=2088.661403,
        ttft_p99_ms=4323.045905799997,
        tpot_p50_ms=7.0842575,
        tpot_p99_ms=11.535691549999992,
        e2e_p50_ms=3102.6717825,
        e2e_p99_ms=4895.851983649999,
        measured_at=None,  # GenAI-Perf writes no time
        errors=None,
    )


def test_genai_perf_config_file_release_with_telemetry():
    run = only("genai-perf/wellflat-2025-09-30-profile_export_genai_perf.json")
    check(
        run,
        concurrency=1,  # input_config.perf_analyzer.stimulus
        request_count=35,
        qps=0.4701030011153585,
        output_tps=12.095750218698175,
        ttft_p50_ms=1416.927935,
        ttft_p99_ms=2342.05304546,
        tpot_p50_ms=7.6727289999999995,
        tpot_p99_ms=9.243265319999992,
        e2e_p50_ms=2196.9242019999997,
        e2e_p99_ms=2645.8837561799996,
        # GPU 3 is the only one of 8 with memory in use; the others idle at 0%.
        gpu_util=77.36560693641619 / 100,
    )


def test_aiperf_export_rates_from_totals_over_benchmark_duration():
    run = only("genai-perf/wellflat-aiperf-profile_export_aiperf.json")
    duration = 519.597973721
    check(
        run,
        concurrency=1,  # input_config.loadgen
        request_count=100,
        duration_s=duration,
        qps=100 / duration,
        output_tps=28348 / duration,  # total_osl, as AIPerf's own output_token_throughput
        input_tps=19637 / duration,
        ttft_p50_ms=82.04407599999999,
        ttft_p99_ms=99.64934874000001,
        tpot_p50_ms=18.04370675631875,
        e2e_p50_ms=5230.033456499999,
        measured_at=datetime.fromtimestamp(1.7684584541734423e18 / 1e9, tz=UTC),
    )


def test_aiperf_013_concurrency_from_its_profiling_phase_and_model_from_models():
    run = only("genai-perf/e2e-aiperf-0.13.0-c2-profile_export_aiperf.json")
    assert (run.fields["concurrency"], run.extra["model"]) == (2, "tiny-llama")


def test_aiperf_rate_mode_reads_the_rate_of_its_profiling_phase():
    # AIPerf 0.10, `--request-rate 0.8 --arrival-pattern poisson`: phases[] name it `rate`.
    run = only("genai-perf/anud18-aiperf-0.10.0-chatbot-r0.8-profile_export_aiperf.json")
    assert (run.fields["request_rate"], run.label) == (0.8, "aiperf 0.8 req/s")
    assert not run.request_rate_inf


def test_aiperf_010_rate_mode_run_reads_its_figures_as_written():
    run = only("genai-perf/anud18-aiperf-0.10.0-chatbot-r0.8-profile_export_aiperf.json")
    check(run, request_count=96, duration_s=118.900130676, ttft_p99_ms=215.540136)


def test_aiperf_public_dataset_is_fingerprinted_by_its_name():
    # datasets[0] = {"type": "public", "dataset": "sharegpt"}: the workload is ShareGPT's.
    path = REAL / "genai-perf" / "anud18-aiperf-0.10.0-chatbot-r0.8-profile_export_aiperf.json"
    content = path.read_bytes()
    (lint,) = lint_file(content, parse_loadtest(content, filename=path.name))
    assert (lint.fingerprint.dataset, lint.fingerprint.request_rate) == ("sharegpt", 0.8)


def test_aiperf_requests_cancelled_on_purpose_are_not_failures():
    # --request-cancellation-rate 30: 5 of 30 requests cancelled (RequestCancellationError, 499).
    run = only("genai-perf/e2e-aiperf-0.13.0-c4-cancellation-rate-30-profile_export_aiperf.json")
    assert (run.errors, run.extra["cancelled"], run.fields["request_count"]) == (0, 5, 25)


def test_aiperf_output_tokens_are_the_servers_when_its_own_count_differs():
    # AIPerf re-tokenized the answers to 40.725 tokens a request; vLLM reported 32 (usage),
    # 1,280 in all over benchmark_duration.
    run = only("genai-perf/e2e-aiperf-0.13.0-c2-profile_export_aiperf.json")
    check(run, output_tokens_mean=32.0, output_tps=1280.0 / 10.665447936000001)
    assert any("re-tokenizing" in note for note in run.extra["notes"])


def test_aiperf_output_tokens_stay_the_tools_when_the_server_sent_no_usage():
    run = only("genai-perf/wellflat-aiperf-profile_export_aiperf.json")
    assert run.sources["output_tokens_mean"] == "output_sequence_length.avg"


def test_genai_perf_csv_export_published_run():
    # NVIDIA/cloudai's AI Dynamo guide: quoted thousands ("1,146.31"), no p1/p5/p10 columns.
    run = only("genai-perf/cloudai-ai-dynamo-profile_genai_perf.csv")
    check(
        run,
        request_count=40,
        qps=1.50,
        duration_s=40 / 1.50,
        output_tps=261.25,
        prompt_tokens_mean=3000.05,
        output_tokens_mean=174.45,
        ttft_p50_ms=640.07,
        ttft_p99_ms=3457.97,
        tpot_p99_ms=35.23,
        e2e_p50_ms=5690.23,
        e2e_p99_ms=9436.13,
        concurrency=None,
        measured_at=None,
    )


@pytest.mark.parametrize(
    "export",
    [
        "genai-perf/e2e-aiperf-0.13.0-c2-profile_export_aiperf",
        "genai-perf/e2e-genai-perf-0.0.8-c2-profile_export_genai_perf",
    ],
)
def test_a_csv_export_holds_the_same_run_as_its_json(export):
    from_csv, from_json = only(export + ".csv"), only(export + ".json")
    figures = [
        name
        for name, value in from_json.fields.items()
        # The CSV has no input config and GenAI-Perf's no std column.
        if value is not None and name != "concurrency" and not name.endswith("_std")
    ]
    assert len(figures) >= 17
    for name in figures:  # the CSV rounds to two decimals (and so what is derived from them)
        expected = pytest.approx(from_json.fields[name], abs=0.01, rel=1e-3)
        assert from_csv.fields[name] == expected, name


def test_aiperf_csv_errors_are_completed_less_successful():
    run = only("genai-perf/e2e-aiperf-0.13.0-c2-profile_export_aiperf.csv")
    assert (run.fields["request_count"], run.errors) == (40, 0)


def test_a_csv_export_says_its_load_is_not_in_the_file():
    run = only("genai-perf/e2e-aiperf-0.13.0-c2-profile_export_aiperf.csv")
    assert run.fields["concurrency"] is None and run.fields["request_rate"] is None
    assert any("holds no input config" in note for note in run.extra["notes"])
    assert run.extra["achieved_concurrency"] == 1.97  # AIPerf's measured Effective Concurrency


# -- AIPerf's per-request records ---------------------------------------------------------------


def test_aiperf_records_are_the_same_run_as_its_summary():
    # The c2 run's profile_export.jsonl beside its profile_export_aiperf.json (same folder).
    run = only("aiperf-records/e2e-aiperf-0.13.0-c2-profile_export.jsonl")
    summary = only("genai-perf/e2e-aiperf-0.13.0-c2-profile_export_aiperf.json")
    assert (run.fields["request_count"], run.errors) == (40, 0)
    # First request's start to last one's end, against AIPerf's own benchmark_duration.
    assert run.fields["duration_s"] == pytest.approx(summary.fields["duration_s"], abs=0.002)
    assert run.fields["output_tokens_mean"] == 32.0  # vLLM's usage count, as in the summary


def test_aiperf_records_give_no_p99_from_forty_requests():
    run = only("aiperf-records/e2e-aiperf-0.13.0-c2-profile_export.jsonl")
    assert run.fields["e2e_p95_ms"] is not None
    assert run.fields["e2e_p99_ms"] is None and run.fields["ttft_p99_ms"] is None


def test_aiperf_records_skip_the_warmup_lines():
    # 4 warm-up + 24 measured requests; AIPerf's summary of the run says 24 over 1.6231 s.
    run = only("aiperf-records/e2e-aiperf-0.13.0-c4-warmup-profile_export.jsonl")
    assert (run.fields["request_count"], run.extra["warmup_lines_skipped"]) == (24, 4)
    assert run.fields["duration_s"] == pytest.approx(1.6230612480000002, abs=0.002)
    # The first measured request's start; the first warm-up request started 0.2 s before.
    assert run.measured_at == datetime.fromtimestamp(1796315036229093776 / 1e9, tz=UTC)


def test_aiperf_records_of_a_run_where_every_request_failed():
    # A chat endpoint the tiny model has no template for: 40 of 40 answered 400.
    run = only("aiperf-records/e2e-aiperf-0.13.0-chat-all-failed-profile_export.jsonl")
    assert (run.errors, run.failure) == (40, "no request succeeded (0 completed)")


# -- llmperf -------------------------------------------------------------------------------------


def test_llmperf_clean_run():
    run = only("llmperf/leaderboard-groq_70b.json")
    check(
        run,
        concurrency=5,
        request_count=150,
        errors=0,
        qps=176.73895115400083 / 60,
        output_tps=441.84737788500206,
        ttft_p50_ms=0.2218883791938424 * 1000,
        ttft_p99_ms=0.3500269545800982 * 1000,
        e2e_p50_ms=0.8051837999373674 * 1000,
        e2e_p99_ms=0.9922714155726133 * 1000,
        tpot_p50_ms=0.005320808651546638 * 1000,
        measured_at=datetime.fromtimestamp(1704851704, tz=UTC),
        tool_version="2023-08-31",
    )


@pytest.mark.parametrize(
    ("name", "completed", "errors", "per_minute", "ttft_p99_s"),
    [
        ("leaderboard-bedrock_70b.json", 101, 49, 25.18838751305755, 0.686971139999514),
        ("leaderboard-lepton_13b.json", 20, 130, 23.560301595745855, 1.3719118711400036),
    ],
)
def test_llmperf_runs_with_errors(name, completed, errors, per_minute, ttft_p99_s):
    run = only(f"llmperf/{name}")
    check(
        run,
        request_count=completed,
        errors=errors,
        qps=per_minute / 60,
        ttft_p99_ms=ttft_p99_s * 1000,
        failure=None,
    )


# -- inference-perf -------------------------------------------------------------------------------

IPERF = "inference-perf/e2e-inference-perf-0.7.0-"


def test_inference_perf_rate_stage_reads_seconds_as_ms_and_totals_over_its_time():
    run = only(IPERF + "rate-stage_1_lifecycle_metrics.json")
    duration = 19.825749245999987
    check(
        run,
        request_count=60,
        errors=0,
        request_rate=3.0,
        concurrency=None,
        request_rate_inf=False,
        duration_s=duration,
        qps=3.026367339539791,
        input_tps=387.4758983724113,
        prompt_tokens_mean=128.03333333333333,
        e2e_p50_ms=0.11182823100000405 * 1000,
        e2e_p99_ms=0.23099208359996043 * 1000,
        e2e_p999_ms=0.24852647886001394 * 1000,
        ttft_p50_ms=0.019987309499924777 * 1000,
        ttft_p90_ms=0.023757057900024848 * 1000,
        tpot_p99_ms=0.004564635283411369 * 1000,
        measured_at=None,
    )


def test_inference_perf_output_tokens_are_the_servers_when_its_own_count_differs():
    # The tiny model's tokenizer re-counts the answers' text as 57.35 tokens; vLLM's usage
    # says 32.6 (ignore_eos at max_tokens, drawn around 32).
    run = only(IPERF + "rate-stage_1_lifecycle_metrics.json")
    check(
        run,
        output_tokens_mean=32.61666666666667,
        output_tps=1957.0 / 19.825749245999987,
    )
    assert "use_server_output_tokens" in run.extra["notes"][0]


def test_inference_perf_without_the_servers_total_derives_its_throughput_from_the_mean():
    data = json.loads((REAL / (IPERF + "rate-stage_1_lifecycle_metrics.json")).read_text())
    del data["successes"]["output_tokens"]["total"]
    (run,) = parse_loadtest(json.dumps(data).encode())
    assert run.fields["output_tps"] == pytest.approx(32.61666666666667 * 3.026367339539791)


def test_inference_perf_concurrent_stage_is_closed_loop_at_its_concurrency():
    run = only(IPERF + "concurrent-stage_1_lifecycle_metrics.json")
    # load_summary.requested_rate (60.0) is the stage's internal figure, not an arrival rate.
    check(run, concurrency=8, request_rate=None, request_rate_inf=True, request_count=60)
    assert run.label == "inference-perf c=8"


def test_inference_perf_run_without_streaming_has_no_ttft_and_counts_its_failures():
    run = only(IPERF + "no-stream-context-errors-stage_0_lifecycle_metrics.json")
    check(
        run,
        request_count=17,
        errors=3,
        request_rate=2.0,
        ttft_p50_ms=None,
        tpot_p50_ms=None,
        e2e_p99_ms=0.24541298188004473 * 1000,
        failure=None,
    )
    assert run.extra["failures_by_label"] == {"400 - Context Window": 3}


def test_inference_perf_summary_of_all_stages_names_no_load():
    run = only(IPERF + "rate-summary_lifecycle_metrics.json")
    check(run, request_count=200, concurrency=None, request_rate=None, request_rate_inf=False)
    assert run.label == "inference-perf all stages"
    assert "stage_<N>_lifecycle_metrics.json" in run.extra["notes"][-1]


def test_inference_perf_before_04_wrote_its_median_as_p50():
    path = REAL / (IPERF + "rate-stage_1_lifecycle_metrics.json")
    older = path.read_text().replace('"median":', '"p50":')
    (run,) = parse_loadtest(older.encode())
    assert run.fields["e2e_p50_ms"] == pytest.approx(0.11182823100000405 * 1000)


def test_inference_perf_engine_side_report_is_refused_naming_the_file_to_use():
    # The shape inference-perf writes from the engine's histograms (summarize_prometheus_metrics).
    engine_side = {
        "load_summary": {},
        "successes": {"count": 60, "rate": 3.0, "request_latency": {"mean": 0.1, "p99": 0.2}},
        "failures": {},
    }
    with pytest.raises(
        LoadTestFormatError, match=r"engine-side report.*stage_<N>_lifecycle_metrics\.json"
    ):
        parse_loadtest(json.dumps(engine_side).encode())


# -- through the database -------------------------------------------------------------------------


@pytest.mark.parametrize("path", LOADTEST_FILES, ids=lambda p: p.name)
def test_every_corpus_file_imports_or_is_refused_naming_what_is_missing(service, path):
    if path.name in REFUSED:
        with pytest.raises(ValueError, match="missing"):
            import_loadtest_file(service=service, content=path.read_bytes(), filename=path.name)
        return
    name = path.name.removesuffix(".gz")
    runs = import_loadtest_file(service=service, content=content_of(path), filename=name)
    assert runs and all(run.pk for run in runs)
    for run in runs:
        run.refresh_from_db()
        assert run.extra["sources"]
        # GenAI-Perf, its and AIPerf's CSV exports, SGLang, inference-perf, the printed
        # summaries and MLPerf's summaries carry no time (guidellm's CSV does).
        assert run.date_known == (
            "genai_perf.json" not in name
            and (path.suffix != ".csv" or path.parent.name == "guidellm")
            and path.parent.name not in ("sglang-bench", "console", "inference-perf", "mlperf")
        )


def test_inference_perf_rate_stages_imported_together_make_one_rate_sweep(service):
    for stage in range(3):
        path = REAL / f"{IPERF}rate-stage_{stage}_lifecycle_metrics.json"
        import_loadtest_file(service=service, content=path.read_bytes(), filename=path.name)
    (sweep,) = sweeps_for_service(service)
    assert (sweep.format, sweep.axis) == ("inference-perf", "rate")
    assert [run.request_rate for run in sweep.runs] == [1.0, 3.0, 6.0]


def test_the_failed_corpus_run_is_stored_as_failed(service):
    path = REAL / "vllm-bench" / "er0080-bench_serve_all_requests_failed_v0.25.1.json"
    (run,) = import_loadtest_file(service=service, content=path.read_bytes())
    run.refresh_from_db()
    assert run.failure == "no request succeeded (0 completed)"
    assert (run.ttft_p99_ms, run.qps) == (None, None)


def test_a_guidellm_run_with_every_record_is_stored_with_its_distributions(service):
    path = REAL / "guidellm/e2e-guidellm-0.8.1-concurrent-sweep-benchmarks.json.gz"
    runs = import_loadtest_file(service=service, content=content_of(path), filename="b.json")
    sketches = {(s.family, s.count) for s in runs[1].sketches.all()}
    assert sketches == {("ttft", 60), ("tpot", 60), ("e2e", 60)}
