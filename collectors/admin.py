from django.contrib import admin, messages
from django.db.models import URLField
from django.utils import timezone

from collectors import models


class AgentTokenInline(admin.TabularInline):
    model = models.AgentToken
    extra = 0
    can_delete = False
    fields = ["prefix", "label", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # issued with `manage.py create_agent_token`, shown once


@admin.register(models.Host)
class HostAdmin(admin.ModelAdmin):
    list_display = ["name", "status", "last_seen_at", "pull_kind", "pull_url", "last_pull_at"]
    list_filter = ["status", "pull_kind"]
    search_fields = ["name", "pull_url"]
    readonly_fields = ["created_at", "last_seen_at", "status", "last_error", "last_pull_at"]
    inlines = [AgentTokenInline]
    # An agent's --serve endpoint is plain HTTP on the hosts' network unless said otherwise.
    formfield_overrides = {URLField: {"assume_scheme": "http"}}


@admin.register(models.AgentToken)
class AgentTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "host", "label", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "host__name", "label"]
    readonly_fields = ["host", "prefix", "digest", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(models.PrometheusSource)
class PrometheusSourceAdmin(admin.ModelAdmin):
    list_display = ["name", "service", "mode", "engine", "base_url", "status", "last_success_at"]
    list_filter = ["status", "mode", "engine", "enabled"]
    search_fields = ["name", "base_url", "service__name"]
    readonly_fields = [
        "host", "status", "last_error", "last_attempt_at", "last_success_at", "cursor",
        "series_counts", "created_at",
    ]  # fmt: skip

    def save_model(self, request, obj, form, change) -> None:
        if not change:
            # The source stores its samples under a host of its own.
            obj.host = models.Host.objects.create(name=f"prometheus:{obj.name}")
        super().save_model(request, obj, form, change)
