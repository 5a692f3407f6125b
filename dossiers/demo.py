"""The demo fleet: six inference services with realistic dossiers, built with the service functions.

`build_demo()` is idempotent: a demo service that already exists (by slug) is left alone, or
rebuilt with `rebuild=True`. Other apps extend the demo (load tests, live series) by calling
`build_demo()` and working from `DemoResult.services`.

It includes the three scenarios of the seed article:
- support-chat-7b: P99 above 8 s at production load while the GPUs were ~30% busy; the engine's
  CPU loop left the GPU idle between decode steps (bottleneck), fixed by multi-step scheduling.
- doc-summarizer: the tokenizer ran serially on the CPU; parallelizing it took P99 from 3 s to
  800 ms (experiment with before/after baselines, adopted).
- code-review-13b: the 13B batch sweep (batch 1, 2, 4, 8, 16, 32) whose sweet spot is 16:
  1 -> 16 gives ~10x throughput for 1.6x latency, 16 -> 32 gives +20% throughput for 2x P99.

Latency distributions are log-normal through the stated P50 and P99, so P90/P95/P999 are
consistent with them; E2E P50 is TTFT P50 plus output tokens x TPOT P50; throughput follows
from the workload (Little's law for a fixed concurrency, the request rate for an open loop).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TextIO

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db import transaction
from django.utils import timezone

from dossiers import services
from dossiers.models import (
    Baseline,
    Bottleneck,
    ConfigVersion,
    Experiment,
    Membership,
    Service,
    Team,
)

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "perfhub-demo"
ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = "perfhub-admin"

TEAMS = {
    "assistant": "Assistant Platform",
    "knowledge": "Search & Knowledge",
    "trust-safety": "Trust & Safety",
    "localization": "Localization",
}
# Colleagues who wrote parts of the dossiers (no password: they cannot log in).
TEAMMATES = {"mei": "Mei Chen", "arjun": "Arjun Rao"}

GIB = 1024**3
_Z = {"p50": 0.0, "p90": 1.2816, "p95": 1.6449, "p99": 2.3263, "p999": 3.0902}


@dataclass
class DemoResult:
    services: dict[str, Service] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    demo_user: AbstractUser | None = None
    admin_user: AbstractUser | None = None


@dataclass
class _Context:
    teams: dict[str, Team]
    demo: AbstractUser
    mei: AbstractUser
    arjun: AbstractUser
    now: dt.datetime


def build_demo(*, stdout: TextIO | None = None, rebuild: bool = False) -> DemoResult:
    """Create the demo users, teams and services that are missing (or all, with `rebuild`)."""
    result = DemoResult()
    with transaction.atomic():
        result.demo_user, result.admin_user, mei, arjun = _ensure_users()
        teams = _ensure_teams(result.demo_user, mei, arjun)
    ctx = _Context(teams, result.demo_user, mei, arjun, timezone.now().replace(microsecond=0))
    for slug, builder in BUILDERS.items():
        with transaction.atomic():
            existing = Service.objects.filter(slug=slug).first()
            if existing is not None and rebuild:
                _delete_service(existing)
                existing = None
            if existing is not None:
                result.services[slug] = existing
                result.skipped.append(slug)
                _say(stdout, f"  {slug}: already there, skipped")
                continue
            result.services[slug] = builder(ctx)
            result.created.append(slug)
            _say(stdout, f"  {slug}: built")
    return result


def _say(stdout: TextIO | None, text: str) -> None:
    if stdout is not None:
        stdout.write(text + "\n")


def _delete_service(service: Service) -> None:
    # Experiments protect their baselines, so they go first.
    service.experiments.all().delete()
    service.delete()


def _ensure_users() -> tuple[AbstractUser, AbstractUser, AbstractUser, AbstractUser]:
    User = get_user_model()
    demo = User.objects.filter(username=DEMO_USERNAME).first()
    if demo is None:
        demo = User.objects.create_user(
            DEMO_USERNAME, password=DEMO_PASSWORD, first_name="Demo", last_name="Engineer"
        )
    admin = User.objects.filter(username=ADMIN_USERNAME).first()
    if admin is None:
        admin = User.objects.create_superuser(ADMIN_USERNAME, password=ADMIN_PASSWORD)
    mates = []
    for username, full_name in TEAMMATES.items():
        first, last = full_name.split(" ", 1)
        mate, created = User.objects.get_or_create(
            username=username, defaults={"first_name": first, "last_name": last}
        )
        if created:
            mate.set_unusable_password()
            mate.save(update_fields=["password"])
        mates.append(mate)
    return demo, admin, mates[0], mates[1]


def _ensure_teams(demo, mei, arjun) -> dict[str, Team]:
    teams = {}
    for slug, name in TEAMS.items():
        team, _ = Team.objects.get_or_create(slug=slug, defaults={"name": name})
        Membership.objects.get_or_create(
            team=team, user=demo, defaults={"role": Membership.Role.OWNER}
        )
        teams[slug] = team
    for slug in ("assistant", "knowledge"):
        Membership.objects.get_or_create(team=teams[slug], user=mei)
    for slug in ("trust-safety", "localization"):
        Membership.objects.get_or_create(team=teams[slug], user=arjun)
    return teams


# --------------------------------------------------------------------------------------------
# Building blocks


def latencies(metric: str, p50: float, p99: float) -> dict[str, float]:
    """P50..P999 columns of a log-normal distribution through the given P50 and P99 (ms)."""
    sigma = math.log(p99 / p50) / _Z["p99"]
    return {f"{metric}_{p}_ms": round(p50 * math.exp(sigma * z), 1) for p, z in _Z.items()}


def measured(
    *,
    ttft: tuple[float, float],
    tpot: tuple[float, float],
    e2e_p99: float,
    prompt_tokens: float,
    output_tokens: float,
    concurrency: int | None = None,
    request_rate: float | None = None,
    qps: float | None = None,
    duration_s: float = 1800,
    **extra: Any,
) -> dict[str, Any]:
    """A baseline's measured fields, consistent with each other (see the module docstring)."""
    e2e_p50 = round(ttft[0] + output_tokens * tpot[0], 1)
    if qps is None:
        qps = concurrency / (e2e_p50 / 1000) if concurrency else request_rate
    qps = round(qps, 2)
    return {
        "concurrency": concurrency,
        "request_rate": request_rate,
        "prompt_tokens_mean": prompt_tokens,
        "prompt_tokens_std": round(prompt_tokens * 0.6),
        "output_tokens_mean": output_tokens,
        "output_tokens_std": round(output_tokens * 0.5),
        "duration_s": duration_s,
        "request_count": int(qps * duration_s),
        "qps": qps,
        "input_tps": round(qps * prompt_tokens, 1),
        "output_tps": round(qps * output_tokens, 1),
        **latencies("e2e", e2e_p50, e2e_p99),
        **latencies("ttft", *ttft),
        **latencies("tpot", *tpot),
        **extra,
    }


