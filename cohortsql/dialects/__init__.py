"""SQL dialects, one module each (sqlglot's layout), and their registry: what is spelled differently on
each engine is data of its dialect class, never a branch on an engine's name elsewhere. DuckDB and Spark
SQL are written natively; the warehouses cohortsql prints SQL for are rendered in DuckDB's syntax
with their own choices and translated by sqlglot (`cohortsql.dialects.transpile`).
"""

from __future__ import annotations

from cohortsql.dialects.base import Dialect
from cohortsql.dialects.bigquery import BigQueryDialect
from cohortsql.dialects.duckdb import DUCKDB, DuckDBDialect
from cohortsql.dialects.postgres import PostgresDialect
from cohortsql.dialects.snowflake import SnowflakeDialect
from cohortsql.dialects.spark import SPARK, SparkDialect
from cohortsql.dialects.transpile import TranspiledDialect

NATIVE_DIALECTS: dict[str, Dialect] = {"duckdb": DUCKDB, "spark": SPARK}
"""Dialects cohortsql renders itself, and runs."""

TRANSPILED_DIALECTS: dict[str, TranspiledDialect] = {
    dialect.name: dialect for dialect in (PostgresDialect(), BigQueryDialect(), SnowflakeDialect())
}
"""Dialects cohortsql prints SQL for: rendered in DuckDB's syntax with their own choices, then transpiled by sqlglot."""

__all__ = [
    "DUCKDB",
    "NATIVE_DIALECTS",
    "SPARK",
    "TRANSPILED_DIALECTS",
    "BigQueryDialect",
    "Dialect",
    "DuckDBDialect",
    "PostgresDialect",
    "SnowflakeDialect",
    "SparkDialect",
    "TranspiledDialect",
]
