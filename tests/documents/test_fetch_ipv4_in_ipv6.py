"""SSRF: every IPv6 form that carries an IPv4 address is judged by the IPv4 address it reaches."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from jocr.documents import fetch as fetch_mod
from jocr.documents.fetch import FetchError, FetchLimits, address_refusal, embedded_ipv4, fetch_url

# (IPv6 form, the IPv4 address(es) it carries): 169.254.169.254 = a9fe:a9fe, 127.0.0.1 = 7f00:1.
FORMS = [
    ("::ffff:169.254.169.254", ["169.254.169.254"]),  # IPv4-mapped
    ("::169.254.169.254", ["169.254.169.254"]),  # IPv4-compatible (deprecated)
    ("::ffff:0:169.254.169.254", ["169.254.169.254"]),  # IPv4-translated (SIIT)
    ("64:ff9b::169.254.169.254", ["169.254.169.254"]),  # NAT64 well-known prefix
    ("2002:a9fe:a9fe::1", ["169.254.169.254"]),  # 6to4
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", ["65.54.227.120", "192.0.2.45"]),  # Teredo server, client
]


@pytest.mark.parametrize(("form", "carried"), FORMS)
def test_embedded_ipv4_is_found(form, carried):
    assert [str(a) for a in embedded_ipv4(ipaddress.ip_address(form))] == carried


def test_nat64_local_use_reads_every_prefix_length():
    # 64:ff9b:1::/48 (RFC 8215) with a /96 prefix puts the IPv4 address last; other lengths elsewhere.
    got = [str(a) for a in embedded_ipv4(ipaddress.ip_address("64:ff9b:1::a9fe:a9fe"))]
    assert "169.254.169.254" in got and len(got) == 4
    got = [str(a) for a in embedded_ipv4(ipaddress.ip_address("64:ff9b:1:a9fe:a9:fe00::"))]  # /64
    assert "169.254.169.254" in got


def test_native_addresses_carry_nothing():
    for a in ("::1", "::", "2606:4700::1111", "fd00::1", "8.8.8.8"):
        assert embedded_ipv4(ipaddress.ip_address(a)) == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://[::ffff:169.254.169.254]/", "metadata"),
        ("http://[::169.254.169.254]/latest/meta-data/", "metadata"),
        ("http://[::ffff:0:169.254.169.254]/", "metadata"),
        ("http://[64:ff9b::a9fe:a9fe]/", "metadata"),
        ("http://[64:ff9b:1::a9fe:a9fe]/", "metadata"),
        ("http://[2002:a9fe:a9fe::]/", "metadata"),
        ("http://[::127.0.0.1]:8000/", "loopback"),
        ("http://[::ffff:0:10.0.0.1]/", "private"),
        ("http://[64:ff9b::10.0.0.1]/", "private"),
        ("http://[64:ff9b::7f00:1]/", "loopback"),
        ("http://[2002:c0a8:101::1]/", "private"),  # 6to4 of 192.168.1.1
        ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "private"),  # Teredo client 192.0.2.45
    ],
)
def test_ipv4_in_ipv6_refused_before_connecting(url, message):
    with pytest.raises(FetchError) as info:
        fetch_url(url, FetchLimits(timeout_s=2))
    assert message in str(info.value) and "\n" not in str(info.value)
    assert info.value.status == 400


def test_metadata_forms_refused_even_when_private_allowed():
    limits = FetchLimits(allow_private=True)
    for form, _ in FORMS[:5]:
        assert "metadata" in address_refusal(ipaddress.ip_address(form), 80, limits)


def test_public_ipv4_in_ipv6_is_allowed():
    limits = FetchLimits()
    for form in ("::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "::ffff:0:8.8.8.8"):
        assert address_refusal(ipaddress.ip_address(form), 80, limits) is None, form


def test_dns_answer_with_embedded_form_is_refused(monkeypatch):
    """The decision is on the address the fetcher would connect to, whatever name led there."""

    def fake_getaddrinfo(host, port, *args, **kwargs):
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("64:ff9b::a9fe:a9fe", port, 0, 0))]

    monkeypatch.setattr(fetch_mod.socket, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(FetchError, match="169.254.169.254.* metadata"):
        fetch_url("http://innocent.example.test/doc.pdf", FetchLimits(timeout_s=2))


@pytest.mark.parametrize("form", ["::ffff:127.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::1"])
def test_an_allowed_ipv4_endpoint_does_not_allow_ipv6_forms_of_it(form):
    """`--allow-fetch-host 127.0.0.1` names the address dialled: an IPv6 address that carries it is dialled
    as itself (a NAT64 or 6to4 gateway, an IPv4-compatible route), so it stays refused."""
    limits = FetchLimits(allowed_endpoints=frozenset({("127.0.0.1", 0), ("127.0.0.1", 8080)}))
    assert address_refusal(ipaddress.ip_address("127.0.0.1"), 8080, limits) is None
    reason = address_refusal(ipaddress.ip_address(form), 8080, limits)
    assert reason is not None and "127.0.0.1" in reason
    allowed_v6 = FetchLimits(allowed_endpoints=frozenset({(str(ipaddress.ip_address(form)), 0)}))
    assert address_refusal(ipaddress.ip_address(form), 8080, allowed_v6) is None
