"""Mobility models: speeds in range, positions in the layout, and each model's known law.

- random direction with wrap-around keeps the uniform density (Nain et al. 2005);
- random waypoint started stationary does not drift (Navidi & Camp 2004): its mean speed is
  (1 - p) / E[1/V] and its pausing share p = E[P] / (E[P] + E[D] E[1/V]) from t = 0 on;
- Gauss-Markov (Liang & Haas 1999): stationary mean and std of the speed, memory a^k.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import TypeAdapter
from scipy import stats

from netfl.config.mobility import MobilityConfig
from netfl.errors import ScenarioError
from netfl.map.layout import hex_layout
from netfl.mobility.area import inside_layout
from netfl.mobility.build import Population, build_mobility
from netfl.mobility.random_waypoint import mean_leg_length_m
from netfl.mobility.static import StaticModel

CONFIG = TypeAdapter(MobilityConfig)
WRAP = hex_layout(19, 1, 200.0, wrap_around=True)
PLAIN = hex_layout(19, 1, 200.0)


def model(spec, layout=WRAP, n=500, seed=0):
    xy = layout.drop_uniform(n, 0.0, np.random.default_rng(seed))
    return build_mobility(CONFIG.validate_python(spec), layout, xy, np.random.default_rng(seed + 1))


def run(m, dt_s, steps):
    for _ in range(steps):
        step = m.advance(dt_s)
    return step


def test_static_moves_nothing_and_the_population_skips_it():
    xy = WRAP.drop_uniform(10, 0.0, np.random.default_rng(0))
    population = Population([StaticModel(xy), StaticModel(xy[:3])])
    step = population.advance(5.0)
    assert not population.moving
    assert np.array_equal(step.xy_m, np.concatenate([xy, xy[:3]]))
    assert not step.moved_m.any()


@pytest.mark.parametrize("layout", [WRAP, PLAIN], ids=["wrap", "plain"])
@pytest.mark.parametrize(
    "spec",
    [
        {"model": "random_direction", "speed_mps": {"dist": "uniform", "low": 1, "high": 3}},
        {"model": "random_waypoint", "speed_mps": {"dist": "uniform", "low": 1, "high": 3}},
        {
            "model": "constant_velocity",
            "speed_mps": {"dist": "uniform", "low": 1, "high": 3},
            "heading_deg": 30,
            "two_way": True,
            "at_edge": "reverse",
        },
    ],
    ids=lambda s: s["model"],
)
def test_speeds_stay_in_their_range_and_positions_in_the_layout(spec, layout):
    m = model(spec, layout, n=300)
    for _ in range(60):
        step = m.advance(2.0)
        moving = m.speed_mps > 0
        assert np.all((m.speed_mps[moving] >= 1) & (m.speed_mps[moving] <= 3))
        assert np.all(step.moved_m <= 3 * 2.0 + 1e-9)
        if spec["model"] == "random_waypoint" and not layout.wrap_around:
            # A leg may cut a corner of the cluster's jagged edge, by less than R / 2.
            continue
        assert inside_layout(layout, step.xy_m).all()


def test_random_direction_with_wrap_around_keeps_the_density_uniform():
    # Start all devices in the centre site: wrap-around spreads them uniformly.
    n = 3800
    xy = WRAP.drop(n, 0.0, np.random.default_rng(0), sites=np.array([0]))[0]
    spec = {"model": "random_direction", "speed_mps": 10.0, "travel_s": 20.0}
    m = build_mobility(CONFIG.validate_python(spec), WRAP, xy, np.random.default_rng(1))
    step = run(m, 5.0, 120)  # 6 km each: many times across the 0.9 km cluster
    site = np.argmin(((step.xy_m[:, None] - WRAP.site_xy_m[None]) ** 2).sum(-1), axis=1)
    counts = np.bincount(site, minlength=19)
    assert stats.chisquare(counts).pvalue > 1e-3
    radius = np.hypot(*(step.xy_m - WRAP.site_xy_m[site]).T)
    # Within its hexagon, a device's distance to the site is distributed as a uniform drop's.
    reference = WRAP.drop_uniform(200_000, 0.0, np.random.default_rng(9))
    ref_site = np.argmin(((reference[:, None] - WRAP.site_xy_m[None]) ** 2).sum(-1), axis=1)
    ref_radius = np.hypot(*(reference - WRAP.site_xy_m[ref_site]).T)
    assert stats.ks_2samp(radius, ref_radius).pvalue > 1e-3


def test_random_direction_refuses_steps_out_of_a_layout_without_wrap_around():
    m = model({"model": "random_direction", "speed_mps": 20.0}, PLAIN, n=400)
    for _ in range(100):
        step = m.advance(1.0)
        assert inside_layout(PLAIN, step.xy_m).all()
    assert (step.moved_m == 0).any()  # some were refused at the edge


def test_random_waypoint_starts_stationary_and_does_not_drift():
    layout = hex_layout(7, 1, 200.0)
    spec = {
        "model": "random_waypoint",
        "speed_mps": {"dist": "uniform", "low": 1.0, "high": 10.0},
        "pause_s": 5.0,
    }
    m = model(spec, layout, n=4000)
    inverse = math.log(10.0) / 9.0  # E[1/V] for V ~ U(1, 10)
    pausing = 5.0 / (5.0 + mean_leg_length_m(layout) * inverse)
    mean_speed = (1 - pausing) / inverse  # a naive start would give (1 - p) 5.5
    radius0 = np.hypot(*m.xy_m.T).mean()
    assert m.speed_mps.mean() == pytest.approx(mean_speed, rel=0.04)
    assert (~m.moving).mean() == pytest.approx(pausing, abs=0.02)
    speeds, paused, radius = [], [], []
    for _ in range(40):
        run(m, 1.0, 5)
        speeds.append(m.speed_mps.mean())
        paused.append((~m.moving).mean())
        radius.append(np.hypot(*m.xy_m.T).mean())
    assert np.mean(speeds) == pytest.approx(mean_speed, rel=0.04)
    assert np.mean(paused) == pytest.approx(pausing, abs=0.02)
    assert np.mean(radius) == pytest.approx(radius0, rel=0.02)
    # ... and the density is not the uniform one: denser in the middle.
    uniform = np.hypot(*layout.drop_uniform(100_000, 0.0, np.random.default_rng(5)).T).mean()
    assert radius0 < 0.95 * uniform


def test_gauss_markov_speed_has_liang_haas_mean_spread_and_memory():
    spec = {
        "model": "gauss_markov",
        "mean_speed_mps": 5.0,
        "speed_std_mps": 1.0,
        "alpha": 0.8,
        "alpha_interval_s": 1.0,
    }
    m = model(spec, WRAP, n=4000)
    history = []
    for _ in range(16):
        run(m, 0.5, 1)
        history.append(m.speed.copy())
    speed = np.array(history)  # (time, devices), 0.5 s apart
    assert speed.mean() == pytest.approx(5.0, abs=0.03)
    assert speed.std() == pytest.approx(1.0, rel=0.03)
    for lag_steps, expected in [(1, 0.8**0.5), (2, 0.8), (4, 0.64), (8, 0.8**4)]:
        a, b = speed[:-lag_steps].ravel(), speed[lag_steps:].ravel()
        assert np.corrcoef(a, b)[0, 1] == pytest.approx(expected, abs=0.03)


@pytest.mark.parametrize("layout", [WRAP, PLAIN], ids=["wrap", "plain"])
def test_gauss_markov_devices_stay_in_the_layout(layout):
    m = model({"model": "gauss_markov", "mean_speed_mps": 15.0}, layout, n=300)
    for _ in range(60):
        assert inside_layout(layout, m.advance(2.0).xy_m).all()


def test_gauss_markov_memory_does_not_depend_on_the_step():
    spec = {"model": "gauss_markov", "alpha": 0.5, "alpha_interval_s": 2.0}
    m = model(spec, WRAP, n=10)
    assert m.memory(2.0) == pytest.approx(0.5)
    assert m.memory(1.0) ** 2 == pytest.approx(m.memory(2.0))


def test_constant_velocity_drives_the_road_and_reenters_as_a_new_vehicle():
    spec = {"model": "constant_velocity", "speed_mps": 20.0, "heading_deg": 0.0}
    m = model(spec, WRAP, n=50)
    assert np.allclose(m.xy_m[:, 1], 0.0)
    s0 = m.s.copy()
    step = m.advance(1.0)
    crossed = np.isinf(step.moved_m)
    assert np.allclose(m.s[~crossed], s0[~crossed] + 20.0)
    assert np.all(m.s >= -500.0) and np.all(m.s <= 500.0)
    run(m, 1.0, 100)  # 2 km: every vehicle re-entered at least once
    assert inside_layout(WRAP, m.xy_m).all()


def test_constant_velocity_refuses_a_road_that_misses_the_layout_or_wraps_without_it():
    with pytest.raises(ScenarioError, match=r"groups\.0\.mobility\.start_m.*misses"):
        build_mobility(
            CONFIG.validate_python({"model": "constant_velocity", "start_m": [0, 5000]}),
            PLAIN,
            np.zeros((3, 2)),
            np.random.default_rng(0),
            key="devices.groups.0.mobility",
        )
    with pytest.raises(ScenarioError, match=r"mobility\.at_edge.*wrap-around"):
        build_mobility(
            CONFIG.validate_python({"model": "constant_velocity", "at_edge": "wrap"}),
            PLAIN,
            np.zeros((3, 2)),
            np.random.default_rng(0),
        )


def test_each_group_draws_only_from_its_own_stream():
    spec = CONFIG.validate_python({"model": "random_direction", "speed_mps": 3.0})
    xy = WRAP.drop_uniform(20, 0.0, np.random.default_rng(0))
    a = build_mobility(spec, WRAP, xy, np.random.default_rng(7))
    b = build_mobility(spec, WRAP, xy, np.random.default_rng(7))
    assert np.array_equal(a.advance(10.0).xy_m, b.advance(10.0).xy_m)


def test_random_direction_folds_only_devices_that_may_have_left_their_hexagon():
    """With wrap-around a device is folded only once it has walked out of the grid hexagon
    it was in (the fold changes nothing inside the cluster): positions, bit for bit, those of
    folding every device at every step, over 3,000 steps of 300 devices with short legs."""
    from netfl.mobility.area import fold_into_cluster
    from netfl.mobility.base import unit_vectors
    from netfl.mobility.random_direction import RandomDirectionModel

    class FoldEveryStep(RandomDirectionModel):
        def _walk(self, idx, remaining):  # the model before it kept the hexagon budget
            if not len(idx):
                return
            use = np.minimum(self.leg_left[idx], remaining[idx])
            step = unit_vectors(self.direction[idx]) * (self.speed[idx] * use)[:, None]
            self.xy_m[idx] = fold_into_cluster(self.layout, self.xy_m[idx] + step)
            self._displacement[idx] += step
            remaining[idx] -= use
            self.leg_left[idx] -= use
            done = idx[self.leg_left[idx] <= 1e-12]
            self.moving[done] = False
            self.pause_left[done] = self.pause_dist.sample(self.rng, len(done))

    layout = hex_layout(19, 3, 200.0, wrap_around=True)
    xy = layout.drop_uniform(300, 10.0, np.random.default_rng(0))
    spec = {"model": "random_direction", "speed_mps": {"dist": "uniform", "low": 1, "high": 30}}
    config = TypeAdapter(MobilityConfig).validate_python({**spec, "travel_s": 5, "pause_s": 1})
    models = [
        cls(layout, xy, config.speed_mps, config.travel_s, config.pause_s, np.random.default_rng(1))
        for cls in (RandomDirectionModel, FoldEveryStep)
    ]
    for _ in range(3000):
        steps = [model.advance(0.1) for model in models]
        assert np.array_equal(steps[0].xy_m, steps[1].xy_m)
        assert np.array_equal(steps[0].moved_m, steps[1].moved_m)
