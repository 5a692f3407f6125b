"""The narrative: what the service does, how it performs and where it hurts (current revision)."""

from dossiers.sections import Section, register


@register
class Narrative(Section):
    name = "narrative"
    title = "Narrative"
    order = 10
    template = "dossiers/sections/narrative.html"
