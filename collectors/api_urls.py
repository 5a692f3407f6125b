"""Versioned REST API (/api/v1/). Each app adds its routes here."""

from django.urls import path  # noqa: F401

urlpatterns: list = []
