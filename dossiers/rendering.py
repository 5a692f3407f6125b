"""Markdown to safe HTML, and readable line diffs, for dossier pages.

Narratives are written by people and imported from files, so they are untrusted: Markdown is
rendered first and the resulting HTML is then sanitized with nh3 (docs/security.md). Sanitizing
after rendering matters: raw HTML inside Markdown passes through the renderer untouched.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

MARKDOWN_EXTENSIONS = ["tables", "fenced_code", "sane_lists"]

# nh3's defaults already drop <script>, <style>, every on* attribute and javascript: URLs;
# we only allow the class fenced code blocks carry ("language-python") and add rel to links.
_ALLOWED_ATTRIBUTES = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    "code": {"class"},
    "th": {"align"},
    "td": {"align"},
}
_ALLOWED_ATTRIBUTES["a"] = {attr for attr in _ALLOWED_ATTRIBUTES.get("a", set()) if attr != "rel"}


def sanitize_html(html: str) -> str:
    return nh3.clean(html, attributes=_ALLOWED_ATTRIBUTES, link_rel="noopener noreferrer nofollow")


def render_markdown(text: str) -> SafeString:
    """Render Markdown (tables, fenced code) and sanitize it; safe to put in a template as is."""
    html = markdown.markdown(text or "", extensions=MARKDOWN_EXTENSIONS, output_format="html")
    return mark_safe(sanitize_html(html))  # sanitized by nh3 just above


@dataclass(frozen=True)
class DiffRow:
    """One row of a side-by-side diff. `kind` is equal, delete, insert or replace."""

    kind: str
    left_no: int | None
    left: str
    right_no: int | None
    right: str


def side_by_side(before: str, after: str) -> list[DiffRow]:
    """Pair the lines of two texts for a two-column diff (difflib's opcodes, line by line)."""
    a, b = before.splitlines(), after.splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [
                DiffRow("equal", i + 1, a[i], j + 1, b[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
            continue
        left, right = list(range(i1, i2)), list(range(j1, j2))
        for k in range(max(len(left), len(right))):
            i = left[k] if k < len(left) else None
            j = right[k] if k < len(right) else None
            kind = (
                "replace"
                if i is not None and j is not None
                else "delete"
                if j is None
                else "insert"
            )
            rows.append(
                DiffRow(
                    kind,
                    None if i is None else i + 1,
                    "" if i is None else a[i],
                    None if j is None else j + 1,
                    "" if j is None else b[j],
                )
            )
    return rows


@dataclass(frozen=True)
class UnifiedLine:
    kind: str  # header, hunk, add, remove, context
    text: str


def classify_unified(lines: list[str]) -> list[UnifiedLine]:
    """Tag the lines of a unified diff so a template can colour them."""
    out = []
    for line in lines:
        if line.startswith(("---", "+++")):
            kind = "header"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "remove"
        else:
            kind = "context"
        out.append(UnifiedLine(kind, line))
    return out
