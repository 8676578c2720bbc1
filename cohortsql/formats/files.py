"""Result files: read back, and written as a set that is all or nothing.

A run writes several files (the long table, per-target totals, refinement paths). `write_frames`
writes each to a temporary file beside its destination, then moves them all into place; if anything
fails (a full disk, Ctrl-C) the destinations keep their previous contents and no temporary file is
left. Files are created with the permissions the umask gives any new file. Tables in a database go
through an engine (`cohortsql.engines`).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from cohortsql.errors import CohortError
from cohortsql.formats.settings import Settings, settings_from_text, settings_text

FORMATS = (".parquet", ".csv")

TEMPORARY_MARK = ".cohortsql-"
"""Temporary files are named ``.<file name>.cohortsql-<random>.tmp`` in the destination's directory."""

STALE_SECONDS = 24 * 3600
"""Temporary files of this naming older than this (left by a killed run) are removed by the next run."""


def read_frame(path: str | os.PathLike[str], role: str) -> pl.DataFrame:
    """A Parquet or CSV file (by its suffix) as a frame; `role` says what it is for, in errors."""
    source = Path(path)
    suffix = source.suffix.lower()
    if suffix not in FORMATS:
        raise CohortError(f"cannot read {str(source)!r}: {role} reads .parquet or .csv files")
    if not source.is_file():
        raise CohortError(f"no file {str(source)!r}: {role} needs it")
    try:
        return pl.read_parquet(source) if suffix == ".parquet" else pl.read_csv(source)
    except (pl.exceptions.PolarsError, OSError) as error:
        raise CohortError(f"cannot read {str(source)!r} ({role}): {str(error).splitlines()[0]}") from None


def parquet_settings(path: str | os.PathLike[str]) -> Settings:
    """The run settings a result file carries as Parquet key-value metadata (none for CSV)."""
    if Path(path).suffix.lower() != ".parquet":
        return {}
    metadata = _metadata(path)
    return settings_from_text(
        {key: value for key, value in metadata.items() if not key.startswith("ARROW") and key != FILES_KEY}
    )


def _metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    metadata = pq.read_metadata(Path(path)).metadata or {}
    return {key.decode(): value.decode() for key, value in metadata.items()}


def check_destination(path: str | os.PathLike[str]) -> Path:
    """`path` when a result file can be written there (a known suffix, an existing directory)."""
    target = Path(path)
    if target.suffix.lower() not in FORMATS:
        raise CohortError(f"cannot write {str(target)!r}: use a file name ending in .parquet or .csv")
    if not target.parent.is_dir():
        raise CohortError(f"cannot write {str(target)!r}: the directory {str(target.parent)!r} does not exist")
    if target.is_dir():
        raise CohortError(f"cannot write {str(target)!r}: it is a directory")
    return target


def write_frame(frame: pl.DataFrame, path: str | os.PathLike[str], settings: Mapping[str, Any] | None = None) -> None:
    """Write one frame as Parquet or CSV (by the file's suffix), atomically."""
    write_frames({Path(path): frame}, settings)


def write_frames(
    frames: Mapping[Path, pl.DataFrame], settings: Mapping[str, Any] | None = None, remove: Sequence[Path] = ()
) -> None:
    """Write every frame to its path, all or nothing, and remove the files `remove` with them; Parquet
    files carry `settings` as key-value metadata (each value as JSON, `settings_text`)."""
    metadata = settings_text(settings) if settings else None

    def write(frame: pl.DataFrame, temporary: Path, target: Path) -> None:
        if target.suffix.lower() == ".parquet":
            frame.write_parquet(temporary, metadata=metadata)
        else:
            frame.write_csv(temporary)

    _write_all({check_destination(path): frame for path, frame in frames.items()}, write, remove)


COMPANIONS = (
    "totals",
    "paths",
    "reasons",
    "global",
    "interactions",
    "anchored",
    "owen",
    "groups",
    "proxies",
    "metrics",
)
"""The labels of the tables a run may write beside its main file (`sibling_path`)."""

FILES_KEY = "cohortsql_files"
"""The key of a main file's metadata that lists the companions its run wrote (a JSON list of labels)."""


def write_set(out: Path, tables: Mapping[str, pl.DataFrame], settings: Mapping[str, Any]) -> list[Path]:
    """A run's files as one set: the table labelled ``""`` at `out`, the others beside it
    (`sibling_path`), and any companion an earlier run left there removed with them, all or nothing;
    the main file's metadata lists the companions written (`FILES_KEY`). Returns the paths written."""
    labels = [label for label in tables if label]
    paths = {sibling_path(out, label) if label else out: frame for label, frame in tables.items()}
    stale = [sibling_path(out, label) for label in COMPANIONS if label not in labels]
    write_frames(paths, {**settings, FILES_KEY: labels}, remove=[path for path in stale if path.exists()])
    return list(paths)


