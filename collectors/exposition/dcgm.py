"""Per-GPU readings from dcgm-exporter, in the shape of the ingest `gpus` items (docs/contracts.md).

One dict per GPU: index, uuid, name, hostname, util, mem_util, mem_used_bytes, mem_total_bytes,
power_w, temp_c, sm_clock_mhz, sm_active, sm_occupancy, dram_active. A field the exporter does not
send, or sends as a blank sentinel, is None, never 0. The scrape's timestamp is the caller's.
One entry per physical GPU, from its own rows: with MIG, dcgm-exporter also writes a row per
GPU instance (a `GPU_I_ID` label), a reading of that slice, not of the GPU, and those are left
out (a field exported only per instance is None).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from prometheus_client.samples import Sample

# dcgm-exporter writes DCGM's "blank" values (no reading: field unsupported, not yet sampled)
# as the raw int64 sentinels, all just below 2**63 (e.g. 9223372036854775794).
BLANK_THRESHOLD = 9.2e18

MIB = 1024 * 1024

# DCGM field -> (gpus key, factor into the ingest unit)
FIELDS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("util", 0.01),  # percent -> ratio
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("mem_util", 0.01),  # percent -> ratio
    "DCGM_FI_DEV_FB_USED": ("mem_used_bytes", MIB),  # MiB -> bytes
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1.0),
    "DCGM_FI_DEV_GPU_TEMP": ("temp_c", 1.0),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock_mhz", 1.0),
    "DCGM_FI_PROF_SM_ACTIVE": ("sm_active", 1.0),
    "DCGM_FI_PROF_SM_OCCUPANCY": ("sm_occupancy", 1.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("dram_active", 1.0),
}
# Only for the total: FB_TOTAL when exported, else used + free (+ reserved on newer drivers).
MEMORY_FIELDS = ("DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED")
GPU_KEYS = (
    "index",
    "uuid",
    "name",
    "hostname",
    "util",
    "mem_util",
    "mem_used_bytes",
    "mem_total_bytes",
    "power_w",
    "temp_c",
    "sm_clock_mhz",
    "sm_active",
    "sm_occupancy",
    "dram_active",
)
_INTEGER_KEYS = ("mem_used_bytes", "mem_total_bytes")


def is_blank(value: float) -> bool:
    return not math.isfinite(value) or abs(value) >= BLANK_THRESHOLD


def is_whole_gpu(labels: dict[str, str]) -> bool:
    """A row of one physical GPU: it names the GPU and no MIG instance of it."""
    return "gpu" in labels and not labels.get("GPU_I_ID")


def is_dcgm_field(name: str) -> bool:
    return name in FIELDS or name in MEMORY_FIELDS


def gpus(samples: Iterable[Sample]) -> list[dict]:
    """GPU dicts from DCGM samples (unknown fields are the caller's to skip), sorted by index."""
    by_gpu: dict[tuple, dict] = {}
    memory: dict[tuple, dict[str, float]] = {}
    for sample in samples:
        labels = sample.labels
        if not is_whole_gpu(labels):
            continue
        hostname = labels.get("Hostname", labels.get("hostname"))
        key = (hostname, labels["gpu"], labels.get("UUID"))
        gpu = by_gpu.setdefault(key, _new_gpu(labels, hostname))
        value = float(sample.value)
        if is_blank(value):
            continue
        if sample.name in FIELDS:
            field, factor = FIELDS[sample.name]
            gpu[field] = value * factor
        else:
            memory.setdefault(key, {})[sample.name] = value
    for key, gpu in by_gpu.items():
        gpu["mem_total_bytes"] = _total_bytes(gpu, memory.get(key, {}))
        for field in _INTEGER_KEYS:
            if gpu[field] is not None:
                gpu[field] = round(gpu[field])
    return sorted(by_gpu.values(), key=lambda g: (g["hostname"] or "", _index_order(g)))


def _new_gpu(labels: dict[str, str], hostname: str | None) -> dict:
    gpu: dict = dict.fromkeys(GPU_KEYS)
    index = labels["gpu"]
    gpu["index"] = int(index) if index.isdigit() else index
    gpu["uuid"] = labels.get("UUID")
    gpu["name"] = labels.get("modelName")
    gpu["hostname"] = hostname
    return gpu


def _total_bytes(gpu: dict, memory: dict[str, float]) -> float | None:
    if "DCGM_FI_DEV_FB_TOTAL" in memory:
        return memory["DCGM_FI_DEV_FB_TOTAL"] * MIB
    if gpu["mem_used_bytes"] is None or "DCGM_FI_DEV_FB_FREE" not in memory:
        return None
    reserved = memory.get("DCGM_FI_DEV_FB_RESERVED", 0.0)
    return gpu["mem_used_bytes"] + (memory["DCGM_FI_DEV_FB_FREE"] + reserved) * MIB


def _index_order(gpu: dict) -> tuple[int, str]:
    index = gpu["index"]
    return (index, "") if isinstance(index, int) else (1 << 30, str(index))
