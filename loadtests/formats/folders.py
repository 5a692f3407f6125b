"""Arranging a results folder's files (`LoadTestFormat.arrange_folder`): the rules formats share.
Files are (content, path) pairs; a folder is the path's directory part."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from fnmatch import fnmatchcase

Files = list[tuple[bytes, str]]
Upload = tuple[bytes, str | None]  # a file as an upload names it (no name: a raw body)


def by_folder(files: Iterable[Upload], names: Iterable[str]) -> dict[str, dict[str, Upload]]:
    """{folder: {file name: file}} of the files named one of `names`, for a tool that writes one
    run to several files in a folder. Files named with no folder (a browser's upload) are one
    folder, ""."""
    wanted = set(names)
    folders: dict[str, dict[str, Upload]] = {}
    for content, name in files:
        base = posixpath.basename(name or "")
        if base in wanted:
            folders.setdefault(posixpath.dirname(name or ""), {})[base] = (content, name)
    return folders


def drop_beside(files: Files, *, drop: Iterable[str], beside: str) -> Files:
    """`files` without those whose name matches a `drop` pattern in a folder that also holds a
    file matching `beside`: a tool's second copy of runs the folder already holds."""
    drop = tuple(drop)
    folders = {
        posixpath.dirname(name)
        for _, name in files
        if fnmatchcase(posixpath.basename(name), beside)
    }
    return [
        (content, name)
        for content, name in files
        if not (
            posixpath.dirname(name) in folders
            and any(fnmatchcase(posixpath.basename(name), pattern) for pattern in drop)
        )
    ]
