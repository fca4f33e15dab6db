"""A broker with SASL/PLAIN and StandardAuthorizer for ACL tests: Riverbed (embedded) or
Apache Kafka (:class:`riverbed.testing.kafka_reference.KafkaReference`), set up alike.

Users (:data:`JAAS`): ``admin`` (password ``admin-pw``, a super user) and ``alice``
(``alice-pw``, nothing granted); ``allow.everyone.if.no.acl.found=false``.  Clients reach
the broker on its ``SASL_PLAINTEXT`` listener (:func:`client_conf`).  Kafka also has a
PLAINTEXT listener (its readiness probe) and a controller listener, both ANONYMOUS, which
is a super user there.  The context managers stop the broker on exit, exceptions included.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.kafka_reference import KafkaReference, free_port

__all__ = ["JAAS", "acl_kafka", "acl_riverbed", "client_conf", "riverbed_config", "sasl_bootstrap"]

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";'
)
_AUTHORIZER = {
    "sasl.enabled.mechanisms": "PLAIN",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "false",
}


def riverbed_config(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A Riverbed broker config: one ``SASL_PLAINTEXT`` listener on a free port, the
    authorizer, ``User:admin`` the super user; ``extra`` over it."""
    return {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.jaas.config": JAAS,
        "super.users": "User:admin",
        **_AUTHORIZER,
        **(extra or {}),
    }


def sasl_bootstrap(embedded: EmbeddedBroker) -> str:
    """``127.0.0.1:PORT`` of a started embedded broker's ``SASL_PLAINTEXT`` listener."""
    return f"127.0.0.1:{embedded.broker.endpoint('SASL_PLAINTEXT')[1]}"


@contextlib.contextmanager
def acl_riverbed(data_dir: Path, extra: Mapping[str, str] | None = None) -> Iterator[str]:
    """An embedded broker with :func:`riverbed_config` ``(extra)`` in ``data_dir``; yields
    its SASL bootstrap."""
    with EmbeddedBroker(data_dir, riverbed_config(extra)) as embedded:
        yield sasl_bootstrap(embedded)


@contextlib.contextmanager
def acl_kafka(base: Mapping[str, str] | None = None, **reference: Any) -> Iterator[str]:
    """Apache Kafka with ``base`` server properties, the SASL listener and the authorizer
    over them; ``reference``: further :class:`KafkaReference` fields (version, heap...).
    Yields its SASL bootstrap."""
    port, controller, sasl = free_port(), free_port(), free_port()
    overrides = {
        **(base or {}),
        **_AUTHORIZER,
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller},"
            f"SASL_PLAINTEXT://127.0.0.1:{sasl}"
        ),
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
        ),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        # the plaintext listeners (controller, readiness probe) are ANONYMOUS
        "super.users": "User:admin;User:ANONYMOUS",
    }
    with KafkaReference(overrides=overrides, port=port, controller_port=controller, **reference):
        yield f"127.0.0.1:{sasl}"


def client_conf(bootstrap: str, user: str, **extra: Any) -> dict[str, Any]:
    """A confluent-kafka config for ``user`` (password ``<user>-pw``) over SASL/PLAIN at
    ``bootstrap``; ``extra`` over it."""
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-pw",
        **extra,
    }
