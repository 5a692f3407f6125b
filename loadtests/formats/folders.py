"""Arranging a results folder's files (`LoadTestFormat.arrange_folder`): the rules formats share.
Files are (content, path) pairs; a folder is the path's directory part."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from fnmatch import fnmatchcase

Files = list[tuple[bytes, str]]


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
