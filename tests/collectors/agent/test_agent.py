import logging
import threading

from collectors.agent.agent import Agent
from collectors.agent.config import build_config
from collectors.agent.push import Delivery, Pusher
from collectors.agent.spool import Spool
from tests.factories.agent import TOKEN, simulated

from .contract import contract_errors


def test_without_a_driver_it_logs_once_and_still_sends_the_scrapes(
    metrics_server, vllm_text, caplog
):
    url, pages = metrics_server
    pages.pages["/metrics"] = (200, vllm_text)
    config = build_config(
        {"host": "gpu-01", "dry_run": True, "services": ["chat-7b"],
         "engines": [f"vllm={url}/metrics"], "dcgm": f"{url}/missing"},
        {},
    )  # fmt: skip
    agent = Agent(config)  # the real NVML reader: no driver on this machine

    with caplog.at_level(logging.INFO, logger="collectors.agent"):
        first, second = agent.collect(), agent.collect()

    assert first["gpus"] == [] and second["gpus"] == []
    assert [(s["source"], s["exposition"]) for s in first["scrapes"]] == [("vllm", vllm_text)]
    assert contract_errors(first) == []
    gpu_lines = [r for r in caplog.records if "GPU collection off" in r.getMessage()]
    assert len(gpu_lines) == 1
    assert "no NVIDIA driver" in gpu_lines[0].getMessage()


def test_its_loop_delivers_every_batch_in_order_through_an_outage(ingest, tmp_path):
    url, state = ingest
    state.fail_first = 3
    config = build_config(
        {"host": "gpu-01", "server": url, "token": TOKEN, "interval": 0.02,
         "services": ["chat-7b"], "spool_dir": str(tmp_path)},
        {},
    )  # fmt: skip
    delivery = Delivery(
        Pusher(config.ingest_url, TOKEN, timeout=2),
        Spool(tmp_path, config.spool_max_bytes),
        backoff_base_s=0.01,
        backoff_max_s=0.05,
    )
    collected: list[str] = []
    agent = Agent(config, delivery=delivery, source=simulated(config, gpus=1))

    agent.run(threading.Event(), on_batch=lambda b: collected.append(b["batch_id"]), max_ticks=8)
    delivery.drain()

    assert len(collected) == 8
    assert state.stored == collected
    assert state.duplicates == 0
    assert len(delivery.spool) == 0


def test_its_loop_stops_when_asked(tmp_path):
    config = build_config(
        {"host": "gpu-01", "dry_run": True, "interval": 0.01,
         "services": ["chat-7b"]},
        {},
    )  # fmt: skip
    stop = threading.Event()
    ticks: list[dict] = []

    def on_batch(batch: dict) -> None:
        ticks.append(batch)
        if len(ticks) == 3:
            stop.set()

    Agent(config, source=simulated(config)).run(stop, on_batch=on_batch)

    assert len(ticks) == 3


class FlakyDelivery:
    """Delivery whose first submit fails like a full disk would."""

    retry_at = None

    def __init__(self) -> None:
        self.submitted: list[str] = []

    def retry_due(self) -> bool:
        return False

    def submit(self, batch: dict):
        if not self.submitted:
            self.submitted.append("failed")
            raise OSError(28, "No space left on device")
        self.submitted.append(batch["batch_id"])


def test_its_loop_survives_a_failing_tick_and_logs_it(caplog):
    config = build_config(
        {"host": "gpu-01", "dry_run": True, "interval": 0.01,
         "services": ["chat-7b"]},
        {},
    )  # fmt: skip
    delivery = FlakyDelivery()

    with caplog.at_level(logging.ERROR, logger="collectors.agent"):
        Agent(config, delivery=delivery, source=simulated(config)).run(
            threading.Event(), max_ticks=3
        )

    assert len(delivery.submitted) == 3
    assert "collecting or delivering a batch failed" in caplog.records[0].getMessage()
