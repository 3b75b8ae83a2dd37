"""Whole nodes lost (gcbench/coding/node_loss.py and `gcbench schemes NAME --nodes K`): the sets of lost nodes a
placement of a scheme's workers survives, against closed forms and against decoding every set numerically, for
every registered scheme; ``by_code`` never worse than spread or pack, and as good as any placement for small n."""

from __future__ import annotations

from itertools import combinations, permutations

import numpy as np
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.coding import NotDecodable, available_schemes, make_scheme
from gcbench.coding.node_loss import by_code, spread, survival
from gcbench.models.topology import Topology
from gcbench.testing.scheme_checks import encode_all, partition_gradients, relative_error, valid_parameter_sets

EXACT = 1e-8  # a numerical decode within this of the sum is exact (float64)


def pack(n: int, nodes: int) -> np.ndarray:
    return Topology(nodes=nodes, placement="pack").node_of(n)


def test_fr_survives_a_node_loss_spread_and_not_packed():
    """FR s=1 on 6 workers, groups (0, 1), (2, 3), (4, 5), on 3 nodes. Spread puts each group's two replicas on
    two nodes: any one node lost leaves a replica of every group; two lost take a whole group. Packed, node k holds
    group k whole: any node lost loses its group."""
    fr = make_scheme("fr", n=6, s=1)
    spread_fr = survival(fr, spread(6, 3))
    assert (spread_fr.survives, spread_fr.shares, spread_fr.worst) == (1, (1.0, 1.0, 0.0, 0.0), (0, 1))
    packed = survival(fr, pack(6, 3))
    assert (packed.survives, packed.shares, packed.worst) == (0, (1.0, 0.0, 0.0, 0.0), (0,))
    assert by_code(fr, 3).node_of == spread_fr.node_of


def test_the_share_of_k_node_sets_fr_survives_is_the_count_of_sets_hitting_no_whole_group():
    """FR s=2 on 12 workers (4 groups of 3) spread on 4 nodes: group g's replicas are on the three nodes other than
    one (the nodes 3g, 3g+1, 3g+2 mod 4), so k lost nodes take a whole group once they hold those three: any 2 are
    survived, and of the 4 sets of 3 none (each is some group's three nodes)."""
    result = survival(make_scheme("fr", n=12, s=2), spread(12, 4))
    assert result.survives == 2 and result.shares == (1.0, 1.0, 1.0, 0.0, 0.0)


def test_codes_that_decode_from_any_n_minus_s_survive_what_their_tolerance_covers_wherever_the_workers_are():
    """CR s=2 on 8 workers, 2 a node on 4 nodes: one node lost is 2 workers, within s; two are 4, beyond it, on any
    placement."""
    cr = make_scheme("cr", n=8, s=2)
    for node_of in (spread(8, 4), pack(8, 4)):
        assert survival(cr, node_of).shares == (1.0, 1.0, 0.0, 0.0, 0.0)


def test_uncoded_survives_no_node_loss():
    result = survival(make_scheme("uncoded", n=4, s=0), spread(4, 2))
    assert (result.survives, result.shares) == (0, (1.0, 0.0, 0.0))


def test_by_code_finds_the_placement_a_code_with_irregular_groups_needs():
    """The heterogeneous code for these speeds on 8 workers, s=2: the four fast workers (1, 2, 4, 6) hold
    partitions 0-5 between them, the four slow ones (0, 3, 5, 7) partitions 6 and 7, each group decoding without
    any two of its members. Spread on 4 nodes puts workers 2 and 6 together, and 3 and 7: it survives any 2 lost
    nodes, not every 3; pack, and the placement by_code finds, any 3 (one worker of each group a node)."""
    speeds = [1.0, 4.0, 7.0, 3.0, 6.0, 2.0, 5.0, 1.0]
    code = make_scheme("heterogeneous", n=8, s=2, speeds=speeds)
    assert [code.partitions(w)[0] for w in range(8)] == [6, 0, 0, 6, 0, 6, 0, 6]
    assert survival(code, spread(8, 4)).survives == 2 and survival(code, pack(8, 4)).survives == 3
    found = by_code(code, 4)
    assert found.survives == 3 and found.shares == (1.0, 1.0, 1.0, 1.0, 0.0)
    for group in ((1, 2, 4, 6), (0, 3, 5, 7)):
        assert len({found.node_of[w] for w in group}) == 4


def numerically(scheme, node_of) -> tuple[float, ...]:
    """Per number of lost nodes, the share of sets whose workers left decode the sum of random partition gradients
    to EXACT: decoded and compared, not asked of the scheme."""
    grads = partition_gradients(scheme.k, 3, np.random.default_rng(11))
    encoded = encode_all(scheme, grads)
    nodes = int(max(node_of)) + 1
    shares = []
    for k in range(nodes + 1):
        sets = list(combinations(range(nodes), k))
        exact = 0
        for lost in sets:
            left = {w: encoded[w] for w in range(scheme.n) if node_of[w] not in lost}
            try:
                estimate = scheme.decode(left)
            except NotDecodable:  # an exact code refuses a set it cannot decode
                continue
            exact += relative_error(estimate, grads) <= EXACT
        shares.append(exact / len(sets))
    return tuple(shares)


