"""The plan as plain text lines (the command's default output)."""

from __future__ import annotations

import math

from analysis.capacity import Estimate
from core.templatetags.display import percent
from dossiers.models import Experiment
from loadtests.sweeps import Sweep
from planning.plan import Plan


def _n(value: float) -> str:
    """A rounded figure with thousands separated and no ".0" (5,552 USD, not 5,552.0)."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


def _e(estimate: Estimate | None, digits: int = 3, unit: str = "") -> str:
    if estimate is None:
        return "-"
    d = estimate.to_dict(digits)
    high = "unbounded" if d["high"] is None else _n(d["high"])
    return f"{_n(d['value'])}{unit} ({_n(d['low'])} to {high}, {d['level']:.0%} interval)"


def _reverted_note(experiments: list[Experiment]) -> str:
    return ", ".join(f"{x.variable_key}={x.value_to} ({x.title})" for x in experiments)


def _other_sweep_line(plan: Plan, other: Sweep) -> str:
    line = f"  other sweep: {other.title} (plan it with --sweep {other.key})"
    reverted = plan.others_reverted_by.get(other.key)
    return line + (f"; carries a reverted change: {_reverted_note(reverted)}" if reverted else "")


def reverted_lines(plan: Plan) -> list[str]:
    """One line naming the reverted changes the plan's sweep carries; none when it carries none."""
    if not plan.reverted_by:
        return []
    changes = _reverted_note(plan.reverted_by)
    return [f"this sweep's configuration carries a change an experiment reverted: {changes}"]


def plan_lines(plan: Plan) -> list[str]:
    per = plan.per_replica
    lines = [
        f"{plan.service.slug}: {plan.sweep.title} (runs {', '.join(map(str, plan.runs))})",
        *reverted_lines(plan),
        *(_other_sweep_line(plan, other) for other in plan.other_sweeps),
        "objectives: " + (", ".join(o.label for o in plan.objectives) or "-"),
        f"per replica: {per.result.message}",
        f"  max request rate: {_e(per.max_request_rate, unit=' req/s')}",
        f"  max concurrency:  {_e(per.max_concurrency)}",
    ]
    if plan.forecast:
        lines.append(f"load: {plan.forecast.requests_per_s:,.3g} req/s ({plan.forecast.source})")
    if plan.replicas:
        r, g = plan.replicas, plan.gpus
        lines += [
            f"replicas: {r.value} ({r.low} to {r.high or '?'}) at {plan.headroom:.0%} headroom; "
            f"GPUs: {g.value} ({g.low} to {g.high or '?'}) x {plan.service.gpu_model}",
            f"today: {plan.service.replicas} replica{'' if plan.service.replicas == 1 else 's'}"
            + (f" ({plan.provisioning[1]})" if plan.provisioning and plan.provisioning[1] else ""),
            f"cost per month: {_e(plan.cost_per_month, 4, ' ' + plan.currency)}",
        ]
    if plan.margin:
        m = plan.margin
        low, high = (percent(v) if math.isfinite(v) else "unbounded" for v in (m.low, m.high))
        lines.append(
            f"margin at the service's price: {percent(m.value)} ({low} to {high}, "
            f"{m.level:.0%} interval)"
        )
    if plan.at_load is not None:
        lines.append(f"predicted at {plan.sweep.axis} {plan.at_load_x:g}:")
        for name, value in plan.at_load.items():
            shown = (
                "-"
                if value["value"] is None
                else f"{value['value']:,} ms ({value['low']:,} to {value['high']:,})"
            )
            lines.append(f"  {name}: {shown}{' — ' + value['note'] if value.get('note') else ''}")
    lines += [f"note: {n}" for n in plan.notes]
    return lines
