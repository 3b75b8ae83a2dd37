"""Sequential gradient coding, reproduced: gcbench's round replay (gcbench/sim/rounds.py) against the classes of the
public repository mamaj/Sequential-Gradient-Coding-2 (Krishnan, Ebrahimi and Khisti, ICLR 2023), under that
repository's rules, on its ``sam-gc-cnn_profile_est_desktop_long`` profiles: 256 AWS Lambda workers, 30 rounds
profiled, 20 jobs (so delays up to 10 rounds), the base-load profile plus the load model with base_comp.pkl's
slope. For mu = 1 and 0.2: every admissible parameter of no coding, gradient coding, SR-SGC and M-SGC on both
sides, the largest relative difference of their total runtimes (target: 1e-9), and the parameters each search
picks with their runtimes side by side.

Give a clone of the repository (``--repository DIR``, default ``../Sequential-Gradient-Coding-2`` beside this
project); the benchmark says why it stops where the files are absent. The repository's classes are imported from
its ``2_find_runtimes`` folder (they need numpy only).

    python benchmarks/sgc_reproduction.py [--repository DIR] [--region Canada] [--jobs 20]
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "delay_profiles/sam-gc-cnn_profile_est_desktop_long"
PROFILE = "w256-n30-l0_000-b2048-cno_forloop-{region}.pkl"
CLASSES = {
    "uncoded": ("no_coding", "NoCoding"),
    "gc": ("gradient_coding", "GradientCoding"),
    "sr_sgc": ("selective_repeat_sgc", "SelectiveRepeatSGC"),
    "m_sgc": ("multiplexed_sgc", "MultiplexedSGC"),
}
NAMES = {"uncoded": "no coding", "gc": "gradient coding", "sr_sgc": "SR-SGC", "m_sgc": "M-SGC"}


def their_class(repository: Path, design: str):
    module, name = CLASSES[design]
    path = repository / "2_find_runtimes" / f"{module}.py"
    spec = importlib.util.spec_from_file_location(f"sgc_{module}", path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return getattr(loaded, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path, default=ROOT.parent / "Sequential-Gradient-Coding-2")
    parser.add_argument("--region", default="Canada")
    parser.add_argument("--jobs", type=int, default=20)
    args = parser.parse_args()
    folder = args.repository / FOLDER
    profile = folder / PROFILE.format(region=args.region)
    needed = [profile, folder / "base_comp.pkl", *(args.repository / "2_find_runtimes" / f"{m}.py" for m, _ in
                                                   CLASSES.values())]  # fmt: skip
    absent = [str(path) for path in needed if not path.is_file()]
    if absent:
        raise SystemExit(f"skipped: {absent[0]} is absent (give a clone of the repository with --repository).")

    from gcbench.models.delay_profiles import read_base_compute, read_profile
    from gcbench.sim.rounds import DESIGNS, at_design_load, parameters

    base = read_profile(profile).T  # (workers, rounds), as the repository's get_durations(...).T
    base_compute = read_base_compute(folder / "base_comp.pkl", args.region)
    n, rounds = base.shape
    max_delay = rounds - args.jobs
    print(f"{profile.name}: {n} workers, {rounds} rounds; {args.jobs} jobs, delays up to {max_delay}; base compute "
          f"{base_compute:.6f} s (base_comp.pkl, {args.region})")  # fmt: skip
    for mu in (1.0, 0.2):
        print(f"-- mu = {mu}")
        for design, Design in DESIGNS.items():
            Theirs = their_class(args.repository, design)
            worst, best_ours, best_theirs, seconds = 0.0, None, None, [0.0, 0.0]
            for params in parameters(design, n, args.jobs, max_delay):
                load = Design(*params).load(n)
                delays = at_design_load(base, load, 0.0, base_compute)
                begun = time.perf_counter()
                ours = Design(*params).replay(delays, args.jobs, mu).runtime
                seconds[0] += time.perf_counter() - begun
                begun = time.perf_counter()
                model = Theirs(n, *params, args.jobs, mu, delays)
                model.run()
                theirs = float(model.durations.sum())
                seconds[1] += time.perf_counter() - begun
                worst = max(worst, abs(ours / theirs - 1))
                if best_ours is None or ours < best_ours[1]:
                    best_ours = (params, ours)
                if best_theirs is None or theirs < best_theirs[1]:
                    best_theirs = (params, theirs)
            print(f"   {NAMES[design]:<16} gcbench {best_ours[1]:.6f} s at {best_ours[0]}   repository "
                  f"{best_theirs[1]:.6f} s at {best_theirs[0]}   largest relative difference over every parameter "
                  f"{worst:.1e}   (search {seconds[0]:.1f} s here, {seconds[1]:.1f} s theirs)")  # fmt: skip


if __name__ == "__main__":
    main()
