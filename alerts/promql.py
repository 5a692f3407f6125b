"""What a rule kind needs to say itself in PromQL over the engine's and dcgm-exporter's own
metric names: the names come from collectors' mapping tables, the selectors from the caller.
Each kind in `alerts.kinds` writes its expression with these (`RuleKind.promql`); the rules
file is put together in `alerts.prometheus_rules`."""

from __future__ import annotations

from dataclasses import dataclass

from collectors.exposition import dcgm, engines


class NotExportable(Exception):
    """The rule has no Prometheus equivalent (for this engine); the message says why."""


def duration(seconds: int) -> str:
    """Prometheus's duration: 300 -> "5m", 90 -> "90s"."""
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def number(value: float) -> str:
    return f"{value:g}"


def _selector(
    matchers: str,
    extra: tuple[tuple[str, str], ...] = (),
    exclude: tuple[tuple[str, tuple[str, ...]], ...] = (),
    only: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> str:
    parts = [m for m in [matchers.strip().strip("{}").strip()] if m]
    parts += [f'{k}="{v}"' for k, v in extra]
    parts += [f'{k}!~"{"|".join(values)}"' for k, values in exclude]
    parts += [f'{k}=~"{"|".join(values)}"' for k, values in only]
    return "{" + ", ".join(parts) + "}" if parts else ""


@dataclass(frozen=True)
class Series:
    name: str  # without `_bucket` etc.
    selector: str  # "{...}" or ""
    scale: float  # into canonical units (seconds, ratios)
    # The same metric under the engine's other prefixes (Ray's `ray_vllm:`): selected with it.
    other_names: tuple[str, ...] = ()

    def vector(self, suffix: str = "", matcher: str = "") -> str:
        """The selector of the metric's `suffix` sample (`_bucket`, `_count`, ...), narrowed by
        the series' selector and `matcher` (one more label matcher)."""
        parts = [p for p in (self.selector.strip("{}"), matcher) if p]
        if not self.other_names:
            return self.name + suffix + ("{" + ", ".join(parts) + "}" if parts else "")
        names = "|".join(n + suffix for n in (self.name, *self.other_names))
        return "{" + ", ".join([f'__name__=~"{names}"', *parts]) + "}"


@dataclass(frozen=True)
class Metrics:
    """The engine's and DCGM's series for one service, as PromQL pieces."""

    engine: str
    engine_selector: str = ""
    dcgm_selector: str = ""

    def _engine_rule(self, canonical: str) -> engines.Rule:
        if self.engine not in engines.ENGINES:
            raise NotExportable(f"no metric mapping for engine {self.engine!r}")
        for rule in engines.rules_for(self.engine):
            if rule.canonical == canonical and not rule.adds:
                return rule
        raise NotExportable(f"{self.engine} exposes no {canonical}")

    def engine_series(self, canonical: str) -> Series:
        """The newest metric name the mapping table reads for `canonical`."""
        rule = self._engine_rule(canonical)
        selector = _selector(self.engine_selector, rule.where, rule.exclude, rule.only)
        newest, *others = rule.newest_names()
        return Series(newest, selector, rule.scale, tuple(others))

    def gauge_max_of_means(self, canonical: str, window: str) -> str:
        """The fullest series' mean over the window, in canonical units: the newest name's, or
        where it has no series, a ratio rule's (`Rule.per`: TensorRT-LLM backends before 0.18
        give used and max KV blocks, no fraction) as the parser reads it."""
        s = self.engine_series(canonical)
        expr = f"max(avg_over_time({s.vector()}[{window}]))"
        expr = expr if s.scale == 1 else f"{expr} * {number(s.scale)}"
        for rule in engines.rules_for(self.engine):
            if rule.canonical != canonical or not rule.per:
                continue
            newest, *others = rule.newest_names()

            def mean(where: tuple[tuple[str, str], ...], rule=rule, newest=newest, others=others):
                selector = _selector(self.engine_selector, where, rule.exclude, rule.only)
                vector = Series(newest, selector, rule.scale, tuple(others)).vector()
                return f"avg_over_time({vector}[{window}])"

            ignoring = ", ".join(k for k, _ in rule.per)
            # A zero denominator is no reading, as the parser has it (not an infinite usage).
            ratio = f"{mean(rule.where)} / ignoring ({ignoring}) ({mean(rule.per)} > 0)"
            expr = f"({expr} or max({ratio}))"
        return expr

    def gauge_sum_of_means(self, canonical: str, window: str) -> str:
        """The service's total of a summed gauge, each series' mean over the window: the
        newest name's series, plus those of the gauges that add to it (`Rule.adds`: Triton's
        own queues beside the TensorRT-LLM executor's waiting requests), as the parser reads."""

        def total(rule: engines.Rule, where: tuple[tuple[str, str], ...] | None = None) -> str:
            newest, *others = rule.newest_names()
            selector = _selector(
                self.engine_selector, rule.where if where is None else where, rule.exclude,
                rule.only,
            )  # fmt: skip
            vector = Series(newest, selector, rule.scale, tuple(others)).vector()
            expr = f"sum(avg_over_time({vector}[{window}]))"
            return expr if rule.scale == 1 else f"{expr} * {number(rule.scale)}"

        expr = total(self._engine_rule(canonical))
        for other in engines.rules_for(self.engine):
            if other.canonical == canonical and other.less:
                # A difference where the first has no series (`Rule.less`: an older TensorRT-LLM
                # backend's active less scheduled requests); below 0 is no reading.
                expr = f"({expr} or ({total(other)} - {total(other, other.less)} >= 0))"
        for other in engines.rules_for(self.engine):
            if other.canonical == canonical and other.adds:
                # Either may have no series (a backend before 0.18 exports no `waiting`).
                added = total(other)
                expr = f"(({expr} + ({added} or vector(0))) or {added})"
        return expr

    def _counter(self, fn: str, canonical: str, window: str) -> str:
        rule = self._engine_rule(canonical)
        if not rule.counter_like:
            raise NotExportable(f"{self.engine}'s {canonical} is not a counter")
        expr = self._counter_of(fn, rule, window)
        for other in engines.rules_for(self.engine):
            if other.canonical == canonical and other.adds:
                # Its series may not exist yet (nothing rejected so far): no sum empties the whole.
                expr = f"({expr} + ({self._counter_of(fn, other, window)} or vector(0)))"
        return expr

    def _counter_of(self, fn: str, rule: engines.Rule, window: str) -> str:
        if rule.kind == "histogram_sum":
            suffix = "_sum"
        elif rule.kind == "histogram_count":
            suffix = "_count"
        else:  # the name the engine's counters have in Prometheus (bare for TGI and Triton)
            suffix = engines.ENGINES[self.engine].counter_suffix
        newest, *others = rule.newest_names()

        def vector(*only) -> str:
            selector = _selector(self.engine_selector, rule.where, rule.exclude, only)
            return Series(newest, selector, rule.scale, tuple(others)).vector(suffix)

        inner = f"{fn}({vector(*rule.only)}[{window}])"
        if rule.unless_batched:
            # Not the series of a model that served a batched request in the window, as the
            # parser reads (`Rule.unless_batched`).
            items, requests = (
                Series(n, _selector(self.engine_selector), 1.0).vector(
                    engines.ENGINES[self.engine].counter_suffix
                )
                for n in rule.unless_batched
            )
            on = ", ".join(rule.batch_labels)
            batched = f"{fn}({items}[{window}]) > {fn}({requests}[{window}])"
            inner = f"({inner} unless on ({on}) ({batched}))"
        expr = f"sum({inner})"
        if rule.prefer:  # the preferred series' sum where there are any, as the parser reads
            expr = f"(sum({fn}({vector(*rule.only, *rule.prefer)}[{window}])) or {expr})"
        return expr if rule.scale == 1 else f"{expr} * {number(rule.scale)}"

    def counter_rate(self, canonical: str, window: str) -> str:
        """Per second over the window, summed across series (hosts), in canonical units."""
        return self._counter("rate", canonical, window)

    def counter_increase(self, canonical: str, window: str) -> str:
        """The increase over the window, summed across series."""
        return self._counter("increase", canonical, window)

    def token_rate(self, basis: str, window: str) -> str:
        """Tokens per second on the service's basis ("output", or "total" with the prompt)."""
        names = ["generation_tokens"] + (["prompt_tokens"] if basis == "total" else [])
        return " + ".join(self.counter_rate(name, window) for name in names)

    def dcgm_series(self, key: str) -> Series:
        """dcgm-exporter's field for a GPU reading (`util`, `sm_active`, ...)."""
        for name, (field, factor) in dcgm.FIELDS.items():
            if field == key:
                # Whole GPUs: a MIG instance's row reads a slice (`dcgm.is_whole_gpu`).
                return Series(name, _selector(self.dcgm_selector, (("GPU_I_ID", ""),)), factor)
        raise NotExportable(f"dcgm-exporter has no {key}")

    def gpu_mean(self, key: str, window: str) -> str:
        """The mean over GPUs and the window, in the canonical unit (ratios 0-1)."""
        s = self.dcgm_series(key)
        mean = f"avg(avg_over_time({s.name}{s.selector}[{window}]))"
        return mean if s.scale == 1 else f"{mean} * {number(s.scale)}"
