"""Deleting a host or service locks its row first (issue 26).

Raw rows carry no per-row foreign key; an ingest batch locks the host and services it names
`FOR KEY SHARE` (`collectors.storage.lock_rows`). The delete's `FOR UPDATE` on the same row
waits for such a batch to commit, and the ORM's cascade that follows (one DELETE per raw table,
run after this signal) then sees and deletes that batch's rows too; a batch that arrives after
the lock waits, finds no row and is refused. Without the lock a batch committing between the
cascade and the parent's DELETE would leave orphans.
"""

from __future__ import annotations

from django.db import connection
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from collectors.models import Host
from dossiers.models import Service


@receiver(pre_delete, sender=Host, dispatch_uid="collectors.lock_host_before_delete")
@receiver(pre_delete, sender=Service, dispatch_uid="collectors.lock_service_before_delete")
def lock_before_delete(sender, instance, **kwargs) -> None:
    if connection.vendor != "postgresql" or instance.pk is None:
        return
    list(sender._base_manager.select_for_update().filter(pk=instance.pk).values_list("pk"))
