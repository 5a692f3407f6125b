"""docs/extending.md's code blocks as modules: a test copies a block verbatim into a temporary
folder added to the registry package's path, runs the package's discovery, and uses what the
block registered, so the page and the code cannot drift apart."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from core.discovery import import_submodules

DOC = Path(__file__).resolve().parent.parent / "docs" / "extending.md"


def doc_block(heading: str, language: str = "python") -> str:
    """The first ```python (or other `language`) block under the `## heading` section of
    docs/extending.md."""
    text = DOC.read_text()
    sections = re.split(r"^## ", text, flags=re.MULTILINE)
    section = next(s for s in sections if s.startswith(heading + "\n"))
    match = re.search(rf"^```{language}\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    assert match, f"no {language} block under '## {heading}'"
    return match.group(1)


def doc_template(heading: str) -> tuple[str, str]:
    """(path under templates/, text) of the template the section names ("Template:
    `templates/...html`") and gives as its ```html block."""
    text = DOC.read_text()
    section = next(s for s in re.split(r"^## ", text, flags=re.MULTILINE) if s.startswith(heading))
    match = re.search(r"Template: `templates/([\w/]+\.html)`", section)
    assert match, f"'## {heading}' does not say where its template goes"
    return match.group(1), doc_block(heading, "html")


def doc_file(heading: str) -> tuple[str, str]:
    """The module file the section names ("a new module in `pkg/`, e.g. `name.py`")."""
    text = DOC.read_text()
    section = next(s for s in re.split(r"^## ", text, flags=re.MULTILINE) if s.startswith(heading))
    match = re.search(r"File: a new module in `([\w/]+)/`, e\.g\. `(\w+)\.py`", section)
    assert match, f"'## {heading}' does not say which folder a new module goes in"
    return match.group(1), match.group(2)


@contextmanager
def module_from_doc(
    heading: str, tmp_path: Path, unregister: Callable[[], None]
) -> Iterator[ModuleType]:
    """Write the section's block as the module the section names, into `tmp_path` on the
    package's path; discover; yield the module; then unregister and forget it."""
    folder, name = doc_file(heading)
    package_name = folder.replace("/", ".")
    package = importlib.import_module(package_name)
    (tmp_path / f"{name}.py").write_text(doc_block(heading))
    package.__path__.append(str(tmp_path))
    importlib.invalidate_caches()
    try:
        import_submodules(package_name)
        yield sys.modules[f"{package_name}.{name}"]
    finally:
        package.__path__.remove(str(tmp_path))
        sys.modules.pop(f"{package_name}.{name}", None)
        unregister()
