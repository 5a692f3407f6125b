"""guidellm runs imported before this release stored guidellm's `time_per_output_token_ms`
(latency / output tokens, the first token included) as TPOT. PerfHub's TPOT, like vLLM's, is
(latency - TTFT) / (output tokens - 1): guidellm's `inter_token_latency_ms`, which every such
run kept in `extra.latency_ms.itl`. This moves each run's TPOT percentiles to it, and a
baseline promoted from such a run when the baseline still holds the run's old figures.
"""

from django.db import migrations

LABELS = ("p50", "p90", "p95", "p99", "p999")
BASIS = "guidellm's ITL: (latency - TTFT) / (output tokens - 1), PerfHub's TPOT"


def _new_tpot(itl: dict) -> dict[str, float | None]:
    values = {label: itl.get(label) for label in LABELS}
    if values["p50"] is None:
        values["p50"] = itl.get("median")  # 0.2/0.3 reports have no p50
    return values


def forwards(apps, schema_editor):
    LoadTest = apps.get_model("loadtests", "LoadTest")
    for run in LoadTest.objects.filter(format="guidellm").select_related("promoted_to"):
        latency = (run.extra or {}).get("latency_ms") or {}
        itl = latency.get("itl")
        if not isinstance(itl, dict):
            continue  # nothing to move it to: leave the run as it was
        old = {label: getattr(run, f"tpot_{label}_ms") for label in LABELS}
        new = _new_tpot(itl)
        for label, value in new.items():
            setattr(run, f"tpot_{label}_ms", value)
        extra = dict(run.extra)
        moved = {k: v for k, v in latency.items() if k not in ("itl", "tpot")}
        moved["tpot"] = itl
        if isinstance(latency.get("tpot"), dict):
            moved["latency_per_token"] = latency["tpot"]
        extra["latency_ms"] = moved
        sources = dict(extra.get("sources") or {})
        for label, value in new.items():
            key = f"tpot_{label}_ms"
            if value is None:
                sources.pop(key, None)
            else:
                stat = "median" if label == "p50" and "p50" not in itl else f"percentiles.{label}"
                sources[key] = f"metrics.inter_token_latency_ms.successful.{stat}; {BASIS}"
        extra["sources"] = sources
        run.extra = extra
        run.save(update_fields=["extra", *(f"tpot_{label}_ms" for label in LABELS)])
        baseline = run.promoted_to
        if baseline is not None and all(
            getattr(baseline, f"tpot_{label}_ms") == old[label] for label in LABELS
        ):
            for label, value in new.items():
                setattr(baseline, f"tpot_{label}_ms", value)
            baseline.save(update_fields=[f"tpot_{label}_ms" for label in LABELS])


class Migration(migrations.Migration):
    dependencies = [
        ("loadtests", "0007_lint_findings_and_fingerprints"),
        ("dossiers", "0011_slo_kind_registry"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
