"""API bodies are read whole up to their limit, however the server hands them over (a socket
gives short reads; a large body takes several of the parser's read steps)."""

from __future__ import annotations

import io

import pytest

from core.api import READ_SIZE, PayloadTooLarge, read_limited


class ShortReads(io.RawIOBase):
    """A stream that returns at most `most` bytes a read, as a socket may."""

    def __init__(self, data: bytes, most: int) -> None:
        self.data, self.most, self.at = data, most, 0

    def read(self, size: int = -1) -> bytes:
        size = self.most if size < 0 else min(size, self.most)
        chunk = self.data[self.at : self.at + size]
        self.at += len(chunk)
        return chunk


def test_a_body_longer_than_one_read_step_is_read_whole():
    body = bytes(range(256)) * (READ_SIZE * 5 // 2 // 256)
    assert read_limited(io.BytesIO(body), limit=len(body)) == body


def test_a_body_handed_over_in_short_reads_is_read_whole():
    body = b'{"requests": []}' * 10_000
    assert read_limited(ShortReads(body, most=1000), limit=len(body)) == body


def test_a_body_one_byte_over_the_limit_is_refused_even_in_short_reads():
    body = b"x" * 5001
    with pytest.raises(PayloadTooLarge):
        read_limited(ShortReads(body, most=1000), limit=5000)
