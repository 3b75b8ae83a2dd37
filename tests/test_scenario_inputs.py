"""Bad scenario input is refused at validation, by --check and simulate alike, in one sentence with exit 2."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gcbench.cli import app

runner = CliRunner()

BASE = """\
name: t
workers: 3
iterations: 5
compute: {per_partition: {distribution: exponential, rate: 1}}
variants: [{scheme: uncoded}]
"""


def refused(tmp_path: Path, text: str, *options: str) -> str:
    """The one-line error both --check and simulate give for this scenario, after checking they agree."""
    path = tmp_path / "s.yaml"
    path.write_text(text)
    messages = []
    for check in (["--check"], []):
        done = runner.invoke(app, ["simulate", *check, str(path), *options, "--out", str(tmp_path / "o")])
        assert done.exit_code == 2, (check, done.output, done.exception)
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
        messages.append(done.stderr)
    assert messages[0] == messages[1] and not (tmp_path / "o").exists()
    return messages[0].removeprefix(f"error: {path}").removeprefix(" with the command-line options")


# -- item 13: a sweep into a section the scenario lacks; field and variant errors in one round


def test_sweeping_a_field_of_an_absent_section_gets_the_unknown_field_message(tmp_path):
    absent = refused(tmp_path, BASE + "sweep: {straggling.slowdwn: [2]}\n")
    present = refused(tmp_path, BASE + "straggling: {model: none}\nsweep: {straggling.slowdwn: [2]}\n")
    expected = (
        " (sweep point straggling.slowdwn=2): straggling.slowdwn: unknown field (check its spelling and section; "
        "the straggling model 'none' takes no fields).\n"
    )
    assert absent == present == expected
    typo = refused(
        tmp_path, BASE + "straggling: {model: independent, probability: 0.1}\nsweep: {straggling.slowdwn: [2]}\n"
    )
    assert typo.endswith(": straggling.slowdwn: unknown field; did you mean 'slowdown'?\n")
    assert "discriminator" not in absent


def test_field_errors_and_variant_errors_come_in_one_report(tmp_path):
    text = BASE.replace(
        "variants: [{scheme: uncoded}]", "variants: [{scheme: fr, s: 2}, {scheme: mds}, {scheme: fr, s: 1}]"
    )
    message = refused(tmp_path, text + "network: {colour: blue}\n")
    assert message == (
        ": network.colour: unknown field (check its spelling and section); variants[1]: Unknown scheme 'mds'; "
        "available: uncoded, ignore_stragglers, fr, cr, cyclic_mds, cce_cr, cce_fr, is_gc, frc, bgc, expander, sgc, "
        "bcc, heterogeneous, pipelined_cr, pipelined_fr, partial_cr, chunked_cr, sr_sgc, m_sgc; "
        "variants[2]: fr needs (s+1) to divide n: s+1=2 does not divide n=3.\n"
    )


# -- did you mean: the registered name nearest a misspelt one, from the registries and the schema


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("variants: [{scheme: uncoded}]", "variants: [{scheme: cyclic_mdss, s: 1}]"),
         "variants[0]: Unknown scheme 'cyclic_mdss'; did you mean 'cyclic_mds'? available: uncoded,"),
        (("variants: [{scheme: uncoded}]", "variants: [{scheme: uncoded, policy: {name: fastestk, k: 2}}]"),
         "variants[0].policy: unknown name 'fastestk'; did you mean 'fastest_k'? expected one of"),
        (("variants: [{scheme: uncoded}]", "variants: [{scheme: uncoded, polcy: decodable}]"),
         "variants[0].polcy: did you mean 'policy'? neither a variant field"),
        (("variants: [{scheme: uncoded}]", "variants: [{scheme: uncoded, compression: {name: qsdg}}]"),
         "variants[0].compression: unknown name 'qsdg'; did you mean 'qsgd'? expected one of"),
        (("rate: 1}}", "rate: 1}}\nstraggling: {model: independant, probability: 0.1}"),
         "straggling: unknown model 'independant'; did you mean 'independent'? expected one of"),
        (("rate: 1}}", "rate: 1}}\nstraggling: {model: independent, probabilty: 0.1}"),
         "straggling.probabilty: unknown field; did you mean 'probability'?"),
        (("distribution: exponential, rate: 1", "distribution: exponentail, rate: 1"),
         "compute.per_partition: unknown distribution 'exponentail'; did you mean 'exponential'? expected one of"),
        (("distribution: exponential, rate: 1", "distribution: exponential, rat: 1"),
         "compute.per_partition.rat: unknown field; did you mean 'rate'?"),
        (("iterations: 5", "iteratons: 5\niterations: 5"), "iteratons: unknown field; did you mean 'iterations'?"),
        (("rate: 1}}", "rate: 1}}\ntraining: {ddp_backend: ncl}"),
         "training.ddp_backend: Input should be 'auto', 'gloo' or 'nccl' (did you mean 'nccl'?)"),
    ],
)  # fmt: skip
def test_a_misspelt_name_gets_the_nearest_registered_one(tmp_path, change, expected):
    assert expected in refused(tmp_path, BASE.replace(*change))


def test_a_name_near_nothing_gets_no_suggestion(tmp_path):
    """Far names, and a near-looking one that is another word ('seed' is not 'scheme')."""
    text = BASE.replace("{scheme: uncoded}", "{scheme: zzz}, {scheme: fr, s: 1, seed: 2}") + "network: {colour: 1}\n"
    message = refused(tmp_path, text)
    assert "did you mean" not in message and "Unknown scheme 'zzz'; available:" in message
    assert "variants[1].seed: neither a variant field" in message


def test_gcbench_schemes_and_run_suggest_the_nearest_scheme_and_backend(tmp_path):
    schemes = runner.invoke(app, ["schemes", "frr"])
    assert schemes.exit_code == 2 and "did you mean 'fr'?" in schemes.output
    path = tmp_path / "s.yaml"
    path.write_text(BASE)
    run = runner.invoke(app, ["run", str(path), "--backend", "torhc", "--dataset", "synthetic"])
    assert run.exit_code == 2 and "--backend must be ray, torch or local, got 'torhc'; did you mean 'torch'?" in (
        " ".join(run.output.split())
    )


# -- item 19: what passed --check and then failed, or never finished


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            BASE + "seeds: [18446744073709551616]\n",
            ": seeds[0]: Input should be less than or equal to 9223372036854775807.\n",
        ),
        (
            BASE.replace("{scheme: uncoded}", "{scheme: cr, s: 1, seed: 36893488147419103232}"),
            ": variants[0]: The 'seed' parameter of cr must be an int in [0, 9223372036854775807]. "
            "Got 36893488147419103232 instead.\n",
        ),
        (
            BASE
            + "straggling: {model: independent, probability: 0.1}\n"
            + "sweep: {straggling.slowdown: [1000000000000000000000]}\n",
            ": sweep.straggling.slowdown: integers must fit in 64 bits (at most 9223372036854775807).\n",
        ),
        (
            BASE + "sweep: {network: [{}, {}]}\n",
            ": sweep.network: values must be numbers, strings, booleans or null "
            "(sweep one field of a mapping at a time).\n",
        ),
        (
            BASE + "sweep: {network.shared_link: [true, 1]}\n",
            ": sweep.network.shared_link: values must all be numbers, all strings or all booleans, "
            "not ['boolean', 'number'].\n",
        ),
        (BASE + "description: " + "[" * 5000 + "]" * 5000 + "\n", ": nests lists or mappings too deeply to read.\n"),
        (BASE + "description: " + "[" * 40 + "]" * 40 + "\n", ": nests lists or mappings more than 32 levels deep.\n"),
        (
            BASE
            + "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
            + "".join(
                f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                for p, c in zip("abcdefg", "bcdefgh", strict=True)
            ),
            ": holds more than 1,000,000 values (counting YAML aliases expanded).\n",
        ),
        (BASE + "seeds: [0, 0]\n", ": seeds: give each seed once (a repeated seed repeats the same run).\n"),
    ],
    ids=[
        "seed-2^64",
        "variant-seed-2^65",
        "sweep-int-10^21",
        "sweep-empty-mappings",
        "sweep-mixed-kinds",
        "nested-5000",
        "nested-40",
        "alias-bomb",
        "repeated-seed",
    ],
)
def test_input_that_failed_after_check_is_refused_by_check(tmp_path, text, expected):
    assert refused(tmp_path, text) == expected


def test_conditioning_checked_schemes_are_refused_early_at_large_n(tmp_path):
    text = BASE.replace("workers: 3", "workers: 4096").replace("{scheme: uncoded}", "{scheme: cyclic_mds, s: 1}")
    began = time.perf_counter()
    message = refused(tmp_path, text)
    assert time.perf_counter() - began < 20  # it ran for minutes
    assert message == (
        ": variants[0]: cyclic_mds checks its decoding conditioning when built, which takes minutes beyond 128 "
        "workers, so gcbench takes it for at most 128 workers (got 4096); "
        "use fr, cce_fr or ignore_stragglers for more.\n"
    )


def test_runs_too_large_to_hold_are_refused(tmp_path):
    text = BASE.replace("workers: 3", "workers: 100").replace("iterations: 5", "iterations: 10000000")
    assert refused(tmp_path, text) == (
        ": iterations: 10000000 iterations x 100 workers (or results per update) exceed 100,000,000 per run, "
        "more than the simulator holds in memory.\n"
    )


# -- item 20: nonsense refused, not simulated


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (
            "compute.per_partition={distribution: deterministic, value: 1e308}",
            ": compute.per_partition.value: Input should be less than or equal to 1000000000.\n",
        ),
        (
            "compute.per_partition={distribution: shifted_exponential, shift: .inf, rate: 1}",
            ": compute.per_partition.shift: Input should be a finite number.\n",
        ),
        (
            "compute.per_partition.rate=1e-320",
            ": compute.per_partition: exponential: its mean must be at most 1e+09 s; these parameters give inf s.\n",
        ),
        (
            "network.bandwidth=1e-300",
            ": network.bandwidth: a 44,800,000-byte message would take 4.48e+307 s, more than the 1e+09 s any duration "
            "may last.\n",
        ),
        (
            "network.master={ingress: 1e-300}",
            ": network.master.ingress: 3 messages of 44,800,000 bytes would take 1.34e+308 s, more than the 1e+09 s "
            "any duration may last.\n",
        ),
        (
            "compute.per_partition={distribution: lognormal, mu: 0, sigma: 30}",
            ": compute.per_partition: lognormal: its mean must be at most 1e+09 s; "
            "these parameters give 2.71e+195 s.\n",
        ),
        (
            "compute.per_partition={distribution: pareto, scale: 1, shape: 0.05}",
            ": compute.per_partition.shape: Input should be greater than or equal to 0.1.\n",
        ),
        (
            "compute.per_partition={distribution: weibull, scale: 1, shape: 0.001}",
            ": compute.per_partition: weibull: its mean must be at most 1e+09 s; these parameters give inf s.\n",
        ),
        ("compute.speeds=[1e-320, 1, 1]", ": compute.speeds[0]: Input should be greater than or equal to 0.000001.\n"),
        (
            "straggling={model: fixed, workers: [0], slowdown: 1e300}",
            ": straggling.slowdown: Input should be less than or equal to 1000000.\n",
        ),
        ("training.learning_rate=.nan", ": training.learning_rate: Input should be a finite number.\n"),
        (
            "name=/tmp/elsewhere",
            ": name: must be a plain folder name (it names the results directory): no '/', '\\', ':', '..', "
            "leading dot or surrounding spaces, not '/tmp/elsewhere'.\n",
        ),
        ("name=../up", None),
        ("name=a/b", None),
    ],
)
def test_nonsense_is_refused_before_simulating(tmp_path, setting, expected):
    message = refused(tmp_path, BASE, "--set", setting)
    assert message == expected if expected else message.startswith(": name: must be a plain folder name")


@pytest.mark.parametrize(
    ("network", "expected"),
    [
        (
            "network: {nodes: {1: {bandwidth: 1.0e+6}}}\n",
            ": network.nodes: sets nodes' own links, and the scenario has no topology; give one (topology: {nodes: 2}, "
            "for example).\n",
        ),
        (
            "network: {nodes: {2: {latency: 0.1}}}\ntopology: {nodes: 2}\n",
            ": network.nodes: names node 2, and the nodes are 0 to 1.\n",
        ),
        (
            "network: {nodes: {0: {bandwidth: 1.0e+6}}}\ntopology: {nodes: 2}\n",
            ": network.nodes: node 0 holds the master, so its workers' messages cross no link and it has no bandwidth "
            "to set; set the master's own NIC with network.master.ingress and egress.\n",
        ),
        (
            "network: {nodes: {0: {downlink: 1.0e+6}}}\ntopology: {nodes: 2}\n",
            ": network.nodes: node 0 holds the master, so its workers' messages cross no link and it has no downlink "
            "to set; set the master's own NIC with network.master.ingress and egress.\n",
        ),
        (
            "network: {bandwidth: 1.0e+6, shared_link: true}\ntopology: {nodes: 2}\n",
            ": network.shared_link: a FIFO link that sends one message at a time, and a topology shares the links "
            "fairly, as TCP does; drop shared_link and set network.master.ingress for the master's NIC.\n",
        ),
        (
            "network: {bandwidth: 1.0e+6, shared_link: true, master: {ingress: 1.0e+6}}\n",
            ": network.shared_link: a FIFO link that sends one message at a time, and network.master.ingress shares "
            "the links fairly, as TCP does; drop shared_link and set network.master.ingress for the master's NIC.\n",
        ),
        ("network: {master: {ingress: 0}}\n", ": network.master.ingress: Input should be greater than 0.\n"),
        (
            "network: {bandwidth: 1.0e+6, unfairness: 0.5}\n",
            ": network.unfairness: weighs the flows of a link that messages share, and every worker here has a link "
            "of its own; give a topology or network.master.ingress.\n",
        ),
        ("network: {unfairness: 1}\ntopology: {nodes: 2}\n", ": network.unfairness: Input should be less than 1.\n"),
        (
            "network: {bandwidth: 1.0e+6, burst: 20000}\n",
            ": network.burst: a token bucket on each node's fairly shared links, and this network has none (a "
            "bandwidth alone gives each worker a link of its own at a fixed rate); give a topology.\n",
        ),
        (
            "network: {burst: -1}\ntopology: {nodes: 2}\n",
            ": network.burst: Input should be greater than or equal to 0.\n",
        ),
        (
            "network: {abandoned_messages: keep}\n",
            ": network.abandoned_messages: Input should be 'drop' or 'finish'.\n",
        ),
        (
            "network: {nodes: {one: {bandwidth: 1.0e+6}}}\ntopology: {nodes: 2}\n",
            ": network.nodes: the key 'one': Input should be a valid integer, unable to parse string as an integer.\n",
        ),
        (
            "network: {nodes: {1: {bandwidth: 0}}}\ntopology: {nodes: 2}\n",
            ": network.nodes[1].bandwidth: Input should be greater than 0.\n",
        ),  # fmt: skip
    ],
)
def test_links_a_topology_cannot_have_are_refused_in_one_sentence(tmp_path, network, expected):
    assert refused(tmp_path, BASE + network) == expected


def test_the_fast_path_refuses_weights_that_take_time_beside_failures_in_one_sentence(tmp_path):
    text = BASE + "network: {master: {egress: 1.0e+6}}\nfailures: {model: crash, probability: 0.1, downtime: 1}\n"
    assert refused(tmp_path, text + "engine: vectorised\n") == (
        "error: engine: vectorised sends every iteration's weights as it starts, and with failures and the weights "
        "taking time (network.master.egress or a downlink) a recovered worker's copy is sent as it is back; use "
        "engine: auto or event.\n"
    )
    path = tmp_path / "auto.yaml"
    path.write_text(text)
    done = runner.invoke(app, ["simulate", str(path), "--out", str(tmp_path / "auto")])
    assert done.exit_code == 0 and "engine: event" in done.output, done.output


def test_a_bad_data_dir_names_the_field_and_what_it_is_relative_to(tmp_path, monkeypatch):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "training: {dataset: cifar10, data_dir: no/such/folder, batch_size: 6}\n")
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["run", str(path), "--backend", "local", "--out", str(tmp_path / "o")])
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith(
        "error: training.data_dir (the scenario's field, or --data-dir): no/such/folder does not exist; a relative "
        f"path is taken from the current directory, so it means {tmp_path}/no/such/folder; give --data-dir "
    )
    assert "--data-dir no/such" not in done.stderr


def test_a_non_finite_learning_rate_is_refused(tmp_path):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "training: {dataset: synthetic, batch_size: 6}\n")
    done = runner.invoke(app, ["run", str(path), "--backend", "local", "--lr", "inf", "--out", str(tmp_path / "o")])
    assert done.exit_code == 2 and done.stderr == (
        f"error: {path} with the command-line options: training.learning_rate: Input should be a finite number.\n"
    )


def test_run_check_says_what_would_train_and_trains_nothing(tmp_path):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "training: {dataset: synthetic, batch_size: 6}\n")
    out = tmp_path / "o"
    done = runner.invoke(app, ["run", str(path), "--backend", "local", "--check", "--seeds", "0,1", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert "x 2 seeds x" in done.output and "would train on the local backend; nothing was run." in done.output
    assert not out.exists()
    cifar = BASE + f"training: {{dataset: cifar10, batch_size: 6, cache_dir: {tmp_path / 'cache'}}}\n"
    path.write_text(cifar)  # no --data-dir, nothing downloaded before: refused, gcbench downloads nothing
    for command in (["--check"], ["--iterations", "1", "--out", str(tmp_path / "r")]):
        done = runner.invoke(app, ["run", str(path), "--backend", "local", *command])
        assert done.exit_code == 2 and done.stderr.startswith("error: no CIFAR-10 copy (training.data_dir, or "), done
        assert "gcbench downloads nothing" in done.stderr and "--dataset synthetic" in done.stderr
        message = done.stderr.rstrip("\n")
        assert "\n" not in message and message.count(". ") == 0 and message.endswith(".")  # one sentence
    downloaded = tmp_path / "cache" / "cifar-10-batches-py"  # as torchvision's download leaves it
    downloaded.mkdir(parents=True)
    done = runner.invoke(app, ["run", str(path), "--backend", "local", "--check"])
    assert done.exit_code == 0 and f"CIFAR-10 from {downloaded}." in done.output, done.output


@pytest.mark.parametrize(
    ("training", "extra", "expected"),
    [
        ("{dataset: cifar10, data_dir: no/such/folder, batch_size: 6}", [], "folder does not exist; a relative"),
        (
            "{dataset: cifar10, data_dir: /no/such/folder, batch_size: 6}",
            [],
            "/no/such/folder does not exist; give --data-dir",
        ),
        ("{dataset: synthetic, batch_size: 6}", ["--lr", "inf"], "training.learning_rate: Input should be a finite"),
        ("{dataset: synthetic, batch_size: 6}", ["--resume", "x"], "--check checks a new run"),
    ],
)
def test_run_check_refuses_what_the_run_would_in_one_sentence(tmp_path, monkeypatch, training, extra, expected):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    path = tmp_path / "s.yaml"
    path.write_text(BASE + f"training: {training}\n")
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["run", str(path), "--backend", "local", "--check", *extra])
    assert done.exit_code == 2 and expected in done.stderr and done.stderr.count("\n") == 1, done.output
