"""Simulated H100s whose busyness follows the engines' load."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from typing import Any

from demo.engine_profile import GPU_MEMORY_RESERVED, gpu_shares
from demo.simulator.engine import rfc3339

H100_NAME = "NVIDIA H100 80GB HBM3"
H100_MEMORY_BYTES = 81559 * 1024 * 1024  # what NVML reports for an H100 80GB HBM3
PEAK_LOAD = 1.35 * 1.08  # the default curve's busiest moment against the mean rate


class FakeGpus:
    """H100-like rows whose busyness follows the engines' load. NVML GPU-Util stays high while
    SM activity is much lower (decode is memory-bound), as on real inference hosts; with a
    profile's `gpu_util` and `sm_active`, those at the mean load (`gpu_shares`)."""

    def __init__(
        self,
        count: int,
        *,
        host: str,
        rng: random.Random,
        shares: tuple[float, float, float | None] | None = None,
    ) -> None:
        self.count = count
        self.rng = rng
        self.shares = shares
        self.uuids = [
            f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{host}/gpu{i}')}" for i in range(count)
        ]

    def read(self, now: float, load: float) -> list[dict[str, Any]]:
        ts = rfc3339(datetime.fromtimestamp(now, UTC))
        return [self._one(i, ts, load) for i in range(self.count)]

    def _one(self, index: int, ts: str, load: float) -> dict[str, Any]:
        noise = self.rng.gauss
        # `load` is against the mean rate; `busy` against the daily peak (1.35 x 1.08).
        busy = _clip(load / PEAK_LOAD + noise(0, 0.03), 0.05, 1.0)
        dram_active = _clip(0.35 + 0.45 * busy + noise(0, 0.02), 0.0, 1.0)
        if self.shares is not None:
            util_share, sm_share, dram_share = self.shares
            util, sm_active = gpu_shares(util_share, sm_share, load=load)
            util = _clip(util + noise(0, 0.01), 0.0, 1.0)
            sm_active = _clip(sm_active + noise(0, 0.005), 0.0, util)
            if dram_share is not None:
                (dram_active,) = gpu_shares(dram_share, load=load)
                dram_active = _clip(dram_active + noise(0, 0.005), 0.0, 1.0)
        else:
            util = _clip(0.62 + 0.36 * busy + noise(0, 0.015), 0.0, 1.0)
            sm_active = _clip(util * (0.28 + 0.12 * busy) + noise(0, 0.01), 0.0, util)
        power_w = min(700.0, 115.0 + 540.0 * busy**0.8 + noise(0, 6.0))
        used = int(H100_MEMORY_BYTES * GPU_MEMORY_RESERVED) + int(noise(0, 64)) * 1024 * 1024
        return {
            "ts": ts,
            "index": index,
            "uuid": self.uuids[index],
            "name": H100_NAME,
            "util": round(util, 4),
            "mem_util": round(_clip(dram_active * 0.85 + noise(0, 0.01), 0.0, 1.0), 4),
            "mem_used_bytes": min(used, H100_MEMORY_BYTES),
            "mem_total_bytes": H100_MEMORY_BYTES,
            "power_w": round(power_w, 1),
            "temp_c": round(30 + 0.05 * power_w + noise(0, 0.7)),
            "sm_clock_mhz": 1980 if power_w < 660 else 1830,
            "sm_active": round(sm_active, 4),
            "sm_occupancy": round(sm_active * 0.55, 4),
            "dram_active": round(dram_active, 4),
        }


def _clip(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))
