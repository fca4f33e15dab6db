"""Fixtures for the security tests: the certificates of :mod:`security_pki`, made once
per session with the ``openssl`` CLI."""

from __future__ import annotations

import shutil

import pytest
from security_pki import Pki, make_pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is needed to make test certificates")
    return make_pki(tmp_path_factory.mktemp("pki"))
