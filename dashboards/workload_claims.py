"""Does the baseline still represent production's workload? Its prompt and output length
distributions against those of the requests agents pushed over the claim check's window
(analysis.fingerprint's rule): one claim per length, beside the figures' claims
(`dashboards.claims`)."""

from __future__ import annotations

from datetime import datetime

from analysis import fingerprint
from analysis.claims import Status, Verdict
from analysis.fingerprint import Fingerprint, Lengths
from collectors.models import RequestSample
from dashboards.claims import Claim, ClaimCheck
from dossiers.models import Baseline, Service
from loadtests.models import source_run

# Newest pushed requests read per window for the live length distributions: enough for a P90
# within a few percent, bounded so a busy service's hour stays one cheap read.
MAX_LIVE_LENGTH_ROWS = 20_000
# Fewer live requests than this say nothing about a length distribution's P25..P90.
MIN_LIVE_LENGTH_REQUESTS = 20


def live_lengths(service: Service, start: datetime, end: datetime) -> dict[str, Lengths | None]:
    """Prompt and output token distributions of the requests agents pushed in [start, end)
    (successful ones, newest MAX_LIVE_LENGTH_ROWS). Engines' scraped counters give totals
    only, so a service without pushed requests has no live distribution."""
    rows = list(
        RequestSample.objects.filter(service=service, ts__gte=start, ts__lt=end, ok=True)
        .order_by("-ts")
        .values_list("prompt_tokens", "output_tokens")[:MAX_LIVE_LENGTH_ROWS]
    )
    out: dict[str, Lengths | None] = {}
    for index, what in enumerate(("prompt", "output")):
        values = [row[index] for row in rows if row[index] is not None]
        enough = len(values) >= MIN_LIVE_LENGTH_REQUESTS
        out[what] = Lengths.from_values(values) if enough else None
    return out


def baseline_lengths(baseline: Baseline) -> dict[str, Lengths | None]:
    """The baseline's prompt and output lengths: its load test's fingerprint, else its means."""
    run = source_run(baseline)
    if run is not None and run.fingerprint:
        fp = Fingerprint.from_dict(run.fingerprint)
        return {"prompt": fp.prompt, "output": fp.output}
    return {
        what: None if mean is None else Lengths(mean=mean, basis="mean")
        for what, mean in (
            ("prompt", baseline.prompt_tokens_mean),
            ("output", baseline.output_tokens_mean),
        )
    }


def workload_claims(check: ClaimCheck) -> list[Claim]:
    """One claim per length (prompt, output): the baseline's P50 (or mean) against production's
    over the window; "not representative" when the distributions part by the fingerprint's rule
    (analysis.fingerprint), with the statistic that moved most. Appended to `check.claims`."""
    if check.baseline is None:
        return []
    base = baseline_lengths(check.baseline)
    live = live_lengths(check.service, check.start, check.end)
    out = []
    for what in ("prompt", "output"):
        b, lv = base[what], live[what]
        if b is None:
            continue
        shown_b = b.quantiles.get("p50", b.mean)
        label = f"{what.capitalize()} length {'P50' if 'p50' in b.quantiles else 'mean'}"
        if lv is None:
            note = "no pushed requests with token counts in the window"
            out.append(
                Claim(
                    f"{what}_length",
                    label,
                    "tokens",
                    shown_b,
                    None,
                    Verdict(Status.NO_LIVE_DATA),
                    note,
                )
            )
            continue
        shown_live = lv.quantiles["p50"] if "p50" in b.quantiles else lv.mean
        change = shown_live / shown_b - 1 if shown_b else None
        drift = fingerprint.production_drift(what, b, lv)
        if drift:
            note = f"the baseline no longer represents production: {drift}"
            verdict = Verdict(Status.UNREPRESENTATIVE, change)
        else:
            # Say what was counted: the window's request total (from roll-ups) sits above
            # this table, and a bare "N live requests" read as a second, contradicting total.
            newest = "the newest " if lv.count >= MAX_LIVE_LENGTH_ROWS else ""
            note = f"over {newest}{lv.count:,} pushed requests with token counts"
            verdict = Verdict(Status.HOLDS, change)
        out.append(Claim(f"{what}_length", label, "tokens", shown_b, shown_live, verdict, note))
    check.claims.extend(out)
    return out
