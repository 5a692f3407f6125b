import logging

import pynvml
import pytest

from collectors.agent.nvml import NvmlReader

from .fake_nvml import FakeDevice, FakeNvml

HOPPER_GPM = {
    pynvml.NVML_GPM_METRIC_SM_UTIL: 31.0,
    pynvml.NVML_GPM_METRIC_SM_OCCUPANCY: 22.5,
    pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL: 72.0,
}


def reader_for(*devices: FakeDevice, **kwargs) -> tuple[NvmlReader, FakeNvml]:
    fake = FakeNvml(list(devices), **kwargs)
    return NvmlReader(fake, sleep=lambda _s: None), fake


def test_it_converts_nvml_units_to_the_contracts():
    reader, _ = reader_for(FakeDevice())

    [gpu] = reader.read()

    assert gpu["util"] == pytest.approx(0.97)
    assert gpu["mem_util"] == pytest.approx(0.61)
    assert gpu["power_w"] == pytest.approx(612.4)  # from 612400 mW
    assert gpu["mem_used_bytes"] == 77_720_453_120
    assert gpu["mem_total_bytes"] == 85_520_809_984
    assert gpu["temp_c"] == 61
    assert gpu["sm_clock_mhz"] == 1980


def test_it_reports_identity_as_text_even_when_nvml_returns_bytes():
    reader, _ = reader_for(
        FakeDevice(uuid="GPU-abc"), FakeDevice(uuid="GPU-def", name="NVIDIA A100")
    )

    gpus = reader.read()

    assert [(g["index"], g["uuid"], g["name"]) for g in gpus] == [
        (0, "GPU-abc", "NVIDIA H100 80GB HBM3"),
        (1, "GPU-def", "NVIDIA A100"),
    ]


def test_it_sends_unsupported_metrics_as_null_not_zero():
    reader, _ = reader_for(FakeDevice(util_percent=None, power_mw=None, temp_c=None))

    [gpu] = reader.read()

    assert gpu["util"] is None
    assert gpu["mem_util"] is None
    assert gpu["power_w"] is None
    assert gpu["temp_c"] is None
    assert gpu["mem_used_bytes"] == 77_720_453_120


def test_it_sends_null_and_warns_once_when_a_read_fails_otherwise(caplog):
    reader, _ = reader_for(FakeDevice(sm_clock_mhz=-1))  # the fake raises GpuIsLost

    with caplog.at_level(logging.WARNING, logger="collectors.agent"):
        first = reader.read()[0]
        second = reader.read()[0]

    assert first["sm_clock_mhz"] is None and second["sm_clock_mhz"] is None
    assert [r.getMessage() for r in caplog.records] == [
        "GPU 0: reading sm_clock failed (GPU is lost); sent as null"
    ]


def test_it_leaves_gpm_metrics_null_on_a_gpu_without_gpm():
    reader, fake = reader_for(FakeDevice(name="NVIDIA A100-SXM4-80GB"))

    [gpu] = reader.read()

    assert (gpu["sm_active"], gpu["sm_occupancy"], gpu["dram_active"]) == (None, None, None)
    assert fake.samples_alloc == 0


def test_it_reads_sm_activity_occupancy_and_dram_bandwidth_through_gpm_on_hopper():
    reader, fake = reader_for(FakeDevice(gpm_percent=HOPPER_GPM))

    [gpu] = reader.read()

    assert gpu["sm_active"] == pytest.approx(0.31)
    assert gpu["sm_occupancy"] == pytest.approx(0.225)
    assert gpu["dram_active"] == pytest.approx(0.72)
    assert fake.metrics_requests == [
        [
            pynvml.NVML_GPM_METRIC_SM_UTIL,
            pynvml.NVML_GPM_METRIC_SM_OCCUPANCY,
            pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL,
        ]
    ]


def test_it_measures_gpm_over_the_interval_keeping_one_sample_between_reads():
    reader, fake = reader_for(FakeDevice(gpm_percent=HOPPER_GPM))

    reader.read()
    reader.read()
    reader.read()

    # 2 samples for the first window, then one per read; all but the kept one freed.
    assert fake.samples_alloc == 4
    assert fake.samples_freed == 3
    reader.close()
    assert fake.samples_freed == 4
    assert fake.shutdown_calls == 1


def test_it_sends_null_for_a_gpm_metric_the_gpu_does_not_support():
    device = FakeDevice(
        gpm_percent=HOPPER_GPM, gpm_unsupported_metrics={pynvml.NVML_GPM_METRIC_SM_OCCUPANCY}
    )
    reader, _ = reader_for(device)

    [gpu] = reader.read()

    assert gpu["sm_occupancy"] is None
    assert gpu["sm_active"] == pytest.approx(0.31)


@pytest.mark.parametrize(
    "error", [pynvml.NVMLError_DriverNotLoaded, pynvml.NVMLError_LibraryNotFound]
)
def test_it_turns_gpu_collection_off_with_one_log_line_without_a_driver(caplog, error):
    reader, fake = reader_for(FakeDevice(), init_error=error)

    with caplog.at_level(logging.INFO, logger="collectors.agent"):
        assert reader.read() == []
        assert reader.read() == []

    assert fake.init_calls == 1
    assert len(caplog.records) == 1
    assert "GPU collection off: no NVIDIA driver" in caplog.records[0].getMessage()


def test_it_finds_no_driver_on_this_machine_with_the_real_pynvml(caplog):
    reader = NvmlReader()  # the real module: this machine has no NVIDIA driver

    with caplog.at_level(logging.INFO, logger="collectors.agent"):
        gpus = [reader.read(), reader.read()]

    assert gpus == [[], []]
    assert reader.available is False
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "GPU collection off: no NVIDIA driver on this host "
        "(NVML: NVML Shared Library Not Found); scrapes go on"
    )
