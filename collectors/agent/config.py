"""Agent settings from defaults, a config file (TOML or JSON), environment variables and flags.

Precedence, lowest first: built-in defaults, `--config FILE`, `PERFHUB_*` environment variables,
command-line flags. Every bad value raises `ConfigError` with a message naming the setting.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# The agent does not keep a list of engines: the server owns parsing and names the engines it
# knows (400 naming the source otherwise), so an old agent scrapes a newly supported engine.
ENGINE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,19}$")
DEFAULT_INTERVAL_S = 10.0
DEFAULT_SPOOL_MAX_BYTES = 100 * 1024 * 1024
SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]+$")


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names it."""


@dataclass(frozen=True)
class ScrapeTarget:
    """One `/metrics` endpoint: what serves it (`source`), which service it belongs to, where."""

    source: str
    service: str
    url: str


@dataclass
class AgentConfig:
    host: str
    server: str | None = None
    token: str | None = None
    interval: float = DEFAULT_INTERVAL_S
    services: list[str] = field(default_factory=list)
    engines: list[ScrapeTarget] = field(default_factory=list)
    dcgm: ScrapeTarget | None = None
    spool_dir: Path | None = None
    spool_max_bytes: int = DEFAULT_SPOOL_MAX_BYTES
    scrape_timeout: float = 5.0
    push_timeout: float = 10.0
    serve: tuple[str, int] | None = None
    once: bool = False
    dry_run: bool = False
    log_level: str = "INFO"

    @property
    def push_enabled(self) -> bool:
        return bool(self.server) and not self.dry_run

    @property
    def ingest_url(self) -> str:
        assert self.server
        return self.server.rstrip("/") + "/api/v1/ingest/"


# Settings a file or the environment may carry, with how to read a plain value.
_SCALARS: dict[str, type] = {
    "server": str,
    "token": str,
    "host": str,
    "interval": float,
    "dcgm": str,
    "spool_dir": str,
    "spool_max_bytes": int,
    "scrape_timeout": float,
    "push_timeout": float,
    "serve": str,
    "once": bool,
    "dry_run": bool,
    "log_level": str,
}
_LISTS = ("engines", "services")


