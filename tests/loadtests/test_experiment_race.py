"""Recording an experiment from two runs, clicked twice at once (its own module: the demo
fleet's module-long transaction elsewhere would hold the rows these writers need)."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from dossiers.models import Baseline, Experiment
from loadtests.one_change import record_experiment
from tests.loadtests.test_experiment_from_sweeps import FOLDER, change_into, import_file


@pytest.mark.postgres  # two writers at once: SQLite's one shared test connection cannot
@pytest.mark.django_db(transaction=True)
def test_two_clicks_at_once_record_one_experiment(service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    barrier = threading.Barrier(2)

    def click() -> None:
        barrier.wait()
        try:
            record_experiment(before=pair.before, after=pair.after)
        finally:
            connection.close()

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: click(), range(2)))
    assert (Experiment.objects.count(), Baseline.objects.filter(service=service).count()) == (1, 2)
