"""Command line: `python -m collectors.agent --server URL --token T --host H [...]`.

Exit codes: 0 done (or stopped by a signal), 2 bad settings; with `--once` and pushing,
1 when the server rejected the batch and 75 (EX_TEMPFAIL) when it was spooled for later.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import threading
from typing import Any

from . import __version__
from .agent import Agent, Source
from .config import AgentConfig, ConfigError, build_config
from .push import Outcome

log = logging.getLogger("collectors.agent")

EX_TEMPFAIL = 75


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m collectors.agent",
        description="PerfHub GPU-host agent: NVML + engine /metrics -> PerfHub ingest API.",
        epilog="Every setting can also come from --config FILE (TOML, or JSON by .json suffix) "
        "or a PERFHUB_<SETTING> environment variable; flags win over both. "
        "See collectors/agent/README.md.",
    )
    a = p.add_argument
    a("--config", metavar="FILE", help="TOML or JSON settings file (env PERFHUB_CONFIG)")
    a("--server", metavar="URL", help="PerfHub base URL, e.g. https://perfhub.example.com")
    a(
        "--token",
        metavar="T",
        help="agent token for this host (prefer PERFHUB_TOKEN: flags show in ps)",
    )
    a("--host", metavar="H", help="host name the token belongs to (default: this machine's name)")
    a("--interval", type=float, metavar="SECONDS", help="collection interval (default 10)")
    a(
        "--engine",
        dest="engines",
        action="append",
        metavar="SOURCE[:SLUG]=URL",
        help="engine /metrics to scrape; SOURCE is the engine's name as PerfHub knows it"
        " (vllm, tgi, sglang, triton, ...: the server says which); repeatable",
    )
    a(
        "--dcgm",
        metavar="[SLUG=]URL",
        help="dcgm-exporter /metrics (default service: the first --service)",
    )
    a(
        "--service",
        dest="services",
        action="append",
        metavar="SLUG",
        help="service this host serves; repeatable; the default for specs without :SLUG",
    )
    a(
        "--spool-dir",
        metavar="DIR",
        help="where unsent batches wait (default ~/.local/state/perfhub-agent/<host>/spool)",
    )
    a(
        "--spool-max-bytes",
        type=int,
        metavar="N",
        help="spool size bound; oldest dropped beyond it (default 100 MiB)",
    )
    a("--scrape-timeout", type=float, metavar="SECONDS", help="per-scrape timeout (default 5)")
    a("--push-timeout", type=float, metavar="SECONDS", help="per-push timeout (default 10)")
    a(
        "--serve",
        metavar="ADDR",
        help="serve the latest batch on http://ADDR/batch for pull mode, e.g. 127.0.0.1:9400",
    )
    a("--once", action="store_const", const=True, help="collect (and push) one batch, then exit")
    a(
        "--dry-run",
        action="store_const",
        const=True,
        help="print batches as JSON instead of pushing",
    )
    p.add_argument("--log-level", metavar="LEVEL", help="DEBUG, INFO (default), WARNING, ERROR")
    p.add_argument(
        "-v",
        "--verbose",
        dest="log_level",
        action="store_const",
        const="DEBUG",
        help="log every batch and its answer (--log-level DEBUG); quiet by default",
    )
    p.add_argument("--version", action="version", version=f"perfhub-agent {__version__}")
    return p


def main(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> int:
    args = vars(build_parser().parse_args(argv))
    try:
        config = build_config(args, environ)
    except ConfigError as exc:
        return config_error(exc)
    return run(config)


def config_error(exc: ConfigError) -> int:
    print(f"perfhub-agent: error: {exc}", file=sys.stderr)
    return 2


def run(config: AgentConfig, *, source: Source | None = None) -> int:
    """Run the agent `config` describes (`source` observes instead of NVML when given) until
    a signal stops it, or once with `--once`; returns the exit code."""
    level = getattr(logging, config.log_level.upper(), None)
    if not isinstance(level, int):
        print(
            f"perfhub-agent: error: log_level: unknown level {config.log_level!r}", file=sys.stderr
        )
        return 2
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    agent = Agent(config, source=source)

    if config.once:
        return _once(agent)

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(ValueError):  # not the main thread (embedded use)
            signal.signal(signum, lambda *_: stop.set())
    agent.run(stop, on_batch=_print if config.dry_run else None)
    log.info("agent stopped")
    return 0


def _once(agent: Agent) -> int:
    try:
        agent.start_server()
        batch, outcome = agent.tick()
        if agent.config.dry_run:
            _print(batch)
    finally:
        agent.close()
    if outcome is Outcome.REJECTED:
        return 1
    if outcome is Outcome.SPOOLED:
        return EX_TEMPFAIL
    return 0


def _print(batch: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(batch, indent=2) + "\n")
    sys.stdout.flush()
