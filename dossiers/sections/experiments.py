"""Experiments: one variable at a time, with their measurements."""

from dossiers.sections import Section, register


@register
class Experiments(Section):
    name = "experiments"
    title = "Experiments"
    menu = "Experiments"
    order = 60
    template = "dossiers/sections/experiments.html"
