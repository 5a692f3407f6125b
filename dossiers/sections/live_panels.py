"""Live panels from roll-ups: a fragment dashboards serves
(settings.PERFHUB_DOSSIER_FRAGMENTS)."""

from dossiers.sections import Section, register


@register
class LivePanels(Section):
    name = "live-panels"
    title = "Live"
    order = 30
    template = "dossiers/sections/live_panels.html"