def _service(ctx: _Context, team: str, **fields: Any) -> Service:
    return services.service_create(team=ctx.teams[team], **fields)


def _bottleneck(service: Service, **fields: Any) -> Bottleneck:
    return services.bottleneck_record(service=service, **fields)


def _experiment(service: Service, **fields: Any) -> Experiment:
    return services.experiment_record(service=service, **fields)


def _config(
    service: Service, config: dict, note: str, author, *, current: bool = True
) -> ConfigVersion:
    return services.config_version_create(
        service=service, config=config, note=note, author=author, make_current=current
    )


def _ago(ctx: _Context, days: int, hour: int = 10) -> dt.datetime:
    return (ctx.now - dt.timedelta(days=days)).replace(hour=hour, minute=0, second=0)


def _day(ctx: _Context, days: int) -> dt.date:
    return (ctx.now - dt.timedelta(days=days)).date()


# --------------------------------------------------------------------------------------------
# The fleet


def build_support_chat(ctx: _Context) -> Service:
    """Seed scenario (a): 7B, P99 above 8 s at production load with the GPUs ~30% busy."""
    s = _service(
        ctx,
        "assistant",
        slug="support-chat-7b",
        name="Support Chat 7B",
        summary="Short answers in the help-center chat widget (Llama-2-7B on vLLM, A100).",
        model_name="meta-llama/Llama-2-7b-chat-hf",
        model_params_b=Decimal("7"),
        quantization=Service.Quantization.NONE,
        engine="vllm",
        engine_version="0.6.3",
        gpu_model="NVIDIA A100 80GB",
        gpus_per_replica=1,
        replicas=2,
        slo_p99_e2e_ms=2000,
        slo_p99_ttft_ms=500,
        slo_p99_tpot_ms=50,
        gpu_hour_price=Decimal("3.40"),
        currency="USD",
        price_per_mtok=Decimal("0.40"),
        token_basis=Service.TokenBasis.TOTAL,
    )
    services.narrative_revise(
        service=s,
        author=ctx.mei,
        summary="First draft",
        body="# Support Chat 7B\n\nAnswers customers in the help-center chat widget.\n",
    )
    services.narrative_revise(service=s, author=ctx.demo, summary="Full write-up", body=SUPPORT_MD)

    v1 = _config(
        s,
        {
            "model": "meta-llama/Llama-2-7b-chat-hf",
            "dtype": "float16",
            "tensor_parallel_size": 1,
            "max_model_len": 4096,
            "gpu_memory_utilization": 0.90,
            "max_num_seqs": 256,
            "max_num_batched_tokens": 8192,
            "enable_chunked_prefill": False,
            "enable_prefix_caching": True,
            "num_scheduler_steps": 1,
            "disable_log_requests": False,
        },
        "Launch config: the notebook's defaults.",
        ctx.mei,
    )
    v2 = _config(
        s,
        {**v1.config, "num_scheduler_steps": 8},
        "Multi-step scheduling: 8 decode steps per scheduler pass.",
        ctx.demo,
    )
    v3 = _config(
        s,
        {
            **v2.config,
            "enable_chunked_prefill": True,
            "max_num_batched_tokens": 2048,
            "gpu_memory_utilization": 0.92,
        },
        "Trial: chunked prefill (max_num_batched_tokens and gpu_memory_utilization moved too).",
        ctx.mei,
        current=False,
    )
    weights = 13_500_000_000
    common = {"prompt_tokens": 350, "output_tokens": 48, "mem_weights_bytes": weights}
    dev = services.baseline_record(
        service=s,
        label="Dev box, one request at a time",
        measured_at=_ago(ctx, 120),
        config_version=v1,
        code_version="support-chat@1.4.0",
        engine_version="0.6.3",
        created_by=ctx.mei,
        notes="A dev A100 with nothing else running. 'A few hundred ms': everyone assumed "
        "production would be fine.",
        **measured(
            ttft=(38, 61),
            tpot=(8.1, 9.4),
            e2e_p99=560,
            concurrency=1,
            duration_s=600,
            gpu_util=0.58,
            sm_active=0.21,
            dram_active=0.45,
            mem_kv_bytes=55 * GIB,
            **common,
        ),
    )
    prod = services.baseline_record(
        service=s,
        label="Production replay, 12 req/s per replica",
        measured_at=_ago(ctx, 95),
        config_version=v1,
        code_version="support-chat@1.4.0",
        engine_version="0.6.3",
        created_by=ctx.demo,
        notes="One production hour replayed with its real prompt and answer lengths, at 12 req/s "
        "per replica (4 replicas then). P99 above 8 s while the GPUs were about 30% busy; "
        "the engine could not keep up (11.6 of 12 req/s served) and its queue kept growing.",
        **measured(
            ttft=(420, 5200),
            tpot=(21, 39),
            e2e_p99=8400,
            request_rate=12,
            qps=11.6,
            duration_s=3600,
            gpu_util=0.31,
            sm_active=0.12,
            dram_active=0.19,
            mem_kv_bytes=55 * GIB,
            **common,
        ),
    )
    fixed = services.baseline_record(
        service=s,
        label="Multi-step scheduling, 12 req/s per replica",
        measured_at=_ago(ctx, 80),
        config_version=v2,
        code_version="support-chat@1.4.0",
        engine_version="0.6.3",
        created_by=ctx.demo,
        notes="Same replay, same load; only num_scheduler_steps changed. The GPU is no busier at "
        "this load: the waiting is gone, not the work.",
        **measured(
            ttft=(52, 240),
            tpot=(9.2, 14.5),
            e2e_p99=1150,
            request_rate=12,
            duration_s=3600,
            gpu_util=0.29,
            sm_active=0.15,
            dram_active=0.27,
            mem_kv_bytes=55 * GIB,
            **common,
        ),
    )
    capacity = services.baseline_record(
        service=s,
        label="Capacity, 24 req/s per replica",
        measured_at=_ago(ctx, 70),
        config_version=v2,
        code_version="support-chat@1.5.2",
        engine_version="0.6.3",
        created_by=ctx.demo,
        make_current=True,
        notes="With the gaps gone each replica carries twice the load inside the SLO, so the "
        "service went from 4 replicas to 2.",
        **measured(
            ttft=(85, 420),
            tpot=(12.5, 21),
            e2e_p99=1600,
            request_rate=24,
            duration_s=7200,
            gpu_util=0.62,
            sm_active=0.27,
            dram_active=0.48,
            mem_kv_bytes=55 * GIB,
            **common,
        ),
    )
    chunked = services.baseline_record(
        service=s,
        label="Chunked prefill trial, 24 req/s per replica",
        measured_at=_ago(ctx, 40),
        config_version=v3,
        code_version="support-chat@1.5.2",
        engine_version="0.6.3",
        created_by=ctx.mei,
        notes="Trial config v3 on one canary replica.",
        **measured(
            ttft=(78, 260),
            tpot=(13.4, 19),
            e2e_p99=1450,
            request_rate=24,
            duration_s=3600,
            gpu_util=0.64,
            sm_active=0.28,
            dram_active=0.5,
            mem_kv_bytes=57 * GIB,
            **common,
        ),
    )
    _bottleneck(
        s,
        title="GPU idles between decode steps: scheduling and detokenizing on one CPU thread",
        layer=Bottleneck.Layer.FRAMEWORK,
        kind=Bottleneck.Kind.CPU,
        status=Bottleneck.Status.MITIGATED,
        identified_on=_day(ctx, 92),
        resolved_on=_day(ctx, 78),
        symptom="P99 end-to-end 8.4 s at 12 req/s per replica while GPU-Util sat at 31% "
        "(SM active 12%). Requests were waiting for the engine, not for the GPU.",
        evidence="Framework metrics: the waiting queue grew for the whole replay. Nsight Systems "
        "on one replica: after every decode step the GPU is idle 20-25 ms while the engine's "
        "Python loop schedules the next batch and detokenizes the streamed output; py-spy shows "
        "the engine process at 100% of one core. The dev-box run hid it: with one request "
        "there is nothing to schedule.",
        evidence_baselines=[dev, prod],
    )
    _bottleneck(
        s,
        title="Long prompts stall short ones in prefill",
        layer=Bottleneck.Layer.FRAMEWORK,
        kind=Bottleneck.Kind.QUEUEING,
        status=Bottleneck.Status.SUSPECTED,
        identified_on=_day(ctx, 45),
        symptom="TTFT P99 is 5x its P50 at 24 req/s; the slow first tokens cluster right after "
        "requests with 3,000+ token prompts (pasted logs).",
        evidence="Request log grouped by prompt length: short prompts arriving within 200 ms of "
        "a long one have 4x the TTFT of the others.",
        evidence_baselines=[capacity],
    )
    _experiment(
        s,
        title="Multi-step scheduling",
        hypothesis="If the GPU waits for the CPU between decode steps, running 8 steps per "
        "scheduler pass removes most of the gaps: P99 should fall under the 2 s SLO at the "
        "same load, with no new hardware.",
        variable_key="num_scheduler_steps",
        value_from="1",
        value_to="8",
        before=prod,
        after=fixed,
        verdict=Experiment.Verdict.ADOPTED,
        run_on=_day(ctx, 80),
        created_by=ctx.demo,
        notes="P99 8.4 s -> 1.15 s and TTFT P99 5.2 s -> 240 ms at the same 12 req/s. "
        "Rolled out as config v2; then the capacity test allowed halving the replicas.",
    )
    _experiment(
        s,
        title="Chunked prefill",
        hypothesis="Splitting long prefills into chunks lets decode steps of short requests "
        "through, cutting TTFT P99.",
        variable_key="enable_chunked_prefill",
        value_from="false",
        value_to="true",
        before=capacity,
        after=chunked,
        verdict=Experiment.Verdict.INCONCLUSIVE,
        run_on=_day(ctx, 40),
        created_by=ctx.mei,
        notes="TTFT P99 fell 420 -> 260 ms, but the trial config also lowered "
        "max_num_batched_tokens (8192 -> 2048) and raised gpu_memory_utilization "
        "(0.90 -> 0.92): three knobs moved, so the gain cannot be credited to chunked prefill. "
        "To re-run with enable_chunked_prefill alone.",
    )
    return s


