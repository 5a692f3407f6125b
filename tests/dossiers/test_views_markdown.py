"""Export a dossier as Markdown and import such a file back, through the pages."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse


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


def test_an_upload_shows_a_preview_and_changes_nothing_yet(owner_client, full_dossier):
    service = full_dossier["service"]
    text = owner_client.get(reverse("dossiers:export_markdown", args=[service.slug])).content
    edited = text.decode().replace("Serves chat for the support bot.", "Serves billing.")
    response = owner_client.post(
        reverse("dossiers:import_markdown", args=[service.slug]), {"file": upload(edited)}
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Nothing has changed yet" in page and "a new revision" in page
    assert response.context["plan"].narrative_revised
    assert service.revisions.count() == 2


def test_applying_the_preview_imports_it(owner_client, full_dossier):
    service = full_dossier["service"]
    text = owner_client.get(reverse("dossiers:export_markdown", args=[service.slug])).content
    edited = text.decode().replace("Serves chat for the support bot.", "Serves billing.")
    response = owner_client.post(
        reverse("dossiers:import_markdown", args=[service.slug]), {"text": edited}
    )
    assert response.status_code == 302
    assert "Serves billing." in service.revisions.first().body


def test_another_services_file_needs_the_rename_box(owner_client, full_dossier, make_service):
    source = full_dossier["service"]
    text = owner_client.get(reverse("dossiers:export_markdown", args=[source.slug])).content
    target = make_service("chat-7b-copy")
    url = reverse("dossiers:import_markdown", args=[target.slug])
    preview = owner_client.post(url, {"file": upload(text.decode())}).content.decode()
    assert "This is the dossier of another service" in preview and 'name="rename"' in preview

    refused = owner_client.post(url, {"text": text.decode()})
    assert refused.status_code == 200
    assert "dossier of 'chat-7b'" in " ".join(refused.context["form"].errors["rename"])
    assert not target.baselines.filter(label="batch 16").exists()

    applied = owner_client.post(url, {"text": text.decode(), "rename": "on"})
    assert applied.status_code == 302
    target.refresh_from_db()
    assert "Serves chat for the support bot." in target.revisions.first().body
    assert target.baselines.filter(label="batch 16").exists()


def test_a_file_that_is_not_a_dossier_is_refused_naming_the_line(owner_client, full_dossier):
    service = full_dossier["service"]
    response = owner_client.post(
        reverse("dossiers:import_markdown", args=[service.slug]),
        {"file": upload("# Performance dossier: x\n\n## Narrative\n\nreplaced\n")},
    )
    assert response.status_code == 200
    errors = response.context["form"].errors["file"]
    assert any("line 1: not a PerfHub dossier" in e for e in errors)
    assert service.revisions.count() == 2
