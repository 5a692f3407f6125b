"""The simulated host's settings (`python -m demo.agent`): profiles and the slowdown, from
flags, and what the command line builds from them."""

import json
import re

import pytest

from collectors.agent.config import ConfigError, build_config
from demo.agent import main, parse_profile_spec, simulator
from demo.engine_profile import EngineProfile


def config_for(services: list[str]):
    return build_config({"host": "gpu-01", "dry_run": True, "services": services}, {})


def test_profile_flags_set_each_services_profile(capsys, tmp_path):
    code = main(
        ["--host", "h", "--once", "--dry-run", "--service", "chat-7b", "--service", "mt",
         "--simulate-profile", "chat-7b:ttft_p50_ms=5000,ttft_p99_ms=6000",
         "--simulate-profile", "mt:output_tokens=700"],
        environ={"XDG_STATE_HOME": str(tmp_path)},
    )  # fmt: skip

    assert code == 0
    requests = json.loads(capsys.readouterr().out)["requests"]
    chat = [r for r in requests if r["service"] == "chat-7b"]
    assert chat and min(r["ttft_ms"] for r in chat) > 3000  # the default TTFT is ~200 ms


def test_a_profile_without_a_slug_belongs_to_the_only_service():
    assert parse_profile_spec("qps=3", ["chat-7b"]) == ("chat-7b", EngineProfile(qps=3))


@pytest.mark.parametrize(
    ("services", "given", "message"),
    [
        (["a", "b"], {"simulate_profiles": ["qps=3"]}, "several services given"),
        (["a"], {"simulate_profiles": ["b:qps=3"]}, "'b' is not one of the --service slugs"),
        (["a"], {"simulate_profiles": ["a:qps=3", "a:qps=4"]}, "simulate_profiles: 'a' has two"),
        (["a"], {"simulate_profiles": ["a:speed=3"]}, "'a:speed=3': 'speed=3': expected KEY="),
        (["a"], {"simulate_profiles": ["a:qps=-1"]}, "'a:qps=-1': qps: must be more than 0"),
        (["a"], {"simulate_slowdown_for": 60.0}, "simulate_slowdown_for: needs simulate_slowdown_"),
        (
            ["a"],
            {"simulate_slowdown_after": 1.0, "simulate_slowdown_for": 0.0},
            "simulate_slowdown_for: must be more than 0",
        ),
        (["a"], {"simulate_slowdown_after": -1.0}, "simulate_slowdown_after: must be 0 seconds"),
        (["a"], {"gpus": 65}, "gpus: between 0 and 64"),
        ([], {}, "simulate: needs at least one --service"),
    ],
)
def test_it_refuses_bad_simulation_settings_naming_them(services, given, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        simulator(config_for(services), given)


def test_the_simulator_from_the_settings_follows_profile_and_slowdown():
    sim = simulator(
        config_for(["a"]),
        {"simulate_profiles": ["a:qps=7,ttft_p50_ms=90"], "simulate_slowdown_after": 5.0,
         "simulate_slowdown_for": 10.0, "simulate_slowdown_factor": 3.0},
    )  # fmt: skip

    [engine] = sim.engines
    assert engine.profile == EngineProfile(qps=7, ttft_p50_ms=90)
    assert engine.base_qps == 7
    assert sim.planned is not None
    assert (sim.planned.factor, sim.planned.end - sim.planned.start) == (3.0, 10.0)


def test_the_command_line_refuses_a_bad_profile_with_exit_2(capsys):
    code = main(
        ["--service", "a", "--host", "h", "--dry-run", "--simulate-profile", "a:tpot_p50_ms=zero"],
        environ={},
    )

    assert code == 2
    assert "tpot_p50_ms: expected a number, got 'zero'" in capsys.readouterr().err
