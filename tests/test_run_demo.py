"""`make run`'s server: the embedded default with simulated agents and in-process jobs.

The e2e test runs the real commands in subprocesses on a throw-away SQLite file (the embedded
default, whatever DATABASE_URL the suite itself uses), so it checks what a newcomer gets. The
others check, in-process, that each simulated agent follows its service's baseline and stays
under its SLOs, and that a regression goes to the first agent only.
"""

import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
from django.core.management import CommandError, call_command

from collectors.agent.config import build_config
from dashboards.management.commands.run_demo import agent_command
from demo.agent import SIMULATION, build_parser, simulator
from demo.profile import SLO_HEADROOM, demo_profile
from demo.simulator import Simulator
from deploy.stack import free_port
from dossiers.services import baseline_record
from tests.demo_values import measured

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def demo_env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(PERFHUB_VAR_DIR=str(tmp_path), DEBUG="1")
    # No back-filled history: the test is about what the simulated agents bring live.
    for args in (["migrate", "--no-input", "-v0"], ["seed_demo", "--history-days", "0"]):
        subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True
        )
    return env


def _manage_output(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout.strip()


@pytest.mark.e2e
def test_the_demo_fills_a_service_series_within_a_minute(demo_env):
    token = _manage_output(demo_env, "create_agent_token", "--host", "reader")
    port = free_port()
    command = ["run_demo", "--addr", f"127.0.0.1:{port}", "--interval", "1", "--jobs-every", "2"]
    server = subprocess.Popen(
        [sys.executable, "manage.py", *command],
        cwd=ROOT,
        env=demo_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/api/v1/services/support-chat-7b/metrics/"
    count = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and count == 0:
            time.sleep(2)
            try:
                answer = requests.get(url, headers={"Authorization": f"Token {token}"}, timeout=15)
            except (requests.ConnectionError, requests.Timeout):
                continue  # not up yet, or a loaded machine: ask again until the deadline
            if answer.status_code == 200:
                e2e = answer.json()["overall_latency_ms"]["e2e"]
                count = next(p["count"] for p in e2e if p["q"] == 0.99)
    finally:
        server.terminate()
        output = server.communicate(timeout=20)[0].decode(errors="replace")
    assert count > 0, output[-3000:]


# --------------------------------------------------------------------------------------------
# The simulated agents' profiles (in-process)


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _baseline(service, **kwargs):
    fields = {
        "ttft": (85, 420), "tpot": (12.5, 21), "e2e_p99": 1600, "prompt_tokens": 350,
        "output_tokens": 48, "request_rate": 24, **kwargs,
    }  # fmt: skip
    return baseline_record(
        service=service,
        label="Capacity",
        measured_at=datetime(2026, 1, 5, tzinfo=UTC),
        make_current=True,
        **measured(**fields),
    )


def test_a_demo_profile_follows_the_current_baseline(service):
    _baseline(service)

    profile = demo_profile(service)

    assert (profile.ttft_p50_ms, profile.tpot_p50_ms) == (85, 12.5)
    assert (profile.prompt_tokens, profile.output_tokens) == (350, 48)
    assert (profile.ttft_p99_ms, profile.e2e_p99_ms) == (420, 1600)  # as measured: under the SLOs
    assert profile.tpot_p99_ms == 21  # well under the 50 ms SLO
    assert profile.qps == 24 * service.replicas  # one simulated host stands for every replica


def test_a_demo_profile_holds_each_p99_under_its_slo(service):
    _baseline(service, ttft=(85, 900), tpot=(30, 70), e2e_p99=2600)  # all three above

    profile = demo_profile(service)

    assert profile.ttft_p99_ms == SLO_HEADROOM * service.slo_p99_ttft_ms
    assert profile.tpot_p99_ms == SLO_HEADROOM * service.slo_p99_tpot_ms
    assert profile.e2e_p99_ms == SLO_HEADROOM * service.slo_p99_e2e_ms


def test_a_service_without_a_baseline_has_no_demo_profile(service):
    assert demo_profile(service) is None


def test_the_first_agent_gets_the_profile_and_the_bounded_slowdown(service, tmp_path):
    _baseline(service)

    argv = agent_command(
        host="demo-gpu-01", service=service, addr="127.0.0.1:8000", interval=5.0,
        spool=tmp_path, slowdown=(120.0, 600.0),
    )  # fmt: skip
    assert argv[1:3] == ["-m", "demo.agent"]
    args = vars(build_parser().parse_args(argv[3:]))
    settings = {name: args.pop(name) for name in SIMULATION}
    sim = simulator(build_config(args, {"PERFHUB_TOKEN": "t"}), settings)

    assert sim.engines[0].profile == demo_profile(service)
    assert sim.planned is not None
    assert sim.planned.end - sim.planned.start == 600.0
    assert len(sim.step()[0]) == service.total_gpus


def test_other_agents_get_no_slowdown(service, tmp_path):
    argv = agent_command(
        host="demo-gpu-02", service=service, addr="127.0.0.1:8000", interval=5.0, spool=tmp_path
    )

    assert not any(arg.startswith("--simulate-slowdown") for arg in argv)


def test_run_demo_refuses_a_slowdown_end_without_a_start(db):
    with pytest.raises(CommandError, match="--slowdown-for needs --slowdown-after"):
        call_command("run_demo", "--slowdown-for", "600")


@pytest.fixture
def demo_services(demo_fleet, db):
    return demo_fleet.services


def _simulate(service, start: datetime, seconds: float) -> list[dict]:
    """The requests an agent following `demo_profile(service)` sends, in 5-second batches."""
    clock = _Clock(start.timestamp())
    profiles = {service.slug: demo_profile(service)}
    sim = Simulator(host="h", services=[service.slug], profiles=profiles, seed=1, clock=clock)
    rows = []
    for _ in range(round(seconds / 5)):
        clock.now += 5.0
        rows += [r for r in sim.step()[2] if r["ok"]]
    return rows


@pytest.mark.parametrize("slug", ["support-chat-7b", "translate-mixtral"])
def test_a_simulated_demo_service_stays_under_its_slos_at_the_daily_peak(demo_services, slug):
    service = demo_services[slug]
    busiest = datetime(2026, 3, 2, 14, 22, tzinfo=UTC)  # the simulator's afternoon peak

    rows = _simulate(service, busiest, 300.0)  # a default rule's window

    for metric in ("e2e", "ttft", "tpot"):
        p99 = statistics.quantiles([r[f"{metric}_ms"] for r in rows], n=100)[98]
        assert p99 < service.slo_for(metric), metric


def test_a_simulated_demo_service_sits_near_its_baseline_medians(demo_services):
    service = demo_services["support-chat-7b"]
    baseline = service.baselines.get(is_current=True)

    rows = _simulate(service, datetime(2026, 3, 2, 8, 30, tzinfo=UTC), 120.0)

    for metric in ("e2e", "ttft", "tpot"):
        median = statistics.median(r[f"{metric}_ms"] for r in rows)
        assert median == pytest.approx(baseline.latency(metric, "p50"), rel=0.1), metric


SEAM = datetime(2026, 3, 2, 14, 30, tzinfo=UTC)


def _simulator(service, **kwargs) -> tuple[Simulator, _Clock]:
    """The agent `run_demo` starts for `service`, starting where the seeded history ends."""
    clock = _Clock(SEAM.timestamp())
    profiles = {service.slug: demo_profile(service)}
    return Simulator(host="h", services=[service.slug], profiles=profiles, seed=1, clock=clock,
                     **kwargs), clock  # fmt: skip


def _live_minutes(service, seconds: float = 300.0):
    """The simulated agent's first `seconds`: GPU rows, the KV-cache gauge and the requests."""
    sim, clock = _simulator(service, gpus=2)
    gpus, kv, requests = [], [], []
    for _ in range(round(seconds / 5)):
        clock.now += 5.0
        rows, _, finished = sim.step()
        gpus += rows
        requests += finished
        kv.append(sim.engines[0].kv_usage)
    return gpus, kv, requests


@pytest.fixture
def seeded_chat(demo_services):
    """The seeded history's last minute before the seam, as `seed_demo` writes it (unsaved)."""
    import random

    from collectors.models import MINUTE, Host
    from demo.history import _gpu_rows, _row

    service = demo_services["support-chat-7b"]
    baseline = service.baselines.get(is_current=True)
    host, rate = Host(name="seam-host"), baseline.qps * service.replicas
    t = SEAM.replace(minute=29)
    row = _row(service, host, baseline, MINUTE, t, rate, None, random.Random(1),
               demo_profile(service))  # fmt: skip
    return service, row, _gpu_rows(host, 2, MINUTE, t, baseline, random.Random(1))


def test_live_kv_cache_continues_the_seeded_history_without_a_step(seeded_chat):
    service, last, _ = seeded_chat
    _, kv, _ = _live_minutes(service)
    assert statistics.fmean(kv) == pytest.approx(last.kv_cache_mean, rel=0.15)


@pytest.mark.parametrize(("column", "key"), [("util_mean", "util"),
                                             ("sm_active_mean", "sm_active"),
                                             ("dram_active_mean", "dram_active")])  # fmt: skip
def test_live_gpu_shares_continue_the_seeded_history_without_a_step(seeded_chat, column, key):
    service, _, gpu = seeded_chat
    rows, _, _ = _live_minutes(service)
    seeded = statistics.fmean(getattr(g, column) for g in gpu)
    assert statistics.fmean(r[key] for r in rows) == pytest.approx(seeded, rel=0.05)


def test_live_traffic_continues_the_seeded_rate_and_lengths(seeded_chat):
    service, last, _ = seeded_chat
    _, _, rows = _live_minutes(service)
    assert len(rows) / 300.0 == pytest.approx(last.requests / 60.0, rel=0.05)
    assert statistics.fmean(r["output_tokens"] for r in rows) == pytest.approx(
        last.output_tokens / last.requests, rel=0.05
    )


@pytest.mark.parametrize(
    "slug",
    ["support-chat-7b", "doc-summarizer", "code-review-13b", "rag-answers-70b",
     "safety-guard-8b", "translate-mixtral"],
)  # fmt: skip
def test_each_demo_agent_scrapes_its_services_own_engine(demo_services, slug, tmp_path):
    """vLLM, Triton, TGI, SGLang, TGI, vLLM: the agent `run_demo` starts writes the engine the
    dossier names, and PerfHub's parser for that engine reads its finished requests."""
    from collectors.exposition import parse

    service = demo_services[slug]
    argv = agent_command(
        host="demo-gpu-01", service=service, addr="127.0.0.1:8000", interval=5.0, spool=tmp_path
    )
    args = vars(build_parser().parse_args(argv[3:]))
    settings = {name: args.pop(name) for name in SIMULATION}
    sim = simulator(build_config(args, {"PERFHUB_TOKEN": "t"}), settings)
    _, [scrape], _ = sim.step()

    assert scrape["source"] == service.engine
    assert parse(scrape["exposition"], scrape["source"]).counter_total("requests_finished") > 0


def test_an_agent_finishes_no_request_before_the_seeded_history_ends(service, tmp_path):
    _baseline(service)
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=3)
    argv = agent_command(
        host="demo-gpu-01", service=service, addr="127.0.0.1:8000", interval=5.0,
        spool=tmp_path, since=since,
    )  # fmt: skip
    args = vars(build_parser().parse_args(argv[3:]))
    settings = {name: args.pop(name) for name in SIMULATION}
    sim = simulator(build_config(args, {"PERFHUB_TOKEN": "t"}), settings)

    finished = [datetime.fromisoformat(r["ts"]) for r in sim.step()[2]]
    assert finished and min(finished) >= since
