"""Kafka's listener model: ``listeners``, ``advertised.listeners``,
``listener.security.protocol.map`` and ``controller.listener.names``.

``listeners=NAME://HOST:PORT,...`` lists the sockets the broker binds (an empty host binds
every interface, port 0 an ephemeral port); each NAME maps to a security protocol through
``listener.security.protocol.map`` (default: the four protocol names map to themselves).
``advertised.listeners`` gives, per listener name, the address clients are told to use
(Metadata, FindCoordinator, DescribeCluster answer each connection with the advertised
address of the listener it arrived on); a listener not advertised advertises its bound
address.  Controller listeners (``controller.listener.names``) are skipped: a single node
has no controller quorum.  Pure parsing, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from riverbed.errors import ConfigError


class SecurityProtocol(Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


@dataclass(frozen=True, slots=True)
class Listener:
    """One listener: ``name`` is upper-case, ``host`` may be empty (every interface)."""

    name: str
    protocol: SecurityProtocol
    host: str
    port: int
    advertised_host: str | None = None
    advertised_port: int | None = None


def _clean(props: Mapping[str, str]) -> dict[str, str]:
    return {k.strip(): str(v).strip() for k, v in props.items()}


def protocol_map(props: Mapping[str, str]) -> dict[str, str]:
    """Listener name -> security protocol name (not yet validated)."""
    mapping = {p.value: p.value for p in SecurityProtocol}
    for entry in filter(None, _clean(props).get("listener.security.protocol.map", "").split(",")):
        name, sep, protocol = entry.partition(":")
        if not sep:
            raise ConfigError(
                f"setting 'listener.security.protocol.map': {entry!r} is not NAME:PROTOCOL"
            )
        mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def _split(key: str, value: str) -> list[tuple[str, str, int]]:
    out = []
    for listener in filter(None, (x.strip() for x in value.split(","))):
        name, sep, address = listener.partition("://")
        if not sep:
            raise ConfigError(f"setting {key!r}: {listener!r} is not NAME://HOST:PORT")
        host, colon, port_text = address.rpartition(":")
        host = host.strip("[]")
        try:
            port = int(port_text)
        except ValueError:
            port = -1
        if not colon or not 0 <= port <= 65535:
            raise ConfigError(f"setting {key!r}: {listener!r} is not NAME://HOST:PORT")
        out.append((name.strip().upper(), host, port))
    return out


def parse_listeners(props: Mapping[str, str]) -> list[Listener]:
    """The broker's listeners, in ``listeners`` order; [] when ``listeners`` is unset.
    ConfigError names the key of the first problem."""
    clean = _clean(props)
    mapping = protocol_map(props)
    controllers = {n.strip().upper() for n in clean.get("controller.listener.names", "").split(",")}
    advertised: dict[str, tuple[str, int]] = {}
    for name, host, port in _split("advertised.listeners", clean.get("advertised.listeners", "")):
        if name in controllers:
            continue
        advertised[name] = (host, port)
    out: list[Listener] = []
    for name, host, port in _split("listeners", clean.get("listeners", "")):
        if name in controllers:
            continue
        if any(existing.name == name for existing in out):
            raise ConfigError(f"setting 'listeners': listener {name} is listed twice")
        protocol_name = mapping.get(name)
        if protocol_name is None:
            raise ConfigError(
                f"setting 'listeners': listener {name} has no security protocol "
                "(not in listener.security.protocol.map)"
            )
        try:
            protocol = SecurityProtocol(protocol_name)
        except ValueError:
            raise ConfigError(
                f"setting 'listener.security.protocol.map': {protocol_name!r} is not one of "
                "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
            ) from None
        adv_host, adv_port = advertised.pop(name, (None, None))
        out.append(Listener(name, protocol, host, port, adv_host or None, adv_port))
    for name in advertised:
        raise ConfigError(f"setting 'advertised.listeners': listener {name} is not in listeners")
    return out


def listener_setting(props: Mapping[str, str], listener: str, key: str) -> str | None:
    """Kafka's per-listener override: ``listener.name.<listener lower-case>.<key>`` wins
    over ``<key>``; None when neither is set."""
    clean = _clean(props)
    prefixed = f"listener.name.{listener.lower()}.{key}"
    if prefixed in clean:
        return clean[prefixed]
    return clean.get(key)