def build_doc_summarizer(ctx: _Context) -> Service:
    """Seed scenario (b): the tokenizer ran serially on the CPU; P99 3 s -> 800 ms."""
    s = _service(
        ctx,
        "knowledge",
        slug="doc-summarizer",
        name="Document Summarizer",
        summary="One-paragraph abstracts of uploaded documents (Llama-3.1-8B FP8, "
        "TensorRT-LLM on Triton, H100).",
        model_name="meta-llama/Llama-3.1-8B-Instruct",
        model_params_b=Decimal("8"),
        quantization=Service.Quantization.FP8,
        engine="triton",
        engine_version="24.08 (TensorRT-LLM 0.12)",
        gpu_model="NVIDIA H100 80GB HBM3",
        gpus_per_replica=1,
        replicas=3,
        slo_p99_e2e_ms=1000,
        slo_p99_ttft_ms=400,
        slo_p99_tpot_ms=10,
        gpu_hour_price=Decimal("6.00"),
        currency="USD",
        price_per_mtok=Decimal("1.50"),
        token_basis=Service.TokenBasis.OUTPUT,
    )
    services.narrative_revise(service=s, author=ctx.mei, summary="Write-up", body=SUMMARIZER_MD)
    v1 = _config(
        s,
        {
            "ensemble": {"max_batch_size": 64},
            "preprocessing": {
                "backend": "python",
                "tokenizer": "meta-llama/Llama-3.1-8B-Instruct",
                "instance_group": {"count": 1, "kind": "KIND_CPU"},
            },
            "tensorrt_llm": {
                "batching_strategy": "inflight_fused_batching",
                "max_batch_size": 64,
                "max_num_tokens": 16384,
                "kv_cache_free_gpu_mem_fraction": 0.9,
                "enable_chunked_context": False,
                "quantization": "fp8",
            },
            "postprocessing": {"instance_group": {"count": 4, "kind": "KIND_CPU"}},
            "dynamic_batching": {"max_queue_delay_microseconds": 1000},
        },
        "Launch: TensorRT-LLM ensemble from the tensorrtllm_backend templates.",
        ctx.mei,
    )
    config2 = {**v1.config}
    config2["preprocessing"] = {
        **v1.config["preprocessing"],
        "instance_group": {"count": 8, "kind": "KIND_CPU"},
    }
    v2 = _config(
        s, config2, "Tokenizer: 8 preprocessing instances, in parallel with the GPU.", ctx.demo
    )
    common = {
        "prompt_tokens": 1800,
        "output_tokens": 110,
        "request_rate": 20,
        "duration_s": 3600,
        "mem_weights_bytes": 9 * GIB,
        "mem_kv_bytes": 60 * GIB,
    }
    serial = services.baseline_record(
        service=s,
        label="Production replay, 20 req/s per replica (serial tokenizer)",
        measured_at=_ago(ctx, 60),
        config_version=v1,
        code_version="summarizer@2.0.1",
        engine_version="24.08",
        created_by=ctx.mei,
        notes="P99 swung between 1 and 3 s during the replay; this hour's P99 was 3.0 s.",
        **measured(
            ttft=(520, 2450),
            tpot=(4.3, 6.4),
            e2e_p99=3000,
            qps=19.2,
            gpu_util=0.44,
            sm_active=0.24,
            dram_active=0.30,
            **common,
        ),
    )
    parallel = services.baseline_record(
        service=s,
        label="Production replay, 20 req/s per replica (8 tokenizer instances)",
        measured_at=_ago(ctx, 45),
        config_version=v2,
        code_version="summarizer@2.0.1",
        engine_version="24.08",
        created_by=ctx.demo,
        make_current=True,
        notes="Same replay and load; only the preprocessing instance count changed.",
        **measured(
            ttft=(95, 240),
            tpot=(4.3, 5.9),
            e2e_p99=800,
            gpu_util=0.71,
            sm_active=0.41,
            dram_active=0.52,
            **common,
        ),
    )
    _bottleneck(
        s,
        title="Tokenizer runs serially on the CPU",
        layer=Bottleneck.Layer.FRAMEWORK,
        kind=Bottleneck.Kind.CPU,
        status=Bottleneck.Status.MITIGATED,
        identified_on=_day(ctx, 58),
        resolved_on=_day(ctx, 45),
        symptom="P99 swings between 1 and 3 s; the request queue length oscillates; GPU-Util "
        "44% at a load the GPU should carry easily.",
        evidence="Framework metrics first: queue length oscillates, so arrivals and processing "
        "do not match. Nsight Systems: gaps of several hundred ms between kernels, the GPU is "
        "waiting for the CPU. The preprocessing model (Python backend, one instance) tokenizes "
        "each batch serially, and its time grows linearly with the batch size.",
        evidence_baselines=[serial],
    )
    _experiment(
        s,
        title="Parallelize the tokenizer",
        hypothesis="If the GPU idles because one CPU thread tokenizes every batch, running 8 "
        "preprocessing instances tokenizes batches in parallel and overlaps them with GPU "
        "work: P99 should fall from ~3 s to under 1 s at the same load.",
        variable_key="preprocessing.instance_group.count",
        value_from="1",
        value_to="8",
        before=serial,
        after=parallel,
        verdict=Experiment.Verdict.ADOPTED,
        run_on=_day(ctx, 45),
        created_by=ctx.demo,
        notes="P99 3 s -> 800 ms; TTFT P99 2.45 s -> 240 ms; GPU-Util 44% -> 71% at the same "
        "load. The bottleneck was never on the GPU.",
    )
    return s


