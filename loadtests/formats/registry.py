"""The load-test formats PerfHub reads, in detection order.

A format module in `loadtests/formats/` describes itself with a `LoadTestFormat` and calls
`register()`; the package imports every module in its folder (`core.discovery`), and everything
else (detection, `--format` choices, the upload form, the API, the docs list) asks this
registry, so adding a format is adding a module:

    register(LoadTestFormat(name="locust", label="Locust", parse=parse, signature=("...",)))

Detection order is `priority` (lower first), then the name: the built-in formats take 10-40,
a new one defaults to 100.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.registry import InstanceRegistry

from .base import Document, LoadTestFormatError, ParsedRun


@dataclass(frozen=True)
class LoadTestFormat:
    name: str  # what `--format` takes and `LoadTest.format` stores (`core.names`)
    label: str  # how people call the tool, for forms and docs
    parse: Callable[[list[Document]], list[ParsedRun]]
    # Top-level keys that mark the tool's files; detection scores a file by how many it has.
    signature: tuple[str, ...]
    # The keys without which a file of this format cannot be read (named when one is missing).
    required: tuple[str, ...] = ()
    # True when the file is surely this format (a stricter test than the signature score).
    looks_like: Callable[[dict], bool] | None = None
    # File-name fragments that break a tie between formats whose content both match.
    filename_hints: tuple[str, ...] = ()
    # Detection order: lower first, then by name (built-ins 10-40).
    priority: int = 100
    # The tool's files that are not runs (fnmatch patterns on the file name): skipped when they
    # come in a results folder or its archive (a config, per-request dumps, engine-side reports).
    side_files: tuple[str, ...] = ()
    # The keys every one of the tool's per-request records has, when it writes them to a side
    # file, and the run's own file: such a file uploaded alone is told which file to upload.
    side_record_keys: tuple[str, ...] = ()
    run_file: str = ""
    # Files of the tool's folder that are not runs but that its `arrange_folder` or folder join
    # reads (fnmatch patterns on the file name): never skipped, whatever their suffix.
    companion_files: tuple[str, ...] = ()
    # Joins a run the tool writes to several files into the one document `parse` reads:
    # (files) -> files, each (content, name or None), on every upload (a folder, an archive's
    # members, or files sent together; files named with no folder are one folder).
    join_folder: (
        Callable[[list[tuple[bytes, str | None]]], list[tuple[bytes, str | None]]] | None
    ) = None
    # A results folder's files as the format wants them imported: (files) -> files, each
    # (content, path); e.g. a summary dropped where the folder holds the stages it sums.
    arrange_folder: Callable[[list[tuple[bytes, str]]], list[tuple[bytes, str]]] | None = None

    def score(self, data: dict) -> float:
        """Share of the signature keys the object has, 0 to 1."""
        if not self.signature:
            return 0.0
        return sum(1 for key in self.signature if key in data) / len(self.signature)

    def matches(self, data: dict) -> bool:
        if self.looks_like is not None:
            return self.looks_like(data)
        return all(key in data for key in self.required) and self.score(data) > 0

    def missing(self, data: dict) -> list[str]:
        return [key for key in self.required if key not in data]


_FORMATS: InstanceRegistry[LoadTestFormat] = InstanceRegistry("load-test format")
# Adds a format (or replaces one of the same name); detection tries formats in `formats()` order.
register = _FORMATS.register
unregister = _FORMATS.unregister


def formats() -> tuple[LoadTestFormat, ...]:
    """The registered formats in detection order."""
    return tuple(sorted(_FORMATS.values(), key=lambda fmt: (fmt.priority, fmt.name)))


def format_names() -> tuple[str, ...]:
    return tuple(fmt.name for fmt in formats())


def get_format(name: str) -> LoadTestFormat:
    try:
        return _FORMATS[name]
    except KeyError:
        raise LoadTestFormatError(
            f"unknown format {name!r}: expected one of {', '.join(format_names())}"
        ) from None


def choices() -> list[tuple[str, str]]:
    """(name, label) pairs for forms and serializers."""
    return [(fmt.name, f"{fmt.label} ({fmt.name})") for fmt in formats()]
