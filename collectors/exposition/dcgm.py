"""Per-GPU readings from dcgm-exporter, in the shape of the ingest `gpus` items (docs/contracts.md).

One dict per GPU: index, uuid, name, hostname, util, mem_util, mem_used_bytes, mem_total_bytes,
power_w, temp_c, sm_clock_mhz, sm_active, sm_occupancy, dram_active. A field the exporter does not
send, or sends as a blank sentinel, is None, never 0. The scrape's timestamp is the caller's.
One entry per physical GPU, from its own rows: with MIG, dcgm-exporter also writes a row per
GPU instance (a `GPU_I_ID` label), a reading of that slice, not of the GPU, and those are left
out (a field exported only per instance is None). dcgm-exporter 3.x writes *every* row of a
MIG-enabled GPU with its instance's labels, device-wide fields (power, temperature, clock)
repeated on each: those fields are read from the instance rows where the GPU has no row of
its own (`DEVICE_FIELDS`), and the per-instance ones stay None.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from prometheus_client.samples import Sample

# dcgm-exporter writes DCGM's "blank" values (no reading: not sampled yet, not found, not
# supported, not permitted) as the raw sentinels of the field's type (dcgm_structs.h): int64
# ones just below 2**63 (9223372036854775794), int32 ones from 0x7ffffff0 (2147483634), fp64
# ones from 2**47 (140737488355330: profiling fields, seen on H100s); and NVML's "no reading"
# 0xffffffff as a utilization (NVIDIA/DCGM#199). Each family is a few values past its base.
INT64_BLANK = 9.2e18
INT32_BLANK = 0x7FFFFFF0
FP64_BLANK = float(2**47)
UINT32_NONE = 0xFFFFFFFF
_FAMILY_WIDTH = 16
# No field read here comes near the lowest sentinel (the largest, FB memory in MiB, stays
# below 2**25), so PromQL, which cannot list the families, drops every row at or above it.
LOWEST_BLANK = INT32_BLANK

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


# Fields of the whole device that dcgm-exporter 3.x repeats on each MIG instance's row.
DEVICE_FIELDS = frozenset(
    ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK")
)


def is_blank(value: float) -> bool:
    """DCGM's "no reading" (any of its sentinels), never a measurement."""
    if not math.isfinite(value) or abs(value) >= INT64_BLANK:
        return True
    return (
        INT32_BLANK <= value < INT32_BLANK + _FAMILY_WIDTH
        or FP64_BLANK <= value < FP64_BLANK + _FAMILY_WIDTH
        or value == UINT32_NONE
    )


def is_whole_gpu(labels: dict[str, str]) -> bool:
    """A row of one physical GPU: it names the GPU and no MIG instance of it."""
    return "gpu" in labels and not labels.get("GPU_I_ID")


def is_read(name: str, labels: dict[str, str]) -> bool:
    """Whether a sample feeds a GPU's reading: a field of ours on the GPU's own row, or a
    device-wide one on a MIG instance's row (taken where the GPU has no row of its own)."""
    if not (name in FIELDS or name in MEMORY_FIELDS) or "gpu" not in labels:
        return False
    return is_whole_gpu(labels) or name in DEVICE_FIELDS


def gpus(samples: Iterable[Sample]) -> list[dict]:
    """GPU dicts from DCGM samples (unknown fields are the caller's to skip), sorted by index."""
    by_gpu: dict[tuple, dict] = {}
    memory: dict[tuple, dict[str, float]] = {}
    # Device-wide fields as MIG instances' rows repeat them: one value per instance.
    repeated: dict[tuple, dict[str, list[float]]] = {}
    for sample in samples:
        labels = sample.labels
        if not is_read(sample.name, labels):
            continue
        hostname = labels.get("Hostname", labels.get("hostname"))
        key = (hostname, labels["gpu"], labels.get("UUID"))
        gpu = by_gpu.setdefault(key, _new_gpu(labels, hostname))
        value = float(sample.value)
        if is_blank(value):
            continue
        if not is_whole_gpu(labels):
            repeated.setdefault(key, {}).setdefault(sample.name, []).append(value)
        elif sample.name in FIELDS:
            field, factor = FIELDS[sample.name]
            gpu[field] = value * factor
        else:
            memory.setdefault(key, {})[sample.name] = value
    for key, fields in repeated.items():
        gpu = by_gpu[key]
        for name, values in fields.items():
            field, factor = FIELDS[name]
            if gpu[field] is None:
                # The same reading sampled once per instance, moments apart: their mean.
                gpu[field] = sum(values) / len(values) * factor
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
