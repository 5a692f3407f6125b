"""Forms for owners to edit each part of a dossier.

Forms parse and validate (ModelForms run the model's validators, `clean()` and unique checks);
the views hand `cleaned_data` to a function in `dossiers.services`, which writes.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms

from analysis.percentiles import LATENCY_FIELDS
from analysis.runs import ENVIRONMENT_FIELDS, RESOURCE_FIELDS, THROUGHPUT_FIELDS
from dossiers import slo_kinds
from dossiers.models import Baseline, Bottleneck, Experiment, Service, Slo, Team

MAX_MARKDOWN_BYTES = 1024 * 1024


class NoColonMixin:
    """Labels without Django's trailing colon: the layout already separates them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(format="%Y-%m-%dT%H:%M", **kwargs)


class DateInput(forms.DateInput):
    input_type = "date"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(format="%Y-%m-%d", **kwargs)


SERVICE_FIELDS = list(Service.EDITABLE_FIELDS)


class ServiceSettingsForm(NoColonMixin, forms.ModelForm):
    """Edit a service. The slug is fixed once created: agents and CI name the service by it."""

    runbook_url = forms.URLField(
        label="Runbook", max_length=300, required=False, assume_scheme="https"
    )

    class Meta:
        model = Service
        fields = ["team", *SERVICE_FIELDS]

    def __init__(self, *args: Any, user, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = editable_teams(user)
        self.fields["team"].empty_label = None


class ServiceCreateForm(ServiceSettingsForm):
    class Meta(ServiceSettingsForm.Meta):
        fields = ["slug", "team", *SERVICE_FIELDS]


def editable_teams(user):
    if user.is_superuser:
        return Team.objects.all()
    return Team.objects.filter(memberships__user=user).distinct()


class NarrativeForm(NoColonMixin, forms.Form):
    body = forms.CharField(
        label="Narrative (Markdown)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 24, "class": "mono"}),
    )
    summary = forms.CharField(
        label="Summary of change",
        max_length=200,
        help_text="One line for the revision history.",
    )


BASELINE_WORKLOAD = [
    "concurrency",
    "request_rate",
    "prompt_tokens_mean",
    "prompt_tokens_std",
    "output_tokens_mean",
    "output_tokens_std",
    "duration_s",
]
BASELINE_ENVIRONMENT = [*ENVIRONMENT_FIELDS, "config_version"]
BASELINE_THROUGHPUT = list(THROUGHPUT_FIELDS)
BASELINE_RESOURCES = list(RESOURCE_FIELDS)
BASELINE_LATENCY = list(LATENCY_FIELDS)


class BaselineForm(NoColonMixin, forms.ModelForm):
    make_current = forms.BooleanField(
        label="Make this the current baseline", required=False, initial=False
    )

    class Meta:
        model = Baseline
        fields = [
            "label",
            "measured_at",
            "vantage",
            *BASELINE_WORKLOAD,
            *BASELINE_ENVIRONMENT,
            *BASELINE_THROUGHPUT,
            *BASELINE_RESOURCES,
            "gpu_source",
            *BASELINE_LATENCY,
            "notes",
        ]
        widgets = {"measured_at": DateTimeLocalInput(), "notes": forms.Textarea(attrs={"rows": 4})}
        labels = {
            "vantage": "Where the latencies were measured",
            "duration_s": "Duration (s)",
            "mem_weights_bytes": "GPU memory for weights (bytes)",
            "mem_kv_bytes": "GPU memory for KV cache (bytes)",
            "prompt_tokens_mean": "Prompt tokens, mean",
            "prompt_tokens_std": "Prompt tokens, std dev",
            "output_tokens_mean": "Output tokens, mean",
            "output_tokens_std": "Output tokens, std dev",
            # the fieldset says "(ms)"
            **{
                name: name.removesuffix("_ms").replace("_", " ").upper()
                for name in BASELINE_LATENCY
            },
        }
        help_texts = {
            "gpu_util": "Ratio 0-1 (NVML: share of time any kernel ran).",
            "sm_active": "Ratio 0-1 (DCGM_FI_PROF_SM_ACTIVE).",
            "dram_active": "Ratio 0-1 (DCGM_FI_PROF_DRAM_ACTIVE).",
        }

    def __init__(self, *args: Any, service: Service, **kwargs: Any) -> None:
        kwargs.setdefault("instance", Baseline(service=service))
        super().__init__(*args, **kwargs)
        self.fields["config_version"].queryset = service.config_versions.all()
        # Left out (a form or script from before the field), the baseline keeps its vantage:
        # a new one is the client's, as a load-test file is.
        self.fields["vantage"].required = False
        if self.instance.pk:  # promotion of an existing baseline is its own button
            del self.fields["make_current"]

    def clean_vantage(self) -> str:
        return self.cleaned_data.get("vantage") or self.instance.vantage

    def clean_gpu_source(self) -> str:
        # Left out by a form or script from before the field, a baseline keeps its source.
        if "gpu_source" not in self.data:
            return self.instance.gpu_source
        return self.cleaned_data.get("gpu_source", "")

    def groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        """Fields in labelled groups, for the template."""
        named = [
            ("Run", ["label", "measured_at", "vantage", "make_current"]),
            ("Workload", BASELINE_WORKLOAD),
            ("Environment", BASELINE_ENVIRONMENT),
            ("Throughput", BASELINE_THROUGHPUT),
            ("Resources", [*BASELINE_RESOURCES, "gpu_source"]),
            ("Latency (ms)", BASELINE_LATENCY),
            ("Notes", ["notes"]),
        ]
        return [(title, [self[n] for n in names if n in self.fields]) for title, names in named]


class BottleneckForm(NoColonMixin, forms.ModelForm):
    class Meta:
        model = Bottleneck
        fields = [
            "title",
            "layer",
            "kind",
            "status",
            "symptom",
            "evidence",
            "evidence_baselines",
            "identified_on",
            "resolved_on",
        ]
        widgets = {
            "symptom": forms.Textarea(attrs={"rows": 3}),
            "evidence": forms.Textarea(attrs={"rows": 4}),
            "evidence_baselines": forms.CheckboxSelectMultiple,
            "identified_on": DateInput(),
            "resolved_on": DateInput(),
        }

    def __init__(self, *args: Any, service: Service, **kwargs: Any) -> None:
        kwargs.setdefault("instance", Bottleneck(service=service))
        super().__init__(*args, **kwargs)
        self.fields["evidence_baselines"].queryset = service.baselines.all()


class ExperimentForm(NoColonMixin, forms.ModelForm):
    class Meta:
        model = Experiment
        fields = [
            "title",
            "hypothesis",
            "target",
            "variable_key",
            "value_from",
            "value_to",
            "before",
            "after",
            "verdict",
            "run_on",
            "notes",
        ]
        widgets = {
            "hypothesis": forms.Textarea(attrs={"rows": 3}),
            "notes": forms.Textarea(attrs={"rows": 4}),
            "run_on": DateInput(),
        }

    def __init__(self, *args: Any, service: Service, **kwargs: Any) -> None:
        kwargs.setdefault("instance", Experiment(service=service))
        super().__init__(*args, **kwargs)
        self.fields["before"].queryset = service.baselines.all()
        self.fields["after"].queryset = service.baselines.all()
        # Say what leaving it blank does, not Django's "---------".
        self.fields["target"].choices = [
            ("", "Not stated (the figure the hypothesis names)"),
            *Experiment._meta.get_field("target").choices,
        ]


class ConfigVersionForm(NoColonMixin, forms.Form):
    config = forms.CharField(
        label="Serving config (JSON object)",
        widget=forms.Textarea(attrs={"rows": 18, "class": "mono", "spellcheck": "false"}),
    )
    note = forms.CharField(max_length=300, required=False, help_text="What changed and why.")

    def clean_config(self) -> dict[str, Any]:
        raw = self.cleaned_data["config"]
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"Config is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
            ) from exc
        if not isinstance(value, dict):
            raise forms.ValidationError(
                f"Config must be a JSON object ({{...}}), not {_json_type(value)}."
            )
        return value


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


