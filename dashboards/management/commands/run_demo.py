"""`manage.py run_demo`: the embedded default in one process tree (DESIGN.md section 7).

Serves the site with Django's server, runs the periodic jobs (pulls, roll-ups, pruning, alert
evaluation) in a background thread instead of Celery beat, and starts simulated GPU agents
(`python -m collectors.agent --simulate`) that push to this server through the real ingest API.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections

from collectors.services.periodic import run_periodic_jobs
from collectors.services.tokens import token_issue_for_host_name
from dossiers.models import Service

DEMO_LOGIN = ("demo", "perfhub-demo")


def _periodic_jobs() -> None:
    run_periodic_jobs()
    try:
        from alerts.services import evaluate_all
    except ImportError:  # the alerts app may not provide evaluation yet
        return
    evaluate_all()


class Command(BaseCommand):
    help = "Serve the demo with simulated agents and the periodic jobs in-process (no Redis)."

    def add_arguments(self, parser):
        parser.add_argument("--addr", default="127.0.0.1:8000", help="host:port to serve on")
        parser.add_argument("--agents", type=int, default=2, help="simulated GPU hosts")
        parser.add_argument("--interval", type=float, default=5.0, help="agent interval (s)")
        parser.add_argument("--jobs-every", type=float, default=10.0, help="periodic jobs (s)")
        parser.add_argument(
            "--slowdown-after",
            type=float,
            help="inject a P99 regression in the first agent this many seconds after start",
        )

    def handle(self, *args, addr: str, agents: int, interval: float, jobs_every: float, **opts):
        services = list(Service.objects.filter(engine=Service.Engine.VLLM).order_by("pk")[:agents])
        if not services:
            raise CommandError("No vLLM service to simulate: run `manage.py seed_demo` first.")
        procs = [
            self._start_agent(index, service, addr, interval, opts.get("slowdown_after"))
            for index, service in enumerate(services, start=1)
        ]
        stop = threading.Event()
        threading.Thread(target=self._jobs_loop, args=(stop, jobs_every), daemon=True).start()
        user, password = DEMO_LOGIN
        self.stdout.write(
            self.style.SUCCESS(
                f"PerfHub demo on http://{addr}/  — log in as {user} / {password} "
                f"(admin / perfhub-admin for /admin/). Simulated agents feed: "
                + ", ".join(s.slug for s in services)
            )
        )
        # SIGTERM ends the server like Ctrl-C does, so the agents below are stopped too.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            call_command("runserver", addr, use_reloader=False, use_threading=True)
        finally:
            stop.set()
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=10)

    def _start_agent(
        self, index: int, service: Service, addr: str, interval: float, slowdown_after
    ) -> subprocess.Popen:
        host = f"demo-gpu-{index:02d}"
        _, token = token_issue_for_host_name(host_name=host, label="run_demo")
        spool = Path(settings.VAR_DIR) / "agent-spool" / host
        cmd = [
            sys.executable, "-m", "collectors.agent", "--simulate", "--gpus", "2",
            "--service", service.slug, "--server", f"http://{addr}", "--host", host,
            "--interval", str(interval), "--spool-dir", str(spool), "--log-level", "WARNING",
        ]  # fmt: skip
        if slowdown_after is not None and index == 1:
            cmd += ["--simulate-slowdown-after", str(slowdown_after)]
        # The token travels in the environment, not argv, so `ps` does not show it.
        env = {**os.environ, "PERFHUB_TOKEN": token}
        return subprocess.Popen(cmd, env=env, cwd=settings.BASE_DIR)

    def _jobs_loop(self, stop: threading.Event, every: float) -> None:
        while not stop.wait(every):
            try:
                _periodic_jobs()
            except Exception as exc:  # keep the demo alive; say what failed
                self.stderr.write(f"periodic jobs failed: {exc!r}")
            finally:
                close_old_connections()
