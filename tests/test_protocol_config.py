"""Scenario keys of the devices and the protocol: defaults, shorthands and bad input."""

from __future__ import annotations

import pytest

from netfl.config.devices import GroupLink
from netfl.config.fl import FLConfig
from netfl.errors import ScenarioError
from netfl.scenario import load_scenario
from tests.protocol_helpers import group, scenario


def _problem(write_scenario, data) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario(write_scenario(data))
    return str(info.value)


@pytest.mark.parametrize(
    ("m", "o", "budget"), [(5, 0.0, 5), (10, 0.1, 11), (10, 0.3, 13), (3, 0.5, 5), (8, 1.0, 16)]
)
def test_over_selection_budget_is_ceil_m_times_one_plus_o(m, o, budget):
    assert FLConfig(clients_per_round=m, over_selection=o).selection_budget == budget


def test_distribution_defaults_to_the_protocols_own():
    assert FLConfig(protocol="fedcs").distribution_mode == "multicast"
    assert FLConfig(protocol="fedavg").distribution_mode == "unicast"
    assert FLConfig(protocol="fedcs", distribution="instant").distribution_mode == "instant"


def test_link_efficiency_is_log_one_plus_snr():
    # log2(1001), ln(1001) and log2(1 + 10^(20/10)) = log2(101).
    assert GroupLink(snr=1000, bandwidth_hz=3e6).spectral_efficiency == pytest.approx(9.9672, 1e-4)
    natural = GroupLink(snr=1000, log="ln", bandwidth_hz=3e6).spectral_efficiency
    assert natural == pytest.approx(6.9088, 1e-4)
    assert GroupLink(snr_db=20, bandwidth_hz=3e6).spectral_efficiency == pytest.approx(6.6582, 1e-4)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"background": {"arrival_rate_hz": 1.0, "job_work_s": 2.0}},
            "devices.groups.0.background: utilization rho",
        ),
        (
            {
                "background": {
                    "arrival_rate_hz": 0.1,
                    "job_work_s": {"dist": "normal", "mean": 1, "std": 1},
                }
            },
            "devices.groups.0.background: job_work_s must be constant, uniform",
        ),
        ({"link": {"bandwidth_hz": 2e6}}, "devices.groups.0.link: give exactly one of snr"),
        (
            {"link": {"snr": 3, "bandwidth_hz": {"dist": "uniform", "low": 0, "high": 1e6}}},
            "devices.groups.0.link.bandwidth_hz: bandwidth_hz must be positive",
        ),
        (
            {"available_cpu_ratio": {"dist": "normal", "mean": 1, "std": 0.5}},
            "devices.groups.0.available_cpu_ratio: available_cpu_ratio must be positive",
        ),
        ({"exchange_noise": 1.5}, "devices.groups.0.exchange_noise"),
        ({"compute_fluctuation_eta": 2.0}, "devices.groups.0.compute_fluctuation_eta"),
        (
            {"availability": {"kind": "markov", "mean_on_s": 0, "mean_off_s": 1}},
            "devices.groups.0.availability.mean_on_s",
        ),
        ({"availability": {"kind": "sometimes"}}, "devices.groups.0.availability"),
    ],
)
def test_bad_device_groups_name_the_key(write_scenario, values, message):
    assert message in _problem(write_scenario, scenario([group("a", 3, **values)]))


@pytest.mark.parametrize(
    ("fl", "message"),
    [
        ({"protocol": "fedprox"}, "fl.protocol"),
        ({"over_selection": -0.5}, "fl.over_selection"),
        ({"distribution": "broadcast"}, "fl.distribution"),
        ({"request_time_s": "5 MHz"}, "fl.request_time_s: wrong unit"),
        ({"request_response_bits": -1}, "fl.request_response_bits"),
    ],
)
def test_bad_protocol_keys_name_the_key(write_scenario, fl, message):
    assert message in _problem(write_scenario, scenario([group("a", 3)], fl=fl))


def test_unit_strings_work_for_the_new_keys(write_scenario):
    data = scenario(
        [group("a", 3)],
        fl={"request_time_s": "200 ms", "request_response_bits": "1 kB", "deadline_s": "2 min"},
    )
    fl = load_scenario(write_scenario(data)).fl
    assert (fl.request_time_s, fl.request_response_bits, fl.deadline_s) == (0.2, 8000.0, 120.0)


def test_the_rbcs_f_example_in_the_docs_is_a_valid_scenario():
    from netfl.scenario import scenario_from_data
    from tests.protocol_helpers import rbcs_f_table_1

    loaded = scenario_from_data(rbcs_f_table_1())
    groups = loaded.devices.groups
    assert [g.base_train_time_s.value for g in groups] == [1, 2, 3, 4]
    assert [g.link.snr for g in groups] == [1000, 100, 10, 1]
    assert all(g.availability.p == 0.8 and g.cold_start_s.value == 1 for g in groups)
    assert loaded.devices.n_clients == 40
