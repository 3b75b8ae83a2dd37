"""The summary keeps exact, approximate and stale variants apart and ends with what to conclude
(gcbench/results/summary.py's kind and residual, gcbench/results/conclusion.py)."""

import numpy as np
import pandas as pd
import pytest

from gcbench import stops
from gcbench.results import summarize
from gcbench.results.conclusion import conclusions

SWEEP = "straggling.slowdown"


def rows(variant, point, value, durations, exact=True, residual=0.0, staleness=0.0, asynchronous=False, seeds=3):
    """Iterations of one variant at one point: ``durations`` per seed (each seed's iterations alike)."""
    out = []
    for seed in range(seeds):
        for i, d in enumerate(durations):
            out.append({
                "variant": variant, "point": point, SWEEP: value, "seed": seed, "iteration": i,
                "duration": d * (1 + 0.01 * seed), "exact": exact, "residual": 0.0 if exact else residual,
                "staleness": staleness, "end": float(i), "stop": stops.K_RESULTS if asynchronous else "decodable",
            })  # fmt: skip
    return out


def sweep_table():
    """uncoded is fastest at the mild point, FR from the severe ones on; an approximate variant beats both."""
    table = []
    for point, value in enumerate([1.5, 6.0, 24.0]):
        table += rows("uncoded", point, value, [0.10 * value / 1.5] * 10)
        table += rows("ignore s=2", point, value, [0.05] * 10, exact=False, residual=1.549)
        table += rows("FR s=2", point, value, [0.2 if value > 2 else 0.3] * 10)
        table += rows("CR s=2", point, value, [0.4] * 10)
        table += rows("8-async", point, value, [0.01] * 10, exact=False, staleness=1.5, asynchronous=True)
    return pd.DataFrame(table)


def test_kind_and_residual_columns():
    summary = summarize(sweep_table(), [SWEEP])
    kinds = summary.drop_duplicates("variant").set_index("variant")["kind"].to_dict()
    assert kinds == {"uncoded": "exact", "ignore s=2": "approximate", "FR s=2": "exact", "CR s=2": "exact",
                     "8-async": "stale"}  # fmt: skip
    approximate = summary[summary["variant"] == "ignore s=2"]
    assert np.allclose(approximate["residual"], 1.549)
    assert summary[summary["variant"] == "FR s=2"]["residual"].isna().all()  # every decode exact: no residual
    assert (summary["baseline"] == "uncoded").all()


def test_a_pipelined_or_sequential_variant_with_staleness_is_stale_though_exact():
    summary = summarize(pd.DataFrame(rows("SR-SGC", 0, 1.0, [0.1] * 10, staleness=1.0)), [])
    assert summary["kind"].tolist() == ["stale"] and summary["exact_share"].tolist() == [1.0]


def test_a_sweep_names_the_fastest_exact_variant_where_it_changes_and_the_faster_approximate_one():
    lines = conclusions(summarize(sweep_table(), [SWEEP]), [SWEEP])
    assert lines[0] == (
        f"Fastest exact variant: uncoded at {SWEEP} = 1.5; FR s=2 from {SWEEP} = 6.0 on (2.00x to 8.00x "
        "uncoded's speed)."
    )
    assert lines[1].startswith("Faster than that at 3 of 3 points (1.5, 6.0, 24.0), ignore s=2 (")
    assert "is approximate: none of its decodes were exact (residual up to 1.55; 1.0 is one partition's" in lines[1]
    assert not any("8-async" in line for line in lines)  # an asynchronous update is not an iteration: no speedup
    assert len(lines) == 2


def test_a_single_point_is_one_line_and_names_ties_within_the_intervals():
    table = pd.DataFrame(
        rows("uncoded", 0, 1.0, [0.3] * 10) + rows("CR s=2", 0, 1.0, [0.1] * 10) + rows("MDS s=2", 0, 1.0, [0.1] * 10)
    )
    assert conclusions(summarize(table, []), []) == [
        "Fastest exact variant: CR s=2 (tied within the 95% intervals with MDS s=2), 3.00x uncoded's speed."
    ]


def test_an_approximate_variant_inside_the_fastest_exact_ones_interval_is_not_called_faster():
    table = pd.DataFrame(rows("uncoded", 0, 1.0, [0.1, 0.3] * 5) + rows("ign", 0, 1.0, [0.1, 0.29] * 5, exact=False))
    assert conclusions(summarize(table, []), []) == ["Fastest exact variant: uncoded."]


def test_without_intervals_the_conclusion_says_close_means_may_be_noise():
    table = pd.DataFrame(rows("uncoded", 0, 1.0, [0.3] * 10, seeds=1) + rows("FR", 0, 1.0, [0.2] * 10, seeds=1))
    lines = conclusions(summarize(table, []), [])
    assert lines[0] == "Fastest exact variant: FR, 1.50x uncoded's speed."
    assert lines[1].startswith("Without 95% intervals")


