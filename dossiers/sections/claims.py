"""The dossier's claims against live traffic: a fragment dashboards serves
(settings.PERFHUB_DOSSIER_FRAGMENTS)."""

from dossiers.sections import Section, register


@register
class Claims(Section):
    name = "claims"
    title = "Claims"
    order = 20
    template = "dossiers/sections/claims.html"
