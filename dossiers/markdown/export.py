"""Export: a service's whole dossier as one Markdown document a new hire can read.

The file reads top to bottom: whom to call, what hurts now, the numbers at a glance, the
service, its story, what was tried, every measurement, past bottlenecks, the configs, a
glossary. What the import reads back sits in small ```yaml blocks (exact values, units in the
key names) and under `####` text headings; tables marked "(computed)" and the "At a glance" and
"Glossary" sections are written for the reader and skipped on import. Same data, same text.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import yaml
from django.urls import reverse

from core.links import site_url
from core.templatetags.display import (
    change_with_percent,
    gigabytes,
    metric_label,
    metric_value,
    ms,
    num,
    ratio,
)
from dossiers import selectors
from dossiers.markdown import schema
from dossiers.models import (
    LATENCY_METRICS,
    PERCENTILES,
    Baseline,
    Bottleneck,
    ConfigVersion,
    Experiment,
    Service,
)

PERCENTILE_TITLES = {"p50": "P50", "p90": "P90", "p95": "P95", "p99": "P99", "p999": "P99.9"}
LATENCY_TITLES = {"e2e": "End-to-end", "ttft": "TTFT", "tpot": "TPOT"}
# The file keeps to what a reader compares first; the page shows every percentile.
DELTA_METRICS = ("qps", "output_tps", "input_tps", "gpu_util", "e2e_p50_ms", "e2e_p99_ms")
DELTA_METRICS += ("ttft_p99_ms", "tpot_p99_ms")
# The service's pages on the PerfHub the file came from, linked under its title: a file read
# away from PerfHub (a wiki, an e-mail) leads back to the live numbers. Only the service's own
# pages, named by its slug: a link to one experiment or run would name ids that an import into
# another PerfHub does not keep, and the round trip would not give the same text.
LIVE_PAGES = (
    ("Dossier", "dossiers:dossier"),
    ("Onboarding", "dossiers:onboarding"),
    ("Live dashboard", "dashboards:service"),
    ("Load tests", "loadtests:list"),
    ("Capacity planner", "planning:planner"),
)


def export_dossier(service: Service) -> str:
    """The whole dossier as one Markdown document (deterministic: same data, same text)."""
    configs = list(service.config_versions.order_by("version"))
    baselines = list(
        service.baselines.select_related("config_version").order_by("measured_at", "pk")
    )
    refs = {b.pk: f"B{i}" for i, b in enumerate(baselines, start=1)}
    bottlenecks = list(
        service.bottlenecks.prefetch_related("evidence_baselines").order_by("identified_on", "pk")
    )
    experiments = list(
        service.experiments.select_related(
            "before__config_version", "after__config_version"
        ).order_by("run_on", "pk")
    )
    narrative = selectors.current_narrative(service)
    open_ones = [b for b in bottlenecks if b.is_open]
    past = [b for b in bottlenecks if not b.is_open]

    out = _front_matter(service)
    out += [f"# {service.name}", ""]
    if service.summary:
        out += [f"> {service.summary}", ""]
    out += [
        "The performance dossier of this service, exported from PerfHub. Read top to bottom: "
        "whom to call, what hurts now, the numbers, the story, what was tried, every "
        "measurement. Latency is in milliseconds (ms), throughput in requests or tokens per "
        "second (req/s, tok/s), memory in GB (10⁹ bytes), utilization in % of the time; the "
        "terms are explained in the [glossary](#glossary).",
        "",
        *_live_pages(service),
    ]

    out += [f"## {schema.PEOPLE}", ""]
    people = _data(service, schema.PEOPLE_KEYS)
    out += _yaml_block(people) if people else ["Nobody named yet.", ""]

    out += [f"## {schema.OPEN_BOTTLENECKS}", ""]
    if not open_ones:
        out += ["None open.", ""]
    for bottleneck in reversed(open_ones):  # the newest open one first
        out += _bottleneck(bottleneck, refs)

    out += [f"## {schema.AT_A_GLANCE}", ""]
    current = next((b for b in baselines if b.is_current), None)
    out += _at_a_glance(service, current, refs)

    out += [f"## {schema.SERVICE}", ""]
    out += _yaml_block(_data(service, schema.SERVICE_KEYS))

    out += [f"## {schema.NARRATIVE}", "", schema.NARRATIVE_START]
    if narrative and narrative.body.strip():
        out.append(narrative.body.strip())
    out += [schema.NARRATIVE_END, ""]

    out += [f"## {schema.EXPERIMENTS}", ""]
    if not experiments:
        out += ["None yet.", ""]
    for experiment in experiments:
        out += _experiment(experiment, refs)

    out += [f"## {schema.BASELINES}", ""]
    out += _baseline_overview(baselines, refs)
    for baseline in baselines:
        out += _baseline(baseline, refs[baseline.pk])

    out += [f"## {schema.PAST_BOTTLENECKS}", ""]
    if not past:
        out += ["None.", ""]
    for bottleneck in past:
        out += _bottleneck(bottleneck, refs)

    out += [f"## {schema.CONFIG}", ""]
    previous = None
    for config in configs:
        out += _config(config, previous)
        previous = config

    out += [f"## {schema.GLOSSARY}", "", *GLOSSARY, ""]
    return "\n".join(out).rstrip("\n") + "\n"


# --------------------------------------------------------------------------------------------
# Data blocks


def _live_pages(service: Service) -> list[str]:
    """One line of links to the service's pages, at SITE_URL (skipped on import)."""
    links = [
        f"[{title}]({site_url(reverse(name, kwargs={'slug': service.slug}))})"
        for title, name in LIVE_PAGES
    ]
    return ["Live pages: " + " · ".join(links) + ".", ""]


