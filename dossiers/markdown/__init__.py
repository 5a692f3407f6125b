"""A whole dossier as one Markdown file and back (format `perfhub-dossier` version 2).

- `export`: service -> a document a new hire reads (people and open bottlenecks first, units,
  a glossary) whose data parts are small ```yaml blocks, so it imports back exactly.
- `parse`: text -> validated plain data; every error names its line (`DossierFormatError`),
  on top of `grammar` (sections, items, fenced blocks, line-numbered YAML) and `fieldvalues`
  (YAML values -> what the model fields store).
- `apply`: what an import would change (`plan_import`, the page's preview) and doing it in one
  transaction (`import_dossier`, `create_from_dossier`).
"""

from dossiers.markdown.apply import (
    ImportPlan,
    OtherServiceError,
    create_from_dossier,
    import_dossier,
    plan_import,
)
from dossiers.markdown.export import export_dossier
from dossiers.markdown.grammar import DossierFormatError
from dossiers.markdown.parse import ParsedDossier, parse_dossier

__all__ = [
    "DossierFormatError",
    "ImportPlan",
    "OtherServiceError",
    "ParsedDossier",
    "create_from_dossier",
    "export_dossier",
    "import_dossier",
    "parse_dossier",
    "plan_import",
]
