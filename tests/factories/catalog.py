"""Catalog rows for tests: services, baselines, load tests, with plausible values one can
override by keyword."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

from analysis import sketches
from dossiers import services
from dossiers.models import Baseline, Bottleneck, Service
from loadtests.models import LoadTest, LoadTestSketch

MEASURED_AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # `baseline_values`' run


def make_service(team, slug: str, **extra) -> Service:
    fields = {
        "name": slug.replace("-", " ").title(),
        "team": team,
        "model_name": "Llama-3-8B",
        "model_params_b": Decimal("8"),
        "engine": "vllm",
        "gpu_model": "NVIDIA A100 80GB",
        "gpus_per_replica": 1,
        "replicas": 2,
        "slo_p99_e2e_ms": 1200,
        "slo_p99_ttft_ms": 400,
        "slo_p99_tpot_ms": 40,
        "gpu_hour_price": Decimal("10"),
        "price_per_mtok": Decimal("5"),
    }
    fields.update(extra)
    return Service.objects.create(slug=slug, **fields)


def chat_7b(team, **extra) -> Service:
    """The `chat-7b` service the shared `service` fixture and the alert pipeline test watch:
    Llama-2-7b-chat on one replica, P99 SLOs of 2 s end to end, 500 ms TTFT, 50 ms TPOT."""
    llama_2 = {"model_name": "Llama-2-7b-chat", "model_params_b": Decimal("7"), "replicas": 1}
    slos = {"slo_p99_e2e_ms": 2000, "slo_p99_ttft_ms": 500, "slo_p99_tpot_ms": 50}
    return make_service(team, "chat-7b", **{**llama_2, **slos, **extra})


def make_bottleneck(service: Service, **extra) -> Bottleneck:
    fields = {
        "title": "Queueing",
        "layer": Bottleneck.Layer.SCHEDULING,
        "kind": Bottleneck.Kind.QUEUEING,
        "symptom": "P99 high",
        "identified_on": date(2026, 3, 1),
        **extra,
    }
    return Bottleneck.objects.create(service=service, **fields)


def bare_service(team, slug: str, **extra) -> Service:
    """A service with only the fields a service needs (no SLOs, no price per Mtok): another
    team's or an empty one."""
    fields = {
        "name": slug.replace("-", " ").title(),
        "model_name": "m",
        "model_params_b": Decimal("1"),
        "engine": "tgi",
        "gpu_model": "L40S",
        "gpu_hour_price": Decimal("1"),
        **extra,
    }
    return Service.objects.create(slug=slug, team=team, **fields)


def make_baseline(service: Service, **extra) -> Baseline:
    fields = {
        "label": "vLLM 0.6.3, batch 16",
        "measured_at": datetime(2026, 11, 1, tzinfo=UTC),
        "is_current": True,
        "request_count": 2000,
        "output_tps": 2000.0,
        "input_tps": 1000.0,
        "qps": 8.0,
        "e2e_p50_ms": 800.0,
        "e2e_p99_ms": 1500.0,
        "ttft_p50_ms": 150.0,
        "ttft_p99_ms": 300.0,
        "tpot_p50_ms": 15.0,
        "tpot_p99_ms": 30.0,
    }
    source = extra.pop("source_load_test", None)
    fields.update(extra)
    baseline = Baseline.objects.create(service=service, **fields)
    if source is not None:
        source.promoted_to = baseline
        source.save(update_fields=["promoted_to"])
    return baseline


def make_load_test(service, label="candidate 0.7.0", *, e2e=None, **extra) -> LoadTest:
    fields = {
        "label": label,
        "format": "vllm_bench",
        "content_sha256": label.ljust(64, "0")[:64],
        "run_index": 0,
        "measured_at": datetime(2026, 11, 10, tzinfo=UTC),
        "request_count": 1000,
        "e2e_p50_ms": 900.0,
        "e2e_p90_ms": 1300.0,
        "e2e_p99_ms": 1700.0,
    }
    fields.update(extra)
    run = LoadTest.objects.create(service=service, **fields)
    if e2e is not None:
        sketch = sketches.from_values(e2e)
        LoadTestSketch.objects.create(
            load_test=run,
            family="e2e",
            sketch=sketches.dumps(sketch),
            count=len(e2e),
            sum_ms=sum(e2e),
            min_ms=min(e2e),
            max_ms=max(e2e),
        )
    return run


def baseline_values(**overrides):
    """A plausible measured run; latency in ms, ratios 0-1."""
    values = {
        "measured_at": MEASURED_AT,
        "concurrency": 16,
        "prompt_tokens_mean": 512,
        "output_tokens_mean": 256,
        "duration_s": 600,
        "request_count": 5000,
        "qps": 7.8,
        "input_tps": 4000,
        "output_tps": 2000,
        "gpu_util": 0.97,
        "sm_active": 0.31,
        "dram_active": 0.72,
        "mem_weights_bytes": 14_000_000_000,
        "mem_kv_bytes": 21_474_836_480,
    }
    for metric, base in (("e2e", 900.0), ("ttft", 120.0), ("tpot", 18.0)):
        for i, p in enumerate(("p50", "p90", "p95", "p99", "p999")):
            values[f"{metric}_{p}_ms"] = base * (1 + 0.5 * i)
    values.update(overrides)
    return values


def dossier_service(slug: str, *, team, name: str | None = None, **overrides) -> Service:
    """A service made through the dossier services, with a current baseline, a narrative and an
    open bottleneck (the `make_service` fixture builds these for a test's team)."""
    fields = {
        "name": name or slug.replace("-", " ").title(),
        "model_name": "Llama-3-8B",
        "model_params_b": Decimal("8"),
        "engine": "vllm",
        "gpu_model": "NVIDIA H100 80GB",
        "gpus_per_replica": 1,
        "replicas": 2,
        "slo_p99_e2e_ms": 2000,
        "gpu_hour_price": Decimal("10"),
        "price_per_mtok": Decimal("5"),
        "team": team,
    }
    fields.update(overrides)
    service = services.service_create(slug=slug, **fields)
    services.baseline_record(
        service=service, label=f"{slug} base", make_current=True, **baseline_values()
    )
    services.narrative_revise(service=service, body=f"# {slug}", summary="first")
    make_bottleneck(service)
    return service


def as_blank(text: str) -> str:
    """The same file, headed as the `blank` service's own dossier (its links to the live
    pages too: they are computed from the service exported, not read back)."""
    text = text.replace("service: chat-7b", "service: blank", 1)
    return text.replace("/services/chat-7b/", "/services/blank/")
