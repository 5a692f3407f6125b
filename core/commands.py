"""Helpers shared by management commands."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError


def write_output(command: BaseCommand, text: str, path: str | None) -> None:
    """Write a command's document to `path` (`--output`), or to its stdout without one; an
    unwritable path is exit 2 naming the option, never a traceback."""
    if not path:
        command.stdout.write(text, ending="")
        return
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise CommandError(f"--output: {exc.strerror}: {exc.filename}", returncode=2) from None
