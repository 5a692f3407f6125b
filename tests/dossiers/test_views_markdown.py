"""Export a dossier as Markdown and import such a file back, through the pages."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from dossiers import services


def upload(text: str, name: str = "dossier.md") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/markdown")


def test_it_exports_the_dossier_as_a_markdown_download(owner_client, full_dossier):
    service = full_dossier["service"]
    response = owner_client.get(reverse("dossiers:export_markdown", args=[service.slug]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="chat-7b-dossier.md"'
    assert "Serves chat for the support bot." in response.content.decode()


def test_any_logged_in_reader_may_export(outsider_client, full_dossier):
    url = reverse("dossiers:export_markdown", args=[full_dossier["service"].slug])
    assert outsider_client.get(url).status_code == 200


def test_the_dossier_page_offers_export_and_import_to_owners(owner_client, full_dossier):
    page = owner_client.get(full_dossier["service"].get_absolute_url()).content.decode()
    assert "Export as Markdown" in page
    assert 'enctype="multipart/form-data"' in page


def test_an_exported_file_imports_into_another_service(owner_client, full_dossier, make_service):
    source = full_dossier["service"]
    text = owner_client.get(reverse("dossiers:export_markdown", args=[source.slug])).content
    target = make_service("chat-7b-copy")
    response = owner_client.post(
        reverse("dossiers:import_markdown", args=[target.slug]),
        {"file": upload(text.decode())},
    )
    assert response.status_code == 302
    target.refresh_from_db()
    assert "Serves chat for the support bot." in target.revisions.first().body
    assert target.baselines.filter(label="batch 16").exists()


def test_a_file_missing_a_required_section_is_refused_and_changes_nothing(
    owner_client, full_dossier
):
    service = full_dossier["service"]
    services.narrative_revise(service=service, body="kept", summary="s")
    response = owner_client.post(
        reverse("dossiers:import_markdown", args=[service.slug]),
        {"file": upload("# Performance dossier: x\n\n## Narrative\n\nreplaced\n")},
    )
    assert response.status_code == 200
    errors = response.context["form"].errors["file"]
    assert any("Service" in e for e in errors)
    assert service.revisions.first().body == "kept"
    assert service.revisions.count() == 3
