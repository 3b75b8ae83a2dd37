"""`gcbench schemes`: the table, one instance, and errors with exit code 2."""

import subprocess
import sys

from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.coding import available_schemes

runner = CliRunner()


def test_table_lists_every_scheme_with_its_facts():
    result = runner.invoke(app, ["schemes"])
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.output.splitlines() if line.split()[:1] and line.split()[0].islower()]
    assert [name for name in names if name in available_schemes()] == available_schemes()
    assert "Tandon et al., ICML 2017" in result.output and "approximate" in result.output


def test_one_instance_shows_assignment_and_condition_number():
    result = runner.invoke(app, ["schemes", "cr", "--n", "12", "--s", "3"])
    assert result.exit_code == 0, result.output
    assert "load 4 partitions/worker" in result.output
    assert "worst decoding condition number over every straggler set of size 3" in result.output
    assert "coefficients (worker x partition)" in result.output


def test_cce_instance_takes_m():
    result = runner.invoke(app, ["schemes", "cce_cr", "--n", "8", "--s", "2", "--m", "2"])
    assert result.exit_code == 0, result.output
    assert "upload 0.5 gradient/message" in result.output


def test_impossible_parameters_exit_2_with_one_sentence():
    result = runner.invoke(app, ["schemes", "fr", "--n", "10", "--s", "2"])
    assert result.exit_code == 2
    assert "fr needs (s+1) to divide n" in result.output
    assert "Traceback" not in result.output


def test_option_a_scheme_does_not_take_exits_2():
    result = runner.invoke(app, ["schemes", "fr", "--n", "12", "--s", "2", "--m", "2"])
    assert result.exit_code == 2
    assert "--m does not apply to fr; it takes no extra options." in result.output


