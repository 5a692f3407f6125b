"""A simulated GPU host: the real agent (`collectors.agent`), observing the simulator instead
of NVML. Takes every agent option plus the simulation's:

    python -m demo.agent --service chat-7b --host demo-gpu-01 --server URL --token T \\
        [--gpus N] [--simulate-profile SLUG:KEY=VALUE,...] [--simulate-slowdown-after S ...]

This is the one module that joins the agent and the demo: the server starts it as a process
(`run_demo`) and imports neither it nor the agent; the agent imports no demo code.
"""

from __future__ import annotations

import argparse
from typing import Any

from collectors.agent import cli
from collectors.agent.config import AgentConfig, ConfigError, build_config, service_for
from demo.engine_profile import EngineProfile, ProfileError
from demo.simulator import Simulator
from demo.simulator.expositions import SIMULATED_ENGINES

# The simulation's settings and their defaults; everything else is the agent's.
SIMULATION = {
    "gpus": 2,
    "simulate_qps": 12.0,
    "simulate_profiles": [],
    "simulate_engines": [],
    "simulate_slowdown_after": None,
    "simulate_slowdown_for": None,
    "simulate_slowdown_factor": 4.0,
    "simulate_slowdown_share": 0.1,
    "simulate_since": None,
}


def build_parser() -> argparse.ArgumentParser:
    p = cli.build_parser()
    p.prog = "python -m demo.agent"
    g = p.add_argument_group("simulation (demo and tests)")
    g.add_argument("--gpus", type=int, metavar="N", help="simulated GPUs (default 2)")
    g.add_argument(
        "--simulate-qps",
        type=float,
        metavar="QPS",
        help="mean request rate per service (default 12)",
    )
    g.add_argument(
        "--simulate-profile",
        dest="simulate_profiles",
        action="append",
        metavar="[SLUG:]KEY=VALUE,...",
        help="what a service's fake engine serves: qps, ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, "
        "tpot_p99_ms, e2e_p99_ms, prompt_tokens, output_tokens; repeatable, one per service",
    )
    g.add_argument(
        "--simulate-engine",
        dest="simulate_engines",
        action="append",
        metavar="[SLUG:]ENGINE",
        help=f"the engine whose /metrics a service's fake engine writes: "
        f"{', '.join(SIMULATED_ENGINES)} (default vllm); repeatable, one per service",
    )
    g.add_argument(
        "--simulate-slowdown-after",
        type=float,
        metavar="SECONDS",
        help="inject a P99 regression this long after start",
    )
    g.add_argument(
        "--simulate-slowdown-for",
        type=float,
        metavar="SECONDS",
        help="end the regression after this long (default: it lasts)",
    )
    g.add_argument(
        "--simulate-slowdown-factor",
        type=float,
        metavar="X",
        help="how much slower the slowed requests are (default 4)",
    )
    g.add_argument(
        "--simulate-slowdown-share",
        type=float,
        metavar="P",
        help="share of requests slowed, 0-1 (default 0.1: the tail moves)",
    )
    g.add_argument(
        "--simulate-since",
        type=float,
        metavar="EPOCH",
        help="the engines start at this time (epoch seconds; default 10 s before the agent): "
        "no request finishes before it (run_demo passes where the seeded history ends)",
    )
    return p


def parse_profile_spec(spec: str, services: list[str]) -> tuple[str, EngineProfile]:
    """`[SLUG:]KEY=VALUE,...`, e.g. `chat-7b:ttft_p50_ms=85,tpot_p50_ms=12.5,qps=24`.

    Without `SLUG:` the profile belongs to the only `--service`.
    """
    head, sep, rest = spec.partition(":")
    if sep and "=" not in head:
        slug, body = head.strip(), rest
    else:
        slug, body = "", spec
    service = service_for(slug, services, what=f"simulate_profile {spec!r}")
    if service not in services:
        raise ConfigError(
            f"simulate_profile {spec!r}: {service!r} is not one of the --service slugs"
        )
    try:
        return service, EngineProfile.parse(body)
    except ProfileError as exc:
        raise ConfigError(f"simulate_profile {spec!r}: {exc}") from None


def parse_engine_spec(spec: str, services: list[str]) -> tuple[str, str]:
    """`[SLUG:]ENGINE`, e.g. `rag-70b:sglang`; without `SLUG:`, the only `--service`'s."""
    head, sep, rest = spec.rpartition(":")
    slug, engine = (head.strip(), rest.strip()) if sep else ("", spec.strip())
    service = service_for(slug, services, what=f"simulate_engine {spec!r}")
    if service not in services:
        raise ConfigError(
            f"simulate_engine {spec!r}: {service!r} is not one of the --service slugs"
        )
    if engine not in SIMULATED_ENGINES:
        raise ConfigError(
            f"simulate_engine {spec!r}: the simulator writes {', '.join(SIMULATED_ENGINES)}"
        )
    return service, engine


def simulator(config: AgentConfig, settings: dict[str, Any]) -> Simulator:
    """The simulator the `--gpus` and `--simulate-*` settings describe, for the agent's
    `--service`s; ConfigError naming the setting when one is wrong."""
    s = {**SIMULATION, **{k: v for k, v in settings.items() if v is not None}}
    if not config.services:
        raise ConfigError("simulate: needs at least one --service SLUG for the fake engine")
    if not 0 <= s["gpus"] <= 64:
        raise ConfigError("gpus: between 0 and 64")
    if s["simulate_qps"] <= 0:
        raise ConfigError("simulate_qps: must be more than 0")
    if s["simulate_slowdown_factor"] <= 0:
        raise ConfigError("simulate_slowdown_factor: must be more than 0")
    if not 0 <= s["simulate_slowdown_share"] <= 1:
        raise ConfigError("simulate_slowdown_share: between 0 and 1")
    after, duration = s["simulate_slowdown_after"], s["simulate_slowdown_for"]
    if after is not None and after < 0:
        raise ConfigError("simulate_slowdown_after: must be 0 seconds or more")
    if duration is not None and duration <= 0:
        raise ConfigError("simulate_slowdown_for: must be more than 0 seconds")
    if duration is not None and after is None:
        raise ConfigError(
            "simulate_slowdown_for: needs simulate_slowdown_after (when the regression starts)"
        )
    profiles: dict[str, EngineProfile] = {}
    for spec in s["simulate_profiles"]:
        slug, profile = parse_profile_spec(spec, config.services)
        if slug in profiles:
            raise ConfigError(f"simulate_profiles: {slug!r} has two profiles")
        profiles[slug] = profile
    engines: dict[str, str] = {}
    for spec in s["simulate_engines"]:
        slug, engine = parse_engine_spec(spec, config.services)
        if slug in engines:
            raise ConfigError(f"simulate_engines: {slug!r} has two engines")
        engines[slug] = engine
    return Simulator(
        host=config.host,
        services=config.services,
        gpus=s["gpus"],
        qps=s["simulate_qps"],
        profiles=profiles,
        engines=engines,
        slowdown_after=after,
        slowdown_for=duration,
        slowdown_factor=s["simulate_slowdown_factor"],
        slowdown_share=s["simulate_slowdown_share"],
        start_at=s["simulate_since"],
    )


def main(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> int:
    args = vars(build_parser().parse_args(argv))
    settings = {name: args.pop(name) for name in SIMULATION}
    try:
        config = build_config(args, environ)
        source = simulator(config, settings)
    except ConfigError as exc:
        return cli.config_error(exc)
    return cli.run(config, source=source)


if __name__ == "__main__":
    raise SystemExit(main())
