"""`manage.py run_demo`: the embedded default in one process tree (docs/operations.md).

Serves the site with Django's server, runs the periodic jobs (pulls, roll-ups, pruning, alert
evaluation) in a background thread instead of Celery beat, and starts simulated GPU agents
(`python -m demo.agent`: the real agent fed by the simulator) that push to this server through
the real ingest API.

Each simulated engine sends its service's current baseline's workload and latencies
(`demo.profile`), so the live charts continue the seeded history, the dossier's
claims hold, and the default alert rules stay quiet until a regression is injected:
`--slowdown-after S --slowdown-for D` slows the first agent's service for D seconds, long
enough (say 600) for its P99 rule to fire, then resolve.

`--prometheus` (needs Debian's `prometheus`) feeds the first vLLM service through a Prometheus
source instead of an agent: a simulated engine scraped by a real Prometheus, read back through
its HTTP API (see `demo.prometheus`). One service only, on purpose: it shows the path beside the
agents, and a service fed so loses what only an agent sends (GPU samples, per-request rows: its
P99s become bucket ranges and its SLO counts bounds), which every other page of the demo shows.

Before the agents start, the seeded history (`seed_demo`) is continued to the next minute
boundary and the agents start on it (`demo.history.continue_to_next_minute`), so the SLO burn
pairs' short windows and the last minutes read data from the first page view.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections
from django.utils import timezone

from collectors.services.periodic import run_periodic_jobs
from collectors.services.tokens import token_issue_for_host_name
from demo.history import continue_fleet, continue_to_next_minute, demo_host_name
from demo.profile import SLO_HEADROOM, demo_profile  # noqa: F401 (re-exported)
from demo.prometheus import DemoPrometheus, DemoPrometheusError
from demo.receivers import demo_mail_dir
from demo.simulator.expositions import SIMULATED_ENGINES
from dossiers.models import Service

DEMO_LOGIN = ("demo", "perfhub-demo")
MAX_AGENT_GPUS = 64


class QuietIngest(logging.Filter):
    """Drops the development server's line for each accepted agent push (a few a second
    would drown the console); refused pushes and every other request still show."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        line = str(record.args[0]) if isinstance(record.args, tuple) and record.args else ""
        return not (status is not None and status < 300 and " /api/v1/ingest/ " in line)


def _periodic_jobs() -> None:
    run_periodic_jobs()
    try:
        from alerts.services import evaluate_all
    except ImportError:  # the alerts app may not provide evaluation yet
        return
    evaluate_all()


def agent_command(
    *,
    host: str,
    service: Service,
    addr: str,
    interval: float,
    spool: Path,
    slowdown: tuple[float | None, float | None] | None = None,
    since: datetime | None = None,
) -> list[str]:
    """The simulated agent's command line for `service`: its GPUs, its baseline's profile,
    (`slowdown` = (after, for) seconds) an injected regression and (`since`) when its engine
    starts, where the seeded history ends."""
    gpus = min(MAX_AGENT_GPUS, max(1, service.total_gpus))
    cmd = [
        sys.executable, "-m", "demo.agent", "--gpus", str(gpus),
        "--service", service.slug, "--server", f"http://{addr}", "--host", host,
        "--interval", str(interval), "--spool-dir", str(spool), "--log-level", "WARNING",
    ]  # fmt: skip
    profile = demo_profile(service)
    if profile is not None and profile.spec():
        cmd += ["--simulate-profile", f"{service.slug}:{profile.spec()}"]
    # The fake engine writes the service's own engine's /metrics (vLLM for an engine the
    # simulator does not write), so the demo reads every engine's families.
    if service.engine in SIMULATED_ENGINES and service.engine != "vllm":
        cmd += ["--simulate-engine", f"{service.slug}:{service.engine}"]
    after, duration = slowdown or (None, None)
    if after is not None:
        cmd += ["--simulate-slowdown-after", str(after)]
    if duration is not None:
        cmd += ["--simulate-slowdown-for", str(duration)]
    if since is not None:
        cmd += ["--simulate-since", f"{since.timestamp():.0f}"]
    return cmd


