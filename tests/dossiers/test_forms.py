"""Dossier forms: field-level messages and choices limited to the service being edited."""

from django.core.files.uploadedfile import SimpleUploadedFile

from dossiers import forms, services
from dossiers.models import Team


def test_a_config_that_is_not_json_names_the_field_and_the_position():
    form = forms.ConfigVersionForm({"config": '{"a": 1,}'})
    assert not form.is_valid()
    assert form.errors["config"] == [
        "Config is not JSON: Expecting property name enclosed in double quotes at line 1, column 9."
    ]


def test_a_config_must_be_an_object():
    form = forms.ConfigVersionForm({"config": "[1, 2]"})
    assert form.errors["config"] == ["Config must be a JSON object ({...}), not an array."]


def test_a_config_object_is_parsed():
    form = forms.ConfigVersionForm({"config": '{"max_num_seqs": 16}', "note": ""})
    assert form.is_valid()
    assert form.cleaned_data["config"] == {"max_num_seqs": 16}


def test_the_baseline_form_offers_only_this_services_configs(service, make_service):
    other = make_service("other-svc")
    mine = services.config_version_create(service=service, config={"a": 1})
    services.config_version_create(service=other, config={"b": 2})
    form = forms.BaselineForm(service=service)
    assert list(form.fields["config_version"].queryset) == [mine]


def test_the_bottleneck_form_offers_only_this_services_baselines(full_dossier, make_service):
    make_service("other-svc")
    form = forms.BottleneckForm(service=full_dossier["service"])
    assert set(form.fields["evidence_baselines"].queryset) == {
        full_dossier["before"],
        full_dossier["after"],
    }


def test_the_experiment_form_offers_only_this_services_baselines(full_dossier, make_service):
    make_service("other-svc")
    form = forms.ExperimentForm(service=full_dossier["service"])
    expected = {full_dossier["before"], full_dossier["after"]}
    assert set(form.fields["before"].queryset) == expected
    assert set(form.fields["after"].queryset) == expected


def test_the_service_form_offers_only_the_users_teams(owner, team):
    Team.objects.create(slug="other", name="Other")
    form = forms.ServiceCreateForm(user=owner)
    assert list(form.fields["team"].queryset) == [team]


def test_the_markdown_upload_is_decoded_to_text():
    upload = SimpleUploadedFile("d.md", "# Dossier — ok".encode(), content_type="text/markdown")
    form = forms.MarkdownImportForm({}, {"file": upload})
    assert form.is_valid()
    assert form.cleaned_data["file"] == "# Dossier — ok"


def test_the_markdown_upload_must_be_utf8():
    upload = SimpleUploadedFile("d.md", b"\xff\xfe\x00bad")
    form = forms.MarkdownImportForm({}, {"file": upload})
    assert form.errors["file"] == ["File is not UTF-8 text."]


def test_the_markdown_upload_must_be_a_markdown_file():
    upload = SimpleUploadedFile("d.exe", b"MZ")
    form = forms.MarkdownImportForm({}, {"file": upload})
    assert form.errors["file"] == ["File must be a Markdown file (.md)."]


def test_the_markdown_upload_has_a_size_limit():
    upload = SimpleUploadedFile("d.md", b"x" * (forms.MAX_MARKDOWN_BYTES + 1))
    form = forms.MarkdownImportForm({}, {"file": upload})
    assert form.errors["file"] == ["File is larger than 1 MB."]


def test_the_baseline_form_records_where_its_latencies_were_measured(service):
    """A baseline typed in from the engine's own histograms is server-side: claims then pair it
    with live engine figures instead of calling them not comparable."""
    data = {"label": "from grafana", "measured_at": "2026-11-30T14:05", "vantage": "server"}
    form = forms.BaselineForm(data, service=service)
    assert form.is_valid(), form.errors
    assert form.save(commit=False).vantage == "server"


def test_a_baseline_form_without_a_vantage_keeps_the_client_default(service):
    data = {"label": "typed in", "measured_at": "2026-11-30T14:05"}
    form = forms.BaselineForm(data, service=service)
    assert form.is_valid(), form.errors
    assert form.save(commit=False).vantage == "client"