# The seed's 13B sweep: (batch, E2E P50 relative to batch 1, TTFT P50 ms).
SWEEP = (
    (1, 1.0, 95),
    (2, 1.03, 100),
    (4, 1.08, 115),
    (8, 1.22, 160),
    (16, 1.6, 260),
    (32, 2.67, 900),
)
SWEEP_E2E_P50_BATCH_1 = 4447.0
SWEEP_OUTPUT_TOKENS = 128


def build_code_review(ctx: _Context) -> Service:
    """Seed scenario (c): the 13B batch sweep whose sweet spot is 16."""
    s = _service(
        ctx,
        "assistant",
        slug="code-review-13b",
        name="Code Review Assistant 13B",
        summary="Inline review comments on merge requests (CodeLlama-13B on TGI, L40S).",
        model_name="codellama/CodeLlama-13b-Instruct-hf",
        model_params_b=Decimal("13"),
        quantization=Service.Quantization.NONE,
        engine="tgi",
        engine_version="2.3.1",
        gpu_model="NVIDIA L40S 48GB",
        gpus_per_replica=1,
        replicas=6,
        slo_p99_e2e_ms=12000,
        slo_p99_ttft_ms=1000,
        slo_p99_tpot_ms=80,
        gpu_hour_price=Decimal("1.90"),
        currency="USD",
        price_per_mtok=Decimal("3.00"),
        token_basis=Service.TokenBasis.OUTPUT,
    )
    services.narrative_revise(service=s, author=ctx.demo, summary="Write-up", body=CODE_REVIEW_MD)
    v1 = _config(
        s,
        {
            "model_id": "codellama/CodeLlama-13b-Instruct-hf",
            "dtype": "float16",
            "num_shard": 1,
            "max_input_tokens": 1920,
            "max_total_tokens": 2048,
            "max_batch_size": 8,
            "max_batch_prefill_tokens": 4096,
            "max_concurrent_requests": 128,
            "waiting_served_ratio": 0.3,
            "cuda_memory_fraction": 0.95,
        },
        "Launch: a conservative batch of 8.",
        ctx.mei,
    )
    v2 = _config(
        s,
        {**v1.config, "max_batch_size": 16},
        "max_batch_size 16, the sweet spot of the batch sweep.",
        ctx.demo,
    )
    points: dict[int, Baseline] = {}
    for i, (batch, ratio, ttft_p50) in enumerate(SWEEP):
        e2e_p50 = SWEEP_E2E_P50_BATCH_1 * ratio
        tpot_p50 = round((e2e_p50 - ttft_p50) / SWEEP_OUTPUT_TOKENS, 2)
        knee = batch == 32  # KV cache full: requests wait for blocks, some are preempted
        points[batch] = services.baseline_record(
            service=s,
            label=f"Batch sweep: batch {batch}",
            measured_at=_ago(ctx, 50, hour=9 + i),
            config_version={8: v1, 16: v2}.get(batch),
            code_version="review-bot@3.2.0",
            engine_version="2.3.1",
            created_by=ctx.demo,
            make_current=batch == 16,
            notes=f"Batch sweep, clearly labelled: max_batch_size and client concurrency both "
            f"{batch}; 30 min per point with recorded merge-request diffs (900 prompt tokens "
            f"on average, 128 output).",
            **measured(
                ttft=(ttft_p50, ttft_p50 * (4.0 if knee else 2.2)),
                tpot=(tpot_p50, round(tpot_p50 * (1.5 if knee else 1.25), 2)),
                e2e_p99=round(e2e_p50 * (1.74 if knee else 1.45), 1),
                prompt_tokens=900,
                output_tokens=SWEEP_OUTPUT_TOKENS,
                concurrency=batch,
                gpu_util=0.97 if batch == 1 else 0.99,
                sm_active=round(min(0.08 + 0.022 * batch, 0.45), 2),
                dram_active=round(min(0.78 + 0.006 * batch, 0.9), 2),
                mem_weights_bytes=26_000_000_000,
                mem_kv_bytes=17_600_000_000,
            ),
        )
    _bottleneck(
        s,
        title="KV cache capacity caps the useful batch at 16",
        layer=Bottleneck.Layer.HARDWARE,
        kind=Bottleneck.Kind.MEMORY_CAPACITY,
        status=Bottleneck.Status.WONT_FIX,
        identified_on=_day(ctx, 50),
        resolved_on=_day(ctx, 48),
        symptom="Throughput flat past batch 16 (+20% at 32) while P99 doubles.",
        evidence="26 GB of fp16 weights leave ~17.6 GB of KV pool on a 48 GB L40S: 21k tokens, "
        "about 16 requests of 1,000 tokens. At batch 32 requests wait for KV blocks and some "
        "are preempted (TTFT P50 260 -> 900 ms). Accepted: 16 is the sweet spot on this card; "
        "revisit with an FP8 KV cache or an 80 GB GPU.",
        evidence_baselines=[points[16], points[32]],
    )
    _experiment(
        s,
        title="Batch at the sweet spot (16)",
        hypothesis="The sweep shows throughput still growing almost linearly up to 16 with "
        "latency under 2x; raising max_batch_size from 8 to 16 should add ~50% throughput per "
        "GPU inside the SLO.",
        variable_key="max_batch_size",
        value_from="8",
        value_to="16",
        before=points[8],
        after=points[16],
        verdict=Experiment.Verdict.ADOPTED,
        run_on=_day(ctx, 48),
        created_by=ctx.demo,
        notes="Sweep 1 -> 16: ~10x throughput for 1.6x latency. 16 -> 32: +20% throughput for "
        "2x P99. Adopted 16: cost per million output tokens 2.80 -> 1.83 USD, margin 7% -> 39%.",
    )
    return s


