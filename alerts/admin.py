from django.contrib import admin

from alerts.models import (
    AlertEvent,
    AlertInstance,
    Notification,
    NotificationLog,
    Receiver,
    Rule,
    Silence,
)


@admin.register(Rule)
class RuleAdmin(admin.ModelAdmin):
    list_display = ("name", "service", "kind", "threshold", "severity", "enabled", "health")
    list_filter = ("kind", "severity", "enabled", "health")
    search_fields = ("name", "service__slug")
    readonly_fields = ("last_evaluated_at", "health", "health_reason", "last_value")


@admin.register(AlertInstance)
class AlertInstanceAdmin(admin.ModelAdmin):
    list_display = ("rule", "service", "state", "value", "fired_at", "ended_at")
    list_filter = ("state",)
    raw_id_fields = ("rule", "service")


@admin.register(AlertEvent)
class AlertEventAdmin(admin.ModelAdmin):
    list_display = ("at", "rule", "kind", "value", "reason")
    list_filter = ("kind",)
    raw_id_fields = ("rule", "service", "instance")


@admin.register(Receiver)
class ReceiverAdmin(admin.ModelAdmin):
    list_display = ("name", "team", "kind", "enabled")


@admin.register(Silence)
class SilenceAdmin(admin.ModelAdmin):
    list_display = ("__str__", "team", "starts_at", "ends_at", "comment")


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ("created_at", "receiver", "alert_status", "status", "attempts")
    list_filter = ("status",)
    readonly_fields = ("payload", "last_error")


admin.site.register(NotificationLog)