def test_unknown_scheme_exits_2_from_the_installed_command():
    """(as ``python -m gcbench``: gcbench/__main__.py calls the console entry point's main)"""
    done = subprocess.run(
        [sys.executable, "-m", "gcbench", "schemes", "nope"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: Unknown scheme 'nope'; available: {', '.join(available_schemes())}."


def test_scheme_parameters_take_either_spelling_and_change_the_code():
    spaced = runner.invoke(app, ["schemes", "cr", "--n", "6", "--s", "2", "--seed", "4"])
    joined = runner.invoke(app, ["schemes", "cr", "--n", "6", "--s", "2", "--seed=4"])
    default = runner.invoke(app, ["schemes", "cr", "--n", "6", "--s", "2"])
    assert spaced.exit_code == joined.exit_code == default.exit_code == 0, spaced.output
    assert "make_scheme('cr', n=6, s=2, seed=4)" in spaced.output
    assert spaced.output == joined.output != default.output.replace("seed=0", "seed=4")


def test_help_lists_the_parameters_the_registered_schemes_declare():
    result = runner.invoke(app, ["schemes", "--help"])
    assert result.exit_code == 0
    assert (
        "--seed: cr, bgc, expander, bcc, partial_cr (default 0); --m: cce_cr, cce_fr, chunked_cr (default 2); "
        "--d: is_gc, frc, bgc, sgc "
        "(default 2); --d: expander (default 4); --decoder: expander (default optimal); --b: bcc (default 2); "
        "--speeds: heterogeneous (default []); --burst: sr_sgc, m_sgc (default 1); --window: sr_sgc, m_sgc "
        "(default 2); --lam: sr_sgc, m_sgc (default 1); --code: sr_sgc, m_sgc (default cyclic_mds)."
    ) in " ".join(result.output.split())


def test_a_scheme_parameter_without_a_value_or_a_scheme_exits_2():
    cases = [
        (["cce_cr", "--m"], "error: --m needs a value, e.g. --m 2."),
        (["--m", "2"], "error: give the scheme name before its parameters, e.g. gcbench schemes cce_cr --m 2."),
        (["cr", "--seed", "1", "x"], "error: unexpected argument 'x'; give cr's parameters as --NAME VALUE."),
        (["cce_cr", "--m", "x"], "error: The 'm' parameter of cce_cr must be an int. Got 'x' instead."),
    ]
    for args, message in cases:
        result = runner.invoke(app, ["schemes", *args])
        assert (result.exit_code, result.output.strip()) == (2, message), args


def test_approximate_and_random_schemes_refuse_bad_parameters_in_one_sentence():
    cases = [
        (["frc", "--n", "10", "--s", "2", "--d", "3"], "error: frc needs d to divide n: d=3 does not divide n=10."),
        (
            ["bcc", "--n", "10", "--s", "1", "--b", "6"],
            "error: The 'b' parameter of bcc must be an int in [1, 5] (each of b batches needs s+1=2 of the n=10 "
            "workers to tolerate s stragglers). Got 6 instead.",
        ),
        (
            ["expander", "--n", "9", "--s", "1", "--d", "3"],
            "error: expander needs n d even for a d-regular graph: n=9, d=3.",
        ),
        (
            ["expander", "--n", "10", "--s", "1", "--decoder", "magic"],
            "error: The 'decoder' parameter of expander must be optimal or fixed. Got 'magic' instead.",
        ),
        (
            ["sgc", "--n", "8", "--s", "1", "--d", "0"],
            "error: The 'd' parameter of sgc must be an int in [1, 8] (the replication of each partition). "
            "Got 0 instead.",
        ),
        (
            ["bgc", "--n", "8", "--s", "1", "--seed", "-1"],
            "error: The 'seed' parameter of bgc must be an int in [0, 9223372036854775807]. Got -1 instead.",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(app, ["schemes", *args])
        assert (result.exit_code, " ".join(result.output.split())) == (2, message), args


def test_an_approximate_instance_shows_its_construction_facts():
    result = runner.invoke(app, ["schemes", "sgc", "--n", "8", "--s", "2", "--d", "3"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "every two partitions share at most one worker; E||W R - T||^2 = 0.8889 with p = s/n" in output
    result = runner.invoke(app, ["schemes", "expander", "--n", "12", "--s", "2", "--d", "3", "--decoder", "fixed"])
    assert result.exit_code == 0, result.output
    assert (
        "random 3-regular graph (seed 0), lambda = " in result.output and "fixed-decoder error bound" in result.output
    )


def test_a_coefficient_too_small_for_two_decimals_shows_its_size():
    """cyclic-MDS at n = 12, s = 2: worker 0's coefficient on partition 0 is about 0.004, which 0.00 would hide."""
    result = runner.invoke(app, ["schemes", "cyclic_mds", "--n", "12", "--s", "2"])
    assert result.exit_code == 0
    first_row = next(line for line in result.output.splitlines() if line.strip().startswith("0 "))
    assert "4e-03" in first_row and " 0.00 " not in first_row


def test_an_approximate_scheme_gives_its_decoding_error_and_amplification_is_not_read_as_it():
    from gcbench.coding import make_scheme

    result = runner.invoke(app, ["schemes", "sgc", "--n", "12", "--s", "1"])
    assert result.exit_code == 0, result.output
    report = make_scheme("sgc", n=12, s=1).error_amplification()
    assert report.residual_worst > 0.1 and report.residual_mean > 0.1  # it decodes approximately: a residual
    text = result.output
    said = (f"decoding error (the residual ||W R - T||_F the results record; 1.0 is one partition's gradient left "
            f"out of the sum of 12) over every straggler set of size 1: worst {report.residual_worst:.3g}")  # fmt: skip
    assert said in text and "not the decode's own error" in text
    assert "For scale: uncoded training, all 12 messages with weight 1, has" in text
    assert "uncoded's is" not in text  # (read as if the approximate code beat uncoded)
    assert any(said in line for line in text.splitlines())  # one line, never wrapped mid-sentence
    # is_gc at s = 1 happens to decode exactly from any 11 of 12: rounding is not called an error
    exactly = runner.invoke(app, ["schemes", "is_gc", "--n", "12", "--s", "1"]).output
    assert "over every straggler set of size 1: 0: every set of this size decodes exactly" in exactly
    exact = runner.invoke(app, ["schemes", "cr", "--n", "6", "--s", "2"])
    assert "decoding error" not in exact.output  # an exact scheme decodes with no residual
    assert make_scheme("cr", n=6, s=2).error_amplification().residual_worst == 0.0
