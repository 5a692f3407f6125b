"""A baseline's vantage (client or server side) survives the Markdown round trip."""

import datetime as dt

import pytest

from dossiers import services
from dossiers.markdown import DossierFormatError, export_dossier, import_dossier
from dossiers.models import Baseline
from tests.factories.catalog import as_blank

pytestmark = pytest.mark.django_db


@pytest.fixture
def server_side(service):
    return services.baseline_record(
        service=service, label="live window", vantage="server", make_current=True,
        measured_at=dt.datetime(2026, 11, 30, tzinfo=dt.UTC), ttft_p99_ms=52.7,
    )  # fmt: skip


def test_the_export_says_where_a_baseline_was_measured(server_side, service):
    assert "vantage: server" in export_dossier(service)


def test_an_imported_baseline_keeps_its_vantage(server_side, service, blank, owner):
    import_dossier(service=blank, text=as_blank(export_dossier(service)), author=owner)
    assert Baseline.objects.get(service=blank).vantage == "server"


def test_an_unknown_vantage_is_refused_naming_its_line(server_side, service, blank, owner):
    text = as_blank(export_dossier(service)).replace("vantage: server", "vantage: gateway")
    with pytest.raises(DossierFormatError, match=r"line \d+: .*vantage: expected one of client"):
        import_dossier(service=blank, text=text, author=owner)
