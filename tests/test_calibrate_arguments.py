"""``netfl calibrate``'s arguments (issue 27 item 3): a drop the machine cannot hold is
estimated and refused, a negative seed is refused, and so is a drop too small for its
5th and 95th percentiles to mean anything; each as bad input (exit 2), nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from netfl.cli import main
from netfl.commands.calibrate import MIN_UES
from netfl.radio.calibration import PRESETS, cell_config
from netfl.resources import layout_bytes_per_device


def _calibrate(tmp_path: Path, *args: str) -> tuple[int, Path]:
    out = tmp_path / "cal"
    try:
        code = main(["calibrate", "tr38901_umi", *args, "--out", str(out)])
    except SystemExit as exc:  # argparse refuses an argument with exit 2
        code = int(exc.code or 0)
    return code, out


def test_a_drop_beyond_the_machines_memory_is_refused(tmp_path, capsys):
    """A billion devices x about 0.9 kB each (their gains to 19 x 3 cells and the rest):
    most of a terabyte, refused before any allocation (it died with MemoryError)."""
    per_device = layout_bytes_per_device(cell_config(PRESETS["tr38901_umi"]), 10**9)
    assert per_device > 900
    code, out = _calibrate(tmp_path, "--ues", "1000000000")
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("error: calibrate: --ues 1,000,000,000 needs about ")
    assert "more than this machine's" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "-1"], "argument --seed: expected at least 0, got -1"),
        (["--ues", "1"], f"argument --ues: expected at least {MIN_UES}"),
        (["--ues", "2"], f"argument --ues: expected at least {MIN_UES}"),
        (["--ues", str(MIN_UES - 1)], "so that 5 devices lie beyond the 5th and the 95th"),
    ],
)
def test_bad_arguments_are_refused(tmp_path, capsys, args, message):
    code, out = _calibrate(tmp_path, *args)
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_the_fewest_devices_leave_five_beyond_each_tail_percentile():
    assert MIN_UES * 0.05 >= 5


@pytest.mark.parametrize(
    "args", [["--seed", "-1"], ["--ues", "x"], ["--bogus"], ["--out"]], ids=str
)
def test_argument_errors_are_one_line(capsys, args):
    """As every command's: ``error: netfl calibrate: ...``, no usage banner, exit 2."""
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "tr38901_umi", *args])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.count("\n") == 1 and err.startswith("error: netfl calibrate: ")
    assert "usage:" not in err and err.endswith("(see netfl calibrate --help)\n")