def balanced_placements(n: int, nodes: int):
    """Every placement with spread's count of workers a node (each distinct up to nothing: for small n only)."""
    seen = set()
    for order in permutations(range(n)):
        node_of = tuple(int(spread(n, nodes)[order.index(w)]) for w in range(n))
        if node_of not in seen:
            seen.add(node_of)
            yield node_of


def instances(top: int = 6):
    """Every registered scheme at n = 4 and ``top``, with the first two parameter sets its class declares there."""
    for name in available_schemes():
        for n in (4, top):
            for s, params in valid_parameter_sets(name, n)[:2]:
                yield pytest.param(name, n, s, params, id=f"{name}-n{n}-s{s}-{params}")


@pytest.mark.parametrize(("name", "n", "s", "params"), list(instances()))
def test_every_scheme_s_survival_is_what_decoding_every_node_set_gives(name, n, s, params):
    """For every registered scheme: spread, pack and by_code on 2 and 3 nodes, each share of decodable node sets
    equal to decoding them; by_code at least as good as spread and pack, and as good as every placement with
    spread's counts (all of them tried)."""
    scheme = make_scheme(name, n=n, s=s, **params)
    for nodes in (2, 3):
        found = by_code(scheme, nodes)
        for node_of in (spread(n, nodes), pack(n, nodes), found.node_of):
            assert survival(scheme, node_of).shares == numerically(scheme, node_of)
        approximate = not scheme.exact
        assert found.score(approximate) >= survival(scheme, spread(n, nodes)).score(approximate)
        assert found.score(approximate) >= survival(scheme, pack(n, nodes)).score(approximate)
        best = max(survival(scheme, node_of).survives for node_of in balanced_placements(n, nodes))
        assert found.survives == best, f"{scheme!r} on {nodes} nodes: by_code survives {found.survives}, {best} can"


def test_gcbench_schemes_nodes_prints_each_placement_s_survival():
    done = CliRunner().invoke(app, ["schemes", "fr", "--n", "6", "--s", "1", "--nodes", "3"])
    assert done.exit_code == 0, done.output
    assert "spread (worker -> node: 0 1 2 0 1 2): survives any 1 lost node; losing nodes 0 and 1 breaks it" in (
        done.output
    )
    assert "pack (worker -> node: 0 0 1 1 2 2): survives no node loss; losing node 0 breaks it" in done.output
    given = CliRunner().invoke(app, ["schemes", "fr", "--n", "6", "--nodes", "3", "--placement", "0,0,1,1,2,2"])
    assert "given (worker -> node: 0 0 1 1 2 2): survives no node loss" in given.output


def test_gcbench_schemes_nodes_without_a_name_compares_every_scheme_s_placements():
    done = CliRunner().invoke(app, ["schemes", "--nodes", "4", "--n", "12", "--s", "2"])
    assert done.exit_code == 0, done.output
    rows = {line.split()[0]: line for line in done.output.splitlines() if line.strip()}
    assert rows["fr"].split() == ["fr", "2", "(3", "lost:", "0%)", "0", "(1", "lost:", "0%)", "2", "(3", "lost:", "0%)",
                                  "=", "spread"]  # fmt: skip
    assert "never exact" in rows["sgc"] and "Not for these n and s: uncoded" in done.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["fr", "--n", "6", "--nodes", "7"], "--nodes 7: give 1 to 6 nodes for 6 workers"),
        (["fr", "--n", "6", "--nodes", "0"], "--nodes 0: give 1 to 6 nodes for 6 workers"),
        (["fr", "--n", "6", "--placement", "pack"], "--placement places the workers on nodes: give --nodes too"),
        (["--nodes", "3", "--placement", "pack"], "--placement places one scheme's workers: name it"),
        (["--nodes", "20"], "--nodes 20: give 1 to 12 nodes for 12 workers"),
        (["fr", "--n", "6", "--nodes", "3", "--placement", "0,1"], "names 2 workers' nodes, and there are 6"),
        (["fr", "--n", "6", "--nodes", "3", "--placement", "0,1,2,0,1,5"], "names node 5, and the nodes are 0 to 2"),
        (["fr", "--n", "6", "--nodes", "3", "--placement", "0,1,0,1,0,1"], "puts no worker on node 2"),
        (["fr", "--n", "6", "--nodes", "3", "--placement", "diagonal"], "give spread, pack, by_code, or each"),
    ],
)
def test_bad_node_loss_questions_are_one_sentence_and_exit_2(arguments, message):
    done = CliRunner().invoke(app, ["schemes", *arguments])
    assert done.exit_code == 2 and message in done.output, done.output
    assert "Traceback" not in done.output
