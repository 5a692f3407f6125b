"""The dossier page's sections: one class per section, one module each in this folder (and any
module added here: the package imports every module in its folder, `core.discovery`). The page
shows them in their `order`, each from its own template with what its `context` reads, and
lists those with a `menu` label in the section menu at the top. `docs/extending.md` walks
through one.

The summary cards above them (people, facts, SLOs, economics) and the right-now verdict are the
page's head, not sections. Sections showing live data embed it as a fragment another app serves
(`dossiers` imports neither `collectors` nor `alerts`): see `claims.py` and `live_panels.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from django.http import HttpRequest

from core.discovery import import_submodules
from core.registry import Registry


class Section:
    """One section of the dossier page. Subclass, set the class attributes, `@register`."""

    name: ClassVar[str]  # the section's anchor (its element's id)
    title: ClassVar[str]  # its heading
    menu: ClassVar[str] = ""  # its entry in the section menu ("" for none)
    order: ClassVar[int] = 100  # place on the page (the built-ins take 10 to 110)
    template: ClassVar[str]  # rendered with the page's context, and `section`

    @property
    def label(self) -> str:
        return self.title

    def context(self, request: HttpRequest, page: dict[str, Any]) -> dict[str, Any]:
        """What the template reads as `section.data`, from the page's context (`service`, `d`
        the dossier `dossiers.selectors.dossier` read, ...). Nothing by default."""
        return {}


SECTIONS: Registry[Section] = Registry("dossier section")
register = SECTIONS.register  # class decorator: `@register class MySection(Section)`
unregister = SECTIONS.unregister


@dataclass(frozen=True)
class Shown:
    """A section as one page shows it: its spec's attributes, and `data`, what its
    `context` read for this page."""

    spec: Section
    data: dict[str, Any]

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.spec, attr)


def ordered() -> list[Section]:
    return sorted(SECTIONS.values(), key=lambda s: (s.order, s.name))


def shown(request: HttpRequest, page: dict[str, Any]) -> list[Shown]:
    """Every section in order, with what it reads for this page."""
    return [Shown(s, s.context(request, page)) for s in ordered()]


import_submodules(__name__)
