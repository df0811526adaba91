"""Building blocks of the scenario schema: strict models and quantities with units.

Every section of a scenario is a :class:`StrictModel`: frozen, and an unknown key is an
error that suggests the nearest known key (``did you mean 'rounds'?``).

Quantities whose key carries a unit suffix (``deadline_s``, ``bandwidth_hz``,
``model_size_bits``) accept a plain number in that SI unit, or a string with an explicit
unit that is converted (``"1.8 MHz"``, ``"18.3 MB"``, ``"500 ms"``). A string with a unit of
the wrong dimension (``bandwidth_hz: "5 s"``) is refused, and so is one that could mean bits
or bytes (``"18 Mb"``: write ``MB`` or ``Mbit``). Note that YAML 1.1 reads ``1e6`` (no dot)
as a string; those are accepted as numbers too.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any, ClassVar, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

# Unit name -> (dimension, factor to SI). Bytes are 8 bits; k/M/G are powers of ten.
_UNITS: dict[str, tuple[str, float]] = {
    "s": ("time", 1.0),
    "ms": ("time", 1e-3),
    "us": ("time", 1e-6),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    "hz": ("frequency", 1.0),
    "khz": ("frequency", 1e3),
    "mhz": ("frequency", 1e6),
    "ghz": ("frequency", 1e9),
    "bit": ("size", 1.0),
    "bits": ("size", 1.0),
    "kbit": ("size", 1e3),
    "mbit": ("size", 1e6),
    "gbit": ("size", 1e9),
    "b": ("size", 8.0),
    "byte": ("size", 8.0),
    "bytes": ("size", 8.0),
    "kb": ("size", 8e3),
    "mb": ("size", 8e6),
    "gb": ("size", 8e9),
    "bps": ("rate", 1.0),
    "bit/s": ("rate", 1.0),
    "kbps": ("rate", 1e3),
    "kbit/s": ("rate", 1e3),
    "mbps": ("rate", 1e6),
    "mbit/s": ("rate", 1e6),
    "gbps": ("rate", 1e9),
    "gbit/s": ("rate", 1e9),
    "m": ("length", 1.0),
    "km": ("length", 1e3),
}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/]*)\s*$")
_SI_NAME = {"time": "s", "frequency": "Hz", "size": "bit", "rate": "bit/s", "length": "m"}


def to_si(value: Any, dimension: str) -> Any:
    """A number, or a string with a unit of ``dimension`` (``"2 km"``), as a float in SI
    units; any other type is returned as is (for the field's own type check).

    Raises ``PydanticCustomError`` for an unreadable string or a unit of another dimension.
    """
    if isinstance(value, bool):
        raise PydanticCustomError("quantity", "expected a number, got a boolean")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = _QUANTITY.match(value)
        if not match:
            raise PydanticCustomError(
                "quantity",
                "expected a number in {si} or a string such as '2.5 {si}', got {value}",
                {"si": _SI_NAME[dimension], "value": repr(value)},
            )
        number, unit = float(match.group(1)), match.group(2).lower()
        if not unit:
            return number
        _refuse_bit_byte_ambiguity(unit, match.group(2), value)
        if unit not in _UNITS:
            raise PydanticCustomError(
                "quantity",
                "unknown unit {unit} in {value}",
                {"unit": repr(unit), "value": repr(value)},
            )
        unit_dimension, factor = _UNITS[unit]
        if unit_dimension != dimension:
            raise PydanticCustomError(
                "quantity",
                "wrong unit: {value} is a {got}, this key takes a {want} (in {si})",
                {
                    "value": repr(value),
                    "got": unit_dimension,
                    "want": dimension,
                    "si": _SI_NAME[dimension],
                },
            )
        return number * factor
    return value


#: ``json_schema_extra`` of the keys that name a file or folder the run reads: a relative
#: path written in a scenario file is taken from that file's folder (``netfl.scenario``'s
#: ``PATH_KEYS`` lists them; docs/scenario.md, "Paths").
INPUT_PATH: dict[str, Any] = {"input_path": True}


def _to_si(dimension: str) -> Any:
    return BeforeValidator(lambda value: to_si(value, dimension))


def _refuse_bit_byte_ambiguity(unit: str, written: str, value: str) -> None:
    """``b`` is a bit and ``B`` a byte: refuse the spellings that the lower-cased unit
    table would read with the other meaning (``Mb`` as megabytes, ``MBps`` as megabits/s)."""
    if unit in {"b", "kb", "mb", "gb"} and written.endswith("b"):
        hint = f"write '{written[:-1]}B' for bytes or '{written[:-1]}bit' for bits"
    elif unit.endswith("bps") and "B" in written:
        hint = f"bytes per second are not taken; write bits per second ('{written[:-3]}bit/s')"
    else:
        return
    raise PydanticCustomError(
        "quantity", "ambiguous unit in {value}: {hint}", {"value": repr(value), "hint": hint}
    )


Seconds = Annotated[float, _to_si("time"), Field(ge=0)]
PositiveSeconds = Annotated[float, _to_si("time"), Field(gt=0)]
Hertz = Annotated[float, _to_si("frequency"), Field(gt=0)]
Bits = Annotated[float, _to_si("size"), Field(gt=0)]
NonNegativeBits = Annotated[float, _to_si("size"), Field(ge=0)]
BitsPerSecond = Annotated[float, _to_si("rate"), Field(gt=0)]
Meters = Annotated[float, _to_si("length"), Field(ge=0)]
PositiveMeters = Annotated[float, _to_si("length"), Field(gt=0)]
Probability = Annotated[float, Field(ge=0, le=1)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]


_SUFFIX_DIMENSION = {
    "_s": "time",
    "_hz": "frequency",
    "_bits": "size",
    "_bps": "rate",
    "_m": "length",
}
#: Parameters of a distribution that carry the key's unit (``sigma`` is in log space).
_DIST_QUANTITIES = frozenset({"value", "low", "high", "mean", "std", "median"})


def _suffix_dimension(key: str) -> str | None:
    for suffix, dimension in _SUFFIX_DIMENSION.items():
        if key.endswith(suffix):
            return dimension
    return None


def _has_unit(value: Any) -> bool:
    """A string that reads as a number with a unit (``"0.5 MB"``)."""
    if not isinstance(value, str):
        return False
    match = _QUANTITY.match(value)
    return match is not None and bool(match.group(2))


def _takes_distribution(annotation: Any) -> bool:
    """Whether a field's type admits a distribution (a model with a ``dist`` tag)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "dist" in annotation.model_fields
    return any(_takes_distribution(arg) for arg in get_args(annotation))


def _is_distribution_field(model: type[BaseModel], key: str) -> bool:
    field = model.model_fields.get(key)
    return field is not None and _takes_distribution(field.annotation)


def _distribution_to_si(value: Any, dimension: str) -> Any:
    if _has_unit(value):
        return to_si(value, dimension)
    if isinstance(value, dict) and "dist" in value:
        out = {}
        for name, item in value.items():
            if name in _DIST_QUANTITIES and _has_unit(item):
                item = to_si(item, dimension)
            elif name == "values" and isinstance(item, list):
                item = [to_si(v, dimension) if _has_unit(v) else v for v in item]
            out[name] = item
        return out
    return value


def closest(name: str, known: list[str]) -> str | None:
    """The known name nearest to ``name``: the same name in another letter case first,
    then the closest spelling (difflib, ignoring case), or None."""
    by_case = {item.lower(): item for item in known}
    if name.lower() in by_case:
        return by_case[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(by_case), n=1, cutoff=0.6)
    return by_case[close[0]] if close else None


def suggest(key: str, known: list[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest known key, or a list of known keys."""
    close = closest(key, known)
    if close:
        return f"; did you mean '{close}'?"
    if known:
        return "; known keys: " + ", ".join(sorted(known))
    return "; this section takes no keys"


class StrictModel(BaseModel):
    """Frozen config model; unknown keys are errors with a suggestion.

    Every number must be finite (YAML's ``.inf`` and ``.nan`` are refused at load: an
    infinite size or duration would otherwise stall or crash the run); a field that means
    something by infinity opts in with ``Field(allow_inf_nan=True)``.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_default=True, allow_inf_nan=False
    )

    #: Keys allowed in the input besides the fields (e.g. a union's discriminator).
    extra_input_keys: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _distribution_units(cls, data: Any) -> Any:
        """A key whose name ends in a unit (``file_size_bits``) and whose value is a
        distribution takes unit strings too: ``"0.5 MB"``, or ``{dist: uniform, low:
        "1 MB", high: "2 MB"}`` (a plain quantity key converts in its own type)."""
        if not isinstance(data, dict):
            return data
        converted = dict(data)
        for key, value in data.items():
            dimension = _suffix_dimension(str(key))
            if dimension is None or not _is_distribution_field(cls, str(key)):
                continue
            try:
                converted[key] = _distribution_to_si(value, dimension)
            except PydanticCustomError as exc:
                raise PydanticCustomError(
                    "quantity", "{key}: {message}", {"key": str(key), "message": exc.message()}
                ) from None
        return converted

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = list(cls.model_fields) + sorted(cls.extra_input_keys)
            for key in data:
                if key not in cls.model_fields and key not in cls.extra_input_keys:
                    raise PydanticCustomError(
                        "unknown_key",
                        "unknown key '{key}'{hint}",
                        {"key": str(key), "hint": suggest(str(key), known)},
                    )
        return data
