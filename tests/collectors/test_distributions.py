"""The stored quantiles read back by name: what a chart draws is the field it names."""

import numpy as np

from analysis.percentiles import STANDARD_QUANTILES, Percentile
from collectors.distributions import StoredQuantiles, pack_quantiles, unpack_quantiles


def _packed_ttft() -> StoredQuantiles:
    ps = [
        Percentile(q=q, value=100.0 * (i + 1), count=1000 - i, lower=90.0 * (i + 1),
                   upper=110.0 * (i + 1), method="bucket-bounded")
        for i, q in enumerate(STANDARD_QUANTILES)
    ]  # fmt: skip
    return StoredQuantiles(unpack_quantiles(pack_quantiles({"ttft": ps})))


def test_a_named_quantile_reads_its_own_value_bounds_and_count():
    p99 = _packed_ttft().metric("ttft").at("p99")
    assert (float(p99.value), float(p99.lower), float(p99.upper)) == (400.0, 360.0, 440.0)
    assert int(p99.count) == 997


def test_the_method_is_compared_by_name():
    p50 = _packed_ttft().metric("ttft").at("p50")
    assert bool(p50.is_method("bucket-bounded"))
    assert not bool(p50.is_method("sketch"))


def test_a_metric_never_packed_reads_as_no_value():
    assert np.isnan(_packed_ttft().metric("e2e").at("p99").value)