def _front_matter(service: Service) -> list[str]:
    header = {
        "format": schema.FORMAT,
        "version": schema.VERSION,
        "service": service.slug,
        "team": service.team.slug,
    }
    return ["---", *_dump(header), "---", ""]


def to_file_value(value: Any, scale: str = "") -> Any:
    """A model value as the file writes it (plain YAML types; units per `scale`)."""
    if value is None or value == "":
        return None
    if scale == "gb":
        return _plain_number(Decimal(value) / 10**9)
    if scale == "pct":
        return _plain_number(Decimal(repr(value)) * 100)
    if isinstance(value, Decimal):
        return _plain_number(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 1e15 else value
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).replace(microsecond=0)
    if isinstance(value, str):
        return str(value)  # a model's TextChoices member as its plain value
    return value


def _plain_number(value: Decimal) -> int | float:
    value = value.normalize()
    return int(value) if value == value.to_integral_value() else float(value)


def _data(instance: Any, keys: tuple[schema.Key, ...]) -> dict[str, Any]:
    data = {}
    for key in keys:
        value = to_file_value(getattr(instance, key.field), key.scale)
        if value is None or value == {}:
            continue
        data[key.key] = value
    return data


def _dump(data: dict[str, Any]) -> list[str]:
    """`key: value` lines; a list or a mapping of lists in flow style (`e2e: [1, 2, 3]`)."""
    lines: list[str] = []
    for key, value in data.items():
        nested = isinstance(value, list | dict)
        text = yaml.safe_dump(
            {key: value},
            sort_keys=False,
            allow_unicode=True,
            width=10_000,
            default_flow_style=None if nested else False,
        )
        lines += text.rstrip("\n").splitlines()
    return lines


def _yaml_block(data: dict[str, Any]) -> list[str]:
    return ["```yaml", *_dump(data), "```", ""]


# --------------------------------------------------------------------------------------------
# Items


def _bottleneck(bottleneck: Bottleneck, refs: dict[int, str]) -> list[str]:
    evidence = sorted(
        (refs[b.pk] for b in bottleneck.evidence_baselines.all() if b.pk in refs),
        key=lambda r: int(r[1:]),
    )
    data = _data(bottleneck, schema.BOTTLENECK_KEYS)
    if evidence:
        data["evidence_baselines"] = evidence
    since = f"since {bottleneck.identified_on:%Y-%m-%d}"
    if bottleneck.resolved_on:
        since = f"{bottleneck.identified_on:%Y-%m-%d} to {bottleneck.resolved_on:%Y-%m-%d}"
    out = [
        f"### {bottleneck.title}",
        "",
        f"**{bottleneck.get_status_display().capitalize()}** {since} · "
        f"{bottleneck.get_layer_display()} · {bottleneck.get_kind_display()}",
        "",
        *_yaml_block(data),
        "#### Symptom",
        "",
        bottleneck.symptom.strip(),
        "",
    ]
    if bottleneck.evidence.strip():
        out += ["#### Evidence", "", bottleneck.evidence.strip(), ""]
    return out


