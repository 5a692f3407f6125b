"""What a v2 dossier file holds and in which units: one table shared by export and parse.

A file key is what a reader sees in the file's ```yaml blocks; it names its unit when the
model's field does not (`kv_cache_gb`, `gpu_busy_pct`). Each key maps to one model field and a
scale: "gb" (bytes <-> decimal GB), "pct" (a 0-1 ratio <-> percent) or "" (as stored).
"""

from __future__ import annotations

from dataclasses import dataclass

from dossiers.models import LATENCY_METRICS, PERCENTILES

FORMAT = "perfhub-dossier"
VERSION = 2
NARRATIVE_START = "<!-- narrative:start -->"
NARRATIVE_END = "<!-- narrative:end -->"


@dataclass(frozen=True)
class Key:
    key: str  # in the file
    field: str  # on the model
    scale: str = ""  # "", "gb", "pct"


def _keys(*specs: str | tuple[str, str] | tuple[str, str, str]) -> tuple[Key, ...]:
    return tuple(Key(s, s) if isinstance(s, str) else Key(*s) for s in specs)


# "Who to call" comes first in the file; the rest of the service's settings under "Service".
PEOPLE_KEYS = _keys("owner", "on_call", "channel", ("runbook", "runbook_url"))
SERVICE_KEYS = _keys(
    "name",
    "summary",
    "model_name",
    ("model_params_billions", "model_params_b"),
    "quantization",
    "engine",
    "engine_version",
    "gpu_model",
    "gpus_per_replica",
    "replicas",
    "slo_p99_e2e_ms",
    "slo_p99_ttft_ms",
    "slo_p99_tpot_ms",
    ("gpu_hour_price", "gpu_hour_price"),
    "currency",
    ("price_per_million_tokens", "price_per_mtok"),
    "token_basis",
    "gate_overrides",
)

# A baseline's measured run; its latencies go in one `latency_ms` mapping (LATENCY_KEY).
BASELINE_KEYS = _keys(
    "measured_at",
    "vantage",  # client (a load generator or gateway) or server (the engine's histograms)
    "code_version",
    "engine_version",
    "concurrency",
    ("request_rate_per_s", "request_rate"),
    "prompt_tokens_mean",
    "prompt_tokens_std",
    "output_tokens_mean",
    "output_tokens_std",
    "duration_s",
    ("requests", "request_count"),
    ("req_per_s", "qps"),
    ("input_tok_per_s", "input_tps"),
    ("output_tok_per_s", "output_tps"),
    ("gpu_busy_pct", "gpu_util", "pct"),
    ("sm_active_pct", "sm_active", "pct"),
    ("dram_active_pct", "dram_active", "pct"),
    ("weights_gb", "mem_weights_bytes", "gb"),
    ("kv_cache_gb", "mem_kv_bytes", "gb"),
    "gpu_source",  # where the GPU figures were measured: nvml, dcgm, nvml+dcgm, loadtest
)
LATENCY_KEY = "latency_ms"  # {e2e: [P50, P90, P95, P99, P99.9], ttft: [...], tpot: [...]}
LATENCY_ROWS = LATENCY_METRICS
LATENCY_COLUMNS = PERCENTILES

BOTTLENECK_KEYS = _keys("status", "layer", "kind", "identified_on", "resolved_on")
EXPERIMENT_KEYS = _keys(
    "run_on",
    ("variable", "variable_key"),
    ("from", "value_from"),
    ("to", "value_to"),
    "verdict",
    "target",  # the figure it aims to move (`Experiment.target`'s codes); left out, not stated
)

# Sections a file may have, by heading. Data sections are read back; the others are computed
# for the reader and skipped on import.
PEOPLE = "Who to call"
OPEN_BOTTLENECKS = "Open bottlenecks"
AT_A_GLANCE = "At a glance"
SERVICE = "Service"
NARRATIVE = "Narrative"
EXPERIMENTS = "Experiments"
BASELINES = "Baselines"
PAST_BOTTLENECKS = "Past bottlenecks"
CONFIG = "Config versions"
GLOSSARY = "Glossary"
SECTIONS = (
    PEOPLE,
    OPEN_BOTTLENECKS,
    AT_A_GLANCE,
    SERVICE,
    NARRATIVE,
    EXPERIMENTS,
    BASELINES,
    PAST_BOTTLENECKS,
    CONFIG,
    GLOSSARY,
)
REQUIRED = (SERVICE, NARRATIVE)
COMPUTED = (AT_A_GLANCE, GLOSSARY)
