"""The outbound guard: the server calls no loopback, private, link-local or metadata address,
checked after DNS resolution and again on every redirect, unless the allow-list says so."""

import re
import socket
from http.server import BaseHTTPRequestHandler

import pytest
from django.core.checks import run_checks

from core.outbound import OutboundRefused, Unresolved, check_url, outbound_request
from tests.support import loopback_server


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", self.server.redirect_to)
            self.end_headers()
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    with loopback_server(_Handler, redirect_to="") as httpd:
        yield httpd


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:9/", "loopback"),
        ("http://localhost:9/", "loopback"),
        ("http://[::1]:9/", "loopback"),
        ("http://[::ffff:127.0.0.1]:9/", "loopback"),
        ("http://10.0.0.5/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://172.16.0.1/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/", "link-local"),
        ("http://100.100.100.200/", "not a public address"),
        ("http://0.0.0.0/", "0.0.0.0 is a private"),  # Linux connects it to loopback
        ("http://0/", "0.0.0.0 is a private"),
        ("http://2130706433/", "127.0.0.1 is a loopback"),  # decimal
        ("http://0x7f000001/", "127.0.0.1 is a loopback"),  # hexadecimal
        ("http://017700000001/", "127.0.0.1 is a loopback"),  # octal
        ("http://127.1/", "127.0.0.1 is a loopback"),  # short form
        ("http://hooks.invalid@127.0.0.1:9/", "127.0.0.1 is a loopback"),  # userinfo
        ("http://user:pw@[::1]:9/", "loopback"),
        ("http://\u24dbocalhost:9/", "127.0.0.1 is a loopback"),  # IDN: circled l folds to l
        ("http://LOCALHOST:9/", "loopback"),
        ("http://[::]/", "is a private"),  # unspecified
        ("http://[0:0:0:0:0:ffff:7f00:1]/", "127.0.0.1 is a loopback"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
        ("http://[::127.0.0.1]/", "stands for 127.0.0.1"),  # IPv4-compatible
        ("http://[64:ff9b::7f00:1]/", "stands for 127.0.0.1"),  # NAT64
        ("http://[2002:a00:1::]/", "stands for 10.0.0.1"),  # 6to4
        ("http://[fc00::1]/", "private"),
        ("http://224.0.0.1/", "not a public address"),  # multicast
    ],
)
def test_internal_addresses_are_refused(url, why):
    with pytest.raises(OutboundRefused, match=re.escape(why)):
        outbound_request("GET", url, timeout=2)


def test_only_http_and_https_are_called():
    with pytest.raises(OutboundRefused, match=re.escape("only http and https")):
        check_url("file:///etc/passwd")


def test_a_name_is_checked_after_dns_resolution(monkeypatch):
    real = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        if host == "hooks.example.com":
            return real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    with pytest.raises(
        OutboundRefused, match=re.escape("hooks.example.com: refused, 127.0.0.1 is a loopback")
    ):
        outbound_request("GET", "http://hooks.example.com/", timeout=2)


def test_a_name_that_does_not_resolve_may_be_saved_but_not_called():
    check_url("http://no-such-host.invalid/", unresolved_ok=True)
    with pytest.raises(Unresolved):
        outbound_request("GET", "http://no-such-host.invalid/", timeout=2)


def test_the_allow_list_lets_a_loopback_server_through(server, settings):
    settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = ["127.0.0.1/32"]
    assert outbound_request("GET", server.url + "/", timeout=2).text == "ok"


def test_a_redirect_to_an_address_outside_the_allow_list_is_refused(server, settings):
    settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = ["127.0.0.1/32"]
    server.redirect_to = f"http://127.0.0.2:{server.server_port}/"
    with pytest.raises(OutboundRefused, match=re.escape("127.0.0.2 is a loopback")):
        outbound_request("GET", server.url + "/redirect", timeout=2)


def test_a_redirect_to_the_metadata_endpoint_is_refused(server, settings):
    settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = ["127.0.0.1/32"]
    server.redirect_to = "http://169.254.169.254/latest/meta-data/"
    with pytest.raises(OutboundRefused, match=re.escape("169.254.169.254 is a link-local")):
        outbound_request("GET", server.url + "/redirect", timeout=2)


def test_a_malformed_allow_list_fails_the_system_checks(settings):
    settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = ["10.0.0.0/8", "not-a-block"]
    errors = [e for e in run_checks() if e.id == "perfhub.E002"]
    assert len(errors) == 1 and "'not-a-block'" in errors[0].msg


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/", "http://2130706433:9/", "http://[::ffff:127.0.0.1]:9/"]
)
def test_check_url_gives_a_form_the_same_verdict(url):
    with pytest.raises(OutboundRefused, match="loopback"):
        check_url(url, unresolved_ok=True)


def test_a_public_ipv6_through_nat64_passes_the_check():
    check_url("http://[64:ff9b::808:808]/")  # 8.8.8.8 behind a translator: a public address
