"""The report names the environments of the points it compares and says in one line when a
comparison mixes them: in the table's protocol line and in each comparison of the analysis."""
import dataclasses

from fake_results import make_point

from experiments.records import Environment
from experiments.reporting import environments
from experiments.reporting.sections import batch_table, verdicts

EPYC = Environment(source="measured", started_at_step=0, suite_commit="a" * 40,
                   suite_dirty=False, python="3.11.7",
                   packages={"tensorflow": "2.21.0", "keras": "3.15.1", "numpy": "2.1.3"},
                   cpu_model="AMD EPYC", cpu_flags=["avx2", "fma", "avx512f", "avx512_bf16"],
                   devices=[], replicator="default")
XEON = EPYC.replace(cpu_model="Intel Xeon",
                    cpu_flags=["avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"])
EPYC_LINE = "TF 2.21.0, Keras 3.15.1 on AMD EPYC [avx2, fma, avx512f, avx512_bf16]"
XEON_LINE = ("TF 2.21.0, Keras 3.15.1 on Intel Xeon "
             "[avx2, fma, avx512f, avx512_bf16, amx_bf16, amx_tile]")


def ran_on(point, *envs):
    return dataclasses.replace(point, record=point.record.replace(environments=list(envs)))


def study(batch_64_envs, batch_512_envs):
    """Batch 64 and 512, one point per environment given, IS 3.7 and 5.5 with a small spread."""
    return ([ran_on(make_point(64, s, 3.7 + 0.05 * s, 1100.0), e)
             for s, e in enumerate(batch_64_envs)]
            + [ran_on(make_point(512, s, 5.5 + 0.05 * s, 680.0), e)
               for s, e in enumerate(batch_512_envs)])


def test_two_environments_give_the_mixed_line_naming_both_with_counts():
    points = study([EPYC, EPYC, EPYC], [XEON, XEON])
    assert environments.counts(points) == [(EPYC_LINE, 3), (XEON_LINE, 2)]
    line = environments.mixed_line(points)
    assert line.startswith("Mixed environments (2): ")
    assert line.endswith(f"Environments (points): {EPYC_LINE} (3); {XEON_LINE} (2).")
    assert "\n" not in line
    assert environments.line(points) == line


def test_one_environment_gives_no_mixed_line_and_is_named_with_its_count():
    points = study([XEON] * 3, [XEON] * 3)
    assert environments.mixed_line(points) is None
    assert environments.environments_line(points) == f"Environments (points): {XEON_LINE} (6)."
    assert environments.line(points) == environments.environments_line(points)


def test_reconstructed_facts_are_another_environment_than_measured_ones():
    """Same stack and CPU, but one was measured and the other read from the project's history:
    the report says so rather than merging them."""
    old = EPYC.replace(source="reconstructed", note="from a stop note", python=None)
    points = study([EPYC], [old])
    assert environments.counts(points) == [(EPYC_LINE, 1), (EPYC_LINE + " (reconstructed)", 1)]
    assert f"{EPYC_LINE} (1); {EPYC_LINE} (reconstructed) (1)." in environments.mixed_line(
        points)


def test_records_without_an_environment_and_resumed_ones_are_named():
    plain = make_point(64, 0, 3.7, 1100.0)  # from before records kept environments
    resumed = ran_on(make_point(64, 1, 3.8, 1100.0), EPYC, XEON.replace(started_at_step=500))
    groups = dict(environments.counts([plain, resumed]))
    assert groups == {environments.UNRECORDED: 1, f"{EPYC_LINE} then {XEON_LINE}": 1}
    unknown = EPYC.replace(packages={}, cpu_model=None, cpu_flags=[])
    assert environments.line([ran_on(plain, unknown)]) == (
        "Environments (points): TF unrecorded, Keras unrecorded on an unrecorded CPU (1).")
    assert environments.environments_line([]) == "Environments (points): -."


def test_the_protocol_line_names_the_environments_of_the_table():
    one = batch_table.protocol_text(study([EPYC] * 3, [EPYC] * 3))
    assert one.endswith(f"seeds [0, 1, 2]. Environments (points): {EPYC_LINE} (6).")
    mixed = batch_table.protocol_text(study([EPYC] * 3, [XEON] * 3))
    assert mixed.endswith(f"{EPYC_LINE} (3); {XEON_LINE} (3).")
    assert "Mixed environments (2)" in mixed


def test_each_comparison_names_its_environments_and_flags_a_mixed_one():
    same = verdicts.analyse(study([XEON] * 3, [XEON] * 3))["comparisons"][0]
    assert same["environments"] == f"Environments (points): {XEON_LINE} (6)."
    mixed = verdicts.analyse(study([EPYC] * 3, [XEON, EPYC, XEON]))["comparisons"][0]
    assert mixed["environments"] == environments.mixed_line(
        study([EPYC] * 3, [XEON, EPYC, XEON]))
    assert f"{EPYC_LINE} (4)" in mixed["environments"]
