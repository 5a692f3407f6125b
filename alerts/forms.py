"""Forms for rules, silences and receivers: parse and validate; the models hold the rules."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.utils import timezone

from alerts.models import Receiver, Rule
from analysis.silences import parse_matcher_text
from core.validators import validate_http_url
from dossiers.models import Team


class RuleForm(forms.ModelForm):
    class Meta:
        model = Rule
        fields = [
            "name", "kind", "threshold", "resolve_threshold", "window_s", "for_s",
            "keep_firing_for_s", "min_requests", "severity", "labels", "enabled",
        ]  # fmt: skip
        help_texts = {
            # The kinds' labels name the unit; pages show a ratio as a percentage.
            "threshold": (
                "In the unit the kind names: latency in ms; a ratio as a fraction (0.05 = 5%);"
                " cost in % above baseline (25 = +25%); no data in s; burn rate as a multiple."
            ),
            "labels": 'Extra labels sent with the alert, e.g. {"runbook": "gpu-waiting"}.',
        }

    def __init__(self, *args, service=None, **kwargs):
        super().__init__(*args, **kwargs)
        if service is not None:
            self.instance.service = service


def teams_of(user):
    if user.is_superuser:
        return Team.objects.all()
    return Team.objects.filter(memberships__user=user)


class SilenceForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none())
    matchers = forms.CharField(
        help_text='Comma-separated: <code>service="chat-7b"</code>, '
        '<code>severity!="info"</code>, <code>alertname=~"P99.*"</code>.',
        widget=forms.TextInput(attrs={"placeholder": 'service="chat-7b"'}),
    )
    starts_at = forms.DateTimeField(required=False, help_text="UTC; blank: now.")
    duration_h = forms.FloatField(
        label="duration (hours)", min_value=0.01, max_value=24 * 90, initial=2
    )
    comment = forms.CharField(max_length=300)

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams_of(user)

    def clean_matchers(self) -> list[dict]:
        try:
            return parse_matcher_text(self.cleaned_data["matchers"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        starts = data.get("starts_at") or timezone.now()
        data["starts_at"] = starts
        if data.get("duration_h"):
            data["ends_at"] = starts + timedelta(hours=data["duration_h"])
        return data


class ReceiverForm(forms.ModelForm):
    url = forms.CharField(
        required=False,
        max_length=500,
        validators=[validate_http_url],
        help_text="A webhook's URL, or an Alertmanager's base URL (e.g. http://alertmanager:9093).",
    )

    class Meta:
        model = Receiver
        fields = ["team", "name", "kind", "url", "emails", "send_resolved", "repeat_interval_s",
                  "enabled"]  # fmt: skip

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams_of(user)
