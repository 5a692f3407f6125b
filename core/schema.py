"""OpenAPI: the catch-all for unrecognized tokens is not a scheme of its own (drf-spectacular)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class UnrecognizedTokenScheme(OpenApiAuthenticationExtension):
    target_class = "core.credentials.UnrecognizedTokenAuthentication"
    name: list = []  # adds no security scheme; the token kinds describe themselves

    def get_security_requirement(self, auto_schema):
        return None

    def get_security_definition(self, auto_schema):
        return []
