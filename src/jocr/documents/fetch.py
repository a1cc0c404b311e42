"""The one safe URL fetcher, shared by the CLI and the server.

Fetching a user-supplied URL from a server is a classic server-side request forgery (SSRF) hole: the URL may
point at the loopback interface, a private network, or a cloud metadata service, directly or through a
redirect, or through a DNS name that resolves to such an address (possibly differently on the second lookup:
DNS rebinding). This module therefore:

- allows only `http` and `https`;
- resolves the host itself, refuses the request if any resolved address is not a public unicast address
  (private, loopback, link-local, unspecified, multicast, reserved, shared) or is a known cloud-metadata
  address, judging an IPv6 address that carries an IPv4 one (mapped, compatible, translated, NAT64, 6to4,
  Teredo: `embedded_ipv4`) by the IPv4 address it reaches, and then connects to exactly the address it
  checked (the original host name still goes in the `Host` header and the TLS SNI / certificate check, so
  HTTPS verifies as usual);
- follows redirects by hand, re-checking scheme and address on every hop, up to `max_redirects`;
- caps the decoded body at `max_bytes` (checked against Content-Length first, then while streaming, so a
  compressed "zip bomb" stops at the cap) and the whole fetch, DNS included, at `timeout_s`;
- ignores proxy environment variables (a proxy would connect somewhere we did not check).

Tests that serve files from loopback name their server in `FetchLimits.allowed_endpoints`: only that exact
(address, port) pair is let through (port 0: every port of that address, `jocr serve --allow-fetch-host`),
matched against the address actually dialled (an IPv6 form carrying an allowed IPv4 address is not it), so a
redirect from it to any other private address is still refused.
"""

from __future__ import annotations

import base64
import binascii
import concurrent.futures
import ipaddress
import socket
import time
import urllib.parse
from dataclasses import dataclass, field

import httpx

_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata endpoints. Most already fail the "global unicast" test (link-local 169.254.169.254,
# unique-local fd00:ec2::254, shared-address-space 100.100.100.200) but they are refused even when private
# addresses are allowed: no document lives there, and credentials do.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
    )
)
METADATA_HOSTNAMES = frozenset({"metadata.google.internal", "metadata", "instance-data"})

_REDIRECT_CODES = (301, 302, 303, 307, 308)
# One worker per concurrent DNS lookup; getaddrinfo has no timeout of its own, so it runs here and we stop
# waiting after the deadline (the stuck lookup finishes in the background).
_RESOLVER = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="jocr-dns")


class FetchError(Exception):
    """A fetch refused or failed; `str(exc)` is a one-line message fit for a user.

    `status` is an HTTP status a server may answer with: 400 for a refused URL, 413 for a body over the
    limit, 504 for a timeout, 502 for an upstream failure.
    """

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class FetchLimits:
    """Limits for one fetch.

    max_bytes: cap on the decoded body. timeout_s: wall-clock budget for the whole fetch (DNS, connect,
    redirects, body). allow_private: allow every non-public address (never the metadata addresses).
    allowed_endpoints: exact (ip, port) pairs allowed although private, e.g. a test server on loopback;
    port 0 allows every port of that address.
    """

    max_bytes: int = 50 * 1024 * 1024
    timeout_s: float = 30.0
    max_redirects: int = 5
    allow_private: bool = False
    allowed_endpoints: frozenset[tuple[str, int]] = field(default_factory=frozenset)
    user_agent: str = "jocr-fetch/0.1"


@dataclass
class Fetched:
    """A fetched body: `content_type` is the media type only, lower case (no parameters); "" if absent."""

    data: bytes
    content_type: str
    final_url: str


# IPv6 ranges whose packets reach an IPv4 host, and where each carries that host's address.
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated ::a.b.c.d (RFC 4291 2.5.5.1)
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT ::ffff:0:a.b.c.d (RFC 2765)
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052
_NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: the operator picks the prefix length
# RFC 6052 section 2.2: where the 32 IPv4 bits sit (byte offsets) for each NAT64 prefix length at or above
# /48, skipping the reserved "u" octet (byte 8).
_RFC6052_BYTES = {48: (6, 7, 9, 10), 56: (7, 9, 10, 11), 64: (9, 10, 11, 12), 96: (12, 13, 14, 15)}


