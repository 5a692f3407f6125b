"""Read every GPU through NVML (`pynvml` from nvidia-ml-py) into the push contract's `gpus` rows.

The module is injectable (`NvmlReader(nvml=fake)`) so tests drive the GPU path without a GPU.
A metric the GPU does not support is None, never 0. No library or no driver: one log line and
GPU collection stays off for the life of the reader.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from .batch import rfc3339

log = logging.getLogger(__name__)

# (contract field, pynvml GPM metric constant). GPM reports percent 0-100.
GPM_FIELDS = (
    ("sm_active", "NVML_GPM_METRIC_SM_UTIL"),
    ("sm_occupancy", "NVML_GPM_METRIC_SM_OCCUPANCY"),
    ("dram_active", "NVML_GPM_METRIC_DRAM_BW_UTIL"),
)


class NvmlReader:
    """Reads all GPUs on each `read()`; `close()` frees GPM samples and shuts NVML down."""

    def __init__(
        self,
        nvml: ModuleType | Any | None = None,
        *,
        gpm_first_window_s: float = 0.2,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._nvml = nvml
        self._gpm_first_window_s = gpm_first_window_s
        self._sleep = sleep
        self._now = now
        self.available: bool | None = None  # None until the first read tries NVML
        self._handles: list[Any] = []
        self._gpm: dict[int, bool] = {}
        self._gpm_previous: dict[int, Any] = {}
        self._warned: set[tuple[int, str]] = set()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> bool:
        """Initialise NVML once. Returns whether GPU collection is on."""
        if self.available is not None:
            return self.available
        self.available = False
        try:
            nvml = self._nvml if self._nvml is not None else importlib.import_module("pynvml")
        except ImportError as exc:
            log.warning(
                "GPU collection off: nvidia-ml-py is not installed (%s); scrapes go on", exc
            )
            return False
        self._nvml = nvml
        try:
            nvml.nvmlInit()
        except (nvml.NVMLError_LibraryNotFound, nvml.NVMLError_DriverNotLoaded) as exc:
            log.warning(
                "GPU collection off: no NVIDIA driver on this host (NVML: %s); scrapes go on", exc
            )
            return False
        except nvml.NVMLError as exc:
            log.warning("GPU collection off: NVML failed to initialise (%s); scrapes go on", exc)
            return False
        try:
            count = nvml.nvmlDeviceGetCount()
            self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except nvml.NVMLError as exc:
            log.warning("GPU collection off: NVML could not list devices (%s); scrapes go on", exc)
            self._shutdown()
            return False
        self._gpm = {i: self._gpm_supported(h) for i, h in enumerate(self._handles)}
        log.info(
            "NVML ready: %d GPU(s), GPM on %d of them",
            len(self._handles),
            sum(self._gpm.values()),
        )
        self.available = True
        return True

    def close(self) -> None:
        if not self.available:
            return
        for sample in self._gpm_previous.values():
            self._free(sample)
        self._gpm_previous.clear()
        self._shutdown()
        self.available = None

    # -- reading ---------------------------------------------------------------------------

    def read(self) -> list[dict[str, Any]]:
        """One row per GPU in the contract's shape; [] when GPU collection is off."""
        if not self.start():
            return []
        return [self._read_device(index, handle) for index, handle in enumerate(self._handles)]

    def _read_device(self, index: int, handle: Any) -> dict[str, Any]:
        nvml = self._nvml
        ts = rfc3339(self._now())
        rates = self._call(index, "utilization", nvml.nvmlDeviceGetUtilizationRates, handle)
        memory = self._call(index, "memory", nvml.nvmlDeviceGetMemoryInfo, handle)
        power_mw = self._call(index, "power", nvml.nvmlDeviceGetPowerUsage, handle)
        row: dict[str, Any] = {
            "ts": ts,
            "index": index,
            "uuid": _text(self._call(index, "uuid", nvml.nvmlDeviceGetUUID, handle)),
            "name": _text(self._call(index, "name", nvml.nvmlDeviceGetName, handle)),
            "util": None if rates is None else rates.gpu / 100.0,
            "mem_util": None if rates is None else rates.memory / 100.0,
            "mem_used_bytes": None if memory is None else int(memory.used),
            "mem_total_bytes": None if memory is None else int(memory.total),
            # NVML reports milliwatts; the contract carries watts.
            "power_w": None if power_mw is None else power_mw / 1000.0,
            "temp_c": self._call(
                index,
                "temperature",
                nvml.nvmlDeviceGetTemperature,
                handle,
                nvml.NVML_TEMPERATURE_GPU,
            ),
            "sm_clock_mhz": self._call(
                index, "sm_clock", nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM
            ),
        }
        row.update(self._read_gpm(index, handle))
        return row

    def _call(self, index: int, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Call one NVML getter; NotSupported is None quietly, other errors None with a warning."""
        nvml = self._nvml
        try:
            return fn(*args)
        except nvml.NVMLError_NotSupported:
            return None
        except nvml.NVMLError as exc:
            if (index, what) not in self._warned:
                self._warned.add((index, what))
                log.warning("GPU %d: reading %s failed (%s); sent as null", index, what, exc)
            return None

    # -- GPM (Hopper and later): SM activity, occupancy and DRAM bandwidth -------------------

    def _gpm_supported(self, handle: Any) -> bool:
        nvml = self._nvml
        if not hasattr(nvml, "nvmlGpmQueryDeviceSupport"):
            return False
        try:
            return bool(nvml.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice)
        except nvml.NVMLError:
            return False

    def _read_gpm(self, index: int, handle: Any) -> dict[str, float | None]:
        empty = {name: None for name, _ in GPM_FIELDS}
        if not self._gpm.get(index):
            return empty
        nvml = self._nvml
        try:
            previous = self._gpm_previous.get(index)
            if previous is None:
                # GPM metrics are rates between two samples: take a short first window.
                previous = nvml.nvmlGpmSampleGet(handle, nvml.nvmlGpmSampleAlloc())
                self._sleep(self._gpm_first_window_s)
            current = nvml.nvmlGpmSampleGet(handle, nvml.nvmlGpmSampleAlloc())
            values = self._gpm_metrics(previous, current)
            self._free(previous)
            self._gpm_previous[index] = current
            return values
        except nvml.NVMLError as exc:
            log.warning("GPU %d: GPM read failed (%s); GPM metrics off for it", index, exc)
            self._gpm[index] = False
            stale = self._gpm_previous.pop(index, None)
            if stale is not None:
                self._free(stale)
            return empty

    def _gpm_metrics(self, sample1: Any, sample2: Any) -> dict[str, float | None]:
        nvml = self._nvml
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(GPM_FIELDS)
        request.sample1 = sample1
        request.sample2 = sample2
        for slot, (_, constant) in enumerate(GPM_FIELDS):
            request.metrics[slot].metricId = getattr(nvml, constant)
        nvml.nvmlGpmMetricsGet(request)
        values: dict[str, float | None] = {}
        for slot, (name, _) in enumerate(GPM_FIELDS):
            metric = request.metrics[slot]
            ok = metric.nvmlReturn == nvml.NVML_SUCCESS
            values[name] = _clamp_ratio(metric.value / 100.0) if ok else None
        return values

    def _free(self, sample: Any) -> None:
        with contextlib.suppress(self._nvml.NVMLError):
            self._nvml.nvmlGpmSampleFree(sample)

    def _shutdown(self) -> None:
        with contextlib.suppress(self._nvml.NVMLError):
            self._nvml.nvmlShutdown()


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _clamp_ratio(value: float) -> float:
    return min(1.0, max(0.0, value))
