"""The current baseline: its workload and measured results."""

from dossiers.sections import Section, register


@register
class CurrentBaseline(Section):
    name = "baseline"
    title = "Current baseline"
    menu = "Baseline"
    order = 40
    template = "dossiers/sections/baseline.html"
