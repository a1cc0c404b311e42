"""Who may use the server: the API key check, and without keys the refusal of requests a web page in the
user's browser could send here on another site's behalf (DNS rebinding, cross-site GETs and POSTs).
"""

from __future__ import annotations

import hmac
import ipaddress

from starlette.requests import Request

from jocr.serve.openai import ApiError


def check_access(request: Request, keys: tuple[bytes, ...], own_hosts: frozenset[str]) -> None:
    """Whether `request` may use the server: with API keys (`keys`), a matching `Authorization: Bearer`
    header (401 otherwise); without, no sign of a web page sending it on another site's behalf
    (`_check_browser_request`; `own_hosts`: the names a browser may use for this server)."""
    if not keys:
        _check_browser_request(request, own_hosts)
        return
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token_bytes = token.strip().encode()
    if scheme.lower() != "bearer" or not any(hmac.compare_digest(token_bytes, k) for k in keys):
        raise ApiError(
            401,
            "missing or invalid API key: send Authorization: Bearer KEY",
            code="invalid_api_key",
            headers={"WWW-Authenticate": "Bearer"},
        )


def host_name(host_header: str) -> str:
    """The name in a Host header, lower case, without its port ("[::1]:8000" -> "::1")."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _check_browser_request(request: Request, own_hosts: frozenset[str]) -> None:
    """Without API keys, refuse what a web page in the user's browser could send here on another site's
    behalf:

    - DNS rebinding: a page on `evil.example` whose name is then pointed at this server's address talks to
      it as its own origin (so Origin equals Host, and the browser lets the page read the answers). Its
      requests carry `Host: evil.example`: only an IP address, `localhost`, the address the server is bound
      to and the names given with `--allowed-host` are accepted (`*` accepts any);
    - cross-site GETs (an `<img>`, a link, a `no-cors` fetch starting a Reader fetch): browsers mark them
      `Sec-Fetch-Site: cross-site` (or `same-site`, another port or subdomain); only `same-origin` and `none`
      (typed into the address bar) are accepted;
    - cross-site POSTs (CSRF: a form or a `text/plain` fetch needs no CORS preflight): browsers send `Origin`
      with every cross-site POST, so a POST whose Origin is not this server's own is refused. Clients that are
      not browsers send neither header."""
    host = request.headers.get("host", "")
    name = host_name(host)
    # No Host at all (HTTP/1.0) is no browser's: browsers always send one.
    if name and "*" not in own_hosts and name not in own_hosts and not _is_ip_literal(name):
        raise ApiError(
            403,
            f"Host {host[:100]!r} is not a name of this server (DNS rebinding?); start the server with "
            "--allowed-host NAME to accept it, or with an API key",
            code="host_not_allowed",
        )
    fetch_site = request.headers.get("sec-fetch-site", "").strip().lower()
    if fetch_site not in ("", "same-origin", "none"):
        raise ApiError(
            403,
            f"cross-site request refused (Sec-Fetch-Site {fetch_site[:30]!r}); start the server with an API "
            "key to accept requests from other sites",
            code="cross_origin",
        )
    if request.method != "POST":
        return
    origin = request.headers.get("origin")
    if origin is None:
        return
    scheme, _, rest = origin.partition("://")
    if origin == "null" or scheme not in ("http", "https") or rest.rstrip("/").lower() != host.lower():
        raise ApiError(
            403,
            f"cross-site request refused (Origin {origin[:100]!r}); start the server with an API key "
            "to accept requests from other sites",
            code="cross_origin",
        )