class Command(BaseCommand):
    help = "Serve the demo with simulated agents and the periodic jobs in-process (no Redis)."

    def add_arguments(self, parser):
        parser.add_argument("--addr", default="127.0.0.1:8000", help="host:port to serve on")
        parser.add_argument(
            "--agents",
            type=int,
            default=0,
            help="simulated GPU hosts, one per service (default 0: every service)",
        )
        parser.add_argument("--interval", type=float, default=5.0, help="agent interval (s)")
        parser.add_argument("--jobs-every", type=float, default=10.0, help="periodic jobs (s)")
        parser.add_argument(
            "--slowdown-after",
            type=float,
            metavar="S",
            help="inject a P99 regression in the first agent this many seconds after it starts "
            "(on the minute boundary where the seeded history ends)",
        )
        parser.add_argument(
            "--slowdown-for",
            type=float,
            metavar="D",
            help="end that regression after D seconds (default: it lasts); with the default "
            "rules (5 min window, for 5 min, 2 min lag) 600 lets the alert fire, then resolve",
        )
        parser.add_argument(
            "--prometheus",
            action="store_true",
            help="feed one service, the first on vLLM, through a real `prometheus` (a Prometheus "
            "source) instead of its agent; the others keep theirs (needs Debian's prometheus). "
            "Only one: a service fed so has no GPU samples and no per-request rows (its P99s "
            "are bucket ranges, its SLO counts bounds), and the simulated engine it scrapes "
            "writes vLLM's metrics only",
        )

    def handle(self, *args, addr: str, agents: int, interval: float, jobs_every: float, **opts):
        if opts.get("verbosity", 1) < 2:  # `-v 2` shows every push's 202 line
            logging.getLogger("django.server").addFilter(QuietIngest())
        slowdown = (opts.get("slowdown_after"), opts.get("slowdown_for"))
        if slowdown[1] is not None and slowdown[0] is None:
            raise CommandError(
                "--slowdown-for needs --slowdown-after (when the regression starts)."
            )
        # Every service gets a simulated host, so every dossier and dashboard is alive; its
        # fake engine writes the service's own engine's /metrics (`agent_command`).
        services = list(Service.objects.order_by("pk"))
        if agents:
            services = services[:agents]
        if not services:
            raise CommandError("No service to simulate: run `manage.py seed_demo` first.")
        # The first vLLM service (the simulated engine speaks vLLM) may go through Prometheus.
        first = next((s for s in services if s.engine == "vllm"), services[0])
        pushed = [s for s in services if not (opts.get("prometheus") and s == first)]
        # The seeded history (`seed_demo`, minutes or days ago) runs on to the next minute
        # boundary and the agents start on it, so the burn pairs' short windows and the live
        # pages have data from the first page view and the first live minute is whole.
        live_from = continue_to_next_minute(pushed, stdout=self.stdout)
        prometheus = None
        if opts.get("prometheus"):
            # Prometheus scrapes from now on: its service's history runs to this minute.
            continue_fleet(until=timezone.now().replace(second=0, microsecond=0),
                           services=[first], stdout=self.stdout)  # fmt: skip
            try:
                prometheus = DemoPrometheus(
                    first, Path(settings.VAR_DIR) / "prometheus", demo_profile(first)
                )
                source = prometheus.start()
            except DemoPrometheusError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(
                f"{first.slug} is fed through Prometheus at {source.base_url} "
                f"(source page: /collectors/prometheus/{source.pk}/)"
            )
        # Hosts keep their numbers (demo-gpu-NN, as seed_demo's history names them).
        agents_for = [(i, s) for i, s in enumerate(services, start=1) if prometheus is None
                      or s != prometheus.service]  # fmt: skip
        launches = [
            self._agent_launch(
                index, service, addr, interval, slowdown if n == 0 else None, live_from
            )
            for n, (index, service) in enumerate(agents_for)
        ]
        if mail := demo_mail_dir():
            self.stdout.write(f"Alert notifications (the demo on-call receivers' email): {mail}/")
        stop = threading.Event()
        procs: list[subprocess.Popen] = []
        starter = threading.Thread(
            target=self._start_agents, args=(stop, launches, live_from, procs), daemon=True
        )
        starter.start()
        threading.Thread(target=self._jobs_loop, args=(stop, jobs_every), daemon=True).start()
        user, password = DEMO_LOGIN
        since = f" from {live_from:%H:%M} UTC, where the seeded history ends" if live_from else ""
        self.stdout.write(
            self.style.SUCCESS(
                f"PerfHub demo on http://{addr}/  — log in as {user} / {password} "
                f"(admin / perfhub-admin for /admin/). Simulated agents feed{since}: "
                + (", ".join(s.slug for _, s in agents_for) or "none")
            )
        )
        # SIGTERM ends the server like Ctrl-C does, so the agents below are stopped too.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            call_command("runserver", addr, use_reloader=False, use_threading=True)
        finally:
            stop.set()
            starter.join(timeout=30)  # no agent starts once the server has stopped
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=10)
            if prometheus is not None:
                prometheus.stop()

    def _agent_launch(
        self,
        index: int,
        service: Service,
        addr: str,
        interval: float,
        slowdown: tuple[float | None, float | None] | None,
        since: datetime | None,
    ) -> tuple[list[str], dict[str, str]]:
        """An agent's command line and environment (its token issued now, in this thread)."""
        host = demo_host_name(index)
        _, token = token_issue_for_host_name(host_name=host, label="run_demo")
        spool = Path(settings.VAR_DIR) / "agent-spool" / host
        cmd = agent_command(
            host=host, service=service, addr=addr, interval=interval, spool=spool,
            slowdown=slowdown, since=since,
        )  # fmt: skip
        # The token travels in the environment, not argv, so `ps` does not show it.
        return cmd, {**os.environ, "PERFHUB_TOKEN": token}

    @staticmethod
    def _start_agents(
        stop: threading.Event,
        launches: list[tuple[list[str], dict[str, str]]],
        live_from: datetime | None,
        procs: list[subprocess.Popen],
    ) -> None:
        """Start the agents at `live_from` (now when None), not before: anything they push
        dated in the last seeded minute would have the roll-up rewrite that minute from their
        few seconds of raw rows."""
        if live_from is not None:
            wait = (live_from - timezone.now()).total_seconds()
            if wait > 0 and stop.wait(wait):
                return
        for cmd, env in launches:
            if stop.is_set():
                return
            procs.append(subprocess.Popen(cmd, env=env, cwd=settings.BASE_DIR))

    def _jobs_loop(self, stop: threading.Event, every: float) -> None:
        while not stop.wait(every):
            try:
                _periodic_jobs()
            except Exception as exc:  # keep the demo alive; say what failed
                self.stderr.write(f"periodic jobs failed: {exc!r}")
            finally:
                close_old_connections()
