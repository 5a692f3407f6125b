"""SLO error budget burning too fast (multi-window, multi-burn-rate)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from alerts.kinds import RuleKind, _span, _span_long, register
from alerts.promql import Metrics
from analysis.alerting import Health, Observation
from analysis.slo import pair_value, short_window_covered

if TYPE_CHECKING:
    from alerts.models import Rule
    from alerts.rules import Inputs
    from dossiers.models import Service


@register
class SloBurn(RuleKind):
    """Multi-window, multi-burn-rate (SRE workbook, chapter 5): fires for an SLO when both the
    rule's window and a twelfth of it (1 h and 5 min, 6 h and 30 min, 3 days and 6 h) spend
    the error budget faster than the threshold. The long window makes the burn significant,
    the short one makes the alert stop soon after the burn does. One alert per SLO."""

    name = "slo_burn"
    order = 80
    label = "SLO error budget burn rate above (x), over the window and a twelfth of it"
    description = (
        "How fast each SLO spends its error budget (1x: exactly over the SLO's window), over"
        " the rule's window and a twelfth of it; both must exceed the threshold."
    )
    unit = "x"
    reads_slo = True
    inclusive = True  # a steady burn at the factor is the pace the pair exists to catch

    @staticmethod
    def windows(rule: Rule) -> tuple[int, int]:
        return rule.window_s, max(60, rule.window_s // 12)

    def default_specs(self, service: Service) -> list[dict]:
        from alerts.slo import burn_pairs

        if not service.slo_objects():
            return []
        return [
            {
                "name": f"SLO budget burn: {p.name} ({p.factor:g}x over {_span_long(p.long_s)})",
                "threshold": p.factor,
                "resolve_threshold": p.factor,
                "window_s": p.long_s,
                "for_s": 0,
                # A burn hovering at the factor would open and close an alert every few
                # minutes; held for the short window, it is one episode.
                "keep_firing_for_s": p.short_s,
                "min_requests": 100,
                "severity": p.severity,
            }
            for p in burn_pairs()
        ]

    def observe(self, rule: Rule, inputs: Inputs) -> list[tuple[dict[str, str], Observation]]:
        from alerts.slo import reading

        long_s, short_s = self.windows(rule)
        out = []
        for o in inputs.slos.get(rule.service_id, []):
            identity = {"service": rule.service.slug, "slo": o.key}
            end = inputs.window_end
            long_w = inputs.slo_windows.get(long_s, {}).get(rule.service_id)
            short_w = inputs.slo_windows.get(short_s, {}).get(rule.service_id)
            long = reading(o, long_w, long_s, end)
            short = reading(o, short_w, short_s, end)
            out.append((identity, self._judge(rule, o, long, short, end)))
        return out

    def _judge(self, rule: Rule, o, long, short, end: datetime | None = None) -> Observation:
        spans = f"{_span_long(long.window_s)} and {_span_long(short.window_s)}"
        total = round(long.count.total)
        if long.count.total and not short.count.total:
            # Requests in the long window but none in its last minutes: the traffic stopped
            # (or the latest minutes are not rolled up yet). The outage pair's 1-minute window
            # is the first to go empty, so say which window and where it ends, not "no data"
            # as if the service had none (a demo whose live traffic has not caught up with
            # its seeded history reads so).
            until = f" to {end:%H:%M} UTC (now minus the evaluation lag)" if end else ""
            why = "; ".join(short.notes) or "no requests"
            return Observation(
                Health.NO_DATA,
                count=total,
                reason=f"{o.name}: no requests in the short window (the last "
                f"{_span_long(short.window_s)}{until}: {why}), though {total:,} in "
                f"{_span_long(long.window_s)}: the service's traffic stopped, or its latest "
                "minutes are not rolled up yet",
            )
        if not long.count.total or not short.count.total:
            why = "; ".join(long.notes + short.notes) or "no requests"
            return Observation(Health.NO_DATA, count=total, reason=f"{o.name}: {why} ({spans})")
        first = long.first_data_s
        if not short_window_covered(first, short.window_s):
            return Observation(
                Health.INSUFFICIENT_DATA,
                count=total,
                reason=f"{o.name}: data for {_span(int(first or 0))} only, less than the short "
                f"window ({_span_long(short.window_s)})",
            )
        if total < rule.min_requests:
            return Observation(
                Health.INSUFFICIENT_DATA,
                count=total,
                reason=f"{o.name}: {total} requests in {_span_long(long.window_s)}, "
                f"fewer than {rule.min_requests}",
            )
        # The certain burn (the lower bound) fires the alert: a threshold between bucket edges
        # must not page on requests that may well be good. The upper bound is said beside.
        lb, sb = long.burn, short.burn
        value = pair_value(lb[0], sb[0])
        bounds = "" if long.exact and short.exact else f" (up to {pair_value(lb[1], sb[1]):.1f}x)"
        return Observation(
            Health.OK,
            value=value,
            count=total,
            reason=(
                f"{o.name} ({o.description}): burn {lb[0]:.1f}x over "
                f"{_span_long(long.window_s)}, {sb[0]:.1f}x over {_span_long(short.window_s)}"
                f"{bounds}; {long.source}"
            ),
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        from alerts.slo_promql import burn_expression

        return burn_expression(rule, m, self.windows(rule))
