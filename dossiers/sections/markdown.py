"""Export the dossier as Markdown, or import such a file (members of the team only)."""

from dossiers.sections import Section, register


@register
class MarkdownRoundTrip(Section):
    name = "markdown"
    title = "Markdown round trip"
    order = 110
    template = "dossiers/sections/markdown.html"
