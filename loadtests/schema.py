"""OpenAPI description of the CI token scheme (drf-spectacular extension)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class CITokenScheme(OpenApiAuthenticationExtension):
    target_class = "loadtests.authentication.CITokenAuthentication"
    name = "ciToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <CI token>`, printed once by `create_ci_token` or the "
            "service's CI tokens page; scoped to a service (or a team's) and its permissions.",
        }
