from django.contrib import admin

from loadtests import models
from loadtests.tokens import ci_token_revoke


class LoadTestSketchInline(admin.TabularInline):
    model = models.LoadTestSketch
    extra = 0
    readonly_fields = ["family", "count", "sum_ms", "min_ms", "max_ms"]
    exclude = ["sketch"]


@admin.register(models.LoadTest)
class LoadTestAdmin(admin.ModelAdmin):
    list_display = [
        "service",
        "label",
        "format",
        "concurrency",
        "measured_at",
        "date_known",
        "failure",
        "imported_at",
    ]
    list_filter = ["format", "service"]
    search_fields = ["label", "source_name"]
    inlines = [LoadTestSketchInline]


@admin.register(models.GateRun)
class GateRunAdmin(admin.ModelAdmin):
    list_display = ["service", "verdict", "source", "created_at"]
    list_filter = ["verdict", "source", "service"]


@admin.register(models.CIToken)
class CITokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "label", "team", "service", "can_import", "can_promote", "can_gate",
                    "created_at", "last_used_at", "revoked_at"]  # fmt: skip
    list_filter = ["revoked_at", "team"]
    search_fields = ["prefix", "label", "service__slug"]
    readonly_fields = ["prefix", "digest", "created_by", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False  # issued on the service's CI tokens page or by create_ci_token, shown once

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        for token in queryset.filter(revoked_at__isnull=True):
            ci_token_revoke(token=token)
