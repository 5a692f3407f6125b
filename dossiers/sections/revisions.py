"""The narrative's revisions, newest first, each with its diff."""

from dossiers.sections import Section, register


@register
class Revisions(Section):
    name = "revisions"
    title = "Narrative revisions"
    menu = "Revisions"
    order = 100
    template = "dossiers/sections/revisions.html"
