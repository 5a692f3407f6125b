"""What each baseline figure is called on pages, forms and in messages: one table for all."""

from __future__ import annotations

from analysis.percentiles import LATENCY_LABELS, LATENCY_METRICS, PERCENTILE_LABELS, latency_field

FIELD_LABELS = {
    "qps": "QPS",
    "output_tps": "Output tokens/s",
    "input_tps": "Input tokens/s",
    "gpu_util": "GPU-Util",
    "sm_active": "SM active",
    "dram_active": "DRAM active",
}
for _metric in LATENCY_METRICS:
    for _p in PERCENTILE_LABELS:
        FIELD_LABELS[latency_field(_metric, _p)] = f"{LATENCY_LABELS[_metric]} {_p.upper()} (ms)"
