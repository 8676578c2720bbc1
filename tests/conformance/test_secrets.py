"""No secret in any message: a password in a connection string never reaches what the command line
prints or an error's text, whatever it holds (``/``, ``@``, ``:``, ``?``, ``#``), in a URI of any
shape (``postgresql://``, ``postgresql:/``, a host in brackets) or a libpq keyword string. Every
`CohortError` and `CohortWarning` is redacted as it is made (`cohortsql.redaction`), so a new surface
inherits this."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

SECRET_CHARACTERS = string.ascii_letters + string.digits + "/@:?#!$%^&*()-_+=[]{}.,~"

secrets = st.text(SECRET_CHARACTERS, min_size=6, max_size=16).filter(
    lambda secret: sum(character.isalnum() for character in secret) >= 4
)
"""Passwords as people write them (never escaped): at least four letters or digits among the marks."""

SHAPES = [
    "postgresql://analyst:{secret}@localhost:1/risk",
    "postgresql://analyst:{secret}@127.0.0.1:1/risk?sslmode=disable",
    "postgres://analyst:{secret}@[::1]:1/risk",
    "postgresql:/analyst:{secret}@localhost:1/risk",
    "postgresql://analyst:{secret}@[::1:1/risk",
    "host=localhost port=1 user=analyst password={secret} dbname=risk",
    "host=localhost port=1 password='{secret}'",
    "postgresql://analyst@localhost:1/risk?password={secret}",
    "grpc+tls://analyst:{secret}@localhost:1",
]
"""Connection strings a user may give --engine (port 1: nothing listens, so every one fails)."""


def pieces(secret: str) -> list[str]:
    """The secret and the parts of it a URI parser may split off, long enough to recognise."""
    found = {secret}
    for mark in "/@:?#":
        found |= {part for part in secret.split(mark)}
    return [piece for piece in found if len(piece) >= 4]


@settings(max_examples=40, deadline=None)
@given(secret=secrets, shape=st.sampled_from(SHAPES))
def test_the_command_line_never_prints_a_password(secret, shape, tmp_path_factory):
    data = tmp_path_factory.mktemp("secret") / "scores.csv"
    if not data.exists():
        data.write_text("id,x,p\n1,0,0.5\n2,1,0.7\n")
    engine = shape.format(secret=secret)
    result = CliRunner().invoke(
        app, ["shapley", "scores", "--engine", engine, "--prediction", "p", "--features", "x", "--id", "id"]
    )
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1, result.output  # one line, never a traceback
    for piece in pieces(secret):
        assert piece not in result.output.replace("analyst", "").replace("localhost", ""), (piece, result.output)


@settings(max_examples=200, deadline=None)
@given(secret=secrets, shape=st.sampled_from(SHAPES))
def test_an_error_never_carries_a_password(secret, shape):
    message = f"cannot connect to {shape.format(secret=secret)}: the server said no"
    from cohortsql.redaction import redacted

    text = str(cohortsql.CohortError(message))
    assert secret not in text
    assert redacted(text) == text  # once is enough


@pytest.mark.parametrize("shape", SHAPES)
def test_the_api_refuses_a_connection_string_without_showing_it(shape):
    from cohortsql.engines import connect

    secret = "Pa55/w:rd@x?y#z"
    with pytest.raises(cohortsql.CohortError) as refused:
        connect(shape.format(secret=secret))
    assert all(piece not in str(refused.value) for piece in pieces(secret))


@pytest.mark.parametrize("shape", SHAPES)
def test_the_fairness_command_never_prints_a_password(shape, tmp_path):
    data = tmp_path / "scores.csv"
    data.write_text("id,x,p\n1,0,1\n2,1,0\n")
    secret = "Pa55/w:rd@x?y#z"
    result = CliRunner().invoke(
        app, ["fairness", "scores", "--engine", shape.format(secret=secret), "--prediction", "p", "--protected", "x"]
    )
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert all(piece not in result.output.replace("analyst", "") for piece in pieces(secret)), result.output


@pytest.mark.parametrize("shape", SHAPES[:3])
@pytest.mark.parametrize("game", ["cohort-variance", "k-anonymity:3"])
def test_the_game_command_never_prints_a_password(shape, game, tmp_path):
    data = tmp_path / "scores.csv"
    data.write_text("id,x,p\n1,0,0.5\n2,1,0.7\n")
    secret = "Zq9xTk7/Rm2Wv5@Hp4Ls"
    explained = ["--prediction", "p"] if game == "cohort-variance" else []
    result = CliRunner().invoke(
        app, ["game", "scores", "--game", game, "--engine", shape.format(secret=secret), *explained, "--features", "x"]
    )
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1, result.output
    for piece in pieces(secret):
        assert piece not in result.output.replace("analyst", "").replace("localhost", ""), (piece, result.output)