def companions(path: str | os.PathLike[str]) -> list[str] | None:
    """The labels of the companions written with a main file, as its metadata lists them (None for a
    file written before the list existed, or a CSV file)."""
    listed = _metadata(path).get(FILES_KEY) if Path(path).suffix.lower() == ".parquet" else None
    return None if listed is None else list(json.loads(listed))


def write_text(text: str, path: Path) -> None:
    """Write a text file (a report) atomically, through the same temporary files as result tables."""

    def write(content: str, temporary: Path, target: Path) -> None:
        temporary.write_text(content, encoding="utf-8")

    _write_all({path: text}, write)


def _write_all(
    contents: Mapping[Path, Any], write: Callable[[Any, Path, Path], None], remove: Sequence[Path] = ()
) -> None:
    """Write each content to a fresh temporary file beside its target (created exclusively under a
    random name, so no planted file or link is followed), then move them all into place, and the files
    `remove` out of it; on any failure (a full disk, Ctrl-C) every target keeps its previous contents,
    every removed file comes back and no temporary is left."""
    for directory in {target.parent for target in contents}:
        remove_stale_temporaries(directory)
    written: dict[Path, Path] = {}
    backups: dict[Path, Path] = {}
    moved: list[Path] = []
    try:
        for target, content in contents.items():
            temporary = _temporary(target)
            written[target] = temporary
            try:
                write(content, temporary, target)
            except Exception as error:  # polars reports a full disk as its own ComputeError
                if isinstance(error, CohortError):
                    raise
                first = (str(error).strip().splitlines() or [type(error).__name__])[0]
                raise CohortError(f"cannot write {str(target)!r}: {first}") from None
        for target in [*contents, *remove]:
            if target.exists():
                backup = _temporary(target)
                os.replace(target, backup)
                backups[target] = backup
        for target, temporary in written.items():
            os.replace(temporary, target)
            moved.append(target)
    except BaseException:
        for target in moved:
            target.unlink(missing_ok=True)
        for target, backup in backups.items():
            os.replace(backup, target)
        for temporary in written.values():
            temporary.unlink(missing_ok=True)
        raise
    for backup in backups.values():
        backup.unlink(missing_ok=True)


def _temporary(target: Path) -> Path:
    """A new, empty file beside `target` under a random name, created exclusively (never an existing
    file or a link someone planted there), with the permissions the umask gives new files."""
    while True:
        temporary = target.with_name(f".{target.name}{TEMPORARY_MARK}{secrets.token_hex(6)}.tmp")
        try:
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666))
        except FileExistsError:
            continue
        return temporary


def remove_stale_temporaries(directory: Path) -> None:
    """Remove this library's temporary files in `directory` left by a run that was killed a day ago or more."""
    cutoff = time.time() - STALE_SECONDS
    for path in directory.glob(f".*{TEMPORARY_MARK}*.tmp"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            continue


def sibling_path(path: str | os.PathLike[str], label: str) -> Path:
    """`out.parquet` -> `out_<label>.parquet`: where a second table of the same run goes."""
    target = Path(path)
    return target.with_name(f"{target.stem}_{label}{target.suffix}")


def one_outcome(frames: Sequence[pl.DataFrame], outcome: str | None, source: str) -> list[pl.DataFrame]:
    """The rows of one explained column from tables that may stack several (an ``outcome`` column first,
    as results of ``prediction=[...]`` write them): the only one, or `outcome`; a `CohortError` names
    the choices when there are several and none was chosen."""
    if not frames or "outcome" not in frames[0].columns:
        if outcome is not None:
            raise CohortError(f"{source} explains a single column; it has no outcome {outcome!r} to choose")
        return list(frames)
    names = frames[0]["outcome"].unique(maintain_order=True).to_list()
    if outcome is None:
        if len(names) > 1:
            raise CohortError(
                f"{source} holds {len(names)} explained columns ({', '.join(names)}): choose one with"
                " --outcome NAME (outcome= in Python)"
            )
        outcome = names[0]
    elif outcome not in names:
        raise CohortError(f"{source} holds no outcome {outcome!r}; its outcomes are {', '.join(names)}")
    return [
        frame.filter(pl.col("outcome") == outcome).drop("outcome") if "outcome" in frame.columns else frame
        for frame in frames
    ]
