"""The agent push contract (docs/contracts.md), checked independently of the agent's code."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

TOP = {"batch_id": str, "host": str, "agent_version": str, "sent_at": str,
       "gpus": list, "scrapes": list, "requests": list}  # fmt: skip
NUM = (int, float)
GPU = {"ts": str, "index": int, "uuid": str, "name": str, "util": NUM, "mem_util": NUM,
       "mem_used_bytes": int, "mem_total_bytes": int, "power_w": NUM, "temp_c": NUM,
       "sm_clock_mhz": NUM, "sm_active": NUM, "sm_occupancy": NUM, "dram_active": NUM}  # fmt: skip
GPU_RATIOS = ("util", "mem_util", "sm_active", "sm_occupancy", "dram_active")
SCRAPE = {"ts": str, "service": str, "source": str, "exposition": str}
SOURCES = {"vllm", "tgi", "sglang", "triton", "dcgm"}
REQUEST = {"ts": str, "service": str, "ttft_ms": NUM, "tpot_ms": NUM, "e2e_ms": NUM,
           "queue_ms": NUM, "prompt_tokens": int, "output_tokens": int, "ok": bool}  # fmt: skip


def contract_errors(batch: dict[str, Any]) -> list[str]:
    """Everything wrong with a batch document; [] when it follows the contract."""
    errors = _shape("batch", batch, TOP, nullable=False)
    if errors:
        return errors
    try:
        if uuid.UUID(batch["batch_id"]).version != 4:
            errors.append("batch_id: not a uuid4")
    except ValueError:
        errors.append("batch_id: not a uuid")
    errors += _timestamp("sent_at", batch["sent_at"])
    for i, gpu in enumerate(batch["gpus"]):
        errors += _shape(f"gpus[{i}]", gpu, GPU, nullable=True)
        for key in GPU_RATIOS:
            value = gpu.get(key)
            if value is not None and not 0 <= value <= 1:
                errors.append(f"gpus[{i}].{key}: ratio {value} outside 0-1")
        errors += _timestamp(f"gpus[{i}].ts", gpu.get("ts"))
    for i, scrape in enumerate(batch["scrapes"]):
        errors += _shape(f"scrapes[{i}]", scrape, SCRAPE, nullable=False)
        if scrape.get("source") not in SOURCES:
            errors.append(f"scrapes[{i}].source: {scrape.get('source')!r}")
        errors += _timestamp(f"scrapes[{i}].ts", scrape.get("ts"))
    for i, request in enumerate(batch["requests"]):
        errors += _shape(f"requests[{i}]", request, REQUEST, nullable=False)
        for key in ("ttft_ms", "tpot_ms", "e2e_ms", "queue_ms"):
            if isinstance(request.get(key), NUM) and request[key] < 0:
                errors.append(f"requests[{i}].{key}: negative")
        errors += _timestamp(f"requests[{i}].ts", request.get("ts"))
    return errors


def _shape(where: str, doc: Any, spec: dict[str, Any], *, nullable: bool) -> list[str]:
    if not isinstance(doc, dict):
        return [f"{where}: not an object"]
    errors = [f"{where}: unexpected key {k!r}" for k in doc.keys() - spec.keys()]
    for key, kind in spec.items():
        if key not in doc:
            errors.append(f"{where}.{key}: missing")
        elif doc[key] is None:
            if not nullable or key in ("ts", "index"):
                errors.append(f"{where}.{key}: null")
        elif isinstance(doc[key], bool) and kind is not bool:
            errors.append(f"{where}.{key}: bool where {kind} expected")
        elif not isinstance(doc[key], kind):
            errors.append(f"{where}.{key}: {type(doc[key]).__name__}, expected {kind}")
    return errors


def _timestamp(where: str, value: Any) -> list[str]:
    if not isinstance(value, str):
        return [f"{where}: not a string"]
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return [f"{where}: not RFC 3339: {value!r}"]
    if moment.utcoffset() is None or "T" not in value:
        return [f"{where}: RFC 3339 needs 'T' and an offset: {value!r}"]
    return []
