"""The grammar of a dossier file: `## ` sections, `### ` items, `#### ` text blocks, fenced
blocks, and YAML mappings that remember each key's line. Every error names the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from dossiers.markdown import schema


class DossierFormatError(ValueError):
    """The file cannot be imported; the message names the line and the part that is wrong."""


@dataclass
class Block:
    title: str
    line: int
    lines: list[tuple[int, str]] = field(default_factory=list)


_FENCE = re.compile(r"^\s*(```|~~~)")


def sections(lines: list[str], start: int) -> dict[str, Block]:
    known = {s.lower(): s for s in schema.SECTIONS}
    sections: dict[str, Block] = {}
    current: Block | None = None
    in_fence = in_narrative = False
    for index in range(start, len(lines)):
        number, line = index + 1, lines[index]
        stripped = line.strip()
        if stripped == schema.NARRATIVE_START:
            in_narrative = True
        elif stripped == schema.NARRATIVE_END:
            in_narrative = False
        elif not in_narrative and _FENCE.match(line):
            in_fence = not in_fence
        elif not (in_fence or in_narrative) and line.startswith("## "):
            heading = line[3:].strip()
            name = known.get(heading.lower())
            if name is None:
                raise DossierFormatError(
                    f"line {number}: unknown section '## {heading}' (a dossier has "
                    + ", ".join(f"'{s}'" for s in schema.SECTIONS)
                    + ")."
                )
            if name in sections:
                raise DossierFormatError(
                    f"line {number}: section '## {name}' appears twice "
                    f"(first at line {sections[name].line})."
                )
            current = sections[name] = Block(name, number)
            continue
        if current is not None:
            current.lines.append((number, line))
    if in_narrative:
        raise DossierFormatError(
            f"'{schema.NARRATIVE_START}' has no matching '{schema.NARRATIVE_END}'."
        )
    missing = [name for name in schema.REQUIRED if name not in sections]
    if missing:
        raise DossierFormatError(
            "Missing required section(s): " + ", ".join(f"'## {name}'" for name in missing) + "."
        )
    return sections


def split(block: Block, prefix: str) -> tuple[list[tuple[int, str]], list[Block]]:
    """Lines before the first `prefix` heading, and one block per such heading."""
    lead: list[tuple[int, str]] = []
    items: list[Block] = []
    in_fence = False
    for number, line in block.lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.startswith(prefix):
            items.append(Block(line[len(prefix) :].strip(), number))
            continue
        (items[-1].lines if items else lead).append((number, line))
    return lead, items


def fenced(lines: list[tuple[int, str]], info: str) -> list[tuple[int, list[str]]]:
    """Fenced blocks whose info string is `info`: (line of the opening fence, body lines)."""
    found: list[tuple[int, list[str]]] = []
    body: list[str] | None = None
    kind, opened = "", 0
    for number, line in lines:
        stripped = line.strip()
        if body is None:
            if _FENCE.match(line):
                body, kind, opened = [], stripped[3:].strip().lower(), number
        elif stripped in ("```", "~~~"):
            if kind == info:
                found.append((opened, body))
            body = None
        else:
            body.append(line)
    if body is not None:
        raise DossierFormatError(f"line {opened}: the ```{kind} block is never closed.")
    return found


class LineDict(dict):
    """A YAML mapping that remembers the line of each key."""

    lines: dict[str, int]


class _Loader(yaml.SafeLoader):
    first_line = 1

    def compose_node(self, parent, index):
        # Aliases let a few bytes expand into gigabytes ("billion laughs"); a dossier has none.
        if self.check_event(yaml.AliasEvent):
            line = self.peek_event().start_mark.line + self.first_line
            raise DossierFormatError(f"line {line}: YAML aliases (*name) are not allowed.")
        return super().compose_node(parent, index)


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    mapping = LineDict()
    mapping.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise DossierFormatError(
                f"line {key_node.start_mark.line + loader.first_line}: keys must be names, "
                f"not {key!r}."
            )
        if key in mapping:
            raise DossierFormatError(
                f"line {key_node.start_mark.line + loader.first_line}: '{key}' appears twice."
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.lines[key] = key_node.start_mark.line + loader.first_line
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(body: list[str], first_line: int, where: str) -> LineDict:
    """A YAML mapping; `first_line` is the file line of body[0]."""
    loader = None
    try:
        loader = _Loader("\n".join(body))
        loader.first_line = first_line
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + (mark.line if mark else 0)
        problem = exc.problem or exc.context or "unreadable"
        raise DossierFormatError(f"line {line}: {where}: not valid YAML: {problem}.") from None
    except yaml.YAMLError as exc:
        problem = (str(exc).splitlines() or ["unreadable"])[0]
        raise DossierFormatError(f"line {first_line}: {where}: not valid YAML: {problem}") from None
    except DossierFormatError:
        raise
    except RecursionError:
        raise DossierFormatError(
            f"line {first_line}: {where}: the YAML nests too deeply."
        ) from None
    except ValueError as exc:  # e.g. a date YAML recognises but cannot build (2026-13-45)
        raise DossierFormatError(
            f"line {first_line}: {where}: a value is not valid: {exc}."
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    if data is None:
        data = LineDict()
        data.lines = {}
    if not isinstance(data, LineDict):
        raise DossierFormatError(f"line {first_line}: {where}: expected 'key: value' lines.")
    return data


def data_block(lines: list[tuple[int, str]], where: str, line: int) -> LineDict:
    blocks = fenced(lines, "yaml")
    if not blocks:
        raise DossierFormatError(f"line {line}: {where}: missing its ```yaml block of fields.")
    if len(blocks) > 1:
        raise DossierFormatError(f"line {blocks[1][0]}: {where}: a second ```yaml block.")
    opened, body = blocks[0]
    return load_yaml(body, opened + 1, where)


def section_data(section: Block | None, where: str) -> LineDict:
    if section is None:
        empty = LineDict()
        empty.lines = {}
        return empty
    if not fenced(section.lines, "yaml"):
        empty = LineDict()
        empty.lines = {}
        return empty if where == schema.PEOPLE else data_block([], where, section.line)
    return data_block(section.lines, where, section.line)


def texts(item: Block, allowed: tuple[str, ...], where: str) -> dict[str, str]:
    """The item's `#### Heading` text blocks, by lower-cased heading; computed ones skipped."""
    _, blocks = split(item, "#### ")
    texts = {}
    for block in blocks:
        key = block.title.lower()
        if key.endswith("(computed)"):
            continue
        if key not in allowed:
            raise DossierFormatError(
                f"line {block.line}: {where}: unknown text heading '#### {block.title}' "
                f"(expected {', '.join(a.capitalize() for a in allowed)})."
            )
        texts[key] = "\n".join(line for _, line in block.lines).strip()
    return texts
