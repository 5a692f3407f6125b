"""A stand-in for the `pynvml` module: the real error classes and ctypes structs, fake devices.

Injected into `NvmlReader(nvml=...)`, it lets the GPU path run on a machine without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml


@dataclass
class FakeDevice:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-5d1c-4f2e-9a7b-0c0000000000"
    util_percent: int | None = 97
    mem_util_percent: int = 61
    mem_used: int = 77_720_453_120
    mem_total: int = 85_520_809_984
    power_mw: int | None = 612_400
    temp_c: int | None = 61
    sm_clock_mhz: int | None = 1980
    # GPM (Hopper): percent 0-100 per metric id; None means not a GPM device.
    gpm_percent: dict[int, float] | None = None
    gpm_unsupported_metrics: set[int] = field(default_factory=set)


class FakeNvml:
    """Module-like: attributes named as in pynvml."""

    NVMLError = pynvml.NVMLError
    NVMLError_NotSupported = pynvml.NVMLError_NotSupported
    NVMLError_LibraryNotFound = pynvml.NVMLError_LibraryNotFound
    NVMLError_DriverNotLoaded = pynvml.NVMLError_DriverNotLoaded
    NVMLError_GpuIsLost = pynvml.NVMLError_GpuIsLost
    NVML_SUCCESS = pynvml.NVML_SUCCESS
    NVML_ERROR_NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM
    NVML_GPM_METRIC_SM_UTIL = pynvml.NVML_GPM_METRIC_SM_UTIL
    NVML_GPM_METRIC_SM_OCCUPANCY = pynvml.NVML_GPM_METRIC_SM_OCCUPANCY
    NVML_GPM_METRIC_DRAM_BW_UTIL = pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL
    NVML_GPM_METRICS_GET_VERSION = pynvml.NVML_GPM_METRICS_GET_VERSION
    # The real ctypes struct: the reader's field assignments are checked by ctypes itself.
    c_nvmlGpmMetricsGet_t = pynvml.c_nvmlGpmMetricsGet_t

    def __init__(self, devices: list[FakeDevice], init_error: type | None = None) -> None:
        self.devices = devices
        self.init_error = init_error
        self.init_calls = 0
        self.shutdown_calls = 0
        self.samples_alloc = 0
        self.samples_freed = 0
        self.metrics_requests: list[list[int]] = []

    def nvmlInit(self) -> None:
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error()

    def nvmlShutdown(self) -> None:
        self.shutdown_calls += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeDevice:
        return self.devices[index]

    def nvmlDeviceGetName(self, handle: FakeDevice) -> str:
        return handle.name

    def nvmlDeviceGetUUID(self, handle: FakeDevice) -> bytes:
        return handle.uuid.encode()  # older pynvml returned bytes

    def nvmlDeviceGetUtilizationRates(self, handle: FakeDevice) -> Any:
        if handle.util_percent is None:
            raise pynvml.NVMLError_NotSupported()
        return SimpleNamespace(gpu=handle.util_percent, memory=handle.mem_util_percent)

    def nvmlDeviceGetMemoryInfo(self, handle: FakeDevice) -> Any:
        return SimpleNamespace(used=handle.mem_used, total=handle.mem_total, free=0)

    def nvmlDeviceGetPowerUsage(self, handle: FakeDevice) -> int:
        return _or_not_supported(handle.power_mw)

    def nvmlDeviceGetTemperature(self, handle: FakeDevice, sensor: int) -> int:
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return _or_not_supported(handle.temp_c)

    def nvmlDeviceGetClockInfo(self, handle: FakeDevice, clock: int) -> int:
        assert clock == pynvml.NVML_CLOCK_SM
        if handle.sm_clock_mhz == -1:
            raise pynvml.NVMLError_GpuIsLost()
        return _or_not_supported(handle.sm_clock_mhz)

    def nvmlGpmQueryDeviceSupport(self, handle: FakeDevice) -> Any:
        return SimpleNamespace(isSupportedDevice=int(handle.gpm_percent is not None))

    def nvmlGpmSampleAlloc(self) -> Any:
        self.samples_alloc += 1
        return pynvml.c_nvmlGpmSample_t()

    def nvmlGpmSampleFree(self, sample: Any) -> None:
        self.samples_freed += 1

    def nvmlGpmSampleGet(self, handle: FakeDevice, sample: Any) -> Any:
        self._last_gpm_device = handle
        return sample

    def nvmlGpmMetricsGet(self, request: Any) -> Any:
        assert request.version == pynvml.NVML_GPM_METRICS_GET_VERSION
        device = self._last_gpm_device
        ids = [request.metrics[i].metricId for i in range(request.numMetrics)]
        self.metrics_requests.append(ids)
        for i, metric_id in enumerate(ids):
            if metric_id in device.gpm_unsupported_metrics:
                request.metrics[i].nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
                request.metrics[i].value = 0.0
            else:
                request.metrics[i].nvmlReturn = pynvml.NVML_SUCCESS
                request.metrics[i].value = device.gpm_percent[metric_id]
        return request


def _or_not_supported(value: int | None) -> int:
    if value is None:
        raise pynvml.NVMLError_NotSupported()
    return value
