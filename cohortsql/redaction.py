"""No secret in any message: passwords and tokens of connection strings left out of every text a user
is shown. `CohortError` and `CohortWarning` pass their messages through `redacted`, so every surface
(the API, the command line, a new one) inherits it; engines that hold a connection's own password also
scrub it from their driver's messages (`scrubbed`), where it may appear in no recognisable form (libpq
read the part of ``postgresql://user:S3cr3t/PW@host`` before the ``/`` as a port, and said so)."""

from __future__ import annotations

import re

MASK = "***"

_URI_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*:/{0,2}[^\s:/@'\"]*:)(?P<secret>\S*)(?=@)")
"""``scheme://user:password@``: the password runs to the last ``@`` of the word (a password may hold
``/``, ``:`` or ``@``), whatever the slashes after the scheme (``postgresql:/user:pw@host`` too)."""
_KEY_VALUE = re.compile(
    r"(?P<head>\b(?:password|passwd|pwd|pass|token|secret|access_token|api_key|apikey|private_key\w*"
    r"|client_secret|sslpassword)\s*[=:]\s*)(?P<secret>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s&;,)]+)",
    re.IGNORECASE,
)
"""``password=...`` in a libpq keyword string or a URI's query, quoted or not (``token: ...`` too)."""


def redacted(text: str) -> str:
    """`text` with the password of every connection string and every ``password=``-like value masked."""
    text = _URI_PASSWORD.sub(lambda match: match["head"] + MASK, text)
    return _KEY_VALUE.sub(lambda match: match["head"] + _masked(match["secret"]), text)


def _masked(secret: str) -> str:
    """The mask of a value, in its quotes when it had them (so that redacting twice changes nothing)."""
    quote = secret[0] if secret[:1] in ("'", '"') else ""
    return f"{quote}{MASK}{quote}"


def scrubbed(text: str, secrets: tuple[str, ...]) -> str:
    """`text` redacted, and with each of `secrets` (a password as given, and every piece of it a parser
    may have split off at ``/``, ``:``, ``@``, ``?`` or ``#``, of three characters or more) masked."""
    pieces = {piece for secret in secrets if secret for piece in (secret, *re.split(r"[/:@?#]", secret))}
    for piece in sorted((piece for piece in pieces if len(piece) >= 3), key=len, reverse=True):
        text = text.replace(piece, MASK)
    return redacted(text)
