"""The options' declared defaults and concerns, for what the surfaces print (flags' help and its
panels, commands' help): the door that `--help` may open, since it loads no computation (no numpy).
Every default and concern is written once, in `cohortsql.request.options`."""

from __future__ import annotations

from cohortsql.request.options import CONCERN_OF as CONCERN_OF
from cohortsql.request.options import declared_default as declared_default
from cohortsql.request.options import documented as documented
from cohortsql.request.options import with_declared_defaults as with_declared_defaults
