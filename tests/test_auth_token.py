"""One token lookup for joining a cluster and for redaction (rldoctor.auth_token): what
auth joins with is always among what redaction masks, in Ray's order of places."""

from __future__ import annotations

import pytest

from rldoctor import redact
from rldoctor.auth_token import every_token, find_token
from rldoctor.cluster import auth


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    (tmp_path / ".ray").mkdir()
    redact._secrets.cache_clear()
    yield tmp_path
    redact._secrets.cache_clear()


def test_auth_and_redaction_find_the_same_token_in_rays_order(home, monkeypatch):
    (home / ".ray" / "auth_token").write_text("default-file-token-1234\n")
    assert auth.find_token is find_token
    assert find_token() == ("default-file-token-1234", f"the default token file {home}/.ray/auth_token")
    named = home / "named"
    named.write_text("named-file-token-5678")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(named))
    assert find_token()[0] == "named-file-token-5678"
    monkeypatch.setenv("RAY_AUTH_TOKEN", "env-token-abcdef")
    assert find_token() == ("env-token-abcdef", "RAY_AUTH_TOKEN")
    assert every_token() == ("env-token-abcdef", "named-file-token-5678", "default-file-token-1234")
    text = redact.Redactor().text("joined with env-token-abcdef; stale default-file-token-1234")
    assert "env-token" not in text and "default-file-token" not in text


def test_an_empty_named_file_stops_the_search_and_says_so(home, monkeypatch):
    (home / ".ray" / "auth_token").write_text("default-file-token-1234")
    empty = home / "empty"
    empty.write_text("")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(empty))
    assert find_token() == (None, f"the file in RAY_AUTH_TOKEN_PATH, {empty}, which is empty")
    assert every_token() == ("default-file-token-1234",)  # still masked wherever it shows
