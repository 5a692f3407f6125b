"""A results folder uploaded as one archive (.zip, .tar, .tar.gz): its files, read in memory.

Tools that write a folder per run (evalscope's `parallel_4_number_40/`, inference-perf's
stages, one `vllm bench serve` file per concurrency) are easiest to bring whole. An archive is
read with the standard library's `zipfile` and `tarfile`, nothing is written to disk, and its
size is bounded twice: the members' count, and the bytes they expand to (checked while reading,
so a small archive that would expand past the limit is refused as soon as it passes it).
Directories, links, hidden files and files that are never load-test results (logs, pages,
images, databases) are skipped; every other member is a file to import, named by its path.
"""

from __future__ import annotations

import io
import lzma
import posixpath
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from .base import LoadTestFormatError
from .packing import GZIP_MAGIC, unpacked
from .registry import formats

MAX_MEMBERS = 500
# What reading a damaged member raises: its container, or the codec of its compression method.
_DAMAGED = (
    zipfile.BadZipFile,
    OSError,
    ValueError,
    EOFError,
    NotImplementedError,
    zlib.error,
    lzma.LZMAError,
)
# Never a load-test result; what result folders hold beside them.
SKIPPED_SUFFIXES = (
    ".log",
    ".html",
    ".htm",
    ".db",
    ".sqlite",
    ".png",
    ".jpg",
    ".jpeg",
    ".svg",
    ".pdf",
    ".md",
    ".parquet",
)
_STEP = 1 << 20


def is_archive(content: bytes) -> bool:
    """A zip file, or a tar file (plain or gzip-compressed)."""
    return (
        content.startswith((b"PK\x03\x04", b"PK\x05\x06"))
        or _is_tar(content)
        or (content.startswith(GZIP_MAGIC) and _is_tar(_head_of_gzip(content)))
    )


@dataclass
class Folder:
    """A results folder's files to import, (bytes, path) in folder order, and the paths of those
    left out (side files, and copies `arranged` dropped; hidden files are not listed)."""

    files: list[tuple[bytes, str]]
    skipped: list[str] = field(default_factory=list)

    def leaves_out(self, path: str, name: str | None = None) -> bool:
        """Whether the file at `path` (inside the folder) is not one to import (`skipped`); if
        so it is noted in `skipped` as `name` (default: the path), unless hidden (`listed`)."""
        if not skipped(path):
            return False
        if listed(path):
            self.skipped.append(name or path)
        return True

    def arranged(self) -> Folder:
        kept = arranged(self.files)
        names = {name for _, name in kept}
        dropped = [name for _, name in self.files if name not in names]
        return Folder(kept, self.skipped + dropped)


def expand(content: bytes, name: str | None, *, limit: int) -> Folder:
    """The archive's files as (bytes, path inside the archive), in archive order, without those
    `skipped`, and `arranged`. Raises LoadTestFormatError for a damaged archive, an encrypted
    member, more than MAX_MEMBERS files or more than `limit` bytes in all."""
    label = name or "the archive"
    if content.startswith(GZIP_MAGIC):
        try:
            content, _ = unpacked(content, name, limit=limit)
        except LoadTestFormatError as exc:
            raise LoadTestFormatError(f"{label}: {exc}") from None
    if content.startswith(b"PK"):
        return _zip_members(content, label, limit).arranged()
    return _tar_members(content, label, limit).arranged()


def listed(path: str) -> bool:
    """Whether a skipped file is worth naming: not hidden, not a resource fork."""
    return not any(part.startswith(".") or part == "__MACOSX" for part in path.split("/"))


