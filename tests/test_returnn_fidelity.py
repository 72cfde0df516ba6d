"""netcompiler against RETURNN on the recorded differential corpus (no `returnn` needed).

`tests/fixtures/returnn/corpus.json` holds what RETURNN made of every case of `tests/returnn_corpus/cases.py`
(recorded by `tools/record_returnn_templates.py` in a scratch venv). Each case is built here and compared
(`returnn_corpus.compare`): build verdict, templates, axis order, dim identity, parameters, and for the numeric
subset the output values and losses. Today's differences are listed in `known_differences.json`; the test
fails on a new difference and on a listed one that disappeared (the list stays true).

After a fix (or a deliberate change) that moves a difference: `python tests/returnn_corpus/compare.py
--write-known` rewrites the list (reasons come from `returnn_corpus/causes.py`; a new kind of difference gets
its cause there first). Figures: `python tests/returnn_corpus/compare.py`; `--show` prints every difference,
`--groups` the differences by cause.
"""

from __future__ import annotations

import copy
import functools

import pytest

from returnn_corpus import cases as corpus_cases
from returnn_corpus import causes
from returnn_corpus import compare

RECORDS = compare.load_corpus()
KNOWN = compare.load_known()


def _mismatches(diffs, aspects):
    """(new, gone): differences not listed, listed ones that no longer occur (restricted to `aspects`)."""
    new, gone = [], []
    for name, found in diffs.items():
        found = {a: t for a, t in found.items() if a in aspects}
        listed = {a for a in KNOWN.get(name, {}) if a in aspects}
        for aspect in sorted(set(found) - listed):
            new.append(f"{name} [{aspect}]: {found[aspect]}")
        for aspect in sorted(listed - set(found)):
            gone.append(f"{name} [{aspect}]: listed ({KNOWN[name][aspect]}) but agrees now")
    return new, gone


def _check(diffs, aspects):
    new, gone = _mismatches(diffs, aspects)
    message = []
    if new:
        message.append(f"{len(new)} new difference(s) from RETURNN:\n  " + "\n  ".join(new[:40]))
    if gone:
        message.append(f"{len(gone)} listed difference(s) gone (remove them from known_differences.json):\n  "
                       + "\n  ".join(gone[:40]))
    assert not message, "\n".join(message)


def test_fixture_is_the_corpus():
    """The recorded cases are exactly the cases the corpus module defines (re-record after changing it)."""
    defined = {c["name"]: c for c in corpus_cases.all_cases()}
    recorded = {r["name"]: r for r in RECORDS}
    assert sorted(defined) == sorted(recorded), "re-run tools/record_returnn_templates.py"
    for name, case in defined.items():
        for key in ("extern_data", "network", "behavior_version", "numeric"):
            assert recorded[name][key] == case[key], f"{name}: {key} changed since recording"
    assert len(RECORDS) >= 400


def test_known_differences_name_real_cases():
    names = {r["name"] for r in RECORDS}
    unknown = sorted(set(KNOWN) - names)
    assert not unknown, f"known_differences.json lists cases the corpus lacks: {unknown[:10]}"
    for name, aspects in KNOWN.items():
        assert set(aspects) <= set(compare.ASPECTS), name
        assert all(isinstance(r, str) and r for r in aspects.values()), f"{name}: each difference needs a reason"


@functools.lru_cache(maxsize=None)
def _today():
    """Case -> aspect -> difference, for every recorded case (numbers included; about 30 s)."""
    return compare.compare_all(RECORDS)


def test_templates_and_parameters_as_listed():
    """Build verdicts, templates, axis order, dim identity and parameters of every case."""
    _check(_today(), set(compare.ASPECTS) - {"numbers"})


def test_numbers_as_listed():
    """Output values of the numeric subset (forward passes on TensorFlow, padding filled with garbage)."""
    _check(_today(), {"numbers"})