def _experiment(experiment: Experiment, refs: dict[int, str]) -> list[str]:
    data = _data(experiment, schema.EXPERIMENT_KEYS)
    data["before"] = refs[experiment.before_id]
    if experiment.after_id:
        data["after"] = refs[experiment.after_id]
    judged = refs[experiment.before_id] + (
        f" → {refs[experiment.after_id]}" if experiment.after_id else " (no after yet)"
    )
    aim = f" · target {_delta_label(experiment.target)}" if experiment.target else ""
    out = [
        f"### {experiment.title}",
        "",
        f"**{experiment.get_verdict_display().capitalize()}**, run {experiment.run_on:%Y-%m-%d}"
        f" · changed `{experiment.variable_key}` from `{experiment.value_from}` to "
        f"`{experiment.value_to}`{aim} · judged by {judged}",
        "",
        *_yaml_block(data),
    ]
    others = experiment.other_changed_keys() if experiment.after_id else None
    if others:
        out += [
            f"**More than one variable changed**: besides `{experiment.variable_key}`, the "
            "configs also differ in " + ", ".join(f"`{k}`" for k in others) + ".",
            "",
        ]
    out += ["#### Hypothesis", "", experiment.hypothesis.strip(), ""]
    # The stated target is in the table even when it is not one of the usual few.
    shown = {*DELTA_METRICS, experiment.target}
    deltas = [d for d in experiment.deltas() if d.metric in shown]
    if deltas:
        out += ["#### Measured change (computed)", ""]
        out += _table(
            ("Metric", "Before", "After", "Change"),
            [
                (
                    _delta_label(d.metric),
                    _with_unit(d.before, d.metric),
                    _with_unit(d.after, d.metric),
                    change_with_percent(d),
                )
                for d in deltas
            ],
            numeric=(1, 2, 3),
        )
        out.append("")
    if experiment.notes.strip():
        out += ["#### Notes", "", experiment.notes.strip(), ""]
    return out


def _delta_label(metric: str) -> str:
    return metric_label(metric).replace(" (ms)", "")


def _with_unit(value: float, metric: str) -> str:
    if metric.endswith("_ms"):
        return f"{ms(value)} ms"
    unit = {"qps": " req/s", "output_tps": " tok/s", "input_tps": " tok/s"}.get(metric, "")
    return metric_value(value, metric) + unit


def _baseline_overview(baselines: list[Baseline], refs: dict[int, str]) -> list[str]:
    if not baselines:
        return ["None yet.", ""]
    rows = []
    for b in baselines:
        load = (
            f"{num(b.concurrency)} concurrent"
            if b.concurrency
            else f"{num(b.request_rate)} req/s"
            if b.request_rate is not None
            else "—"
        )
        rows.append(
            (
                refs[b.pk] + (" (current)" if b.is_current else ""),
                b.label,
                f"{b.measured_at.astimezone(dt.UTC):%Y-%m-%d}",
                load,
                num(b.output_tps),
                ms(b.e2e_p99_ms),
                ms(b.ttft_p99_ms),
                f"v{b.config_version.version}" if b.config_version else "—",
            )
        )
    header = ("", "Label", "Measured", "Load", "Output tok/s", "P99 e2e (ms)", "P99 TTFT (ms)")
    return [*_table((*header, "Config"), rows, numeric=(4, 5, 6)), ""]


def _baseline(baseline: Baseline, ref: str) -> list[str]:
    data: dict[str, Any] = {}
    if baseline.is_current:
        data["current"] = True
    if baseline.config_version is not None:
        data["config"] = f"v{baseline.config_version.version}"
    data.update(_data(baseline, schema.BASELINE_KEYS))
    latency = {}
    for metric in schema.LATENCY_ROWS:
        values = [to_file_value(baseline.latency(metric, p)) for p in schema.LATENCY_COLUMNS]
        if any(v is not None for v in values):
            latency[metric] = values
    if latency:
        data[schema.LATENCY_KEY] = latency
    title = f"### {ref}: {baseline.label}"
    out = [title, "", *_yaml_block(data)]
    if baseline.notes.strip():
        out += ["#### Notes", "", baseline.notes.strip(), ""]
    return out


def _config(config: ConfigVersion, previous: ConfigVersion | None) -> list[str]:
    data: dict[str, Any] = {"created": to_file_value(config.created_at)}
    if config.is_current:
        data["current"] = True
    if config.note:
        data["note"] = config.note
    title = f"### v{config.version}" + (" (current)" if config.is_current else "")
    out = [title, "", *_yaml_block(data)]
    out += ["```json", json.dumps(config.config, indent=2, sort_keys=True), "```", ""]
    if previous is not None:
        diff = config.diff_from(previous)
        if diff:
            out += [f"#### Diff from v{previous.version} (computed)", "", "```diff", *diff]
            out += ["```", ""]
    return out


# --------------------------------------------------------------------------------------------
# At a glance (computed for the reader)


