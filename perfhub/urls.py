from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path

from core.accounts import LoginView
from core.api_docs import ApiDocsView, ApiSchemaView
from dashboards import views as dashboards_views
from perfhub import health
from perfhub.metrics import metrics_view


def favicon(request):
    """Browsers ask for /favicon.ico whatever the page says; send them to the real icon."""
    return redirect(static("img/favicon.svg"), permanent=True)


urlpatterns = [
    path("favicon.ico", favicon),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", ApiSchemaView.as_view(), name="api-schema"),
    path("api/docs/", ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/", include("loadtests.api_urls")),
    path("api/v1/", include("collectors.api_urls")),
    path("api/v1/", include("planning.api_urls")),
    path("collectors/", include("collectors.urls")),
    path("alerts/", include("alerts.urls")),
    path("dashboards/", include("dashboards.urls")),
    path("", dashboards_views.home, name="home"),
    path("", include("loadtests.urls")),
    path("", include("planning.urls")),
    path("", include("dossiers.urls")),
]

# Errors under /api/ are JSON (core.api); other paths keep Django's pages.
handler400 = "core.api.handler400"
handler404 = "core.api.handler404"
handler500 = "core.api.handler500"