def build_rag_answers(ctx: _Context) -> Service:
    s = _service(
        ctx,
        "knowledge",
        slug="rag-answers-70b",
        name="RAG Answers 70B",
        summary="Grounded answers over the internal knowledge base (Llama-3.1-70B FP8 on "
        "SGLang, 4x H100 per replica).",
        model_name="meta-llama/Llama-3.1-70B-Instruct",
        model_params_b=Decimal("70"),
        quantization=Service.Quantization.FP8,
        engine="sglang",
        engine_version="0.3.2",
        gpu_model="NVIDIA H100 80GB HBM3",
        gpus_per_replica=4,
        replicas=2,
        slo_p99_e2e_ms=6000,
        slo_p99_ttft_ms=2500,
        slo_p99_tpot_ms=40,
        gpu_hour_price=Decimal("6.00"),
        currency="USD",
        price_per_mtok=Decimal("0.90"),
        token_basis=Service.TokenBasis.TOTAL,
    )
    services.narrative_revise(service=s, author=ctx.mei, summary="Write-up", body=RAG_MD)
    v1 = _config(
        s,
        {
            "model_path": "meta-llama/Llama-3.1-70B-Instruct",
            "tp_size": 4,
            "quantization": "fp8",
            "kv_cache_dtype": "auto",
            "mem_fraction_static": 0.85,
            "max_running_requests": 128,
            "chunked_prefill_size": 8192,
            "schedule_policy": "lpm",
            "context_length": 16384,
            "enable_torch_compile": False,
            "disable_radix_cache": False,
        },
        "Launch: TP=4, radix (prefix) cache on for the shared system prompt.",
        ctx.mei,
    )
    v2 = _config(
        s,
        {**v1.config, "chunked_prefill_size": 2048},
        "Smaller prefill chunks so 5k-token prompts stop starving decode steps.",
        ctx.demo,
    )
    common = {
        "prompt_tokens": 5200,
        "output_tokens": 180,
        "request_rate": 3,
        "duration_s": 3600,
        "mem_weights_bytes": 70 * 10**9,
        "mem_kv_bytes": 180 * GIB,
    }
    before = services.baseline_record(
        service=s,
        label="Production replay, 3 req/s per replica",
        measured_at=_ago(ctx, 30),
        config_version=v1,
        code_version="rag-api@5.1.0",
        engine_version="0.3.2",
        created_by=ctx.mei,
        notes="P99 high, P50 normal: the tail is decode steps waiting behind 8k-token prefill "
        "chunks.",
        **measured(
            ttft=(480, 2900),
            tpot=(17, 58),
            e2e_p99=7400,
            gpu_util=0.93,
            sm_active=0.52,
            dram_active=0.61,
            **common,
        ),
    )
    after = services.baseline_record(
        service=s,
        label="chunked_prefill_size 2048, 3 req/s per replica",
        measured_at=_ago(ctx, 20),
        config_version=v2,
        code_version="rag-api@5.1.0",
        engine_version="0.3.2",
        created_by=ctx.demo,
        make_current=True,
        **measured(
            ttft=(530, 2300),
            tpot=(17.5, 29),
            e2e_p99=5100,
            gpu_util=0.94,
            sm_active=0.54,
            dram_active=0.62,
            **common,
        ),
    )
    _bottleneck(
        s,
        title="Long prefills stall decode steps",
        layer=Bottleneck.Layer.FRAMEWORK,
        kind=Bottleneck.Kind.QUEUEING,
        status=Bottleneck.Status.MITIGATED,
        identified_on=_day(ctx, 29),
        resolved_on=_day(ctx, 20),
        symptom="TPOT P99 58 ms against a P50 of 17 ms; E2E P99 7.4 s over the 6 s SLO.",
        evidence="Latency by request: the slow decode steps coincide with 8k-token prefill "
        "chunks of other requests in the same batch.",
        evidence_baselines=[before],
    )
    _bottleneck(
        s,
        title="All-reduce takes ~18% of each decode step at TP=4",
        layer=Bottleneck.Layer.HARDWARE,
        kind=Bottleneck.Kind.COMMUNICATION,
        status=Bottleneck.Status.SUSPECTED,
        identified_on=_day(ctx, 15),
        symptom="Throughput per GPU is 30% lower than the same model at TP=2 on the vendor's "
        "benchmark.",
        evidence="Nsight Systems: NCCL all-reduce kernels take 3.1 ms of a 17 ms decode step. "
        "To test: 2 replicas of TP=2 on the same 4 GPUs (FP8 weights fit).",
        evidence_baselines=[after],
    )
    _experiment(
        s,
        title="Smaller prefill chunks",
        hypothesis="Chunks of 2,048 instead of 8,192 tokens bound how long a decode step waits "
        "behind a prefill: TPOT P99 should halve, at a small cost in TTFT.",
        variable_key="chunked_prefill_size",
        value_from="8192",
        value_to="2048",
        before=before,
        after=after,
        verdict=Experiment.Verdict.ADOPTED,
        run_on=_day(ctx, 20),
        created_by=ctx.demo,
        notes="TPOT P99 58 -> 29 ms, E2E P99 7.4 -> 5.1 s (inside the SLO); TTFT P50 +10%, "
        "accepted.",
    )
    return s