def skipped(path: str) -> bool:
    """Whether a file of a results folder is not one to import: hidden, never a result
    (SKIPPED_SUFFIXES), or a side file a format names (`LoadTestFormat.side_files`)."""
    parts = [part for part in path.split("/") if part]
    if not parts or any(part.startswith(".") or part == "__MACOSX" for part in parts):
        return True
    name = posixpath.basename(path)
    if any(fnmatchcase(name, pattern) for fmt in formats() for pattern in fmt.companion_files):
        return False
    if name.lower().endswith(SKIPPED_SUFFIXES):
        return True
    return any(fnmatchcase(name, pattern) for fmt in formats() for pattern in fmt.side_files)


def joined(files: list[tuple[bytes, str | None]]) -> list[tuple[bytes, str | None]]:
    """Each run a tool writes to several files as the one document its format reads
    (`LoadTestFormat.join_folder`: evalscope's run folder, MLPerf's summary and detail log)."""
    for fmt in formats():
        if fmt.join_folder is not None:
            files = fmt.join_folder(files)
    return files


def arranged(files: list[tuple[bytes, str]]) -> list[tuple[bytes, str]]:
    """A results folder's files (those `skipped` left) as each format wants them imported."""
    for fmt in formats():
        if fmt.arrange_folder is not None:
            files = fmt.arrange_folder(files)
    return files


def _zip_members(content: bytes, label: str, limit: int) -> Folder:
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
        infos = [info for info in archive.infolist() if not info.is_dir()]
    except _DAMAGED as exc:
        raise LoadTestFormatError(f"{label}: not a readable zip file ({exc})") from None
    folder, total = Folder([]), 0
    for info in infos:
        path = info.filename.replace("\\", "/")
        if folder.leaves_out(path):
            continue
        _check_count(len(folder.files) + 1, label)
        if info.flag_bits & 0x1:
            raise LoadTestFormatError(f"{label}: {path} is encrypted")
        try:
            with archive.open(info) as stream:
                data = _read_bounded(stream, limit - total, label, limit)
        except LoadTestFormatError:
            raise
        except _DAMAGED as exc:
            raise LoadTestFormatError(f"{label}: {path}: cannot be read ({exc})") from None
        total += len(data)
        folder.files.append((data, path))
    return folder


def _tar_members(content: bytes, label: str, limit: int) -> Folder:
    folder, total = Folder([]), 0
    try:
        with tarfile.open(fileobj=io.BytesIO(content), mode="r:") as archive:
            for info in archive:
                path = info.name.removeprefix("./")
                if not info.isfile():
                    continue
                if folder.leaves_out(path):
                    continue
                _check_count(len(folder.files) + 1, label)
                if info.size > limit - total:
                    raise _too_large(label, limit)
                stream = archive.extractfile(info)
                data = stream.read() if stream is not None else b""
                total += len(data)
                folder.files.append((data, path))
    except LoadTestFormatError:
        raise
    except (tarfile.TarError, *_DAMAGED) as exc:
        raise LoadTestFormatError(f"{label}: not a readable tar file ({exc})") from None
    return folder


def _read_bounded(stream, room: int, label: str, limit: int) -> bytes:
    chunks, size = [], 0
    while chunk := stream.read(_STEP):
        size += len(chunk)
        if size > room:
            raise _too_large(label, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _check_count(count: int, label: str) -> None:
    if count > MAX_MEMBERS:
        raise LoadTestFormatError(
            f"{label}: more than {MAX_MEMBERS} files; archive the results folder alone"
        )


def _too_large(label: str, limit: int) -> LoadTestFormatError:
    return LoadTestFormatError(
        f"{label}: its files expand past {limit:,} bytes, the limit for an archive"
    )


def _is_tar(content: bytes) -> bool:
    """A tar header: the "ustar" magic and a checksum that adds up (text that happens to hold
    "ustar" at byte 257 is not taken for an archive)."""
    if content[257:262] != b"ustar":
        return False
    try:
        tarfile.TarInfo.frombuf(content[:512], "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


def _head_of_gzip(content: bytes) -> bytes:
    """The first 512 bytes the gzip file holds (enough for a tar header), b"" when damaged."""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(content, 512)
    except zlib.error:
        return b""
