"""Capacity from a sweep: latency curves against load, and the highest load that meets an SLO.

A sweep measures one configuration at several loads x (concurrency, or request rate). For each
latency percentile (e.g. TTFT P99) we fit one curve across *all* the sweep's points, not just
the two neighbours of a target. Three monotone families compete:

    power     latency = a + b (x / x_max)^k          a, b >= 0, k > 0
    queue     latency = a + b / (1 - x / C)^m        a, b >= 0, C > x_max, m in {0.5, 1, 2}
    loglog2   log latency = c0 + c1 log x + c2 log^2 x, rising over the whole sweep

a floor plus a rise (the power), a queue filling as load nears a capacity C (rate sweeps), and
a curved line in log-log space. Each is monotone non-decreasing (more load never makes a
replica faster, so a noisy dip is not believed). For fixed shape parameters (k; C and m) the
first two are linear in (a, b), solved in closed form with non-negativity; shapes are searched
on a grid; loglog2 is weighted least squares in log space. The family with the lowest weighted
chi-square of the *log* residuals plus 2 per parameter wins (a percentile's noise is relative).

With four loads or more the winner then meets the points themselves (`PCHIP`: pooled where
they dip, by weighted isotonic regression in log latency, and joined by a monotone cubic in
log-log): each interior point is left out in turn and predicted by both, refitted on the rest.
Where the family misses them beyond their noise (mean chi-square above 2, `FAMILY_MISS`), the
smaller noise-weighted error of those predictions stays, the interpolant's leave-one-out
residual beyond the noise becoming its misfit. A curve flat and then a sharp knee, which no
family follows, is best read between its neighbours.

Weights. Each point's noise is the standard error of log(percentile):
  - the percentile's own: the spread of the order statistic a sample quantile q over n requests
    is read from (exact, `order_statistic_z`; sqrt(q (1 - q) / n) / phi(z_q) for many requests)
    times sigma, the log-spread of the distribution (`log_spread`: from P50 and the percentile of
    the same run, each taken at the z where a sample percentile over n requests sits; for a P50,
    from the run's widest percentile, `run_log_spread`; or a default); a P99 over 10 requests
    is their maximum, with the maximum's spread;
  - run-to-run: the spread of repeated runs at the same load where they exist, with a floor
    (`LATENCY_RUN_TO_RUN`, 2%) where they do not; the error beyond that is the curve's misfit,
    measured per curve: the larger of the points' scatter about the fitted curve and how far
    the family, refitted without each interior point, misses it (a short sweep's fit passes
    through every point, so only the left-out miss tells how far a crossing between points
    can be off). Two rising points make the straight line in log-log between them.

Intervals. The highest load meeting a limit S is the inverse of the fitted curve at S. Its
interval inverts the curve at S * exp(-+ z * sigma_total), where sigma_total combines the noise a
new measurement at that load would carry and the fit's misfit, times a calibration factor
measured by leave-one-out on real published sweeps (`bench/planner.py`, docs/method.md); a
joint fit of tied objectives (below) has its own factor, measured the same way.

Several objectives. The lowest crossing binds. Objectives whose crossings the data cannot tell
apart from it are tied and fitted jointly (`joint_load`): the load at which all their curves
best match their limits, each weighted by its noise, with a profile interval. Every crossing of
a tie estimates the same load, so taking the lowest would sit low by the noise alone, and
averaging crossings would let a flat curve (whose crossing could be anywhere) pull.

Extrapolation. A load above the highest measured one is never given as a number: the result
says the limit holds up to the sweep's end and "measure beyond N first". A limit broken even at
the lowest measured load says so too.

One module a job: `points` (inputs, estimates, shared constants), `noise` (each point's
weight), `curves` (the families and the fit), `limits` (crossings and the highest load),
`interpolation` (between points, and load to rate), `pchip` (the monotone interpolant).
Everything is re-exported here.
"""

from analysis.capacity.curves import LOGLOG2, PCHIP, POWER, QUEUE, Curve, fit_curve
from analysis.capacity.interpolation import loglog_between, monotone_interpolate, rate_at
from analysis.capacity.limits import TIE_Z, Crossing, MaxLoad, crossing, joint_load, max_load
from analysis.capacity.noise import (
    log_spread,
    order_statistic_z,
    percentile_log_se,
    percentile_z,
    point_log_se,
    point_spread,
    run_log_spread,
)
from analysis.capacity.points import (
    BELOW,
    BEYOND,
    CALIBRATION,
    DEFAULT_SIGMA,
    JOINT_CALIBRATION,
    LATENCY_RUN_TO_RUN,
    LEVEL,
    RUN_TO_RUN,
    WITHIN,
    Estimate,
    Point,
)

__all__ = [
    "BELOW",
    "BEYOND",
    "CALIBRATION",
    "DEFAULT_SIGMA",
    "JOINT_CALIBRATION",
    "LATENCY_RUN_TO_RUN",
    "LEVEL",
    "LOGLOG2",
    "PCHIP",
    "POWER",
    "QUEUE",
    "RUN_TO_RUN",
    "TIE_Z",
    "WITHIN",
    "Crossing",
    "Curve",
    "Estimate",
    "MaxLoad",
    "Point",
    "crossing",
    "fit_curve",
    "joint_load",
    "log_spread",
    "loglog_between",
    "max_load",
    "monotone_interpolate",
    "order_statistic_z",
    "percentile_log_se",
    "percentile_z",
    "point_log_se",
    "point_spread",
    "rate_at",
    "run_log_spread",
]
