"""A real vLLM (the CPU build) measured by PerfHub from both sides: `make e2e-vllm`.

One run (harness.py) serves a tiny random-weight Llama with `vllm serve`, lets the real agent
push its /metrics to a PerfHub server, runs `vllm bench serve` and imports its file. The checks
below compare what PerfHub stored and shows with references computed here from the raw
material: the bench file's per-request arrays (client side, from send to last token) and
vLLM's own histograms scraped before and after the benchmark (server side, from the request's
arrival at the engine).

Runs only when PERFHUB_VLLM_PYTHON names the vLLM venv's Python (`make e2e-vllm` builds it and
sets it); skipped otherwise, and failing instead when PERFHUB_REQUIRE_VLLM=1 (CI).

"""

from __future__ import annotations

import math
import os
import re
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.vllm_engine import harness

pytestmark = pytest.mark.vllm

QUANTILES = (0.5, 0.9, 0.99)


@pytest.fixture(scope="module")
def e2e():
    python = os.environ.get("PERFHUB_VLLM_PYTHON", "")
    if not python or not Path(python).exists():
        why = f"no vLLM venv (PERFHUB_VLLM_PYTHON={python!r}); `make e2e-vllm` builds one"
        if os.environ.get("PERFHUB_REQUIRE_VLLM") == "1":
            pytest.fail(why)
        pytest.skip(why)
    out = Path(os.environ.get("PERFHUB_E2E_OUT") or harness.ROOT / "var" / "e2e-vllm")
    run = harness.Harness(Path(python), harness.prepare_out(out))
    try:
        yield run.main()
    except harness.E2EFailure as exc:
        pytest.fail(f"{exc}\n{run.tails()}")
    finally:
        run.close()


# -- references computed here -----------------------------------------------------------------


def bench_reference(bench: dict) -> dict:
    """The run's figures from its per-request arrays, as `vllm bench serve` defines them:
    medians and percentiles by numpy's default (linear) method, TPOT per request as
    (E2E - TTFT) / (output tokens - 1) over requests with more than one output token."""
    ok = [not e for e in bench["errors"]]
    ttft = np.array([t for t, good in zip(bench["ttfts"], ok, strict=True) if good]) * 1000
    e2e = np.array([t for t, good in zip(bench["latencies"], ok, strict=True) if good]) * 1000
    out = [n for n, good in zip(bench["output_lens"], ok, strict=True) if good]
    tpot = np.array([(e - t) / (n - 1) for e, t, n in zip(e2e, ttft, out, strict=True) if n > 1])
    return {
        "request_count": int(sum(ok)),
        "errors": len(ok) - int(sum(ok)),
        "qps": sum(ok) / bench["duration"],
        "output_tps": sum(out) / bench["duration"],
        "ttft_p50_ms": float(np.median(ttft)),
        "ttft_p99_ms": float(np.percentile(ttft, 99)),
        "tpot_p50_ms": float(np.median(tpot)),
        "tpot_p99_ms": float(np.percentile(tpot, 99)),
        "e2e_p50_ms": float(np.median(e2e)),
        "e2e_p99_ms": float(np.percentile(e2e, 99)),
    }


def histogram_delta(before: str, after: str, name: str) -> tuple[list[float], list[float]]:
    """A vLLM histogram's cumulative bucket counts over the benchmark (after minus before),
    summed over its series, read with prometheus_client's parser: (edges in s, counts)."""

    def buckets(text: str) -> dict[float, float]:
        out: dict[float, float] = {}
        for family in text_string_to_metric_families(text):
            if family.name != name:
                continue
            for sample in family.samples:
                if sample.name == name + "_bucket":
                    le = float(sample.labels["le"])
                    out[le] = out.get(le, 0.0) + sample.value
        return out

    a, b = buckets(after), buckets(before)
    if not a:
        raise AssertionError(f"vLLM exposes no {name}")
    edges = sorted(a)
    return edges, [a[e] - b.get(e, 0.0) for e in edges]


def bucket_of(edges: list[float], cumulative: list[float], q: float) -> tuple[float, float]:
    """The bucket holding the q-quantile request (rank ceil(q n), 1-based), in ms."""
    rank = max(1, math.ceil(q * cumulative[-1] - 1e-9))
    i = next(i for i, c in enumerate(cumulative) if c >= rank)
    return (edges[i - 1] * 1000 if i else 0.0), edges[i] * 1000


def live(e2e, metric: str) -> dict[float, dict]:
    return {p["q"]: p for p in e2e.metrics["overall_latency_ms"].get(metric, [])}


def assert_bounds_contain(e2e, metric: str, histogram: str) -> None:
    edges, cumulative = histogram_delta(e2e.before, e2e.after, histogram)
    figures = live(e2e, metric)
    for q in QUANTILES:
        lo, hi = bucket_of(edges, cumulative, q)
        p = figures[q]
        assert p["count"] == cumulative[-1], (metric, q, p)
        assert p["lower"] is not None and p["upper"] is not None, (metric, q, p)
        assert p["lower"] <= lo + 1e-9 and hi <= p["upper"] + 1e-9, (metric, q, (lo, hi), p)


def only_run(e2e) -> dict:
    (run,) = e2e.stored["runs"]
    return run


# -- the bench file, imported -----------------------------------------------------------------