def build_safety_guard(ctx: _Context) -> Service:
    s = _service(
        ctx,
        "trust-safety",
        slug="safety-guard-8b",
        name="Safety Guard 8B",
        summary="Classifies every chat turn as safe or unsafe before it is shown "
        "(Llama-Guard-3-8B on TGI, A10G).",
        model_name="meta-llama/Llama-Guard-3-8B",
        model_params_b=Decimal("8"),
        quantization=Service.Quantization.INT8,
        engine="tgi",
        engine_version="2.2.0",
        gpu_model="NVIDIA A10G 24GB",
        gpus_per_replica=1,
        replicas=12,
        slo_p99_e2e_ms=300,
        slo_p99_ttft_ms=250,
        slo_p99_tpot_ms=40,
        gpu_hour_price=Decimal("1.10"),
        currency="USD",
        price_per_mtok=Decimal("0.06"),
        token_basis=Service.TokenBasis.TOTAL,
    )
    services.narrative_revise(service=s, author=ctx.arjun, summary="Write-up", body=GUARD_MD)
    v1 = _config(
        s,
        {
            "model_id": "meta-llama/Llama-Guard-3-8B",
            "quantize": "bitsandbytes-nf4",
            "max_input_tokens": 3072,
            "max_total_tokens": 3200,
            "max_batch_prefill_tokens": 8192,
            "max_concurrent_requests": 256,
            "cuda_graphs": [1, 2, 4, 8, 16, 32],
        },
        "Launch: NF4 to leave room for a large KV cache on 24 GB.",
        ctx.arjun,
    )
    v2 = _config(
        s,
        {**v1.config, "quantize": "eetq"},
        "EETQ int8: no dequantization overhead in prefill.",
        ctx.arjun,
    )
    common = {"prompt_tokens": 650, "output_tokens": 6, "request_rate": 8, "duration_s": 3600}
    nf4 = services.baseline_record(
        service=s,
        label="Production replay, 8 req/s per replica (NF4)",
        measured_at=_ago(ctx, 75),
        config_version=v1,
        code_version="guard-gw@0.9.4",
        engine_version="2.2.0",
        created_by=ctx.arjun,
        **measured(
            ttft=(180, 520),
            tpot=(38, 55),
            e2e_p99=900,
            gpu_util=0.96,
            sm_active=0.71,
            dram_active=0.34,
            mem_weights_bytes=5 * GIB,
            mem_kv_bytes=16 * GIB,
            **common,
        ),
    )
    int8 = services.baseline_record(
        service=s,
        label="Production replay, 8 req/s per replica (EETQ int8)",
        measured_at=_ago(ctx, 60),
        config_version=v2,
        code_version="guard-gw@0.9.4",
        engine_version="2.2.0",
        created_by=ctx.arjun,
        make_current=True,
        **measured(
            ttft=(62, 170),
            tpot=(14, 21),
            e2e_p99=290,
            gpu_util=0.78,
            sm_active=0.55,
            dram_active=0.41,
            mem_weights_bytes=9 * GIB,
            mem_kv_bytes=12 * GIB,
            **common,
        ),
    )
    _bottleneck(
        s,
        title="NF4 dequantization makes prefill compute-bound",
        layer=Bottleneck.Layer.MODEL,
        kind=Bottleneck.Kind.COMPUTE,
        status=Bottleneck.Status.MITIGATED,
        identified_on=_day(ctx, 72),
        resolved_on=_day(ctx, 60),
        symptom="Slower after quantization: E2E P99 900 ms against a 300 ms SLO, SM active 71% "
        "for a model this small.",
        evidence="Kernel times before/after on the same prompts: bitsandbytes dequantization "
        "kernels take 58% of prefill time on the A10G.",
        evidence_baselines=[nf4],
    )
    _experiment(
        s,
        title="EETQ int8 instead of bitsandbytes NF4",
        hypothesis="Int8 weights with fused int8 GEMMs avoid the NF4 dequantization, so "
        "prefill (which dominates a 6-token answer) should be ~3x faster; 8.5 GB of weights "
        "still leaves enough KV cache.",
        variable_key="quantize",
        value_from="bitsandbytes-nf4",
        value_to="eetq",
        before=nf4,
        after=int8,
        verdict=Experiment.Verdict.ADOPTED,
        run_on=_day(ctx, 60),
        created_by=ctx.arjun,
        notes="E2E P99 900 -> 290 ms. The margin stays thin: the chargeback price (0.06 per "
        "million tokens) was set before the service needed 12 replicas.",
    )
    return s


