"""One scrape, parsed: cumulative canonical series as the engine exposed them at that moment."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from analysis.buckets import BucketCounts, coarsen, merge_all, shared_edges
from analysis.plausibility import EXPOSITION_VALUE, gpu_problems
from collectors.exposition import dcgm, engines
from collectors.exposition.engines import Rule, rules_for
from collectors.exposition.text import ExpositionError, line_of, samples

Labels = tuple[tuple[str, str], ...]
SeriesKey = tuple[str, Labels]  # (canonical name, sorted labels without `le`)

_EDGE_DIGITS = 12


def normalize_edge(le: str | float) -> float:
    """An `le` as a float, rounded to 12 significant digits.

    TGI prints edges with float noise ("0.00015000000000000001") and scaling ms edges to
    seconds adds more; rounding makes the same bucket compare equal across scrapes and hosts.
    """
    value = float(le)
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.{_EDGE_DIGITS}g}")


@dataclass(frozen=True)
class HistogramSeries:
    """One histogram series' cumulative state: counts per `le` since the engine started."""

    edges: tuple[float, ...]  # finite, sorted
    cumulative: tuple[float, ...]  # one per edge, then +Inf
    sum: float
    count: float  # `_count`, or the +Inf bucket when `_count` is absent

    def bucket_counts(self) -> BucketCounts:
        return BucketCounts.from_cumulative(self.edges, self.cumulative, self.sum)


@dataclass
class ParsedScrape:
    source: str
    counters: dict[SeriesKey, float] = field(default_factory=dict)
    histograms: dict[SeriesKey, HistogramSeries] = field(default_factory=dict)
    gauge_series: dict[SeriesKey, float] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)  # aggregated over series
    gpus: list[dict] = field(default_factory=list)
    ignored: int = 0  # samples of metrics no rule maps (and `_created` timestamps)
    invalid: int = 0  # mapped samples whose value is NaN, infinite or negative

    @property
    def reads_something(self) -> bool:
        """Some sample is a metric this source's mapping reads."""
        return bool(self.counters or self.histograms or self.gauge_series or self.gpus)

    @property
    def maps_nothing(self) -> bool:
        """Samples came, and none of them is a metric this source's mapping reads (a wrong
        `source`, or an engine behind something that renames its metrics)."""
        return bool(self.ignored) and not self.reads_something and not self.invalid

    def counter_total(self, name: str) -> float | None:
        """The cumulative value of a canonical counter summed over its series."""
        values = [v for (n, _), v in self.counters.items() if n == name]
        return math.fsum(values) if values else None

    def histogram(self, name: str) -> BucketCounts | None:
        """Counts since the engines started, summed over series (coarsened to shared edges)."""
        series = [h.bucket_counts() for (n, _), h in self.histograms.items() if n == name]
        return sum_histograms(series)


def sum_histograms(items: list[BucketCounts]) -> BucketCounts | None:
    if not items:
        return None
    edges = shared_edges(items)
    if any(item.edges != edges for item in items):
        items = [coarsen(item, edges) for item in items]
    return merge_all(items)


def parse(text: str, source: str) -> ParsedScrape:
    """Parse one scrape of `source`'s /metrics. Raises ExpositionError naming the bad line."""
    if source not in engines.sources():
        raise ValueError(f"source: {source!r} is not one of {', '.join(engines.sources())}")
    if source == "dcgm":
        return _parse_dcgm(text)
    return _EngineParse(text, source).run()


def sources_reading(text: str) -> tuple[str, ...]:
    """The sources whose mapping reads something in `text` (what a scrape sent under the wrong
    `source` was likely of). Parses once per source: for the rare scrape that maps nothing."""
    found = []
    for source in engines.sources():
        try:
            parsed = parse(text, source)
        except ExpositionError:
            continue
        if parsed.reads_something:
            found.append(source)
    return tuple(found)


