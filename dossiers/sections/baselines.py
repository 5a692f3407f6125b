"""Every baseline of the service, the current one marked."""

from dossiers.sections import Section, register


@register
class BaselineHistory(Section):
    name = "baselines"
    title = "Baseline history"
    menu = "Baseline history"
    order = 90
    template = "dossiers/sections/baselines.html"
