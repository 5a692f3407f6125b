"""The Prometheus source form: parse and validate; the model and `source_create` hold the rules."""

from __future__ import annotations

from django import forms

from collectors.models import PrometheusSource
from dossiers.models import Service

FIELDS = ["name", "service", "mode", "base_url", "engine", "engine_selector", "dcgm_selector",
          "step_s", "interval_s", "backfill_hours", "enabled"]  # fmt: skip


class PrometheusSourceForm(forms.ModelForm):
    class Meta:
        model = PrometheusSource
        fields = FIELDS

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the services the user's teams own can be fed through a source.
        self.fields["service"].queryset = Service.objects.editable_by(user).order_by("name")
        if self.instance.pk:
            self.fields["name"].disabled = True  # it names the source's host
        # A form posted without a mode (older scripts) keeps the per-host mode.
        self.fields["mode"].required = False

    def clean_mode(self) -> str:
        return self.cleaned_data.get("mode") or PrometheusSource.Mode.PER_HOST