def load_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """Read a TOML (default) or JSON (`.json`) file into raw settings, rejecting unknown keys."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror or exc}") from exc
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(raw)
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a table/object at the top level")
    # Accept the flag spellings too (`engine`, `service`, dashes).
    settings: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        name = {
            "engine": "engines",
            "service": "services",
        }.get(name, name)
        if name not in _SCALARS and name not in _LISTS:
            raise ConfigError(f"config file {path}: unknown setting {key!r}")
        settings[name] = value
    return settings


def settings_from_env(environ: dict[str, str]) -> dict[str, Any]:
    """`PERFHUB_<SETTING>` variables; lists (ENGINES, SERVICES) are comma- or space-separated."""
    settings: dict[str, Any] = {}
    for name in (*_SCALARS, *_LISTS):
        value = environ.get(f"PERFHUB_{name.upper()}")
        if value is None or value == "":
            continue
        if name in _LISTS:
            settings[name] = value.replace(",", " ").split()
        else:
            settings[name] = value
    return settings


def parse_engine_spec(spec: str, services: list[str]) -> ScrapeTarget:
    """`SOURCE[:SLUG]=URL`, e.g. `vllm:chat-7b=http://127.0.0.1:8000/metrics`.

    Without `:SLUG` the engine belongs to the only `--service` given.
    """
    head, sep, url = spec.partition("=")
    if not sep or not url:
        raise ConfigError(
            f"engine {spec!r}: expected SOURCE[:SLUG]=URL, e.g. vllm:chat-7b=http://127.0.0.1:8000/metrics"
        )
    source, _, slug = head.partition(":")
    source = source.strip().lower()
    if not ENGINE_NAME.match(source) or source == "dcgm":
        raise ConfigError(
            f"engine {spec!r}: SOURCE must be an engine's name as PerfHub knows it"
            " (e.g. vllm); dcgm-exporter goes with --dcgm"
        )
    service = service_for(slug.strip(), services, what=f"engine {spec!r}")
    return ScrapeTarget(
        source=source, service=service, url=_check_url(url.strip(), f"engine {spec!r}")
    )


def parse_dcgm_spec(spec: str, services: list[str]) -> ScrapeTarget:
    """`URL` (belongs to the first `--service`) or `SLUG=URL`."""
    spec = spec.strip()
    if spec.startswith(("http://", "https://")):
        slug, url = "", spec
    else:
        slug, sep, url = spec.partition("=")
        if not sep:
            raise ConfigError(f"dcgm {spec!r}: expected URL or SLUG=URL")
    if slug:
        service = service_for(slug.strip(), services, what=f"dcgm {spec!r}")
    elif services:
        service = services[0]
    else:
        raise ConfigError(f"dcgm {spec!r}: names no service; write SLUG=URL or pass --service")
    return ScrapeTarget(
        source="dcgm", service=service, url=_check_url(url.strip(), f"dcgm {spec!r}")
    )


def parse_serve_addr(value: str) -> tuple[str, int]:
    """`HOST:PORT`, `:PORT` or `PORT` (loopback by default: the batch carries no secrets, but
    exposing it is the operator's choice)."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    try:
        port_number = int(port)
    except ValueError:
        raise ConfigError(f"serve {value!r}: expected HOST:PORT, e.g. 127.0.0.1:9400") from None
    if not 0 <= port_number <= 65535:
        raise ConfigError(f"serve {value!r}: port out of range")
    return (host.strip("[]") or "127.0.0.1", port_number)


def build_config(cli: dict[str, Any], environ: dict[str, str] | None = None) -> AgentConfig:
    """Merge defaults < config file < environment < flags (`cli` holds only flags given)."""
    environ = dict(os.environ if environ is None else environ)
    cli = {k: v for k, v in cli.items() if v is not None and v != []}
    merged: dict[str, Any] = {}
    config_path = cli.pop("config", None) or environ.get("PERFHUB_CONFIG")
    if config_path:
        merged.update(load_config_file(config_path))
    merged.update(settings_from_env(environ))
    merged.update(cli)

    values: dict[str, Any] = {}
    for name, kind in _SCALARS.items():
        if name in merged:
            values[name] = _coerce(name, merged[name], kind)
    services = [str(s) for s in _as_list("services", merged.get("services", []))]
    for slug in services:
        _check_slug(slug, "service")

    host = values.pop("host", None) or socket.gethostname()
    config = AgentConfig(host=host, services=services)
    engines_raw = _as_list("engines", merged.get("engines", []))
    config.engines = [_engine_from_raw(item, services) for item in engines_raw]
    if "dcgm" in values:
        config.dcgm = parse_dcgm_spec(values.pop("dcgm"), services)
    if "serve" in values:
        config.serve = parse_serve_addr(values.pop("serve"))
    if "spool_dir" in values:
        config.spool_dir = Path(values.pop("spool_dir")).expanduser()
    for name, value in values.items():
        setattr(config, name, value)
    if config.spool_dir is None:
        config.spool_dir = default_spool_dir(config.host, environ)
    if config.server is not None:
        config.server = _check_url(config.server, "server")
    _validate(config)
    return config


def default_spool_dir(host: str, environ: dict[str, str]) -> Path:
    """Per host, under XDG_STATE_HOME: the spool must survive a reboot, so not /tmp."""
    state = environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "perfhub-agent" / re.sub(r"[^-a-zA-Z0-9_.]", "_", host) / "spool"


def _validate(config: AgentConfig) -> None:
    if config.interval <= 0:
        raise ConfigError("interval: must be more than 0 seconds")
    if config.spool_max_bytes <= 0:
        raise ConfigError("spool_max_bytes: must be more than 0")
    if config.scrape_timeout <= 0 or config.push_timeout <= 0:
        raise ConfigError("scrape_timeout/push_timeout: must be more than 0 seconds")
    if not config.dry_run and config.serve is None and not config.server:
        raise ConfigError(
            "server: required (--server URL or PERFHUB_SERVER) unless --dry-run or --serve"
        )
    if config.push_enabled and not config.token:
        raise ConfigError("token: required to push (--token, PERFHUB_TOKEN or the config file)")


def _engine_from_raw(item: Any, services: list[str]) -> ScrapeTarget:
    if isinstance(item, str):
        return parse_engine_spec(item, services)
    if isinstance(item, dict):
        unknown = set(item) - {"source", "service", "url"}
        if unknown:
            raise ConfigError(f"engines: unknown key(s) {sorted(unknown)} in {item!r}")
        source = str(item.get("source", ""))
        slug = str(item.get("service", ""))
        spec = (
            f"{source}:{slug}={item.get('url', '')}" if slug else f"{source}={item.get('url', '')}"
        )
        return parse_engine_spec(spec, services)
    raise ConfigError(f"engines: expected a string SOURCE[:SLUG]=URL or a table, got {item!r}")


def service_for(slug: str, services: list[str], *, what: str) -> str:
    """The service a spec names, or the only `--service`; `what` names the spec in errors."""
    if slug:
        _check_slug(slug, what)
        return slug
    if len(services) == 1:
        return services[0]
    if not services:
        raise ConfigError(f"{what}: names no service; write SOURCE:SLUG=URL or pass one --service")
    raise ConfigError(f"{what}: several services given; write SOURCE:SLUG=URL to say which")


def _check_slug(slug: str, what: str) -> None:
    if not SLUG_RE.match(slug):
        raise ConfigError(f"{what}: service slug {slug!r} may hold letters, digits, - and _ only")


def _check_url(url: str, what: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{what}: {url!r} is not an http(s) URL")
    return url


def _as_list(name: str, value: Any) -> list[Any]:
    if isinstance(value, str):
        return value.replace(",", " ").split()
    if isinstance(value, list | tuple):
        return list(value)
    raise ConfigError(f"{name}: expected a list, got {value!r}")


def _coerce(name: str, value: Any, kind: type) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off", ""):
            return False
        raise ConfigError(f"{name}: expected true or false, got {value!r}")
    if kind in (int, float):
        if isinstance(value, bool):
            raise ConfigError(f"{name}: expected a number, got {value!r}")
        try:
            return kind(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}: expected a number, got {value!r}") from None
    if not isinstance(value, str):
        raise ConfigError(f"{name}: expected a string, got {value!r}")
    return value