def test_bench_file_is_vllm_bench_with_every_request(e2e):
    assert e2e.bench["completed"] == harness.NUM_PROMPTS and e2e.bench["failed"] == 0
    assert len(e2e.bench["ttfts"]) == len(e2e.bench["latencies"]) == harness.NUM_PROMPTS
    assert only_run(e2e)["format"] == "vllm-bench"


def test_bench_arrays_reproduce_vllms_own_summary(e2e):
    """The reference below is vLLM's definition: it gives the summary vLLM wrote."""
    ref = bench_reference(e2e.bench)
    for key in ("ttft", "tpot"):
        assert ref[f"{key}_p50_ms"] == pytest.approx(e2e.bench[f"median_{key}_ms"], rel=1e-9)
        assert ref[f"{key}_p99_ms"] == pytest.approx(e2e.bench[f"p99_{key}_ms"], rel=1e-9)


@pytest.mark.parametrize(
    "field",
    ["request_count", "errors", "qps", "output_tps", "ttft_p50_ms", "ttft_p99_ms",
     "tpot_p50_ms", "tpot_p99_ms"],
)  # fmt: skip
def test_stored_run_figure_is_exact(e2e, field):
    assert only_run(e2e)[field] == pytest.approx(bench_reference(e2e.bench)[field], rel=1e-9)


@pytest.mark.parametrize("field", ["e2e_p50_ms", "e2e_p99_ms"])
def test_stored_e2e_comes_from_the_latencies_array(e2e, field):
    assert only_run(e2e)[field] == pytest.approx(bench_reference(e2e.bench)[field], rel=1e-9)


def test_imported_run_became_the_current_baseline_with_its_figures(e2e):
    (baseline,) = e2e.stored["baselines"]
    ref = bench_reference(e2e.bench)
    assert baseline["is_current"] is True
    assert baseline["ttft_p99_ms"] == pytest.approx(ref["ttft_p99_ms"], rel=1e-9)


# -- live, from the agent's scrapes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "histogram"),
    [
        ("ttft", "vllm:time_to_first_token_seconds"),
        ("e2e", "vllm:e2e_request_latency_seconds"),
        ("queue", "vllm:request_queue_time_seconds"),
    ],
)
def test_live_bounds_contain_vllms_own_histogram(e2e, metric, histogram):
    """Each live percentile rests on exactly the requests vLLM counted over the run, and its
    error bar holds the bucket vLLM's own histogram puts that percentile in."""
    assert_bounds_contain(e2e, metric, histogram)


def test_live_percentile_inside_the_first_bucket_is_only_an_upper_bound(e2e):
    edges, cumulative = histogram_delta(e2e.before, e2e.after, "vllm:request_queue_time_seconds")
    first = [q for q in QUANTILES if bucket_of(edges, cumulative, q)[0] == 0.0]
    assert first  # at concurrency 4 vLLM's first queue bucket (0.3 s) holds the median
    for q in first:
        p = live(e2e, "queue")[q]
        assert p["value"] is None or p["value"] == p["upper"], (q, p)


def test_live_tpot_is_vllms_per_request_tpot(e2e):
    assert_bounds_contain(e2e, "tpot", "vllm:request_time_per_output_token_seconds")


# -- client and server side by side --------------------------------------------------------------


def page_text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_run_page_shows_client_and_server_figures_apart_with_their_gap(e2e):
    text = page_text(e2e.page(only_run(e2e)["url"]).text).lower()
    assert "client" in text and "server" in text
    assert "api server and tokenizer" in text  # the gap, named as the layer it measures


def claim_verdicts(html: str) -> dict[str, str]:
    rows = re.findall(r'<tr data-claim="([a-z0-9_]+)">(.*?)</tr>', html, re.S)
    statuses = ("holds", "drifted", "not comparable", "insufficient data", "no live data", "stale")
    out = {}
    for key, row in rows:
        text = page_text(row).lower()
        out[key] = next((s for s in statuses if s in text), text)
    return out


def test_the_runs_engine_side_covers_its_window_in_whole_minutes(e2e):
    side = only_run(e2e)["server_side"]
    run_start, run_end = (datetime.fromisoformat(t) for t in side["run_window"])
    start, end = (datetime.fromisoformat(t) for t in side["covered"])
    assert (start.second, end.second) == (0, 0)
    # Each scrape window is filed in the minute it ended, as the roll-ups file it: a run that
    # starts in a minute's last seconds has its first window end (and counted) in the next one.
    scrape = timedelta(seconds=2 * harness.AGENT_INTERVAL_S)  # an interval, with its jitter
    assert start <= run_start + scrape and run_end <= end, side


def test_claim_check_on_the_benchmarks_window_holds(e2e):
    """Over the run's window as PerfHub states it (the whole minutes its engine side covers,
    which a live view of the run reads too), every latency claim holds."""
    start, end = only_run(e2e)["server_side"]["covered"]
    html = e2e.page(f"/dashboards/services/{harness.SERVICE}/claims/", start=start, end=end).text
    verdicts = claim_verdicts(html)
    latency = {k: v for k, v in verdicts.items() if k.endswith("_ms")}
    assert {"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"} <= set(latency)
    assert set(latency.values()) == {"holds"}, verdicts
