"""Forms for the load-test pages: the upload, and the two calculators (docs/method.md)."""

from __future__ import annotations

from django import forms

from analysis import kvcache
from loadtests import formats
from loadtests.importing import (
    MAX_FILE_BYTES,
    MAX_UPLOAD_FILES,
    MeasuredAtError,
    check_measured_at_value,
)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one field, each cleaned as a FileField cleans one (Django's documented
    pattern); the cleaned value is a list."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None) -> list:
        files = list(data) if isinstance(data, list | tuple) else [data]
        files = [f for f in files if f] or [None]  # none given: the one-file "required" error
        return [super(MultipleFileField, self).clean(f, initial) for f in files]


class LoadTestUploadForm(forms.Form):
    file = MultipleFileField(label="Files")
    format = forms.ChoiceField(required=False)
    measured_at = forms.DateTimeField(
        label="Measured at",
        required=False,
        help_text="For files that carry no time (GenAI-Perf, SGLang, a console log): when the "
        "run was measured. "
        "Without it such a run is shown as “date unknown”. Files with a time keep theirs.",
    )
    baseline = forms.BooleanField(label="Make it the current baseline", required=False)
    run = forms.IntegerField(
        label="Run to promote",
        min_value=1,
        required=False,
        help_text="For a file of several runs (a sweep): which one becomes the baseline, from 1.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Read at each form, so a format registered after start-up is offered too.
        self.fields["format"].choices = [("", "detect from the content"), *formats.choices()]
        labels = [fmt.label for fmt in formats.formats()]
        self.fields["file"].help_text = (
            "Result files of " + ", ".join(labels) + " (GenAI-Perf's and AIPerf's CSV export "
            "too), or a console log holding the summary vLLM's or SGLang's benchmark printed; "
            "gzip-compressed (.gz) as well, or a results folder as .zip or .tar.gz. Up to "
            f"{MAX_UPLOAD_FILES} at once (a sweep's stages, one file each): all are stored, "
            "or none."
        )

    def clean_measured_at(self):
        try:
            return check_measured_at_value(self.cleaned_data.get("measured_at"))
        except MeasuredAtError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_file(self):
        uploads = self.cleaned_data["file"]
        if len(uploads) > MAX_UPLOAD_FILES:
            raise forms.ValidationError(f"At most {MAX_UPLOAD_FILES} files at once.")
        for upload in uploads:
            if upload.size > MAX_FILE_BYTES:
                raise forms.ValidationError(
                    f"{upload.name} is larger than {MAX_FILE_BYTES:,} bytes."
                )
        return uploads


class CostForm(forms.Form):
    gpu_hour_price = forms.FloatField(label="GPU price per hour", min_value=0, initial=10)
    gpus = forms.IntegerField(label="GPUs", min_value=1, initial=1)
    tokens_per_second = forms.FloatField(
        label="Tokens per second",
        min_value=0.001,
        initial=2000,
        help_text="Sustained throughput of those GPUs, in the tokens you bill.",
    )
    price_per_mtok = forms.FloatField(
        label="Price charged per million tokens", min_value=0.0001, required=False, initial=5
    )
    busy_fraction = forms.FloatField(
        label="Busy share of the hours (GPU-Util)",
        min_value=0,
        max_value=1,
        required=False,
        help_text="0-1. Optional: gives the usage-basis cost beside the allocation basis.",
    )


DTYPE_CHOICES = [
    (name, f"{name} ({size} byte{'s' if size > 1 else ''})")
    for name, size in kvcache.DTYPE_BYTES.items()
]


class KvCacheForm(forms.Form):
    layers = forms.IntegerField(min_value=1, initial=40)
    attention_heads = forms.IntegerField(label="Attention (query) heads", min_value=1, initial=40)
    kv_heads = forms.IntegerField(
        label="KV heads",
        min_value=1,
        required=False,
        help_text="num_key_value_heads. Fewer than the query heads with grouped-query attention "
        "(Llama 3, Mistral); leave blank for multi-head attention (same as the query heads).",
    )
    head_dim = forms.IntegerField(label="Head dimension", min_value=1, initial=128)
    seq_len = forms.IntegerField(label="Sequence length (tokens)", min_value=1, initial=2048)
    batch = forms.IntegerField(label="Batch (sequences)", min_value=1, initial=16)
    dtype = forms.ChoiceField(label="KV cache dtype", choices=DTYPE_CHOICES, initial="fp16")

    def clean(self):
        data = super().clean()
        heads, kv = data.get("attention_heads"), data.get("kv_heads")
        if heads and kv and kv > heads:
            self.add_error("kv_heads", "Cannot exceed the attention heads.")
        if heads and kv and heads % kv:
            self.add_error("kv_heads", "Query heads must divide evenly into KV head groups.")
        return data


class CITokenForm(forms.Form):
    label = forms.CharField(
        max_length=100, required=False, help_text="Where it is used, e.g. “release pipeline”."
    )
    scope = forms.ChoiceField(
        choices=[("service", "this service only"), ("team", "every service of the team")],
        initial="service",
        widget=forms.RadioSelect,
    )
    can_import = forms.BooleanField(label="may import load tests", required=False, initial=True)
    can_promote = forms.BooleanField(label="may promote a baseline", required=False)
    can_gate = forms.BooleanField(label="may run the gate", required=False, initial=True)

    def clean(self):
        data = super().clean()
        if not (data.get("can_import") or data.get("can_promote") or data.get("can_gate")):
            raise forms.ValidationError("Give the token at least one permission.")
        return data
