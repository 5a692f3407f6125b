"""Roll-up rows built from what they summarise: no queries, no writes.

A minute row from its raw request rows and scrape windows, a longer row from shorter ones
(`Traffic`, added), a service-merged row from every host's row of a period; and the check
that none of them holds a number that must not be stored. `collectors.services.rollups.host`
reads the inputs and writes these rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime

from django.db import models

from analysis import buckets, sketches, slo
from collectors.distributions import (
    GAUGES,
    SCRAPED_HISTOGRAM,
    Traffic,
    distribution_percentiles,
    gpu_series_values,
    merge_hosts,
    pack_quantiles,
    slo_counts,
)
from collectors.models import LATENCY_METRICS, MINUTE, GpuRollup, ServiceMergedRollup, ServiceRollup

# A scrape window in which any of these grew had traffic (its seconds are "busy").
FINISHED_COUNTERS = ("requests_finished", "request_errors", "request_aborts")
GPU_MEANS = ("util", "mem_util", "sm_active", "sm_occupancy", "dram_active", "power")


def minute_start(epoch_minute: int) -> datetime:
    return datetime.fromtimestamp(epoch_minute * 60, tz=UTC)


def floor_time(ts: datetime, seconds: int) -> datetime:
    return datetime.fromtimestamp(int(ts.timestamp()) // seconds * seconds, tz=UTC)


def rollup_from_traffic(
    traffic: Traffic, *, service_id: int, host_id: int, resolution: int, start: datetime
) -> ServiceRollup:
    row = ServiceRollup(
        service_id=service_id,
        host_id=host_id,
        resolution_s=resolution,
        start=start,
        requests=traffic.requests,
        errors=traffic.errors,
        prompt_tokens=traffic.prompt_tokens,
        output_tokens=traffic.output_tokens,
        request_seconds=traffic.request_seconds,
        scraped_requests=traffic.scraped_requests,
        scraped_prompt_tokens=traffic.scraped_prompt_tokens,
        scraped_generation_tokens=traffic.scraped_generation_tokens,
        scraped_seconds=traffic.scraped_seconds,
        scraped_busy_seconds=traffic.scraped_busy_seconds,
        scraped_errors=traffic.scraped_errors,
        scraped_aborts=traffic.scraped_aborts,
        scraped_token_requests=traffic.scraped_token_requests,
        scraped_request_prompt_tokens=traffic.scraped_request_prompt_tokens,
        scraped_request_output_tokens=traffic.scraped_request_output_tokens,
        scraped_prompt_token_requests=traffic.scraped_prompt_token_requests,
        scraped_preemptions=traffic.scraped_preemptions,
        scraped_finished_counting_preemptions=traffic.scraped_finished_counting_preemptions,
        qps=traffic.qps,
        prompt_tps=traffic.prompt_tps,
        generation_tps=traffic.generation_tps,
        gauge_samples=traffic.gauge_samples,
        running_mean=traffic.gauge_mean("running"),
        waiting_mean=traffic.gauge_mean("waiting"),
        kv_cache_mean=traffic.gauge_mean("kv_cache"),
        slo_good=traffic.slo_good,
    )
    for metric in LATENCY_METRICS:
        sketch = traffic.merged_sketch(metric)
        if sketch is not None and sketch.count:
            stats = sketches.summary(sketch)
            setattr(row, f"{metric}_sketch", sketches.dumps(sketch))
            setattr(row, f"{metric}_count", int(stats["count"]))
            setattr(row, f"{metric}_sum", stats["sum"])
            setattr(row, f"{metric}_min", stats["min"])
            setattr(row, f"{metric}_max", stats["max"])
        bc = traffic.merged_buckets(metric)
        setattr(row, f"{metric}_buckets", bc.to_dict() if bc is not None and bc.count else None)
    return row


# ---------------------------------------------------------------------------------------------
# Raw rows -> one minute


def minute_traffic(
    requests: list[tuple], windows: list[tuple], slo_keys: dict[str, dict[str, float]] | None = None
) -> Traffic:
    """Traffic for one (service, host, minute) from its raw request rows and scrape windows,
    with the exact joint good count of each latency SLO in `slo_keys` (key -> thresholds)."""
    traffic = Traffic()
    if slo_keys and requests:
        traffic.slo_good = slo.judge_requests(requests, ("ttft", "tpot", "e2e"), slo_keys)
    values: dict[str, list[float]] = {m: [] for m in LATENCY_METRICS}
    for ttft, tpot, e2e, queue, prompt, output, ok in requests:
        traffic.requests += 1
        traffic.errors += 0 if ok else 1
        traffic.prompt_tokens += prompt or 0
        traffic.output_tokens += output or 0
        for metric, value in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e), ("queue", queue)):
            if value is not None:
                values[metric].append(value)
    if requests:
        traffic.request_seconds = float(MINUTE)
    for metric, items in values.items():
        if items:
            traffic.sketches[metric].append(sketches.from_values(items))

    for seconds, counters, histograms, gauges in windows:
        traffic.scraped_seconds += seconds
        traffic.scraped_requests += counters.get("requests_finished", 0.0)
        traffic.scraped_prompt_tokens += counters.get("prompt_tokens", 0.0)
        traffic.scraped_generation_tokens += counters.get("generation_tokens", 0.0)
        traffic.scraped_errors += counters.get("request_errors", 0.0)
        traffic.scraped_aborts += counters.get("request_aborts", 0.0)
        counted = counters.get("finished_requests_counted", 0.0)
        traffic.scraped_token_requests += counted
        traffic.scraped_request_prompt_tokens += counters.get("finished_prompt_tokens", 0.0)
        # The prompt histogram's own count where it has one (TGI), else the shared one.
        traffic.scraped_prompt_token_requests += counters.get("prompt_requests_counted", counted)
        traffic.scraped_request_output_tokens += counters.get("finished_generation_tokens", 0.0)
        if "preemptions" in counters:  # absent: the engine has no counter (not 0 preemptions)
            traffic.add_preemptions(
                counters["preemptions"], sum(counters.get(c, 0.0) for c in FINISHED_COUNTERS)
            )
        if any(counters.get(c, 0.0) > 0 for c in FINISHED_COUNTERS):
            traffic.scraped_busy_seconds += seconds
        if gauges:
            traffic.gauge_samples += 1
            for name, canonical in GAUGES.items():
                traffic.add_gauge(name, gauges.get(canonical), 1)
        for metric, canonical in SCRAPED_HISTOGRAM.items():
            if histograms.get(canonical):
                traffic.buckets[metric].append(
                    buckets.BucketCounts.from_dict(histograms[canonical])
                )
    return traffic


def gpu_minute(host_id: int, gpu_index: int, start: datetime, samples: list[tuple]) -> GpuRollup:
    sums = dict.fromkeys(GPU_MEANS, 0.0)
    counts = dict.fromkeys(GPU_MEANS, 0)
    mem_used_max = mem_total = temp_max = None
    name = ""
    for s_name, util, mem_util, mem_used, total, power, temp, sm_active, sm_occ, dram in samples:
        name = s_name or name
        for key, value in (
            ("util", util), ("mem_util", mem_util), ("sm_active", sm_active),
            ("sm_occupancy", sm_occ), ("dram_active", dram), ("power", power),
        ):  # fmt: skip
            if value is not None:
                sums[key] += value
                counts[key] += 1
        if mem_used is not None:
            mem_used_max = mem_used if mem_used_max is None else max(mem_used_max, mem_used)
        if total is not None:
            mem_total = total
        if temp is not None:
            temp_max = temp if temp_max is None else max(temp_max, temp)
    means = {f"{k}_mean": (sums[k] / counts[k] if counts[k] else None) for k in GPU_MEANS}
    return GpuRollup(
        host_id=host_id,
        gpu_index=gpu_index,
        resolution_s=MINUTE,
        start=start,
        samples=len(samples),
        name=name,
        mem_used_max=mem_used_max,
        mem_total_bytes=mem_total,
        temp_max=temp_max,
        **means,
    )


def merge_gpu_rows(rows: Iterable[GpuRollup]) -> dict:
    """Sample-weighted means, memory high-water mark and hottest temperature of GPU rows."""
    sums = dict.fromkeys(GPU_MEANS, 0.0)
    weights = dict.fromkeys(GPU_MEANS, 0)
    out: dict = {"samples": 0, "mem_used_max": None, "mem_total_bytes": None, "temp_max": None}
    out["name"] = ""
    for row in rows:
        out["samples"] += row.samples
        out["name"] = row.name or out["name"]
        for key in GPU_MEANS:
            value = getattr(row, f"{key}_mean")
            if value is not None:
                sums[key] += value * row.samples
                weights[key] += row.samples
        for key, pick in (("mem_used_max", max), ("temp_max", max)):
            value = getattr(row, key)
            if value is not None:
                out[key] = value if out[key] is None else pick(out[key], value)
        out["mem_total_bytes"] = row.mem_total_bytes or out["mem_total_bytes"]
    for key in GPU_MEANS:
        out[f"{key}_mean"] = sums[key] / weights[key] if weights[key] else None
    return out


def merged_row(
    service_id: int, resolution: int, start: datetime, by_host: dict[int, Traffic], gpus: list
) -> ServiceMergedRollup:
    m = merge_hosts(by_host)
    row = ServiceMergedRollup(
        service_id=service_id,
        resolution_s=resolution,
        start=start,
        hosts=sorted(by_host),
        **m.figures(),
        **slo_counts(by_host),
        **gpu_series_values(gpus),
    )
    latency = {}
    for metric in LATENCY_METRICS:
        sketch = m.everything.merged_sketch(metric)
        bc = m.everything.merged_buckets(metric)
        if sketch is not None and sketch.count:
            setattr(row, f"{metric}_sketch", sketches.dumps(sketch))
            setattr(row, f"{metric}_count", int(sketch.count))
        if bc is not None and bc.count:
            setattr(row, f"{metric}_buckets", bc.to_dict())
        latency[metric] = distribution_percentiles(sketch, bc)
    row.quantiles = pack_quantiles(latency)
    return row


class UnprocessableRows(ValueError):
    """The roll-up computed a value it must not store (NaN or Infinity): the batch that brought
    the rows in is quarantined with this reason instead of being marked rolled up."""


def _numbers(value) -> Iterable[float]:
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers(item)


def _checked_columns(model: type[models.Model]) -> list[tuple[str, str]]:
    """(attname, name) of the model's float and JSON columns, looked up once per model."""
    columns = _CHECKED.get(model)
    if columns is None:
        columns = _CHECKED[model] = [
            (column.attname, column.name)
            for column in model._meta.concrete_fields
            if isinstance(column, models.FloatField | models.JSONField)
        ]
    return columns


_CHECKED: dict[type[models.Model], list[tuple[str, str]]] = {}


def check_finite(rows: Iterable[models.Model]) -> None:
    """Raise UnprocessableRows naming the row and field when a roll-up row holds a
    non-finite number (a float column, or inside a JSON one): dashboards, the API and the
    alert rules would all read it, and PostgreSQL would store it without complaint."""
    for row in rows:
        for attname, name in _checked_columns(type(row)):
            value = getattr(row, attname)
            if value is None or (type(value) is float and math.isfinite(value)):
                continue  # the common cases, without walking a generator
            bad = next((v for v in _numbers(value) if not math.isfinite(v)), None)
            if bad is not None:
                raise UnprocessableRows(
                    f"{type(row).__name__}.{name} of {row.start:%Y-%m-%d %H:%M} "
                    f"would be {bad}: a sample's value cannot be rolled up"
                )
