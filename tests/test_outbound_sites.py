"""One way out: no server code opens a connection except through `core.outbound`.

The test reads every module of the repository (its syntax tree, not its text) and lists each
call into an HTTP or socket library: requests, urllib3, httpx, aiohttp, urllib.request,
http.client, socket. Such a call is allowed only in the modules below, each for its reason;
everywhere else a user-supplied URL must go through `outbound_request`/`outbound_session`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NETWORK_MODULES = ("requests", "urllib3", "httpx", "aiohttp", "urllib.request", "http.client",
                   "socket", "pycurl", "ftplib", "telnetlib")  # fmt: skip
# Calls into those modules that open nothing (names, exceptions are not calls).
HARMLESS = {"socket.gethostname", "socket.getfqdn"}

# Module (or package, ending in /) -> why it may call out without the guard.
ALLOWED = {
    "core/outbound.py": "the guard itself",
    "collectors/agent/": "the agent runs on the GPU host: it scrapes its own engine and pushes "
    "to the PerfHub URL its operator configured; it is not the server",
    "demo/prometheus.py": "waits for the Prometheus it started itself on loopback; "
    "the source it creates is read through the guard",
    "deploy/": "operator tools run against their own PerfHub (smoke test, healthcheck)",
    "bench/": "benchmarks drive their own local PerfHub",
    "tests/": "tests drive their own servers",
}
# Not the project's modules: installed packages (every hidden folder: `.venv`, the vLLM venv
# `make e2e-vllm` builds in `.venv-vllm`, `.git`), generated and runtime files.
SKIP_DIRS = {"node_modules", "var", "staticfiles", "__pycache__"}


def _network_root(dotted: str) -> str | None:
    for module in NETWORK_MODULES:
        if dotted == module or dotted.startswith(module + "."):
            return module
    return None


def network_calls(source: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every call into a network library in `source`."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # local name -> the dotted network name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _network_root(alias.name):
                    local = alias.asname or alias.name.split(".")[0]
                    bound[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if _network_root(dotted) or _network_root(node.module):
                    bound[alias.asname or alias.name] = dotted
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        parts = []
        func = node.func
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id not in bound:
            continue
        dotted = ".".join([bound[func.id], *reversed(parts)])
        if _network_root(dotted) and dotted not in HARMLESS:
            found.append((node.lineno, dotted))
    return found


def _allowed(relative: str) -> bool:
    return any(
        relative.startswith(entry) if entry.endswith("/") else relative == entry
        for entry in ALLOWED
    )


def _modules() -> list[Path]:
    def ours(parts: tuple[str, ...]) -> bool:
        return not (SKIP_DIRS & set(parts) or any(part.startswith(".") for part in parts[:-1]))

    return [path for path in ROOT.rglob("*.py") if ours(path.relative_to(ROOT).parts)]


def test_no_module_calls_out_without_the_guard():
    bypasses = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in _modules()
        if not _allowed(path.relative_to(ROOT).as_posix())
        for line, name in network_calls(path.read_text())
    ]
    assert bypasses == [], "call out through core.outbound.outbound_request instead"


def test_every_allowed_exception_still_exists():
    for entry in ALLOWED:
        assert (ROOT / entry).exists(), f"{entry} is allow-listed but gone: remove it"


@pytest.mark.parametrize(
    ("snippet", "name"),
    [
        ("import requests\nrequests.post(url, data=x)", "requests.post"),
        ("import requests as r\nr.Session()", "requests.Session"),
        ("from requests import get\nget(url)", "requests.get"),
        ("from urllib.request import urlopen\nurlopen(url)", "urllib.request.urlopen"),
        ("import urllib.request\nurllib.request.urlopen(url)", "urllib.request.urlopen"),
        ("import http.client\nhttp.client.HTTPConnection(h)", "http.client.HTTPConnection"),
        ("from http import client\nclient.HTTPSConnection(h)", "http.client.HTTPSConnection"),
        ("import socket\nsocket.create_connection((h, 80))", "socket.create_connection"),
        ("import httpx\nhttpx.Client().get(url)", "httpx.Client"),
        ("import urllib3\nurllib3.PoolManager().request('GET', u)", "urllib3.PoolManager"),
    ],
)
def test_the_walk_finds_each_way_of_calling_out(snippet, name):
    assert name in [found for _, found in network_calls(snippet)]


def test_the_walk_lets_exceptions_and_the_host_name_through():
    snippet = (
        "import requests, socket\ntry: f()\nexcept requests.RequestException: socket.gethostname()"
    )
    assert network_calls(snippet) == []
