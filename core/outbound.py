"""Outbound HTTP on behalf of users (webhooks, pulls, Prometheus sources), kept off internal hosts.

A URL a user typed must not make the server call its own loopback, the private network, a
link-local address or a cloud metadata endpoint. The check runs where it cannot be dodged:
at connect time, on the addresses DNS actually returned, for the first request and every
redirect (each hop opens its connection through the same adapter), and the socket connects
to the address that was checked, so a DNS answer that changes between check and connect
(rebinding) gains nothing. Only global unicast addresses pass, except inside the CIDR blocks
of settings.PERFHUB_OUTBOUND_ALLOW_CIDRS (tests allow-list their loopback servers there).

`outbound_session()` is the one way to call out; `check_url()` gives a form the same verdict
before saving. Environment proxies are ignored (a proxy would be the one connecting).
"""

from __future__ import annotations

import ipaddress
import socket
from functools import lru_cache
from urllib.parse import urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
SCHEMES = ("http", "https")


class OutboundRefused(ValueError):
    """The destination is not one the server may call; the message says which address and why.

    Not an OSError, so urllib3 does not retry it or bury it in a connection error."""


class Unresolved(OutboundRefused):
    """The name does not resolve."""


@lru_cache(maxsize=8)
def _allowed_networks(cidrs: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(c, strict=False) for c in cidrs)


# NAT64 prefixes: the low 32 bits are an IPv4 address a translator connects to.
_NAT64 = tuple(ipaddress.ip_network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48"))


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for (6to4, Teredo, NAT64, ::a.b.c.d)."""
    found = [a for a in (address.sixtofour,) if a is not None]
    found.extend(address.teredo or ())
    nat64 = any(address in network for network in _NAT64)
    compatible = address.packed[:12] == bytes(12) and int(address) > 1  # ::a.b.c.d, deprecated
    if nat64 or compatible:
        found.append(ipaddress.IPv4Address(address.packed[-4:]))
    return found


def refusal(address: IPAddress) -> str | None:
    """Why the server may not call `address`, or None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        else:
            for inner in _embedded_ipv4(address):
                reason = refusal(inner)
                if reason:
                    return f"{address} stands for {inner}: {reason}"
    allowed = _allowed_networks(tuple(settings.PERFHUB_OUTBOUND_ALLOW_CIDRS))
    if any(address in network for network in allowed):
        return None
    if address.is_loopback:
        return f"{address} is a loopback address"
    if address.is_link_local:  # 169.254.169.254, the cloud metadata endpoint, is link-local
        return f"{address} is a link-local (or metadata) address"
    if address.is_private:
        return f"{address} is a private address"
    if not address.is_global or address.is_multicast:
        return f"{address} is not a public address"
    return None


def resolve_checked(host: str, port: int) -> list[tuple]:
    """getaddrinfo for `host`, refused whole if any address it returns is refused."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise Unresolved(f"{host}: cannot be resolved ({exc.strerror})") from exc
    for *_, sockaddr in infos:
        reason = refusal(ipaddress.ip_address(sockaddr[0].split("%", 1)[0]))
        if reason:
            raise OutboundRefused(
                f"{host}: refused, {reason}; internal addresses are called only when "
                "PERFHUB_OUTBOUND_ALLOW_CIDRS allows them"
            )
    return infos


def check_url(url: str, *, unresolved_ok: bool = False) -> None:
    """Raise OutboundRefused unless `url` is http(s) to a host the server may call now.

    Forms pass `unresolved_ok`: a name that does not resolve yet is saved, and checked again
    (like every other) when the server connects."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise OutboundRefused(f"{url}: only http and https URLs are called")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise OutboundRefused(f"{url}: {exc}") from exc
    if not parts.hostname:
        raise OutboundRefused(f"{url}: no host")
    try:
        resolve_checked(parts.hostname, port)
    except Unresolved:
        if not unresolved_ok:
            raise


class _GuardedConnectionMixin:
    def _new_conn(self) -> socket.socket:
        # Resolve and check every address, then connect to a checked one, not to the name
        # again. TLS still verifies the certificate against the name (`self.host`).
        infos = resolve_checked(self._dns_host, self.port)
        name = self._dns_host
        self._dns_host = infos[0][4][0]
        try:
            return super()._new_conn()
        finally:
            self._dns_host = name


class _GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class _GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class _GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _GuardedHTTPPool,
            "https": _GuardedHTTPSPool,
        }


def outbound_session() -> requests.Session:
    """A requests session whose every connection (redirects included) passes `refusal`."""
    session = requests.Session()
    session.trust_env = False  # no environment proxy: we must be the one connecting
    adapter = GuardedAdapter(max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def outbound_request(method: str, url: str, **kwargs) -> requests.Response:
    """One guarded request (a fresh session: no pooled connection outlives its check)."""
    check_url(url)  # a clear message for a bad scheme before any connection is tried
    with outbound_session() as session:
        return session.request(method, url, **kwargs)


def failure_reason(exc: BaseException) -> str:
    """What went wrong with a call, in our words only: the target's answer (body, reason
    phrase, error text) is never repeated, since a refused or internal target could use it
    to read back what it holds. Our own refusal names the address and why."""
    if isinstance(exc, OutboundRefused):
        return str(exc)
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return answered(exc.response.status_code)
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.TooManyRedirects):
        return "too many redirects"
    if isinstance(exc, requests.ConnectionError):
        return "could not connect"
    return f"the request failed ({type(exc).__name__})"


def answered(status: int, what: str = "") -> str:
    """A fixed description of an unusable answer: its status code and what we expected."""
    return f"answered {int(status)}" + (f" {what}" if what else "")