class MarkdownImportForm(NoColonMixin, forms.Form):
    file = forms.FileField(
        label="Dossier Markdown file",
        help_text="A file exported from a dossier (.md, UTF-8, at most 1 MB).",
        widget=forms.ClearableFileInput(attrs={"accept": ".md,.markdown,text/markdown"}),
    )

    def clean_file(self) -> str:
        """The upload's text (the form's cleaned value is the decoded Markdown, not the file)."""
        upload = self.cleaned_data["file"]
        if upload.size > MAX_MARKDOWN_BYTES:
            raise forms.ValidationError("File is larger than 1 MB.")
        if not upload.name.lower().endswith((".md", ".markdown", ".txt")):
            raise forms.ValidationError("File must be a Markdown file (.md).")
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise forms.ValidationError("File is not UTF-8 text.") from exc


class MarkdownApplyForm(NoColonMixin, forms.Form):
    """The previewed file, sent back to be applied; `rename` confirms another service's file."""

    text = forms.CharField(widget=forms.HiddenInput, max_length=MAX_MARKDOWN_BYTES, strip=False)
    rename = forms.BooleanField(
        label="Yes, this file is another service's: give this service its name and settings",
        required=False,
    )


class SloForm(NoColonMixin, forms.ModelForm):
    class Meta:
        model = Slo
        fields = list(Slo.EDITABLE_FIELDS)

    def __init__(self, *args: Any, service: Service, **kwargs: Any) -> None:
        kwargs.setdefault("instance", Slo(service=service))
        super().__init__(*args, **kwargs)
        # Which thresholds each kind reads, from the registry (a new kind is listed too).
        self.fields["kind"].help_text = "Thresholds read: " + "; ".join(
            f"{k.name}: {', '.join(slo_kinds.THRESHOLD_FIELDS[f] for f in k.fields) or 'none'}"
            for k in slo_kinds.ordered()
        )