def test_corpus_figures():
    """The corpus is broad enough, and most of it agrees (the figures the report gives)."""
    figures = compare.figures(RECORDS, _today())
    assert figures["cases"] >= 400
    assert figures["numeric_cases"] >= 150
    assert figures["templates_agree"] > figures["built_by_both"] // 2


def _agreeing_numeric_record():
    for r in RECORDS:
        if "numbers" in r and r["name"] not in KNOWN and r["numbers"]["params"]:
            return copy.deepcopy(r)
    pytest.skip("no numeric case with parameters agrees yet")


def test_each_difference_has_its_cause():
    """Every listed difference starts with the id of the cause that recognises it (causes.py), none is
    unclassified: the grouped list in known_differences.json is the work plan."""
    wrong = []
    for name, aspects in _today().items():
        for aspect, text in aspects.items():
            cause = causes.cause_of(name, aspect, text)
            reason = KNOWN.get(name, {}).get(aspect, "")
            if cause.id == "unclassified" or not reason.startswith(cause.id + ":"):
                wrong.append(f"{name} [{aspect}]: cause {cause.id}, listed as {reason[:60]!r}")
    assert not wrong, "\n".join(wrong[:30])


def test_comparison_sees_a_changed_template():
    """The comparison can fail: a recorded dim size, axis or dtype changed is a difference."""
    record = next(copy.deepcopy(r) for r in RECORDS if r["name"] == "linear/dense")
    assert compare.compare_case(record, numbers=False) == {}
    out = record["layers"]["output"]["template"]
    out["dims"][-1]["size"] = 5
    assert "template" in compare.compare_case(record, numbers=False)
    out["dims"][-1]["size"] = 4
    out["dims"][0], out["dims"][1] = out["dims"][1], out["dims"][0]
    assert set(compare.compare_case(record, numbers=False)) == {"axis_order"}
    record["layers"]["output"]["params"]["W"] = [4, 5]
    record["variables"]["output/W"] = [4, 5]
    assert "params" in compare.compare_case(record, numbers=False)


def test_comparison_sees_changed_numbers_and_ignores_padding():
    record = _agreeing_numeric_record()
    assert compare.compare_case(record) == {}
    value = record["numbers"]["output"]["value"]
    template = record["layers"]["output"]["template"]
    import numpy as np

    array = np.asarray(value, dtype=np.float64)
    sizes = record["numbers"]["output"]["sizes"]
    if sizes:  # garbage beyond the lengths is not compared
        axis = int(next(iter(sizes)))
        b = template["batch_dim_axis"]
        shortest = int(np.argmin(sizes[str(axis)]))
        index = [slice(None)] * array.ndim
        index[b], index[axis] = shortest, slice(int(sizes[str(axis)][shortest]), None)
        array[tuple(index)] = 1e6
        record["numbers"]["output"]["value"] = array.tolist()
        assert compare.compare_case(record) == {}
    array.reshape(-1)[0] += 0.01
    record["numbers"]["output"]["value"] = array.tolist()
    assert "numbers" in compare.compare_case(record)


def test_list_check_sees_new_and_vanished_differences():
    """A difference not listed is new; a listed one that no longer occurs is gone: both fail the check."""
    listed_name, listed = next(iter(KNOWN.items()))
    aspect = next(iter(listed))
    diffs = {name: dict(aspects) for name, aspects in KNOWN.items()}
    assert _mismatches(diffs, set(compare.ASPECTS)) == ([], [])
    del diffs[listed_name][aspect]
    diffs["linear/dense"] = {"template": "made up"}
    new, gone = _mismatches(diffs, set(compare.ASPECTS))
    assert [n.split(" [")[0] for n in new] == ["linear/dense"]
    assert [g.split(" [")[0] for g in gone] == [listed_name]


def test_refusal_is_compared():
    record = next(copy.deepcopy(r) for r in RECORDS if r["name"] == "linear/dense")
    record["error"] = "AssertionError: made up"
    assert "build" in compare.compare_case(record, numbers=False)
