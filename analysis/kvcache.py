"""KV cache size (docs/method.md) and how many sequences fit in the memory left for it.

KV cache bytes = 2 (K and V) x layers x KV heads x head_dim x sequence length x batch
x bytes per element.

Seed example: a 13B model, 40 layers, 40 heads, head_dim 128, fp16 (2 bytes), 2,048 tokens,
batch 16. The product is 26,843,545,600 bytes = 26.8 GB = 25 GiB. The seed article prints
"21.5 GB" (21,474,836,480 bytes = 20 GiB) for it, which is what 32 heads would give: a slip in
the seed's arithmetic, not in the formula.
"""

from __future__ import annotations

from numbers import Integral

# Bytes per cached element for the KV cache dtypes serving engines offer.
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}


def _positive_int(name: str, value: object, *, allow_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        minimum = "0 or more" if allow_zero else "at least 1"
        raise ValueError(f"{name} must be {minimum}, got {value}")
    return int(value)


def kv_cache_bytes(
    *,
    layers: int,
    kv_heads: int,
    head_dim: int,
    seq_len: int,
    batch: int,
    bytes_per_element: int = 2,
) -> int:
    """Bytes of K and V cached for `batch` sequences of `seq_len` tokens.

    `kv_heads` is the number of key/value heads. With grouped-query attention (Llama 2 70B,
    Llama 3, Mistral...) it is smaller than the number of query heads, and only the KV heads are
    cached: pass `num_key_value_heads` from the model config, not `num_attention_heads`.
    For multi-head attention the two are equal.
    """
    factors = {
        "layers": layers,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "seq_len": seq_len,
        "batch": batch,
        "bytes_per_element": bytes_per_element,
    }
    total = 2
    for name, value in factors.items():
        total *= _positive_int(name, value)
    return total


def max_batch_for_memory(*, free_bytes: int, per_sequence_bytes: int) -> int:
    """How many whole sequences' KV cache fit in `free_bytes` (0 when not even one fits).

    `per_sequence_bytes` is `kv_cache_bytes(..., batch=1)` at the longest sequence length served.
    """
    free = _positive_int("free_bytes", free_bytes, allow_zero=True)
    return free // _positive_int("per_sequence_bytes", per_sequence_bytes)


def format_bytes(n: int, *, binary: bool = False) -> str:
    """21474836480 -> "21.5 GB"; with binary=True -> "20.0 GiB"."""
    value = float(_positive_int("n", n, allow_zero=True))
    base = 1024.0 if binary else 1000.0
    units = ("KiB", "MiB", "GiB", "TiB", "PiB") if binary else ("KB", "MB", "GB", "TB", "PB")
    steps = 0
    while value >= base and steps < len(units):
        value /= base
        steps += 1
    return f"{int(value)} B" if steps == 0 else f"{value:.1f} {units[steps - 1]}"