def _parse_dcgm(text: str) -> ParsedScrape:
    parsed = ParsedScrape(source="dcgm")
    wanted = []
    seen: set = set()
    for sample in samples(text):
        _check_unique(text, sample, seen)
        # A field without a `gpu` label belongs to no GPU we can name (seen in a published
        # fixture), and a MIG instance's row to a slice of one, save a device-wide field
        # (`dcgm.is_read`): ignored, and counted so.
        if dcgm.is_read(sample.name, sample.labels):
            wanted.append(sample)
        else:
            parsed.ignored += 1
    parsed.gpus = dcgm.gpus(wanted)
    for gpu in parsed.gpus:
        for name, why in gpu_problems(gpu):
            raise ExpositionError(f"GPU {gpu['index']}: {name}: {why}", None)
    return parsed


def _check_unique(text: str, sample, seen: set) -> None:
    identity = (sample.name, tuple(sorted(sample.labels.items())))
    if identity in seen:
        raise ExpositionError(
            f"duplicate series {sample.name}{_show(sample.labels)}",
            line_of(text, sample.name, sample.labels, occurrence=2),
        )
    seen.add(identity)


def _show(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _where_matches(rule: Rule, labels: dict[str, str], where: Labels | None = None) -> bool:
    # An absent label reads as "", as in Prometheus: SGLang's `priority=""` total is the only
    # series without a priority where priority scheduling is off.
    return (
        all(labels.get(k, "") == v for k, v in (rule.where if where is None else where))
        and not any(labels.get(k) in values for k, values in rule.exclude)
        and all(labels.get(k) in values for k, values in rule.only)
    )


def _preferred_series(rule: Rule, found: dict[Labels, dict]) -> dict[Labels, dict]:
    """The series `rule.prefer` keeps: for each (label, values), those carrying one of the
    values where any does (else all of them)."""
    for label, values in rule.prefer:
        kept = {labels: s for labels, s in found.items() if dict(labels).get(label) in values}
        if kept:
            found = kept
    return found


def _series_labels(rule: Rule, labels: dict[str, str]) -> Labels:
    # A ratio's two series differ only in the labels `per` names: one key holds both.
    dropped = {"le", *rule.collapse, *(k for k, _ in (*rule.per, *rule.less))}
    return tuple(sorted((k, v) for k, v in labels.items() if k not in dropped))


class _EngineParse:
    """Collects the samples each rule wants, then keeps the preferred source name per canonical."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.rules = rules_for(source)
        self.parsed = ParsedScrape(source=source)
        # sample name -> [(candidate index, part)], part: "value" | "bucket" | "sum" | "count"
        self.lookup: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self.candidates: list[tuple[Rule, str]] = []
        for rule in self.rules:
            for name in rule.names:
                index = len(self.candidates)
                self.candidates.append((rule, name))
                for sample_name, part in _sample_names(rule, name):
                    self.lookup[sample_name].append((index, part))
        # candidate index -> labels -> part -> value, and "buckets": {le: value}
        self.found: dict[int, dict[Labels, dict]] = defaultdict(dict)
        # `Rule.unless_batched`: sample name -> (items or requests) -> labels -> value
        self.batch_names: dict[str, int] = {}
        for rule in self.rules:
            for role, name in enumerate(rule.unless_batched):
                self.batch_names.update({name: role, name + "_total": role})
        self.batch_labels = {k for rule in self.rules for k in rule.batch_labels}
        self.batch_counts: tuple[dict, dict] = (defaultdict(float), defaultdict(float))
        self.batched: set[Labels] = set()

    def run(self) -> ParsedScrape:
        seen: set = set()
        for sample in samples(self.text):
            _check_unique(self.text, sample, seen)
            role = self.batch_names.get(sample.name)
            if role is not None:
                labels = tuple(sorted(
                    (k, v) for k, v in sample.labels.items() if k in self.batch_labels
                ))  # fmt: skip
                self.batch_counts[role][labels] += float(sample.value)
            targets = self.lookup.get(sample.name)
            if not targets:
                if role is None:
                    self.parsed.ignored += 1
                continue
            for index, part in targets:
                self._collect(index, part, sample)
        items, requests = self.batch_counts
        self.batched = {k for k, n in items.items() if n > requests.get(k, 0.0)}
        for canonical in dict.fromkeys(rule.canonical for rule in self.rules):
            self._keep_preferred(canonical)
        return self.parsed

    def _collect(self, index: int, part: str, sample) -> None:
        rule, _ = self.candidates[index]
        if not _where_matches(rule, sample.labels):
            if rule.per and _where_matches(rule, sample.labels, rule.per):
                part = "per"  # the ratio's denominator
            elif rule.less and _where_matches(rule, sample.labels, rule.less):
                part = "less"  # the difference's subtrahend
            else:
                return
        labels = _series_labels(rule, sample.labels)
        series = self.found[index].setdefault(labels, {})
        value = float(sample.value)
        if part == "bucket":
            if "le" not in sample.labels:
                raise ExpositionError(
                    f"{sample.name} has no le label",
                    line_of(self.text, sample.name, sample.labels),
                )
            try:
                le = normalize_edge(sample.labels["le"])
            except ValueError:
                raise ExpositionError(
                    f"{sample.name}: le={sample.labels['le']!r} is not a number",
                    line_of(self.text, sample.name, sample.labels),
                ) from None
            series["last_bucket_labels"] = sample.labels
            series.setdefault("buckets", {})
            # Collapsed ranks repeat one series: keep the largest reading.
            series["buckets"][le] = max(value, series["buckets"].get(le, -math.inf))
        else:
            # Collapsed ranks repeat one series: the largest reading. A counter's bare and
            # `_total` names with one label set are two series, added: recorded rules read back
            # an older name kept as a gauge (SGLang's total_retracted_reqs) under the bare name
            # beside its typed successor's `_total`, one host each.
            by_name = series.setdefault("by_name", {}).setdefault(part, {})
            by_name[sample.name] = max(value, by_name.get(sample.name, -math.inf))
            series[part] = math.fsum(by_name.values())

    def _keep_preferred(self, canonical: str) -> None:
        for index, (rule, name) in enumerate(self.candidates):
            if rule.canonical != canonical or rule.adds or not self.found.get(index):
                continue
            for labels, series in _preferred_series(rule, self.found[index]).items():
                if not self._batched(rule, labels):
                    self._store(rule, name, labels, series)
            break
        self._add_to(canonical)
        self._aggregate_gauge(canonical)

    def _batched(self, rule: Rule, labels: Labels) -> bool:
        """Whether the series served a batched request its rule cannot count (`unless_batched`)."""
        if not rule.unless_batched:
            return False
        have = dict(labels)
        return tuple(sorted((k, have.get(k, "")) for k in rule.batch_labels)) in self.batched

    def _add_to(self, canonical: str) -> None:
        """The series of the rules that add to `canonical` (`Rule.adds`), each under its metric's
        name so they stay apart from the alternatives' series; the first name found per rule."""
        added: set[int] = set()
        for index, (rule, name) in enumerate(self.candidates):
            if rule.canonical != canonical or not rule.adds or id(rule) in added:
                continue
            if self.found.get(index):
                added.add(id(rule))
                for labels, series in self.found[index].items():
                    self._store(rule, name, tuple(sorted((*labels, ("__name__", name)))), series)

    def _store(self, rule: Rule, name: str, labels: Labels, series: dict) -> None:
        key = (rule.canonical, labels)
        if rule.kind == "histogram":
            histogram = self._histogram(rule, name, labels, series)
            if histogram is None:
                self.parsed.invalid += 1
            else:
                self.parsed.histograms[key] = histogram
            return
        value = series.get(_COUNTER_PART.get(rule.kind, "value"))
        if value is None:
            return
        if rule.per:
            per = series.get("per")
            if per is None or per <= 0 or EXPOSITION_VALUE.problem(per):
                return  # no denominator (the backend itself reads 0 then): no reading
            value /= per
        if rule.less:
            less = series.get("less")
            if less is None or EXPOSITION_VALUE.problem(less) or less > value:
                return  # nothing to take off, or more than there is: no reading
            value -= less
        if EXPOSITION_VALUE.problem(value) or (rule.counter_like and value < 0):
            self.parsed.invalid += 1  # NaN, Inf or past any engine's range: not a reading
            return
        value *= rule.scale
        if rule.counter_like:
            self.parsed.counters[key] = value
        else:
            self.parsed.gauge_series[key] = value

    def _histogram(
        self, rule: Rule, name: str, labels: Labels, series: dict
    ) -> HistogramSeries | None:
        buckets: dict[float, float] = series.get("buckets", {})
        if not buckets:
            return None  # `_sum`/`_count` without buckets: nothing to take quantiles from
        if not all(v >= 0 and not EXPOSITION_VALUE.problem(v) for v in buckets.values()):
            return None
        total = buckets.pop(math.inf, None)
        count = series.get("count")
        if total is None:
            if count is None:
                raise ExpositionError(
                    f"{name} has no +Inf bucket and no _count",
                    line_of(self.text, name + "_bucket", series["last_bucket_labels"]),
                )
            total = count
        edges = sorted(buckets)
        scaled = tuple(normalize_edge(e * rule.scale) for e in edges)
        if EXPOSITION_VALUE.problem(series.get("sum", 0.0)):
            return None
        total_sum = series.get("sum", 0.0) * rule.scale
        return HistogramSeries(
            edges=scaled,
            cumulative=(*(buckets[e] for e in edges), total),
            sum=total_sum,
            count=count if count is not None and math.isfinite(count) else total,
        )

    def _aggregate_gauge(self, canonical: str) -> None:
        # Over the read alternative's series and those of the gauges that add to it.
        rule = next(r for r in self.rules if r.canonical == canonical)
        if rule.kind != "gauge":
            return
        values = [v for (n, _), v in self.parsed.gauge_series.items() if n == canonical]
        if values:
            combine = max if rule.aggregate == "max" else math.fsum
            self.parsed.gauges[canonical] = combine(values)


def metric_names(source: str, *, cumulative_only: bool = False) -> tuple[str, ...]:
    """Every sample name the mapping tables read for `source` (the Prometheus source asks
    its server for exactly these, so pulling through Prometheus reads what a scrape reads).
    `cumulative_only`: just the counters' and histograms' samples (they only ever grow)."""
    if source not in engines.sources():
        raise ValueError(f"source: {source!r} is not one of {', '.join(engines.sources())}")
    if source == "dcgm":
        return () if cumulative_only else (*dcgm.FIELDS, *dcgm.MEMORY_FIELDS)
    names = (
        n
        for rule in rules_for(source)
        if not cumulative_only or rule.kind != "gauge"
        for name in rule.names
        for n, _ in _sample_names(rule, name)
    )
    # The counters that tell a batched request (`Rule.unless_batched`), bare or `_total`.
    guards = (
        n
        for rule in rules_for(source)
        for name in rule.unless_batched
        for n in (name, name + "_total")
    )
    return tuple(dict.fromkeys((*names, *guards)))


# A histogram's part read as a counter, by rule kind.
_COUNTER_PART = {"histogram_sum": "sum", "histogram_count": "count"}


def _sample_names(rule: Rule, name: str) -> list[tuple[str, str]]:
    if rule.kind == "histogram":
        return [(name + "_bucket", "bucket"), (name + "_sum", "sum"), (name + "_count", "count")]
    if rule.kind in _COUNTER_PART:
        part = _COUNTER_PART[rule.kind]
        return [(f"{name}_{part}", part)]
    if rule.kind == "counter":
        # prometheus_client renames typed counters to `_total`; untyped ones keep their name.
        return [(name, "value"), (name + "_total", "value")]
    return [(name, "value")]
