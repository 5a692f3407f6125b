"""A bounded on-disk queue of batches the server has not accepted yet.

One JSON file per batch, named `<12-digit sequence>-<batch_id>.json` so a directory listing
sorted by name is the send order, across restarts too. Writes are atomic (temporary file,
fsync, rename), so a crash never leaves half a batch to replay. When the spool grows past
`max_bytes` the oldest batches are dropped, with a WARNING saying how many.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

NAME_RE = re.compile(r"^(\d{12})-[-0-9a-fA-F]+\.json$")


class Spool:
    def __init__(self, directory: str | os.PathLike, max_bytes: int) -> None:
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.directory.mkdir(parents=True, exist_ok=True)
        for leftover in self.directory.glob(".*.tmp"):  # a crash mid-write
            leftover.unlink(missing_ok=True)
        existing = self.pending()
        self._next_seq = int(NAME_RE.match(existing[-1].name).group(1)) + 1 if existing else 1

    def __len__(self) -> int:
        return len(self.pending())

    def pending(self) -> list[Path]:
        """Spooled batches, oldest first."""
        return sorted(p for p in self.directory.iterdir() if NAME_RE.match(p.name))

    def size_bytes(self) -> int:
        return sum(_size(p) for p in self.pending())

    def put(self, batch: dict[str, Any]) -> Path:
        """Append a batch; then drop the oldest while over `max_bytes` (never the new one)."""
        name = f"{self._next_seq:012d}-{batch['batch_id']}.json"
        self._next_seq += 1
        path = self.directory / name
        tmp = self.directory / f".{name}.tmp"
        try:
            with open(tmp, "wb") as handle:
                handle.write(json.dumps(batch, separators=(",", ":")).encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError:
            # A full disk: what was written of the batch would only hold the space.
            tmp.unlink(missing_ok=True)
            self._next_seq -= 1
            raise
        _fsync_dir(self.directory)
        self._enforce_bound(keep=path)
        return path

    def load(self, path: Path) -> dict[str, Any] | None:
        """The batch in `path`; None (file removed, logged) when it is unreadable."""
        try:
            batch = json.loads(path.read_bytes())
            if not isinstance(batch, dict) or "batch_id" not in batch:
                raise ValueError("not a batch document")
            return batch
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.error("spool: %s is unreadable (%s); removed", path.name, exc)
            path.unlink(missing_ok=True)
            return None

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def _enforce_bound(self, *, keep: Path) -> None:
        files = self.pending()
        total = sum(_size(p) for p in files)
        dropped: list[str] = []
        for path in files:
            if total <= self.max_bytes or path == keep:
                break
            total -= _size(path)
            path.unlink(missing_ok=True)
            dropped.append(path.name.split("-", 1)[1].removesuffix(".json"))
        if dropped:
            log.warning(
                "spool %s is over its %d-byte limit: dropped the %d oldest batch(es), their data "
                "is lost (first %s, last %s)",
                self.directory,
                self.max_bytes,
                len(dropped),
                dropped[0],
                dropped[-1],
            )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not every platform allows opening a directory.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
