"""The data's own rows as they are (every column): read back from an engine (targets' rows, the copy
check's sample) as a polars frame in the caller's types, and the copy check's sample itself. DuckDB
reads an Arrow dictionary as text and a duration as an interval, whose Arrow type
(month_day_nano_interval) polars cannot import: the frame had failed to build for any table with a
duration column, used or not."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql import queries
from cohortsql.engines.base import FEW_ROWS, Engine
from cohortsql.run.preparation import Prepared

_PARTS = ("months", "days", "nanoseconds")
_INTERVAL = np.dtype(list(zip(_PARTS, ("<i4", "<i4", "<i8"))))
"""An Arrow month_day_nano_interval value as it lies in its buffer."""
_NANOSECONDS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_DAY_NANOSECONDS = 86_400 * 10**9


def data_frame(table: pa.Table, schema: pa.Schema) -> pl.DataFrame:
    """The columns of `schema` (the input's) from `table`: dictionaries as their values, as DuckDB reads
    them; intervals, at any depth of lists and structs, as durations where the input's column has a
    duration there, else as structs of their months, days and nanoseconds, which polars can hold."""
    columns = [_readable(table.column(field.name), field.type) for field in schema]
    frame = pl.from_arrow(pa.Table.from_arrays(columns, names=schema.names))
    assert isinstance(frame, pl.DataFrame)
    return frame


def _readable(column: pa.ChunkedArray, given: pa.DataType) -> pa.ChunkedArray:
    if not _converted(column.type):
        return column
    chunks = [_array(chunk, given) for chunk in column.chunks] or [_array(pa.array([], column.type), given)]
    return pa.chunked_array(chunks)


def _converted(kind: pa.DataType) -> bool:
    """Whether a column of this type holds a dictionary or an interval, at any depth."""
    if pa.types.is_dictionary(kind) or kind == pa.month_day_nano_interval():
        return True
    return any(_converted(kind.field(index).type) for index in range(kind.num_fields))


def _array(array: pa.Array, given: pa.DataType) -> pa.Array:
    """`array` with its dictionaries decoded and its intervals read (`given`: the input's type there)."""
    if not _converted(array.type):
        return array
    if isinstance(array, pa.DictionaryArray):
        return _array(array.dictionary_decode(), given)
    if array.type == pa.month_day_nano_interval():
        return _from_interval(array, given)
    if array.offset:  # a slice: its own copy, whose offsets and null bitmap start at 0
        array = pa.concat_arrays([array])
    missing = array.is_null()
    inner = given.value_type if pa.types.is_list(given) or pa.types.is_large_list(given) else given
    if isinstance(array, pa.ListArray):
        return pa.ListArray.from_arrays(array.offsets, _array(array.values, inner), mask=missing)
    if isinstance(array, pa.LargeListArray):
        return pa.LargeListArray.from_arrays(array.offsets, _array(array.values, inner), mask=missing)
    if isinstance(array, pa.StructArray):
        names = [array.type.field(index).name for index in range(array.type.num_fields)]
        fields = [_array(array.field(index), _member(given, name)) for index, name in enumerate(names)]
        return pa.StructArray.from_arrays(fields, names=names, mask=missing)
    return array  # a map or a fixed-size list of intervals: left as DuckDB gives it


def _member(given: pa.DataType, name: str) -> pa.DataType:
    """The input's type of struct member `name` (an interval's default when the input has none)."""
    if pa.types.is_struct(given) and given.get_field_index(name) >= 0:
        return given.field(name).type
    return pa.month_day_nano_interval()


def _interval_type(given: pa.DataType) -> pa.DataType:
    if pa.types.is_duration(given):
        return given
    return pa.struct(list(zip(_PARTS, (pa.int32(), pa.int32(), pa.int64()))))


def _from_interval(chunk: pa.Array, given: pa.DataType) -> pa.Array:
    values = chunk.buffers()[1]
    assert values is not None, "an interval array holds its values"
    parts = np.frombuffer(memoryview(values), dtype=_INTERVAL, count=chunk.offset + len(chunk))[chunk.offset :]
    missing = chunk.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_duration(given):  # DuckDB's interval of a duration: days and nanoseconds, no months
        nanoseconds = parts["days"].astype(np.int64) * _DAY_NANOSECONDS + parts["nanoseconds"]
        return pa.array(nanoseconds // _NANOSECONDS[given.unit], given, mask=missing)
    return pa.StructArray.from_arrays(
        [pa.array(parts[name]) for name in _PARTS],
        names=list(_PARTS),
        mask=pa.array(missing),
    )


def sampled_data(engine: Engine, prepared: Prepared, fraction: float, seed: int) -> pl.DataFrame:
    """The data's rows (every column, as they are) of about `fraction` of the subjects, each kept on its
    own hash with `seed` (`queries.targets.kept_on_hash`; every subject when `fraction` is 1), in id
    order: one scan of the subjects' rows of the data (`Prepared.subject_data`: rows of weight 0 are
    none), whose columns are read as they are (the subjects' predictors, a thousand expressions at
    d = 1,024, are not computed for it); every row of unweighted data the engine reads from this
    process's memory (`Input.in_memory`) is read there."""
    dialect = engine.dialect
    names = prepared.input.schema.names
    in_memory = prepared.input.in_memory if prepared.weight is None else None
    if fraction >= 1 and in_memory is not None:
        # rows in the order of their positions already; sorted by id as the engine's are
        read = in_memory if prepared.id is None else in_memory.sort_by(prepared.id)
    else:
        membership = queries.targets.kept_on_hash(fraction, seed, prepared.id_sql, dialect)
        read = (engine.fetch_few_rows if fraction * prepared.subject_count <= FEW_ROWS else engine.fetch_arrow)(
            queries.targets.sampled_data(prepared.subject_data, names, prepared.id_sql, membership, dialect),
            context="reading a sample of the rows",
        )
        # sorted here, not by the engine: a few thousand rows, where Spark sorted its whole scan
        read = read.sort_by("__cohort_id")
    return data_frame(read, prepared.input.schema)