def test_no_exact_variant_is_said():
    table = pd.DataFrame(rows("ign", 0, 1.0, [0.1] * 10, exact=False, residual=1.0))
    assert conclusions(summarize(table, []), [])[0] == "No variant decoded exactly in every iteration."


def test_a_partly_exact_variant_reports_its_exact_share():
    table = rows("uncoded", 0, 1.0, [0.3] * 10)
    deadline = rows("deadline", 0, 1.0, [0.1] * 10, exact=False, residual=1.0)
    for row in deadline[::2]:
        row["exact"], row["residual"] = True, 0.0
    lines = conclusions(summarize(pd.DataFrame(table + deadline), []), [])
    assert "is approximate: 50% of its decodes were exact, and the others had a residual of up to 1" in lines[1]


def test_where_every_exact_variant_is_tied_with_the_fastest_it_says_nothing_is_decided():
    """Noisy runs: at 6.0 the fastest exact variant's interval overlaps every other's, uncoded's included. Naming a
    winner and its ties is true, but the plain reading is that these runs decide nothing; at 1.5 they do."""
    table = []
    for point, value in enumerate([1.5, 6.0]):
        for variant, mean in (("uncoded", 0.30), ("FR s=2", 0.10), ("CR s=2", 0.20)):
            # at 1.5 the seeds agree to 1%; at 6.0 every variant's seeds are 0.295 s give or take half (wide intervals)
            for seed, scale in enumerate((1.0, 1.01, 0.99) if value < 2 else (1.0, 1.5, 0.5)):
                base = mean if value < 2 else 0.295
                table += rows(variant, point, value, [base * scale] * 10, seeds=1)
                table[-10:] = [{**row, "seed": seed} for row in table[-10:]]
    lines = conclusions(summarize(pd.DataFrame(table), [SWEEP]), [SWEEP])
    undecided = [line for line in lines if "do not tell the exact variants apart" in line]
    assert undecided == [
        f"At {SWEEP} = 6.0, every exact variant's 95% interval overlaps the fastest's: these runs do not tell the "
        "exact variants apart (more seeds or iterations would)."
    ], lines
    single = summarize(pd.DataFrame([r for r in table if r["point"] == 1]), [])
    assert any(line.startswith("Every exact variant's 95% interval overlaps") for line in conclusions(single, []))


def test_a_variant_that_stopped_early_is_left_out_of_the_comparison_and_said_so():
    """A real run's variant that stopped at a lost node's iteration: its mean is of the iterations before the stop,
    so it is not named fastest however short they were."""
    table = pd.DataFrame(rows("uncoded", 0, 1.0, [0.3] * 4) + rows("FR s=1", 0, 1.0, [0.2] * 10)
                         + rows("CR s=1", 0, 1.0, [0.1] * 4))  # fmt: skip
    summary = summarize(table, [])
    assert conclusions(summary, [])[0].startswith("Fastest exact variant: CR s=1")
    assert conclusions(summary, [], stopped=["CR s=1"])[0] == "Fastest exact variant: FR s=1, 1.50x uncoded's speed."
    assert conclusions(summary, [], stopped=["uncoded", "CR s=1"]) == [
        "Fastest exact variant: FR s=1.",  # (no speed against uncoded's iterations before its stop)
        "Left out of the comparison: uncoded and CR s=1 stopped early (the table's times are of the iterations "
        "before the stop).",
    ]
    assert conclusions(summarize(pd.DataFrame(rows("uncoded", 0, 1.0, [0.3] * 4)), []), [], ["uncoded"]) == [
        "Left out of the comparison: uncoded stopped early (the table's times are of the iterations before the stop)."
    ]


def test_the_speedup_is_over_the_first_variant_that_did_not_stop():
    table = pd.DataFrame(rows("uncoded", 0, 1.0, [0.3] * 4) + rows("FR s=1", 0, 1.0, [0.2] * 10)
                         + rows("CR s=1", 0, 1.0, [0.1] * 10))  # fmt: skip
    summary = summarize(table, [], stopped=["uncoded"])
    assert set(summary["baseline"]) == {"FR s=1"}
    assert summary.set_index("variant")["speedup"].to_dict() == pytest.approx({"uncoded": 2 / 3, "FR s=1": 1.0,
                                                                              "CR s=1": 2.0})  # fmt: skip
    assert conclusions(summary, [], ["uncoded"])[0] == "Fastest exact variant: CR s=1, 2.00x FR s=1's speed."
    assert set(summarize(table, [])["baseline"]) == {"uncoded"}
