"""A run's two sides: its client-side figures (the file's) beside the engine's own over the
run's window (`server_side`, stored by `dashboards.vantage`), and the gap as a layer.

Plain arithmetic on the stored figures, so the run's pages and diagnosis read it here.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.percentiles import LATENCY_LABELS, QUANTILE_OF, minimum_count
from dossiers.models import Baseline
from loadtests.models import LoadTest

# The figures a run has on both sides (the engine has no client-only figure such as ITL per
# request), and what the time between the two sides is spent on, per latency.
FIGURES = tuple(f"{m}_{p}_ms" for m in ("e2e", "ttft", "tpot") for p in ("p50", "p90", "p99"))
LAYER_NAMES = {
    "ttft": "API server and tokenizer",
    "e2e": "API server, tokenizer and streaming",
    "tpot": "streaming and detokenization, per token",
}
# Latencies the client's clock measures around the engine's, request by request (it sends
# before the engine receives and receives after the engine sends), so over the same requests
# each client percentile is at least the engine's. TPOT is not one: the client's is a mean per
# request, the engine's per token, and a mean's P99 sits below the tokens' own.
ENCLOSING = ("e2e", "ttft")
OTHER_TRAFFIC = (
    "below the engine's own figure: the engine also served requests that are not this file's "
    "in these minutes, so the gap is not a layer"
)


@dataclass(frozen=True)
class Layer:
    """The time between the client's figure and the engine's for one percentile."""

    name: str
    key: str  # e.g. "ttft_p99_ms"
    client_ms: float
    engine_ms: float | None  # the engine's interpolated value; None inside a bucket edge
    low_ms: float  # the gap is within [low_ms, high_ms] (the engine side is bucket-bounded)
    high_ms: float | None  # client minus the engine's lower bound

    @property
    def gap_ms(self) -> float:
        """The gap at the engine's interpolated value, else its smallest possible value."""
        return self.client_ms - self.engine_ms if self.engine_ms is not None else self.low_ms

    @property
    def figure(self) -> str:
        metric, label, _ = self.key.split("_")
        return f"{LATENCY_LABELS[metric]} {label.upper()}"

    @property
    def share(self) -> float:
        """The smallest share of the client's figure the layer can account for."""
        return max(self.low_ms, 0.0) / self.client_ms if self.client_ms else 0.0

    def text(self) -> str:
        if self.engine_ms is None:
            return f"{self.name}: at least {self.low_ms:+,.0f} ms at {self.figure}"
        return f"{self.name}: {self.gap_ms:+,.0f} ms at {self.figure}"


def _sides(run: LoadTest | Baseline):
    """(key, metric, percentile label, client figure, engine figure dict) for each of FIGURES;
    either side may be missing (None, or an empty dict for the engine)."""
    figures = (run.server_side or {}).get("figures", {})
    for key in FIGURES:
        metric, label, _ = key.split("_")
        yield key, metric, label, getattr(run, key), figures.get(key)


def other_traffic(metric: str, client: float, engine: dict) -> bool:
    """Whether the engine's figure cannot be over the file's requests alone: the client's
    E2E or TTFT below the lowest value the engine's could have."""
    lower = engine.get("lower") if engine.get("lower") is not None else engine.get("value")
    if lower is None and engine.get("above_last_edge") is not None:
        lower = engine["above_last_edge"]
    return metric in ENCLOSING and lower is not None and client < lower


def layers(run: LoadTest | Baseline) -> list[Layer]:
    """Each figure the run has on both sides, with the engine side resting on enough
    requests (the one minimum-count rule): client minus engine, within the bucket's bounds.
    None where the engine's figure cannot be the file's requests alone (`other_traffic`)."""
    out = []
    for key, metric, label, client, engine in _sides(run):
        if client is None or not engine:
            continue
        if engine["count"] < minimum_count(QUANTILE_OF[label]):
            continue
        upper = engine["upper"] if engine["upper"] is not None else engine["value"]
        lower = engine["lower"] if engine["lower"] is not None else engine["value"]
        if upper is None:  # above the last edge: the engine alone may be the whole figure
            continue
        if other_traffic(metric, client, engine):
            continue
        out.append(
            Layer(
                name=LAYER_NAMES[metric],
                key=key,
                client_ms=client,
                engine_ms=engine["value"],
                low_ms=client - upper,
                high_ms=None if lower is None else client - lower,
            )
        )
    return out


def _engine_text(figure: dict) -> str:
    if figure.get("value") is not None:
        return f"{figure['value']:,.1f} ms [{figure['lower'] or 0:,.0f}, {figure['upper']:,.0f}]"
    if figure.get("below_first_edge") is not None:
        return f"< {figure['below_first_edge']:,.0f} ms"
    if figure.get("above_last_edge") is not None:
        return f"> {figure['above_last_edge']:,.0f} ms"
    return "—"


def _layer_text(layer: Layer | None, metric: str, client: float | None, engine: dict) -> str:
    if layer is not None:
        return layer.text()
    if client is not None and engine and other_traffic(metric, client, engine):
        return OTHER_TRAFFIC
    return ""


def side_by_side(run: LoadTest | Baseline) -> list[dict]:
    """Rows for the run's page: each figure as the client measured it, as the engine did over
    the run's window (with its bucket bounds), and the layer between them; none when the
    engine side has no figure at all (the page then says why)."""
    if not any(engine for *_, engine in _sides(run)):
        return []
    by_key = {layer.key: layer for layer in layers(run)}
    rows = []
    for key, metric, label, client, engine in _sides(run):
        if client is None and not engine:
            continue
        layer = by_key.get(key)
        rows.append(
            {
                "figure": f"{LATENCY_LABELS[metric]} {label.upper()}",
                "client": client,
                "engine": _engine_text(engine) if engine else "—",
                "engine_count": engine["count"] if engine else None,
                "layer": _layer_text(layer, metric, client, engine),
            }
        )
    return rows
