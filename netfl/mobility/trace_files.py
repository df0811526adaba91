"""Reading trajectory files: SUMO floating-car data and a plain CSV.

- ``csv``: a header naming ``time_s, device, x_m, y_m`` (in any order; other columns are
  ignored) and one row per sample; ``device`` is the global client id, which must belong
  to the group, and every device of the group needs at least one row. Read with pandas.
- ``sumo_fcd``: the ``--fcd-output`` of SUMO (``<timestep time="t">`` elements with
  ``<vehicle id x y .../>`` children), read with the standard library's expat parser
  (:func:`read_sumo_fcd`: bounded in depth and size, no tree built). The group's devices
  follow the file's vehicles in the order they first appear (by time, then as listed); a
  file with fewer vehicles than the group has devices is refused, extra vehicles are left
  out. Geographic output
  (``--fcd-output.geo``, lon/lat) is refused: write metres.

Positions are shifted by ``offset_m`` and must lie in the sites' hexagons: a sample outside
is refused (naming its line, or its time and vehicle) or, with ``outside: clip``, moved
radially onto the boundary of its nearest site's hexagon. Every refusal is one
:class:`netfl.errors.ScenarioError` line naming the file and the scenario key.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO
from xml.etree.ElementTree import ParseError, XMLParser

import numpy as np

from netfl.config.mobility import MAX_TRACE_TIME_S, TrajectoryMobility
from netfl.errors import ScenarioError
from netfl.map.layout import Layout
from netfl.mobility.area import clip_to_layout, inside_layout
from netfl.mobility.trajectory import TrajectoryModel

CSV_COLUMNS = ("time_s", "device", "x_m", "y_m")
MAX_TRACE_BYTES = 1 << 30
"""The largest trajectory file read, 1 GiB (a day of 1 Hz samples of 10,000 vehicles is
about 40 million samples, some 3 GB as SUMO FCD: cut such a trace to the run's span)."""
MAX_XML_DEPTH = 32
"""The deepest nesting of an FCD file's elements taken (SUMO's nests 3)."""
EXCERPT_CHARS = 80
"""The most of a file's field an error quotes."""
_CHUNK_BYTES = 1 << 20


class Samples:
    """Samples of several devices: flat arrays, and where each came from for errors (its
    line in a CSV, or a label such as ``vehicle '3' at time 12``)."""

    def __init__(
        self,
        device: np.ndarray,
        time_s: np.ndarray,
        xy_m: np.ndarray,
        lines: np.ndarray | None = None,
        labels: list[str] | None = None,
    ) -> None:
        self.device, self.time_s, self.xy_m = device, time_s, xy_m
        self.lines, self.labels = lines, labels

    def refuse(self, row: int, key: str, path: str, message: str) -> ScenarioError:
        """The error for sample ``row``, located at its line or named by its label."""
        if self.lines is not None:
            return ScenarioError.single(key, message, path, line=int(self.lines[row]))
        label = self.labels[row] if self.labels is not None else f"sample {row}"
        return ScenarioError.single(key, f"{label}: {message}", path)

    def per_device(self, count: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        order = np.lexsort((self.time_s, self.device))
        device, time_s, xy = self.device[order], self.time_s[order], self.xy_m[order]
        bounds = np.searchsorted(device, np.arange(count + 1))
        times = [time_s[a:b] for a, b in itertools.pairwise(bounds)]
        positions = [xy[a:b] for a, b in itertools.pairwise(bounds)]
        return times, positions


def check_trace_file(path: str, key: str) -> None:
    """Refuse up front what cannot be a trajectory file: a missing path, something other
    than a regular file (``/dev/zero``, a pipe: read whole, they never end), or a file
    past :data:`MAX_TRACE_BYTES`."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ScenarioError.single(key, f"no trajectory file {path!r}") from None
    except OSError as exc:
        raise ScenarioError.single(key, f"cannot read the trajectory file: {exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ScenarioError.single(
            key, "is not a regular file (a device or a pipe): a trajectory is read whole", path
        )
    if info.st_size > MAX_TRACE_BYTES:
        raise ScenarioError.single(
            key,
            f"the file is {info.st_size:,} bytes; trajectory files are limited to"
            f" {MAX_TRACE_BYTES:,} bytes",
            path,
        )


def excerpt(text: object, chars: int = EXCERPT_CHARS) -> str:
    """``text`` as one line of at most ``chars`` characters (an error quotes a field of a
    file this way, however long the field)."""
    line = " ".join(str(text).split())
    return line if len(line) <= chars else f"{line[: chars - 3]}..."


def read_csv(path: str, key: str, first_device: int, count: int) -> Samples:
    """Samples of the devices ``first_device .. first_device + count - 1`` from a CSV."""
    import pandas as pd

    check_trace_file(path, key)
    try:
        frame = pd.read_csv(path, skipinitialspace=True, dtype=str, keep_default_na=False)
    except (OSError, UnicodeDecodeError) as exc:
        reason = excerpt(exc, 120)
        raise ScenarioError.single(
            key, f"cannot read the trajectory file: {reason}", path
        ) from None
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        message = excerpt(str(exc).splitlines()[0], 120) if str(exc) else "empty file"
        raise ScenarioError.single(key, f"malformed CSV: {message}", path) from None
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    missing = [c for c in CSV_COLUMNS if c not in frame.columns]
    if missing:
        raise ScenarioError.single(
            key,
            f"the header must name the columns {', '.join(CSV_COLUMNS)}; missing"
            f" {', '.join(missing)}",
            path,
            line=1,
        )
    if frame.empty:
        raise ScenarioError.single(key, "the trajectory file has no rows", path)
    values = {
        c: pd.to_numeric(frame[c].str.strip(), errors="coerce").to_numpy() for c in CSV_COLUMNS
    }
    bad = ~np.all([np.isfinite(v) for v in values.values()], axis=0)
    _refuse_first(
        bad,
        key,
        path,
        lambda row: (
            "expected time_s, device, x_m, y_m as finite numbers, got"
            f" {[excerpt(frame[c].iloc[row], 40) for c in CSV_COLUMNS]}"
        ),
    )
    late = np.abs(values["time_s"]) > MAX_TRACE_TIME_S
    _refuse_first(
        late,
        key,
        path,
        lambda row: f"time_s {values['time_s'][row]:.7g} is past +-{MAX_TRACE_TIME_S:g} s",
    )
    device = values["device"]
    last = first_device + count - 1
    unknown = (device != np.round(device)) | (device < first_device) | (device > last)
    _refuse_first(
        unknown,
        key,
        path,
        lambda row: (
            f"unknown device {excerpt(frame['device'].iloc[row], 40)}: this group has devices"
            f" {first_device}..{last}"
        ),
    )
    local = device.astype(np.int64) - first_device
    absent = np.setdiff1d(np.arange(count), local)
    if len(absent):
        raise ScenarioError.single(
            key, f"device {first_device + int(absent[0])} of the group has no rows", path
        )
    xy = np.column_stack([values["x_m"], values["y_m"]])
    return Samples(local, values["time_s"], xy, lines=np.arange(len(frame)) + 2)


def read_sumo_fcd(path: str, key: str, count: int) -> Samples:
    """Samples of the first ``count`` vehicles (by first appearance) of a SUMO FCD file.

    Read with the standard library's expat parser (the encoding the file declares, or
    its byte-order mark), element by element, without building a tree; nesting past
    :data:`MAX_XML_DEPTH` is refused (sumolib's reader recursed into 100,000 nested
    elements until Python's stack ran out), and so is a document type declaration
    (entities: a trace never needs them)."""
    check_trace_file(path, key)
    reader = _FcdReader(path, key, count)
    try:
        with open(path, "rb") as file:
            reader.read(file)
    except ParseError as exc:
        line, column = getattr(exc, "position", (None, None))
        raise ScenarioError.single(
            key,
            f"malformed SUMO FCD XML: {excerpt(exc, 120)} (binary data, or text in an"
            " encoding it does not declare?)",
            path,
            line=line,
            column=None if column is None else column + 1,
        ) from None
    except OSError as exc:
        raise ScenarioError.single(key, f"cannot read the trajectory file: {exc}", path) from None
    if len(reader.order) < count:
        raise ScenarioError.single(
            key,
            f"the trace has {len(reader.order)} vehicles, the group {count} devices (one"
            " vehicle per device)",
            path,
        )
    table = np.array(reader.rows, dtype=float).reshape(-1, 4)
    return Samples(table[:, 0].astype(np.int64), table[:, 1], table[:, 2:], labels=reader.labels)


class _FcdReader:
    """An expat target keeping the ``<timestep time>`` and ``<vehicle id x y>``
    elements of an FCD file fed in chunks (:func:`read_sumo_fcd`): no tree is built."""

    def __init__(self, path: str, key: str, count: int) -> None:
        self.path, self.key, self.count = path, key, count
        self.parser = XMLParser(target=self)
        self.depth = 0
        self.time_s: float | None = None
        self.vehicles_in_step = 0
        self.order: dict[str, int] = {}
        self.rows: list[tuple[int, float, float, float]] = []
        self.labels: list[str] = []

    def refuse(self, message: str) -> ScenarioError:
        return ScenarioError.single(self.key, message, self.path)

    def read(self, file: BinaryIO) -> None:
        """Parse the whole file, a chunk at a time."""
        while chunk := file.read(_CHUNK_BYTES):
            self.parser.feed(chunk)
        self.parser.close()

    # -- the target's callbacks ---------------------------------------------------------

    def close(self) -> None:
        return None

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise self.refuse("has a document type declaration (DOCTYPE); FCD files have none")

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > MAX_XML_DEPTH:
            raise self.refuse(
                f"elements nested deeper than {MAX_XML_DEPTH} levels (an FCD file nests 3:"
                " fcd-export, timestep, vehicle)"
            )
        if tag == "timestep":
            self.time_s = _number(attrib, "time", self.path, self.key, "a <timestep>")
            self.vehicles_in_step = 0
        elif tag == "vehicle" and self.time_s is not None:
            self.vehicles_in_step += 1
            self._vehicle(attrib, self.time_s)

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag == "timestep":
            self.time_s = None

    def data(self, text: str) -> None:
        return None

    def _vehicle(self, attrib: dict[str, str], t: float) -> None:
        vid = attrib.get("id")
        where = f"the <vehicle> number {self.vehicles_in_step} of the <timestep> at time {t:g}"
        if vid is None or not vid.strip():
            raise self.refuse(f"{where} has no id: each vehicle needs its own (one a device)")
        index = self.order.setdefault(vid, len(self.order))
        if index >= self.count:
            return
        label = f"vehicle {excerpt(vid, 40)!r} at time {t:g}"
        x = _number(attrib, "x", self.path, self.key, label)
        y = _number(attrib, "y", self.path, self.key, label)
        self.rows.append((index, t, x, y))
        self.labels.append(label)


def _number(attrib: dict[str, str], name: str, path: str, key: str, label: str) -> float:
    raw = attrib.get(name)
    try:
        value = float(raw) if raw is not None else float("nan")
    except ValueError:
        value = float("nan")
    if np.isnan(value):
        hint = " (geographic output? write x/y in metres)" if name in ("x", "y") else ""
        shown = None if raw is None else excerpt(raw, 40)
        raise ScenarioError.single(
            key, f"{label}: attribute {name} is {shown!r}, not a number{hint}", path
        )
    if not np.isfinite(value):
        raise ScenarioError.single(key, f"{label}: attribute {name} is not finite", path)
    if name == "time" and abs(value) > MAX_TRACE_TIME_S:
        raise ScenarioError.single(
            key, f"{label}: time {value:.7g} is past +-{MAX_TRACE_TIME_S:g} s", path
        )
    return value


def place(
    samples: Samples,
    layout: Layout,
    offset_m: tuple[float, float],
    outside: str,
    key: str,
    path: str,
) -> Samples:
    """Shift the samples by ``offset_m``; refuse or clip those outside the layout."""
    xy = samples.xy_m + np.asarray(offset_m, dtype=float)[None, :]
    out = ~inside_layout(layout, xy)
    if out.any() and outside == "refuse":
        row = int(np.flatnonzero(out)[0])
        raise samples.refuse(
            row,
            key,
            path,
            f"position ({xy[row, 0]:.7g}, {xy[row, 1]:.7g}) m is outside the layout's"
            " hexagons (shift it with offset_m, or set outside: clip)",
        )
    if out.any():
        xy[out] = clip_to_layout(layout, xy[out])
    return Samples(samples.device, samples.time_s, xy, samples.lines, samples.labels)


def _check_increasing(samples: Samples, key: str, path: str) -> None:
    order = np.lexsort((samples.time_s, samples.device))
    same = np.diff(samples.device[order]) == 0
    repeated = same & (np.diff(samples.time_s[order]) == 0)
    if repeated.any():
        row = int(order[np.flatnonzero(repeated)[0] + 1])
        raise samples.refuse(row, key, path, "a second sample at the same time for its device")


def trajectory_model(
    config: TrajectoryMobility, layout: Layout, first_device: int, count: int, key: str
) -> TrajectoryModel:
    """The group's trajectories from ``config.file`` (``key`` names the ``mobility``
    section in errors, e.g. ``devices.groups.1.mobility``)."""
    path = config.file
    file_key = f"{key}.file"
    fmt = config.format or _format_from_name(path, f"{key}.format")
    if fmt == "csv":
        samples = read_csv(path, file_key, first_device, count)
    else:
        samples = read_sumo_fcd(path, file_key, count)
    _check_increasing(samples, file_key, path)
    samples = place(samples, layout, config.offset_m, config.outside, file_key, path)
    times, positions = samples.per_device(count)
    return TrajectoryModel(times, positions, start_s=config.time_offset_s)


def _format_from_name(path: str, key: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix == ".xml":
        return "sumo_fcd"
    raise ScenarioError.single(
        key, f"cannot tell the format of {path!r} from its name: set format (csv or sumo_fcd)"
    )


def _refuse_first(rows: np.ndarray, key: str, path: str, message: Callable[[int], str]) -> None:
    """Refuse the file at the first data row where ``rows`` is true (its line: row + 2,
    after the header), with ``message(row)``."""
    if rows.any():
        row = int(np.flatnonzero(rows)[0])
        raise ScenarioError.single(key, message(row), path, line=row + 2)
