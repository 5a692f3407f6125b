"""Fixtures for dossier pages: logged-in clients per persona and a service with a full dossier."""

from datetime import UTC as _UTC
from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest

from dossiers import services
from dossiers.models import Bottleneck, Experiment, Service

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=_UTC)


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def outsider_client(client, outsider):
    client.force_login(outsider)
    return client


def baseline_values(**overrides):
    """A plausible measured run; latency in ms, ratios 0-1."""
    values = {
        "measured_at": T0,
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


@pytest.fixture
def make_service(team):
    """Build a service with a current baseline, as many as a test needs."""

    def make(slug: str, *, name: str | None = None, **overrides) -> Service:
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
        }
        fields.update(overrides)
        fields.setdefault("team", team)
        service = services.service_create(slug=slug, **fields)
        services.baseline_record(
            service=service, label=f"{slug} base", make_current=True, **baseline_values()
        )
        services.narrative_revise(service=service, body=f"# {slug}", summary="first")
        Bottleneck.objects.create(
            service=service,
            title="Queueing",
            layer=Bottleneck.Layer.SCHEDULING,
            kind=Bottleneck.Kind.QUEUEING,
            symptom="P99 high",
            identified_on=date(2026, 3, 1),
        )
        return service

    return make


@pytest.fixture
def full_dossier(service, owner):
    """The shared `service` with narrative revisions, configs, baselines, a bottleneck and an
    experiment whose configs differ in more than the declared variable."""
    services.narrative_revise(
        service=service, body="# Chat 7B\n\nServes chat.\n", summary="first", author=owner
    )
    services.narrative_revise(
        service=service,
        body="# Chat 7B\n\nServes chat for the support bot.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        summary="say who uses it",
        author=owner,
    )
    v1 = services.config_version_create(
        service=service, config={"max_num_seqs": 8, "dtype": "fp16"}, note="initial", author=owner
    )
    v2 = services.config_version_create(
        service=service,
        config={"max_num_seqs": 16, "dtype": "fp16", "gpu_memory_utilization": 0.95},
        note="bigger batch",
        author=owner,
    )
    before = services.baseline_record(
        service=service,
        label="batch 8",
        config_version=v1,
        **baseline_values(
            measured_at=T0 - timedelta(days=7), output_tps=1000, e2e_p99_ms=3000, e2e_p999_ms=3600
        ),
    )
    after = services.baseline_record(
        service=service,
        label="batch 16",
        config_version=v2,
        make_current=True,
        **baseline_values(),
    )
    bottleneck = Bottleneck.objects.create(
        service=service,
        title="Tokenizer runs serially on the CPU",
        layer=Bottleneck.Layer.SCHEDULING,
        kind=Bottleneck.Kind.CPU,
        symptom="GPU 30% busy while requests queue",
        evidence="py-spy shows the tokenizer on one core",
        status=Bottleneck.Status.CONFIRMED,
        identified_on=date(2026, 2, 20),
    )
    bottleneck.evidence_baselines.set([before])
    experiment = Experiment.objects.create(
        service=service,
        title="Double the batch",
        hypothesis="Throughput grows with batch size until memory bandwidth saturates.",
        variable_key="max_num_seqs",
        value_from="8",
        value_to="16",
        before=before,
        after=after,
        verdict=Experiment.Verdict.ADOPTED,
        run_on=date(2026, 3, 1),
    )
    return {
        "service": service,
        "before": before,
        "after": after,
        "configs": (v1, v2),
        "bottleneck": bottleneck,
        "experiment": experiment,
    }
