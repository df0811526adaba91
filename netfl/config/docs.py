"""Generate ``docs/scenario.md`` from the scenario models, so the reference cannot drift.

Run ``python -m netfl.config.docs > docs/scenario.md``; a test checks the file is current.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from netfl.config import dist
from netfl.config.scenario import Scenario

_DISTS = (
    dist.Constant,
    dist.Uniform,
    dist.Normal,
    dist.TruncNormal,
    dist.LogNormal,
    dist.Exponential,
    dist.Choice,
)
_UNITS = {
    "_s": "s",
    "_hz": "Hz",
    "_bits": "bit",
    "_bps": "bit/s",
    "_m": "m",
    "_dbm": "dBm",
    "_db": "dB",
    "_dbi": "dBi",
    "_w": "W",
    "_j": "J",
    "_sps": "samples/s",
}


def _is_distribution(annotation: Any) -> bool:
    args = set(_flatten(annotation))
    return dist.Uniform in args and dist.Constant in args


def _flatten(annotation: Any) -> list[Any]:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _flatten(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        out: list[Any] = []
        for arg in get_args(annotation):
            out += _flatten(arg)
        return out
    return [annotation]


def _type_name(annotation: Any) -> str:
    if _is_distribution(annotation):
        names = ["distribution"]
        if type(None) in _flatten(annotation):
            names.append("null")
        return " \\| ".join(names)
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _type_name(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return " \\| ".join(dict.fromkeys(_type_name(a) for a in get_args(annotation)))
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in get_args(annotation))
    if origin is list:
        return f"list of {_type_name(get_args(annotation)[0])}"
    if origin is dict:
        return "mapping"
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    return getattr(annotation, "__name__", str(annotation))


def constraints(field: FieldInfo) -> list[Any]:
    """The field's bounds: its own, and those of the annotated type it takes (``PositiveInt
    | None`` keeps ``gt=0`` inside the union)."""
    found = list(field.metadata)
    stack = [field.annotation]
    while stack:
        annotation = stack.pop()
        origin = get_origin(annotation)
        if origin is typing.Annotated:
            args = get_args(annotation)
            for item in args[1:]:
                found += list(getattr(item, "metadata", [item]))
            stack.append(args[0])
        elif origin in (Union, types.UnionType):
            stack += list(get_args(annotation))
    return found


def _bounds(field: FieldInfo) -> str:
    """``" (>= 0, <= 1)"``: the range a number must be in, where the schema bounds it."""
    parts = []
    for name, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
        for constraint in constraints(field):
            value = getattr(constraint, name, None)
            if isinstance(value, int | float) and not isinstance(value, bool):
                parts.append(f"{sign} {value:,}" if isinstance(value, int) else f"{sign} {value:g}")
    return f" ({', '.join(dict.fromkeys(parts))})" if parts else ""


def _field_default(field: FieldInfo) -> Any:
    """The field's default value (``PydanticUndefined`` when it is required)."""
    if field.default_factory is not None:
        return field.default_factory()  # type: ignore[call-arg]
    return field.default


def _show(value: Any) -> str:
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        if isinstance(value, _DISTS):
            return f"`{json.dumps(value.model_dump(mode='json'))}`"
        tag = _tag(type(value))
        return f"`{tag[0]}: {tag[1]}`" if tag else "(section)"
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return "(see below)"
    return f"`{json.dumps(value)}`"


def _tag(model: type[BaseModel]) -> tuple[str, str] | None:
    """``(key, value)`` that picks ``model`` in a tagged union: its one-value Literal field."""
    for name, field in model.model_fields.items():
        values = get_args(field.annotation)
        if get_origin(field.annotation) is typing.Literal and len(values) == 1:
            return name, values[0]
    return None


def _default_of(sub: type[BaseModel], value: Any) -> BaseModel | None:
    """``value`` when it is a ``sub`` (its keys' defaults are then the value's)."""
    return value if type(value) is sub else None


def _tag_required(parent: type[BaseModel], name: str, sub: type[BaseModel]) -> bool:
    """Whether ``parent.name`` written as a mapping for the variant ``sub`` must name its
    tag: it must unless an empty mapping gives a ``sub`` (``radio`` without ``model`` is
    lte). Asked of the parent model itself, whose validators decide."""
    if _tag(sub) is None:
        return False
    try:
        picked = getattr(parent.model_validate({name: {}}), name)
    except ValidationError:
        return True
    return type(picked) is not sub


def _unit(name: str) -> str:
    for suffix, unit in sorted(_UNITS.items(), key=lambda kv: -len(kv[0])):
        if name.endswith(suffix):
            return unit
    return ""


def _sub_models(annotation: Any) -> list[type[BaseModel]]:
    if _is_distribution(annotation):
        return []
    found = []
    for arg in _flatten(annotation):
        if get_origin(arg) is list:
            found += _sub_models(get_args(arg)[0])
        elif isinstance(arg, type) and issubclass(arg, BaseModel):
            found.append(arg)
    return found


_emitted: dict[str, type[BaseModel]] = {}


