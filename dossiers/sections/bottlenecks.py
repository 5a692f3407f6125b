"""Bottlenecks, open first."""

from dossiers.sections import Section, register


@register
class Bottlenecks(Section):
    name = "bottlenecks"
    title = "Bottlenecks"
    menu = "Bottlenecks"
    order = 50
    template = "dossiers/sections/bottlenecks.html"
