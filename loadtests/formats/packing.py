"""Compressed load-test files. Per-request exports (GenAI-Perf's `profile_export.json`, AIPerf's
`profile_export.jsonl`) run to tens of megabytes and are often kept as `.gz`; such a file is read
as the file it holds. It is decompressed in bounded steps, so a small file that would expand past
the size limit (a "zip bomb") is refused as soon as it passes it, never held whole in memory."""

from __future__ import annotations

import zlib

from .base import LoadTestFormatError

GZIP_MAGIC = b"\x1f\x8b"
_STEP = 1 << 20  # bytes decompressed per step


def unpacked(content: bytes, filename: str | None, *, limit: int) -> tuple[bytes, str | None]:
    """(the file's own bytes, its name without ".gz"): `content` itself unless it is gzip.
    Raises LoadTestFormatError for a damaged gzip file or one holding more than `limit` bytes."""
    if not content.startswith(GZIP_MAGIC):
        return content, filename
    if filename and filename.lower().endswith(".gz"):
        filename = filename[:-3]
    return _gunzip(content, limit), filename


def _gunzip(content: bytes, limit: int) -> bytes:
    out, size, member = [], 0, content
    while member:  # one gzip member at a time: `cat a.gz b.gz` is a valid gzip file too
        if not member.startswith(GZIP_MAGIC):
            raise LoadTestFormatError("not a gzip file after its first member")
        unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = member
        try:
            while not unzip.eof:
                chunk = unzip.decompress(pending, _STEP)
                if not chunk and len(unzip.unconsumed_tail) == len(pending):
                    raise LoadTestFormatError("the gzip file is truncated")  # input ran out
                pending = unzip.unconsumed_tail
                size += len(chunk)
                if size > limit:
                    raise LoadTestFormatError(
                        f"the gzip file holds more than {limit:,} bytes, the limit for a file"
                    )
                out.append(chunk)
        except zlib.error as exc:
            raise LoadTestFormatError(f"not a valid gzip file: {exc}") from None
        member = unzip.unused_data.lstrip(b"\x00")  # gzip allows zero padding at the end
    return b"".join(out)