def embedded_ipv4(ip: _IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 address(es) an IPv6 address carries when its packets reach an IPv4 host: IPv4-mapped,
    IPv4-compatible, IPv4-translated, NAT64 well-known, 6to4 and Teredo (server and client) forms give one
    or two; NAT64 local-use gives the candidate for every RFC 6052 prefix length (the operator's choice is
    unknown, so each must pass). Empty for IPv4 addresses and native IPv6."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in _IPV4_TRANSLATED or ip in _NAT64_WELL_KNOWN:
        return [low]
    if ip in _IPV4_COMPATIBLE:
        return [] if int(ip) <= 1 else [low]  # :: and ::1 are IPv6's own unspecified and loopback
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    if ip in _NAT64_LOCAL_USE:
        packed = ip.packed
        return [ipaddress.IPv4Address(bytes(packed[i] for i in at)) for at in _RFC6052_BYTES.values()]
    return []


def _refusal_of(ip: _IPAddress, limits: FetchLimits) -> str | None:
    if ip.is_global and not ip.is_multicast:
        return None
    if limits.allow_private and not (ip.is_multicast or ip.is_unspecified):
        return None
    for kind in ("loopback", "link_local", "unspecified", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{kind}"):
            return f"is {kind.replace('_', '-')}"
    return "is not a public address"


def address_refusal(ip: _IPAddress, port: int, limits: FetchLimits) -> str | None:
    """Why connecting to `ip:port` is refused, or None when it is allowed.

    An IPv6 address that carries an IPv4 address (`embedded_ipv4`) is judged by the IPv4 address(es) it
    reaches, so `::ffff:169.254.169.254`, `::169.254.169.254`, `64:ff9b::a9fe:a9fe` and the like are refused
    exactly as 169.254.169.254 is."""
    carried = embedded_ipv4(ip)
    shown = f"{ip}" if not carried else f"{ip} (IPv4 {', '.join(map(str, carried))})"
    if ip in METADATA_ADDRESSES or any(c in METADATA_ADDRESSES for c in carried):
        return f"address {shown} is a cloud metadata endpoint"
    # An allowed endpoint names the address dialled, never one an IPv6 address carries: that address is
    # dialled as itself, through whatever gateway (NAT64, 6to4) routes it.
    allowed = limits.allowed_endpoints
    if any((str(ip), p) in allowed for p in (port, 0)):
        return None
    for a in carried or [ip]:
        reason = _refusal_of(a, limits)
        if reason is not None:
            return f"address {shown} {reason}"
    return None


def _resolve(host: str, port: int, deadline: float) -> list[_IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise FetchError("timed out resolving host", status=504)
    future = _RESOLVER.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        infos = future.result(timeout=remaining)
    except concurrent.futures.TimeoutError:
        raise FetchError(f"timed out resolving {host!r}", status=504) from None
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise FetchError(f"cannot resolve host {host!r}: {exc}", status=502) from None
    addresses: list[_IPAddress] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise FetchError(f"host {host!r} has no addresses", status=502)
    return addresses


def check_url(url: str, limits: FetchLimits, deadline: float) -> tuple[httpx.URL, str, _IPAddress]:
    """Validate one URL and pick the address to connect to: (url, host, ip). Raises FetchError."""
    if len(url) > 8192:
        raise FetchError("URL too long (over 8192 characters)")
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in ("http", "https"):
        shown = f"{scheme!r}" if scheme else "none"
        raise FetchError(f"URL scheme {shown} is not allowed (only http and https)")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchError(f"invalid URL: {exc}") from None
    host = parsed.host
    if not host:
        raise FetchError("URL has no host")
    if host.lower().rstrip(".") in METADATA_HOSTNAMES:
        raise FetchError(f"host {host!r} is a cloud metadata endpoint")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    addresses = _resolve(host, port, deadline)
    for ip in addresses:
        reason = address_refusal(ip, port, limits)
        if reason is not None:
            raise FetchError(f"refused to fetch {host!r}: {reason}")
    return parsed, host, addresses[0]


def _media_type(header: str | None) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def fetch_url(url: str, limits: FetchLimits | None = None) -> Fetched:
    """Fetch `url` under `limits` (see the module docstring). Raises FetchError with a one-line message."""
    limits = limits or FetchLimits()
    deadline = time.monotonic() + limits.timeout_s
    current = url
    with httpx.Client(trust_env=False, follow_redirects=False, verify=True) as client:
        for hop in range(limits.max_redirects + 1):
            parsed, host, ip = check_url(current, limits, deadline)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise FetchError(f"timed out after {limits.timeout_s:g} s", status=504)
            # Connect to the address we checked; the name stays in Host and in TLS SNI / verification.
            target = parsed.copy_with(host=str(ip))
            host_header = host if parsed.port is None else f"{host}:{parsed.port}"
            if ":" in host and not host.startswith("["):
                host_header = f"[{host}]" if parsed.port is None else f"[{host}]:{parsed.port}"
            headers = {"Host": host_header, "User-Agent": limits.user_agent, "Accept": "*/*"}
            extensions = {"sni_hostname": host} if parsed.scheme == "https" else {}
            try:
                request = client.build_request(
                    "GET", target, headers=headers, extensions=extensions, timeout=httpx.Timeout(remaining)
                )
                response = client.send(request, stream=True)
            except httpx.TimeoutException:
                raise FetchError(f"timed out after {limits.timeout_s:g} s", status=504) from None
            except httpx.HTTPError as exc:
                raise FetchError(f"cannot fetch {host!r}: {type(exc).__name__}: {exc}", status=502) from None
            try:
                if response.status_code in _REDIRECT_CODES and "location" in response.headers:
                    if hop == limits.max_redirects:
                        raise FetchError(f"too many redirects (more than {limits.max_redirects})")
                    current = urllib.parse.urljoin(str(parsed), response.headers["location"])
                    continue
                if response.status_code >= 400:
                    raise FetchError(f"{str(parsed)[:200]} answered HTTP {response.status_code}", status=502)
                data = _read_capped(response, limits, deadline)
                return Fetched(data, _media_type(response.headers.get("content-type")), str(parsed))
            finally:
                response.close()
    raise FetchError(f"too many redirects (more than {limits.max_redirects})")


def _read_capped(response: httpx.Response, limits: FetchLimits, deadline: float) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_bytes:
        raise FetchError(f"response too large ({int(declared)} bytes; limit {limits.max_bytes})", status=413)
    chunks: list[bytes] = []
    total = 0
    try:
        for chunk in response.iter_bytes():
            total += len(chunk)
            if total > limits.max_bytes:
                raise FetchError(f"response too large (over the {limits.max_bytes}-byte limit)", status=413)
            if time.monotonic() > deadline:
                raise FetchError(f"timed out after {limits.timeout_s:g} s", status=504)
            chunks.append(chunk)
    except httpx.TimeoutException:
        raise FetchError(f"timed out after {limits.timeout_s:g} s", status=504) from None
    except httpx.HTTPError as exc:
        raise FetchError(f"error reading the response: {type(exc).__name__}: {exc}", status=502) from None
    return b"".join(chunks)


def decode_data_url(url: str, max_bytes: int = 50 * 1024 * 1024) -> Fetched:
    """Decode an RFC 2397 `data:` URL (base64 or percent-encoded). Raises FetchError on malformed input."""
    if not url[:5].lower() == "data:":
        raise FetchError("not a data: URL")
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise FetchError("malformed data: URL (no comma)")
    params = [p.strip() for p in header.split(";")]
    is_base64 = any(p.lower() == "base64" for p in params[1:])
    media = params[0].lower() if params and params[0] else "text/plain"
    if is_base64:
        if len(payload) * 3 // 4 > max_bytes + 3:
            raise FetchError(f"data: URL too large (limit {max_bytes} bytes)", status=413)
        data = decode_base64(payload)
    else:
        data = urllib.parse.unquote_to_bytes(payload)
    if len(data) > max_bytes:
        raise FetchError(f"data: URL too large (limit {max_bytes} bytes)", status=413)
    return Fetched(data, media, "data:")


def decode_base64(text: str) -> bytes:
    """Strict base64 (standard or URL-safe alphabet, whitespace and missing padding tolerated)."""
    cleaned = "".join(text.split())
    if "-" in cleaned or "_" in cleaned:
        cleaned = cleaned.replace("-", "+").replace("_", "/")
    cleaned += "=" * (-len(cleaned) % 4)
    try:
        return base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError):
        raise FetchError("invalid base64 data") from None
