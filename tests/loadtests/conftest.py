"""Load-test pages use the dossier tests' personas and service builder."""

from tests.dossiers.conftest import make_service, outsider_client, owner_client

__all__ = ["make_service", "outsider_client", "owner_client"]
