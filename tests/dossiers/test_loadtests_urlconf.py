"""URLconf for the load-test tests: only the routes these pages use, so the tests do not hang
on other apps' URLs (perfhub/urls.py mounts the same modules). Holds no tests."""

from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", include("dossiers.api_urls")),
    path("", include("dossiers.loadtest_urls")),
    path("", include("dossiers.urls")),
]