def _at_a_glance(service: Service, baseline: Baseline | None, refs: dict[int, str]) -> list[str]:
    if baseline is None:
        return ["No current baseline yet.", ""]
    load = (
        f"{num(baseline.concurrency)} concurrent requests"
        if baseline.concurrency
        else f"{num(baseline.request_rate)} req/s offered"
        if baseline.request_rate is not None
        else "an unrecorded load"
    )
    out = [
        f"Current baseline **{refs[baseline.pk]}: {baseline.label}**, measured "
        f"{baseline.measured_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC at {load}.",
        "",
    ]
    rows = []
    for metric in LATENCY_METRICS:
        values = [baseline.latency(metric, p) for p in PERCENTILES]
        if all(v is None for v in values):
            continue
        slo = service.slo_for(metric)
        p99 = baseline.latency(metric, "p99")
        verdict = "—" if slo is None or p99 is None else "met" if p99 <= slo else "**missed**"
        rows.append((LATENCY_TITLES[metric], *(ms(v) for v in values), ms(slo), verdict))
    if rows:
        header = ("Latency (ms)", *PERCENTILE_TITLES.values(), "SLO (P99)", "SLO")
        out += [*_table(header, rows, numeric=(1, 2, 3, 4, 5, 6)), ""]
    facts = []
    if baseline.qps is not None or baseline.output_tps is not None:
        facts.append(
            f"- Throughput: {num(baseline.qps, 2)} req/s, {num(baseline.output_tps)} output "
            f"tok/s, {num(baseline.input_tps)} input tok/s."
        )
    if baseline.gpu_util is not None:
        facts.append(
            f"- GPU busy {ratio(baseline.gpu_util)} of the time (SM active "
            f"{ratio(baseline.sm_active)}, DRAM bandwidth {ratio(baseline.dram_active)})."
        )
    if baseline.mem_weights_bytes or baseline.mem_kv_bytes:
        facts.append(
            f"- GPU memory: weights {gigabytes(baseline.mem_weights_bytes)}, KV cache "
            f"{gigabytes(baseline.mem_kv_bytes)}."
        )
    for basis, label in Service.TokenBasis.choices:
        economics = baseline.economics(service, basis)
        if economics is None:
            continue
        text = (
            f"- Cost per million {label}: **{economics.cost_per_mtok:.2f} {service.currency}** "
            f"({service.gpus_per_replica} GPU(s) per replica, every reserved hour counted)"
        )
        if economics.margin_percent is not None and basis == service.token_basis:
            text += (
                f"; margin at the price of {to_file_value(service.price_per_mtok)} "
                f"{service.currency}: **{economics.margin_percent:.0f}%**"
            )
        facts.append(text + ".")
    return [*out, *facts, ""] if facts else out


def _table(header, rows, *, numeric: tuple[int, ...] = ()) -> list[str]:
    header = list(header)
    align = ["---:" if i in numeric else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    for row in rows:
        cells = [str(c).replace("\n", " ").replace("|", "\\|") for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


GLOSSARY = [
    "- **P50, P90, P95, P99, P99.9**: percentiles of a latency distribution; P99 is the time "
    "99% of requests beat. Judge by the tail, never the mean; a P99 needs at least 100 requests "
    "under it, a P99.9 1,000.",
    "- **End-to-end (e2e)**: from request sent to last token received.",
    "- **TTFT**: time to first token; shaped by queueing and prefill (reading the prompt).",
    "- **TPOT**: time per output token after the first, one value per request; shaped by "
    "decode, usually bound by memory bandwidth. Not ITL (one value per gap between tokens).",
    "- **Vantage**: where a baseline's latencies were measured: client (a load generator or "
    "gateway, from sending) or server (the engine's own histograms, from arrival at the "
    "engine). Only figures from the same vantage are compared.",
    "- **req/s, tok/s**: requests completed per second; tokens per second, output (generated) "
    "and input (prompt).",
    "- **GPU busy, SM active, DRAM active**: GPU busy (NVML GPU-Util) is the share of time any "
    "kernel ran; SM active is how busy the compute units really were; DRAM active how much of "
    "the memory bandwidth was used. Busy with low SM active and high DRAM active means "
    "memory-bandwidth bound.",
    "- **KV cache**: keys and values of past tokens kept in GPU memory so decode does not "
    "recompute them; it limits how many requests fit at once.",
    "- **Cost per Mtok**: GPU price per hour x GPUs per replica x 1,000,000 / (tokens per second "
    "x 3,600), every reserved hour counted, idle included.",
    "- **Margin**: (price - cost) / price, per million tokens.",
    "- **Baseline**: a measurement under recorded conditions; the current one is the reference "
    "that gates and alerts compare against.",
    "- **Bottleneck status**: suspected → confirmed → mitigated (or won't fix); the first two are "
    "open.",
    "- **Experiment**: one variable changed, judged by a before and an after baseline; its "
    "target, when stated, is the figure it aims to move.",
]
