"""The vocabulary of a measured run: one list of field names, used by the models (dossiers), the
load-test parsers (loadtests.formats), the forms and the Markdown document.

Latency fields (`<metric>_<pXX>_ms`) are in `analysis.percentiles`.
"""

WORKLOAD_FIELDS = (
    "concurrency",
    "request_rate",
    "prompt_tokens_mean",
    "prompt_tokens_std",
    "output_tokens_mean",
    "output_tokens_std",
    "duration_s",
)
ENVIRONMENT_FIELDS = ("code_version", "engine_version")
THROUGHPUT_FIELDS = ("request_count", "qps", "input_tps", "output_tps")
RESOURCE_FIELDS = ("gpu_util", "sm_active", "dram_active", "mem_weights_bytes", "mem_kv_bytes")
