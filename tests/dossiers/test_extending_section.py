"""docs/extending.md, "A section of the dossier page", followed literally: the module in
dossiers/sections/ and its template, discovered, placed by its order, listed in the section
menu and rendered with what it read on the dossier page."""

import pytest

from dossiers import sections
from tests.extending_doc import doc_template, module_from_doc
from tests.factories.catalog import make_load_test

pytestmark = pytest.mark.django_db


@pytest.fixture
def recent_runs(tmp_path, settings):
    path, text = doc_template("A section of the dossier page")
    folder = tmp_path / "templates"
    (folder / path).parent.mkdir(parents=True)
    (folder / path).write_text(text)
    settings.TEMPLATES = [
        {**settings.TEMPLATES[0], "DIRS": [folder, *settings.TEMPLATES[0]["DIRS"]]},
        *settings.TEMPLATES[1:],
    ]
    modules = tmp_path / "modules"
    modules.mkdir()
    unregister = lambda: sections.unregister("recent-runs")  # noqa: E731
    with module_from_doc("A section of the dossier page", modules, unregister):
        yield sections.SECTIONS["recent-runs"]


def test_the_documented_section_shows_what_it_read_in_its_place(owner_client, service, recent_runs):
    make_load_test(service, label="vLLM 0.7.0, c=32")
    page = owner_client.get(service.get_absolute_url()).content.decode()
    section = page.index('<section id="recent-runs" class="section">')
    assert page.index('id="baseline"') < section < page.index('id="bottlenecks"')
    assert "<h2>Recent load tests</h2>" in page[section:]
    assert ">vLLM 0.7.0, c=32</a>" in page[section : page.index('id="bottlenecks"')]


def test_the_documented_section_is_in_the_section_menu(owner_client, service, recent_runs):
    page = owner_client.get(service.get_absolute_url()).content.decode()
    menu = page[
        page.index("data-section-menu") : page.index("</nav>", page.index("data-section-menu"))
    ]
    assert '<a href="#baseline">Baseline</a><a href="#recent-runs">Runs</a>' in menu


def test_the_documented_section_without_runs_says_so(owner_client, service, recent_runs):
    page = owner_client.get(service.get_absolute_url()).content.decode()
    assert '<p class="empty">No load test yet.</p>' in page
