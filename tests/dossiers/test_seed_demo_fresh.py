"""`seed_demo` on an empty database: the command, the files as written, existing users."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from dossiers import demo
from dossiers.markdown import export_dossier
from loadtests.models import LoadTest


def test_the_command_imports_the_fleet_and_prints_the_demo_login(db, settings):
    settings.DEBUG = True  # demo users are refused under production settings
    out = io.StringIO()
    call_command("seed_demo", "--history-days", "0", stdout=out)
    assert "demo / perfhub-demo" in out.getvalue()
    assert f"{len(demo.demo_slugs())} service(s) built" in out.getvalue()
    # the 13B sweep and nightly runs, one planner sweep for each other service, and the chat
    # service's second configuration (max_num_seqs 512)
    assert LoadTest.objects.filter(origin=LoadTest.Origin.DEMO).count() == 7 + 16 + 41 + 5


def test_the_demo_files_are_exactly_what_the_export_writes(db, settings):
    # Imported on the day they were exported (no date shift), each exports back to its file;
    # their links to the live pages are the demo's own address.
    settings.SITE_URL = "http://127.0.0.1:8000"
    result = demo.build_demo(today=demo.EXPORTED_ON)
    for path in demo.demo_files():
        slug = path.stem.split("-", 1)[1]
        assert export_dossier(result.services[slug]) == path.read_text(), path.name


def test_existing_users_are_left_alone(db, django_user_model):
    django_user_model.objects.create_user("demo", password="changed-by-the-user")
    demo.ensure_demo_users()
    assert django_user_model.objects.get(username="demo").check_password("changed-by-the-user")


def test_the_command_refuses_demo_users_with_debug_off(db, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="refusing to create demo users") as caught:
        call_command("seed_demo")
    assert caught.value.returncode == 2
    assert not get_user_model().objects.filter(username="demo").exists()


def test_the_command_creates_them_with_debug_off_when_told(db, settings):
    settings.DEBUG = False
    call_command("seed_demo", "--allow-demo-users", "--history-days", "0", stdout=io.StringIO())
    assert get_user_model().objects.filter(username="demo").exists()