def build_translation(ctx: _Context) -> Service:
    s = _service(
        ctx,
        "localization",
        slug="translate-mixtral",
        name="Translation (Mixtral 8x7B)",
        summary="Nightly machine translation of help-center articles into 14 languages "
        "(Mixtral-8x7B on vLLM, 2x A100).",
        model_name="mistralai/Mixtral-8x7B-Instruct-v0.1",
        model_params_b=Decimal("46.7"),
        quantization=Service.Quantization.NONE,
        engine="vllm",
        engine_version="0.6.1",
        gpu_model="NVIDIA A100 80GB",
        gpus_per_replica=2,
        replicas=2,
        slo_p99_e2e_ms=30000,
        slo_p99_ttft_ms=3000,
        slo_p99_tpot_ms=60,
        gpu_hour_price=Decimal("3.40"),
        currency="USD",
        price_per_mtok=Decimal("0.90"),
        token_basis=Service.TokenBasis.OUTPUT,
    )
    services.narrative_revise(service=s, author=ctx.arjun, summary="Write-up", body=TRANSLATE_MD)
    v1 = _config(
        s,
        {
            "model": "mistralai/Mixtral-8x7B-Instruct-v0.1",
            "dtype": "bfloat16",
            "tensor_parallel_size": 2,
            "max_model_len": 8192,
            "gpu_memory_utilization": 0.92,
            "max_num_seqs": 64,
            "enable_chunked_prefill": False,
            "enable_prefix_caching": False,
        },
        "Launch config.",
        ctx.arjun,
    )
    nightly = services.baseline_record(
        service=s,
        label="Nightly batch, concurrency 48",
        measured_at=_ago(ctx, 25, hour=2),
        config_version=v1,
        code_version="l10n-pipeline@7.3.0",
        engine_version="0.6.1",
        created_by=ctx.arjun,
        make_current=True,
        notes="A real night's articles (900 prompt tokens, ~700 output on average), "
        "4 hours to catch memory creep; none seen.",
        **measured(
            ttft=(420, 1900),
            tpot=(24, 33),
            e2e_p99=24000,
            prompt_tokens=900,
            output_tokens=700,
            concurrency=48,
            duration_s=4 * 3600,
            gpu_util=0.88,
            sm_active=0.35,
            dram_active=0.71,
            mem_weights_bytes=94 * GIB,
            mem_kv_bytes=52 * GIB,
        ),
    )
    _bottleneck(
        s,
        title="Decode is memory-bandwidth-bound on expert weights",
        layer=Bottleneck.Layer.HARDWARE,
        kind=Bottleneck.Kind.MEMORY_BANDWIDTH,
        status=Bottleneck.Status.CONFIRMED,
        identified_on=_day(ctx, 24),
        symptom="Throughput flat from concurrency 32 to 48; GPU-Util 88% but SM active 35% "
        "while DRAM active is 71%.",
        evidence="Each decode step streams the active experts' weights; at this batch the "
        "step time follows DRAM bandwidth, not compute.",
        evidence_baselines=[nightly],
    )
    _experiment(
        s,
        title="More sequences per batch",
        hypothesis="With memory to spare, max_num_seqs 128 amortizes each expert-weight read "
        "over more tokens: +25% throughput, which would bring the margin above zero.",
        variable_key="max_num_seqs",
        value_from="64",
        value_to="128",
        before=nightly,
        verdict=Experiment.Verdict.PENDING,
        run_on=_day(ctx, 5),
        created_by=ctx.arjun,
        notes="Scheduled for next week's nightly run.",
    )
    return s


