"""A live engine-side percentile interpolated inside a wide bucket is compared with a claim as
its bucket, never as the estimate: RAG Answers' E2E P99 claim (5,100 ms) against an engine
P99 "in 5,000-10,000, est. 8,333" holds, since the bucket meets the claim's band."""

from types import SimpleNamespace

from analysis.buckets import BucketCounts, quantile
from analysis.claims import Status
from dashboards.claims import _latency_claim

# ms edges of vLLM's (and SGLang's) end-to-end histogram around 5 s.
LIVE = quantile(BucketCounts(edges=(2500.0, 5000.0, 10000.0), counts=(100, 870, 30, 0)), 0.99)


def test_a_claim_is_judged_against_the_wide_bucket_not_the_interpolated_value():
    window = SimpleNamespace(percentiles={"e2e": {0.99: LIVE}})
    baseline = SimpleNamespace(vantage="server", server_side={})
    claim = _latency_claim("e2e_p99_ms", "E2E P99", 5100.0, 0.99, None, window, "e2e", baseline)
    assert (claim.status, claim.note) == (
        Status.HOLDS,
        "live in 5,000 ms\u201310,000 ms, est. 8,333 ms.",
    )
