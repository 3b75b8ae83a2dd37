"""`gcbench schemes`: the table, one instance, and errors with exit code 2."""

import subprocess
import sys

from typer.testing import CliRunner

from gcbench.cli import app

runner = CliRunner()


def test_table_lists_every_scheme_with_its_facts():
    result = runner.invoke(app, ["schemes"])
    assert result.exit_code == 0, result.output
    for name in ("uncoded", "ignore_stragglers", "fr", "cr", "cyclic_mds", "cce_cr", "cce_fr"):
        assert name in result.output
    assert "Tandon et al., ICML 2017" in result.output and "approximate" in result.output


def test_one_instance_shows_assignment_and_condition_number():
    result = runner.invoke(app, ["schemes", "cr", "--n", "12", "--s", "3"])
    assert result.exit_code == 0, result.output
    assert "load 4 partitions/worker" in result.output
    assert "worst decoding condition number over every straggler set(s) of size 3" in result.output
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
    assert "--m does not apply to fr" in result.output


def test_unknown_scheme_exits_2_from_the_installed_command():
    done = subprocess.run(
        [sys.executable, "-c", "from gcbench.cli import main; main()", "schemes", "nope"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: Unknown scheme 'nope'; available: uncoded, ignore_stragglers, fr, cr, cyclic_mds, cce_cr, cce_fr."
    )
