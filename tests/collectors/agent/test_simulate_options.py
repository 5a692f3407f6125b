"""The simulator's settings: profiles and the slowdown's end, from flags, the environment and the
config file, and what the command line builds from them."""

import json
import re

import pytest

from collectors.agent.cli import build_parser, main
from collectors.agent.config import ConfigError, build_config, parse_profile_spec
from collectors.agent.simulate import EngineProfile, Simulator

SIM = {"host": "gpu-01", "dry_run": True, "simulate": True}


def flags(argv: list[str]) -> dict:
    return vars(build_parser().parse_args(argv))


def test_a_profile_flag_sets_a_services_profile():
    config = build_config(
        flags(
            ["--host", "h", "--dry-run", "--simulate", "--service", "chat-7b", "--service", "mt",
             "--simulate-profile", "chat-7b:ttft_p50_ms=85,tpot_p50_ms=12.5,qps=24",
             "--simulate-profile", "mt:output_tokens=700"]
        ),
        {},
    )  # fmt: skip

    assert config.simulate_profiles == {
        "chat-7b": EngineProfile(ttft_p50_ms=85, tpot_p50_ms=12.5, qps=24),
        "mt": EngineProfile(output_tokens=700),
    }


def test_a_profile_without_a_slug_belongs_to_the_only_service():
    assert parse_profile_spec("qps=3", ["chat-7b"]) == ("chat-7b", EngineProfile(qps=3))


def test_the_environment_separates_profiles_with_semicolons_or_spaces():
    env = {"PERFHUB_SIMULATE_PROFILES": "a:qps=3,output_tokens=40; b:qps=4 "}

    config = build_config({**SIM, "services": ["a", "b"]}, env)

    assert config.simulate_profiles == {
        "a": EngineProfile(qps=3, output_tokens=40),
        "b": EngineProfile(qps=4),
    }


def test_a_toml_file_gives_profiles_as_strings_or_tables(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text(
        'host = "h"\ndry_run = true\nsimulate = true\nservices = ["a", "b"]\n'
        "simulate_slowdown_after = 60\nsimulate_slowdown_for = 600\n"
        'simulate_profiles = ["a:qps=3",\n'
        '  { service = "b", qps = 5.5, e2e_p99_ms = 24000, output_tokens = 700 }]\n'
    )

    config = build_config({"config": str(path)}, {})

    assert config.simulate_profiles["b"] == EngineProfile(
        qps=5.5, e2e_p99_ms=24000, output_tokens=700
    )
    assert (config.simulate_slowdown_after, config.simulate_slowdown_for) == (60.0, 600.0)


def test_a_json_file_takes_a_single_profile_string(tmp_path):
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({**SIM, "services": ["a"], "simulate_profiles": "a:qps=2"}))

    assert build_config({"config": str(path)}, {}).simulate_profiles == {"a": EngineProfile(qps=2)}


def test_the_slowdown_end_comes_from_the_environment_too():
    env = {"PERFHUB_SIMULATE_SLOWDOWN_AFTER": "30", "PERFHUB_SIMULATE_SLOWDOWN_FOR": "90"}

    config = build_config({**SIM, "services": ["a"]}, env)

    assert (config.simulate_slowdown_after, config.simulate_slowdown_for) == (30.0, 90.0)


@pytest.mark.parametrize(
    ("services", "cli", "message"),
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
    ],
)
def test_it_refuses_bad_simulation_settings_naming_them(services, cli, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        build_config({**SIM, "services": services, **cli}, {})


def test_the_simulator_from_the_settings_follows_profile_and_slowdown():
    config = build_config(
        {**SIM, "services": ["a"], "simulate_profiles": ["a:qps=7,ttft_p50_ms=90"],
         "simulate_slowdown_after": 5.0, "simulate_slowdown_for": 10.0,
         "simulate_slowdown_factor": 3.0},
        {},
    )  # fmt: skip

    sim = Simulator.from_config(config)

    [engine] = sim.engines
    assert engine.profile == EngineProfile(qps=7, ttft_p50_ms=90)
    assert engine.base_qps == 7
    assert sim.planned is not None
    assert (sim.planned.factor, sim.planned.end - sim.planned.start) == (3.0, 10.0)


def test_the_command_line_simulates_with_the_profile(capsys, tmp_path):
    code = main(
        ["--simulate", "--service", "chat-7b", "--host", "h", "--once", "--dry-run",
         "--simulate-profile", "chat-7b:ttft_p50_ms=5000,ttft_p99_ms=6000"],
        environ={"XDG_STATE_HOME": str(tmp_path)},
    )  # fmt: skip

    assert code == 0
    requests = json.loads(capsys.readouterr().out)["requests"]
    assert requests
    assert min(r["ttft_ms"] for r in requests) > 3000  # the default profile's TTFT is ~200 ms


def test_the_command_line_refuses_a_bad_profile_with_exit_2(capsys):
    code = main(
        ["--simulate", "--service", "a", "--host", "h", "--dry-run",
         "--simulate-profile", "a:tpot_p50_ms=zero"],
        environ={},
    )  # fmt: skip

    assert code == 2
    assert "tpot_p50_ms: expected a number, got 'zero'" in capsys.readouterr().err