BUILDERS: dict[str, Callable[[_Context], Service]] = {
    "support-chat-7b": build_support_chat,
    "doc-summarizer": build_doc_summarizer,
    "code-review-13b": build_code_review,
    "rag-answers-70b": build_rag_answers,
    "safety-guard-8b": build_safety_guard,
    "translate-mixtral": build_translation,
}


# --------------------------------------------------------------------------------------------
# Narratives

SUPPORT_MD = """\
# Support Chat 7B

## What it serves
The chat widget on every help-center page. A customer asks a question; the model answers in
two or three sentences, grounded in the article they are reading. Answers are short (48 tokens
on average), prompts are the article excerpt plus the conversation (350 tokens on average).

## Traffic
- Peaks at **~45 req/s** for the whole service on Monday mornings (EU + US East overlap).
- Streaming responses; the widget shows a typing indicator until the first token.

## SLOs and why
| metric | P99 target | why |
|---|---|---|
| TTFT | 500 ms | above ~0.5 s people re-send the question |
| TPOT | 50 ms | faster than reading speed is enough |
| end-to-end | 2 s | the widget times out at 5 s; keep headroom |

## How it performs
The model ran in a few hundred ms on a dev box, and the team assumed production would be fine.
At production load P99 went **above 8 s while the GPUs were ~30% busy**: the GPU was waiting
for the engine's CPU loop between decode steps. Multi-step scheduling (config v2) fixed it and
halved the replicas. See the optimization history below.

## Where it still hurts
Long pasted prompts stall short ones in prefill (TTFT tail). The chunked-prefill trial changed
three knobs at once, so we do not know yet what helped.
"""

SUMMARIZER_MD = """\
# Document Summarizer

## What it serves
A one-paragraph abstract of every document uploaded to the knowledge base (contracts, reports,
tickets): ~1,800 prompt tokens in, ~110 tokens out. Called synchronously by the upload page.

## Traffic
Office hours, **~60 req/s** at peak over 3 replicas; bursts when a team bulk-uploads a folder.

## SLOs and why
- **P99 end-to-end 1 s**: the upload page waits for the abstract before it shows the document.
- **P99 TTFT 400 ms**, **P99 TPOT 10 ms**: the abstract is not streamed, so these matter only as
  parts of the end-to-end time.

## The lesson of this service
P99 swung between 1 and 3 s and GPU-Util was 44%. The GPU was not the bottleneck: Triton's
preprocessing model tokenized every batch **serially on one CPU thread**. Eight preprocessing
instances took **P99 from 3 s to 800 ms** with no change on the GPU side.

> When GPU utilization is low, ask what the GPU is waiting for.
"""

CODE_REVIEW_MD = """\
# Code Review Assistant 13B

## What it serves
Posts review comments on merge requests: each changed hunk (900 tokens on average) gets a short
comment (128 tokens). Comments arrive asynchronously, so throughput per GPU matters more than
single-request latency.

## Traffic
Follows pushes: ~25 merge requests a minute at peak, 40 hunks each, over 6 replicas.

## SLOs and why
- **P99 end-to-end 12 s** per hunk: the whole merge request should be reviewed within a minute.
- **P99 TTFT 1 s**, **P99 TPOT 80 ms**: guard rails for the scheduler, not user-facing.

## Batch size: the sweep
We measured batch (and client concurrency) 1, 2, 4, 8, 16 and 32 with recorded diffs:

| batch | throughput vs batch 1 | latency vs batch 1 |
|---|---|---|
| 1 | 1x | 1x |
| 16 | ~10x | 1.6x |
| 32 | ~12x | 2.7x (P99 2x that of batch 16) |

**16 is the sweet spot**: past it, the KV cache is full (16 x 2,048 tokens of fp16 KV need
2 x 40 layers x 40 heads x 128 x 2,048 x 16 x 2 bytes, and 26 GB of weights already sit on the
48 GB card), requests wait for KV blocks, and throughput stops growing while latency climbs.

Note that GPU-Util reads 97% even at batch 1, where SM active is 10%: **GPU-Util lies**.
"""

RAG_MD = """\
# RAG Answers 70B

## What it serves
Answers employees' questions over the internal knowledge base. The retriever adds ~5k tokens of
passages to a shared system prompt; answers are ~180 tokens, streamed.

## Traffic
~6 req/s at peak over 2 replicas of 4x H100 (tensor parallel 4).

## SLOs and why
- **P99 TTFT 2.5 s**: retrieval already takes ~1 s before the model starts; users see a
  "searching" state meanwhile.
- **P99 TPOT 40 ms** and **P99 end-to-end 6 s**.

## Performance notes
- The radix (prefix) cache shares the system prompt's KV across requests.
- P99 was high while P50 was normal: decode steps waited behind 8k-token prefill chunks. Chunks
  of 2,048 fixed the tail (see the experiment).
- Open: all-reduce takes ~18% of a decode step at TP=4; two TP=2 replicas may do better.
"""

GUARD_MD = """\
# Safety Guard 8B

## What it serves
Every chat turn in every product is classified **safe / unsafe (+ category)** before it is shown.
Prompts ~650 tokens (turn + policy), answers ~6 tokens: this service is all prefill.

## Traffic
~90 req/s across 12 replicas, flat through the day (it follows all chat products).

## SLOs and why
**P99 end-to-end 300 ms**: it sits in the critical path of every chat answer.

## Economics
Charged back internally at 0.06 per million tokens (input + output). The margin is thin: the
price predates the move to 12 replicas. Raising the chargeback is on the next budget review.
"""

TRANSLATE_MD = """\
# Translation (Mixtral 8x7B)

## What it serves
Nightly translation of new and changed help-center articles into 14 languages. Batch job:
throughput and cost matter, latency only needs to finish inside the night.

## Traffic
~25k article sections a night, fed at a fixed concurrency of 48 per replica.

## Economics
**Losing money**: at 0.90 per million output tokens charged, one replica (2x A100) costs more than
that per million tokens. Options: more sequences per batch (pending experiment), FP8 weights on
H100, or a smaller model for the long tail of languages.
"""
