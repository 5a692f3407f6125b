"""The current config version and its diff from the previous one."""

from dossiers.sections import Section, register


@register
class CurrentConfig(Section):
    name = "config"
    title = "Current config"
    menu = "Config"
    order = 80
    template = "dossiers/sections/config.html"
