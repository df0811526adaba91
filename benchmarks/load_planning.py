"""Load planning against the run: ``netfl validate``'s expected background load (and its
worst case) beside the background's realised share of the RBs.

``scenarios/async_compare.yaml`` with 200 devices and the uplink's FTP Model 1 at 0.4, 1.0
and 2.0 files/s per cell (issue 34's range), run timing-only (``learning: none``, the
digits share of 1,437 training samples over 200 clients: 7 samples a client, the 1 MB
model) for ``--budget`` simulated seconds. For each rate it prints, per direction, the
planned expected load and worst case (averaged over the cells that hold FL devices, as
validate prints them) and the run's ``rb_utilisation_<ul|dl>_background`` (``summary.json``:
the background's time-average share of the RBs in the cells that carried FL transfers),
with the run's CPU time.

Run: ``python -m benchmarks.load_planning [--budget 300] [--rates 0.4 1.0 2.0]``
(docs/radio.md, "Load planning"; docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import time

from netfl.planning import load_plan
from netfl.scenario import load_scenario
from netfl.world import build_world

RATES_HZ = (0.4, 1.0, 2.0)


def row(rate_hz: float, budget_s: float, seed: int) -> dict[str, float]:
    scenario = load_scenario(
        "async_compare",
        [
            "learning=none",
            "devices.groups.0.count=200",
            "devices.groups.0.n_samples=7",
            f"traffic.sources.1.arrival_rate_hz={rate_hz}",
            "traffic.record_flows=false",
            f"fl.time_budget_s={budget_s}",
            f"seed={seed}",
        ],
    )
    out: dict[str, float] = {"rate_hz": rate_hz}
    for plan in load_plan(scenario):
        short = plan.direction[0] + "l"
        out[f"{short}_expected"] = plan.background_fraction
        out[f"{short}_worst"] = plan.worst_case_fraction or float("nan")
    world = build_world(scenario)
    start = time.process_time()
    world.run()
    out["cpu_s"] = time.process_time() - start
    summary = world.network.summary()
    for short in ("ul", "dl"):
        out[f"{short}_realised"] = summary[f"rb_utilisation_{short}_background"]
    out["versions"] = float(len(world.server.records))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=300.0, help="simulated seconds")
    parser.add_argument("--rates", type=float, nargs="+", default=list(RATES_HZ))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(
        "| uplink files/s | uplink: expected / worst case / realised"
        " | downlink: expected / worst case / realised | versions | CPU s |"
    )
    print("|---|---|---|---|---|")
    for rate in args.rates:
        r = row(rate, args.budget, args.seed)
        cells = [
            f"{r[f'{d}_expected']:.1%} / {r[f'{d}_worst']:.1%} / {r[f'{d}_realised']:.1%}"
            for d in ("ul", "dl")
        ]
        print(
            f"| {rate:g} | {cells[0]} | {cells[1]} | {r['versions']:.0f} | {r['cpu_s']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
