"""Device availability: Bernoulli per round, on/off Markov process, CSV traces, drops."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.cli import main
from netfl.errors import ScenarioError
from netfl.fl.availability import MarkovOnOff, load_trace
from tests.protocol_helpers import events, group, run, scenario, timeline


def test_bernoulli_long_run_fraction_is_p():
    data = scenario(
        [group("a", 20, availability=0.3), group("b", 10)],
        fl={"rounds": 1000, "clients_per_round": 2, "model_size_bits": 1.0e3},
    )
    world = run(data)
    responded = events(world, "response")
    per_client = responded.groupby("client").size().reindex(range(30), fill_value=0) / 1000
    p_hat = per_client[:20].mean()
    assert p_hat == pytest.approx(0.3, abs=4 * math.sqrt(0.3 * 0.7 / 20_000))
    assert (per_client[20:] == 1.0).all()  # group b: always available
    # Every client, not only on average (binomial, 1000 rounds: 5 sigma = 0.072).
    assert np.all(np.abs(per_client[:20] - 0.3) < 0.072)


def test_an_unavailable_client_is_never_a_candidate():
    data = scenario([group("a", 10, availability=0.5)], fl={"rounds": 50})
    world = run(data)
    for r, ctx in enumerate(world.strategy.contexts):
        answered = set(events(world, "response", r)["client"])
        assert set(ctx.candidates.tolist()) == answered


def test_markov_availability_is_on_a_fraction_mean_on_over_the_cycle():
    rng = np.random.default_rng(4)
    model = MarkovOnOff(mean_on_s=30.0, mean_off_s=10.0, count=2000, rng=rng)
    everyone = np.arange(2000)
    fractions = [model.available(everyone, t).mean() for t in np.arange(1.0, 400.0, 7.0)]
    assert np.mean(fractions) == pytest.approx(0.75, abs=0.01)


def test_markov_transition_probability_over_a_gap():
    """P(on at t + d | off at t) = pi (1 - exp(-(a + b) d))."""
    rng = np.random.default_rng(5)
    model = MarkovOnOff(mean_on_s=20.0, mean_off_s=5.0, count=40_000, rng=rng)
    everyone = np.arange(40_000)
    off = everyone[~model.available(everyone, 0.0)]
    again = model.available(off, 3.0)
    expected = 0.8 * (1 - math.exp(-(1 / 20 + 1 / 5) * 3.0))
    assert again.mean() == pytest.approx(expected, abs=0.015)


def test_markov_on_period_is_memoryless_and_consistent():
    rng = np.random.default_rng(6)
    model = MarkovOnOff(mean_on_s=10.0, mean_off_s=10.0, count=20_000, rng=rng)
    everyone = np.arange(20_000)
    on = everyone[model.available(everyone, 0.0)]
    leave = model.leaves_at(on, 0.0)
    assert leave.mean() == pytest.approx(10.0, rel=0.03)
    # Asked again before leaving: still on, same leaving time.
    later = on[leave > 4.0]
    assert model.available(later, 4.0).all()
    assert model.leaves_at(later, 4.0) == pytest.approx(leave[leave > 4.0])
    # Those that left before 4 s are off at 4 s unless they came back: P = pi (1 - e^-...).
    gone = on[leave < 4.0]
    back = model.available(gone, 4.0).mean()
    assert back < 0.5 * (1 - math.exp(-(0.1 + 0.1) * 4.0)) + 0.02
    # Exactly: each is off from its leaving time, so P(on at 4) = pi (1 - e^{-(a+b)(4 - t)}).
    expected = np.mean(0.5 * (1 - np.exp(-(0.1 + 0.1) * (4.0 - leave[leave < 4.0]))))
    assert back == pytest.approx(expected, abs=0.025)  # ~4 binomial sigmas, n ~ 3300


def _trace(tmp_path, rows, header="client,start_s,end_s", name="avail.csv"):
    path = tmp_path / name
    path.write_text("\n".join([header, *rows]) + "\n")
    return str(path)


def test_trace_intervals_are_half_open(tmp_path):
    trace = load_trace(_trace(tmp_path, ["0,0,5", "0,7,9", "1,2,3"]), "key", 0, 2)
    at = {t: trace.available(np.array([0, 1]), t).tolist() for t in (0.0, 2.5, 5.0, 8.0, 9.0)}
    assert at == {
        0.0: [True, False],
        2.5: [True, True],
        5.0: [False, False],
        8.0: [True, False],
        9.0: [False, False],
    }
    assert trace.leaves_at(np.array([0]), 7.5).tolist() == [9.0]


@pytest.mark.parametrize(
    ("rows", "line", "message"),
    [
        (["0,0,5", "0,4,9"], 3, "overlaps"),
        (["0,5,2"], 2, "negative or empty"),
        (["0,-1,2"], 2, "negative or empty"),
        (["0,0,5", "", "7,0,1"], 4, "unknown client id 7"),
        (["0,zero,5"], 2, "as numbers"),
    ],
)
def test_bad_trace_files_name_the_file_line_and_key(tmp_path, rows, line, message):
    path = _trace(tmp_path, rows)
    with pytest.raises(ScenarioError) as info:
        load_trace(path, "devices.groups.0.availability.file", 0, 2)
    text = str(info.value)
    assert text.startswith(f"{path}:{line}: devices.groups.0.availability.file: ")
    assert message in text


def test_a_trace_without_the_columns_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match=r"avail.csv:1: key: the header must name"):
        load_trace(_trace(tmp_path, ["0,1,2"], header="id,from,to"), "key", 0, 1)


def test_cli_reports_a_bad_trace_as_bad_input(tmp_path, write_scenario, capsys):
    path = _trace(tmp_path, ["0,0,100", "3,0,100"])
    data = scenario([group("a", 2, availability={"kind": "trace", "file": path})])
    code = main(["simulate", str(write_scenario(data)), "--out", str(tmp_path / "run"), "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{path}:3: devices.groups.0.availability.file: unknown client id 3" in err


@pytest.mark.parametrize(
    ("availability", "key"),
    [
        (-0.1, "devices.groups.0.availability: Input should be greater than or equal to 0"),
        (1.5, "devices.groups.0.availability: Input should be less than or equal to 1"),
        ({"kind": "bernoulli", "p": 2}, "devices.groups.0.availability.p: Input should be less"),
    ],
)
def test_availability_outside_zero_one_is_refused(write_scenario, availability, key, capsys):
    data = scenario([group("a", 2, availability=availability)])
    code = main(["validate", str(write_scenario(data))])
    assert code == 2
    assert key in capsys.readouterr().err


def test_a_client_dropping_mid_round_never_contributes(tmp_path):
    """Client 1 leaves at 2.5 s, during its upload; the others are unaffected."""
    # Each client (FedAvg): download 0.25 s, update 100 / 50 = 2 s, upload 2.25 -> 3.25 s.
    leaves = _trace(tmp_path, ["0,0,1e9", "1,0,2.5", "1,100,1e9", "2,0,1e9"], name="a.csv")
    stays = _trace(tmp_path, ["0,0,1e9", "1,0,1e9", "2,0,1e9"], name="b.csv")
    base = {"rounds": 2, "clients_per_round": 3, "model_size_bits": 1.0e6}
    dropping = run(
        scenario([group("a", 3, availability={"kind": "trace", "file": leaves})], fl=base)
    )
    table = timeline(dropping)
    drop = table[table["kind"] == "drop"]
    assert drop[["round", "client", "t_s"]].values.tolist() == [[0, 1, 2.5]]
    assert 1 not in dropping.server.records[0].completed
    after = table[(table["client"] == 1) & (table["round"] == 0) & (table["t_s"] > 2.5)]
    assert after.empty  # nothing from client 1 after it left
    assert dropping.server.records[0].completed == [0, 2]
    assert dropping.server.records[1].selected == [0, 2]  # still away in round 1
    assert dropping.strategy.feedback[0].status.tolist() == ["completed", "dropped", "completed"]
    # Nothing else is lost: clients 0 and 2 see exactly the events they see without the drop.
    staying = run(scenario([group("a", 3, availability={"kind": "trace", "file": stays})], fl=base))
    other = timeline(staying)

    def round0(t):
        rows = t[(t["round"] == 0) & t["client"].isin([0, 2])]
        return rows[["t_s", "kind", "client"]].reset_index(drop=True)

    assert round0(table).equals(round0(other))


def test_markov_drops_never_leave_work_behind():
    """Invariants over many rounds with devices that come and go."""
    data = scenario(
        [group("a", 30, availability={"kind": "markov", "mean_on_s": 20.0, "mean_off_s": 5.0})],
        fl={"rounds": 150, "clients_per_round": 5, "model_size_bits": 2.0e6},
    )
    world = run(data)
    table = timeline(world)
    drops = table[table["kind"] == "drop"]
    assert len(drops) > 20  # the setting does make clients leave
    ends = table[table["kind"] == "upload_end"]
    arrived = set(zip(ends["round"], ends["client"], strict=True))
    for r, c in zip(drops["round"], drops["client"], strict=True):
        assert (r, c) not in arrived
        assert c not in world.server.records[r].completed
    for record, feedback in zip(world.server.records, world.strategy.feedback, strict=True):
        assert sorted(record.completed) == sorted(
            c for c, s in zip(feedback.selected, feedback.status, strict=True) if s == "completed"
        )
        assert record.n_dropped == int(np.sum(feedback.status == "dropped"))
