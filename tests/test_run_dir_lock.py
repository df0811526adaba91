"""A run directory while a process writes it (issue 27 items 4 and 6): locked against a
second ``simulate --out`` or ``--resume``, refused when it cannot be written, and a full
disk stops the run with one line and a ``summary.json`` that says so."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import netfl.recorder.streaming
import netfl.simulation
from netfl.cli import main
from netfl.rundir import LOCK_NAME, RESERVE_BYTES, lock_run_dir


def _simulate(write_scenario, tiny, out: Path, *extra: str) -> int:
    return main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet", *extra])


def test_a_run_directory_being_written_is_refused(write_scenario, tiny, tmp_path, capsys):
    out = tmp_path / "run"
    with lock_run_dir(out):
        for extra in ((), ("--force",)):
            assert _simulate(write_scenario, tiny, out, *extra) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1, err
            assert f"another netfl process (pid {os.getpid()}) is writing this run" in err
    assert list(out.iterdir()) == []  # nothing written, the lock file gone
    assert _simulate(write_scenario, tiny, out) == 0
    assert not (out / LOCK_NAME).exists()


def test_a_second_process_cannot_resume_a_run_being_resumed(write_scenario, tiny, tmp_path, capsys):
    """Another process holds the lock (as a resume in progress does): ``--resume`` is
    refused with one line and leaves the directory as it was."""
    tiny["fl"].update(rounds=4, checkpoint_every=1)
    out = tmp_path / "run"
    path = write_scenario(tiny)
    # A run that failed, with its checkpoint.
    assert main(["simulate", str(path), "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    summary["status"] = "failed"
    (out / "summary.json").write_text(json.dumps(summary))
    before = sorted(p.name for p in out.iterdir())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nfrom pathlib import Path\nfrom netfl.rundir import lock_run_dir\n"
            "with lock_run_dir(Path(sys.argv[1])):\n"
            "    print('locked', flush=True)\n"
            "    sys.stdin.read()\n",
            str(out),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        code = main(["simulate", "--resume", str(out), "--quiet"])
    finally:
        holder.communicate("")
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"another netfl process (pid {holder.pid}) is writing this run directory" in err
    assert err.count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == before


def test_an_unwritable_out_is_bad_input(write_scenario, tiny, tmp_path, capsys, monkeypatch):
    """An existing, empty, read-only ``--out``: exit 2 and one line (it was 'the run
    failed', exit 1). Root writes through a read-only mode, so the refusal of the lock
    file is also forced."""
    out = tmp_path / "readonly"
    out.mkdir()
    out.chmod(0o555)
    try:
        if os.access(out, os.W_OK):  # root: make the write fail as it would for a user
            real_open = os.open

            def refuse(path, *args, **kwargs):
                if str(path).endswith(LOCK_NAME):
                    raise PermissionError(errno.EACCES, "Permission denied", str(path))
                return real_open(path, *args, **kwargs)

            monkeypatch.setattr(os, "open", refuse)
        assert _simulate(write_scenario, tiny, out) == 2
    finally:
        out.chmod(0o755)
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"error: {out}: cannot write the run directory: ")


def test_the_lock_file_reserves_room_for_the_last_summary(tmp_path):
    with lock_run_dir(tmp_path / "run") as lock:
        lock_file = tmp_path / "run" / LOCK_NAME
        assert os.stat(lock_file).st_blocks * 512 >= RESERVE_BYTES
        assert lock_file.read_bytes().split(b"\n")[0] == str(os.getpid()).encode()
        lock.release_reserve()
        assert os.stat(lock_file).st_size == 0
    assert not lock_file.exists()


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("when", ["during the run", "at the end"])
def test_a_full_disk_stops_the_run_with_one_line(
    when, write_scenario, tiny, tmp_path, capsys, monkeypatch
):
    if when == "during the run":  # a timeline part a round, the second one fails
        calls = []
        real = netfl.recorder.streaming.write_arrow

        def part(path, table):
            calls.append(path)
            if len(calls) > 1:
                _no_space()
            real(path, table)

        monkeypatch.setattr(netfl.recorder.streaming, "PART_ROWS", 1)
        monkeypatch.setattr(netfl.recorder.streaming, "write_arrow", part)
    else:  # the timeline's Parquet file at the end
        monkeypatch.setattr(netfl.simulation, "write_parquet", _no_space)
    out = tmp_path / "run"
    code = _simulate(write_scenario, tiny, out)
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1, err
    assert err.startswith(f"error: {out}: the disk is full (No space left on device)")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert "No space left on device" in summary["error"]
    assert not (out / LOCK_NAME).exists()