def _section(
    model: type[BaseModel],
    path: str,
    lines: list[str],
    defaults: BaseModel | None = None,
    tag_required: bool = False,
    within: str = "",
) -> None:
    """Document ``model`` at ``path``; ``defaults``: the instance its parent defaults to
    (the downlink's defaults are not LinkConfig's); ``tag_required``: see _tag_required;
    ``within``: the parent variant, named when another variant already used the heading
    (``radio.uplink`` of ``model: nr``). A section already shown identically is skipped."""
    doc = (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    title = f"## `{path}`"
    tag = _tag(model)  # one variant of a tagged union
    if tag is not None:
        title += f" ({tag[0]}: `{tag[1]}`)"
    if title in lines:
        if not within or _emitted.get(title) is model:
            return
        title += f" (in {within})"
    _emitted[title] = model
    lines += [title, "", doc, ""]
    if not model.model_fields:
        lines += ["This section takes no keys yet.", ""]
        return
    lines += ["| key | type | unit | default | description |", "|---|---|---|---|---|"]
    nested: list[tuple[type[BaseModel], str, BaseModel | None, bool]] = []
    for name, field in model.model_fields.items():
        value = _field_default(field) if defaults is None else getattr(defaults, name)
        if tag_required and tag is not None and name == tag[0]:
            value = PydanticUndefined
        description = (field.description or "").replace("|", "\\|")
        lines.append(
            f"| `{name}` | {_type_name(field.annotation)}{_bounds(field)} | {_unit(name)} |"
            f" {_show(value)} | {description} |"
        )
        for sub in _sub_models(field.annotation):
            is_list = any(get_origin(a) is list for a in _flatten(field.annotation))
            sub_path = f"{path}.{name}[]" if is_list else f"{path}.{name}"
            required = _tag_required(model, name, sub)
            nested.append((sub, sub_path, _default_of(sub, value), required))
    lines.append("")
    for sub, sub_path, sub_defaults, required in nested:
        context = f"`{path}` {tag[0]}: `{tag[1]}`" if tag is not None else within
        _section(sub, sub_path, lines, sub_defaults, required, context)


def render() -> str:
    _emitted.clear()
    lines = [
        "# Scenario reference",
        "",
        "<!-- Generated by `python -m netfl.config.docs > docs/scenario.md`; do not edit. -->",
        "",
        "A scenario is a YAML file with the sections below. A key is optional unless its"
        " default reads *required*; unknown keys are errors. `netfl validate FILE --print`"
        " shows a file with every default filled in, and `--set a.b=value` overrides any"
        " key on the command line.",
        "",
        "**Units.** Keys end in their SI unit (`_s`, `_hz`, `_bits`, `_bps`, `_m`). A value"
        ' may also be a string with an explicit unit, converted on load: `"1.8 MHz"`,'
        ' `"18.3 MB"` (bytes; `Mbit` for bits), `"500 ms"`, `"2 km"`. A unit of the'
        " wrong kind is an error, and so is one that could mean bits or bytes (`Mb`,"
        " `MBps`). YAML 1.1 reads `1e6` as a string; it is accepted as a number. Numbers"
        " are finite (`.inf` and `.nan` are refused) except a truncated normal's bounds.",
        "",
        "**Paths.** The keys that name a file or folder the run reads"
        " (`devices.groups.N.mobility.file`, `devices.groups.N.availability.file`,"
        " `learning.data_root`) take a relative path from the folder of the scenario file"
        " that writes it, not from the working directory: `file: traces/cars.csv` in"
        " `study/scenario.yaml` reads `study/traces/cars.csv` wherever netfl runs. The values"
        " of a sweep file (`grid`, `zip`, `overrides`) are taken from the sweep file's"
        " folder. A path given on the command line (`--set learning.data_root=data/cifar10`)"
        " is taken from the working directory, as the shell completes it, and so is one in a"
        " built-in scenario named by its name (`netfl simulate gpfl_cifar10`) or in a"
        " mapping given to `netfl.scenario.scenario_from_data`. `~` is the home folder."
        " Loading makes every such path absolute, so `scenario.resolved.yaml` (and"
        " `--resume`) reads the same files from any folder. `output.root`, where runs are"
        " written, stays relative to the working directory, like `--out`.",
        "",
        "**Plug-ins run code.** Where a key takes a registered name (`selection.name`,"
        " `radio.channel_model`, `learning.dataset`, `learning.model`), it also takes"
        " `package.module:Name`, and strategies installed by other packages register"
        " through the `netfl.selection` entry-point group. Naming a plug-in *imports that"
        " module*, which runs its code with your permissions, when the scenario is"
        " validated or run: treat a scenario that names one like a Python script. For a"
        " scenario from a source you do not trust, pass `--no-plugins` to `netfl validate`,"
        " `netfl simulate` and `netfl sweep`: only netfl's own registered names are then"
        " accepted, and a `package.module:Name` is refused before anything is imported.",
        "",
    ]
    lines += ["## top level", "", "| key | type | default | description |", "|---|---|---|---|"]
    for name, field in Scenario.model_fields.items():
        if _sub_models(field.annotation):
            continue
        lines.append(
            f"| `{name}` | {_type_name(field.annotation)} | {_show(_field_default(field))} |"
            f" {field.description} |"
        )
    lines.append("")
    for name, field in Scenario.model_fields.items():
        for sub in _sub_models(field.annotation):
            defaults = _default_of(sub, _field_default(field))
            _section(sub, name, lines, defaults, _tag_required(Scenario, name, sub))
            if type(None) in _flatten(field.annotation):
                lines += [f"`{name}: none` switches this section off.", ""]
    lines += [
        "## Distributions",
        "",
        "A key of type *distribution* takes a plain number (a constant) or a mapping"
        " with `dist` and the parameters below.",
        "",
    ]
    for cls in _DISTS:
        tag = cls.model_fields["dist"].annotation
        params = ", ".join(f"`{n}`" for n in cls.model_fields if n != "dist")
        lines.append(f"- `dist: {get_args(tag)[0]}` ({params}): {cls.__doc__}")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(render(), end="")
