"""The timeline: alerts, deploys, experiments, gate runs (a fragment dashboards serves)."""

from dossiers.sections import Section, register


@register
class Timeline(Section):
    name = "timeline"
    title = "Timeline"
    menu = "Timeline"
    order = 70
    template = "dossiers/sections/timeline.html"
