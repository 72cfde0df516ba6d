"""benchmarks/run.py's arithmetic and verdicts (no model is run): ratios against the goals, the growth exponent,
the median over rounds, crashes and parameter mismatches reported as such."""

import argparse
import io
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import report  # noqa: E402
import run  # noqa: E402


def side(params=1000, build=2.0, fps=100.0, peak=600.0):
    return {"params": params, "build_cpu": build, "build_wall": build * 2, "frames_per_cpu_s": fps,
            "frames_per_s": fps / 2, "peak_mb": peak, "rss_imports_mb": 500.0}


def results(models, **extra):
    meta = {"size": "quick", "reps": 1, "rounds": 1, "cpus": 2, "load_start": 1.0, "load_end": 1.0, "started": "now"}
    return {"meta": meta, "models": models, **extra}


def row_of(text, name):
    return next(line for line in text.splitlines() if line.startswith(f"| {name} |"))


def test_ratios_judged_against_each_goal():
    models = {"a": {"description": "x", "nc-tf": side(build=2.5, fps=90.0, peak=650.0), "hand-tf": side()},
              "b": {"description": "y", "nc-tf": side(build=2.3, fps=100.0, peak=660.0), "hand-tf": side()}}
    text, missed, crashed = report.render(results(models))
    assert crashed == []
    # a: build 1.25 > 1.2, throughput 0.9 < 1.0, memory 1.083 <= 1.1; b: build 1.15, throughput 1.0, memory 1.1
    assert missed == ["a TF build", "a TF throughput"]
    cells = [c.strip() for c in row_of(text, "a").split("|")]
    assert cells[4:8] == ["2.50 / 2.00", "1.25", "<= 1.2", "**MISSED**"]
    assert cells[13:16] == ["1.08", "<= 1.1", "OK"]
    assert "**MISSED**" not in row_of(text, "b")


def test_a_quick_run_with_misses_says_its_verdicts_are_a_smoke_check():
    models = {"a": {"description": "x", "nc-tf": side(fps=90.0), "hand-tf": side()}}
    quick = report.render(results(models))[0]
    assert quick.endswith("Goals missed: 1 (a TF throughput)\n" + report.QUICK_VERDICTS)
    default = results(models)
    default["meta"]["size"] = "default"
    assert report.QUICK_VERDICTS not in report.render(default)[0]
    assert report.QUICK_VERDICTS not in report.render(results({"a": {"description": "x", "nc-tf": side(),
                                                                     "hand-tf": side()}}))[0]


def test_crash_and_parameter_mismatch_are_crashes_not_misses():
    models = {"a": {"description": "x", "nc-tf": {"error": "exit 1: boom"}, "hand-tf": side()},
              "b": {"description": "y", "nc-tf": side(params=10), "hand-tf": side(params=11)}}
    text, missed, crashed = report.render(results(models))
    assert "CRASHED" in row_of(text, "a")
    assert any("boom" in c for c in crashed) and any("parameter counts differ" in c for c in crashed)


def test_growth_exponent_and_its_goal():
    small = {"description": "100 linear layers", "nc-tf": side(build=2.0), "hand-tf": side(build=1.0)}
    big = {"description": "400 linear layers", "nc-tf": side(build=2.0 * 4 ** 1.3), "hand-tf": side(build=4.0)}
    growth = run.growth({"linear-100": small, "linear-400": big})
    assert growth["layers"] == [100, 400]
    assert growth["nc-tf"]["cpu"] == pytest.approx(1.3) and growth["hand-tf"]["cpu"] == pytest.approx(1.0)
    _text, missed, _crashed = report.render(results({"linear-100": small, "linear-400": big}, growth=growth))
    assert "growth nc-tf" in missed and "growth hand-tf" not in missed


def test_rounds_merge_to_the_median_and_keep_errors():
    merged = run.merge([side(build=1.0), side(build=3.0), side(build=2.5)])
    assert merged["build_cpu"] == 2.5 and merged["params"] == 1000
    assert run.merge([side(), {"error": "exit 1"}]) == {"error": "exit 1"}


def test_pipeline_ratio_against_the_consuming_step():
    models = {"12ax": {"description": "x", "nc-tf": side(fps=1000.0), "hand-tf": side()}}
    pipe = {"12ax": {"description": "p", "batches_per_s": 10.0, "frames_per_s": 4000.0, "frames_per_cpu_s": 4000.0},
            "hdf": {"description": "q", "batches_per_s": 10.0, "frames_per_s": 9000.0, "frames_per_cpu_s": 9000.0}}
    text, missed, _ = report.render(results(models, pipeline=pipe))
    assert "pipeline 12ax" in missed  # 4x < 5x
    assert "n/a (model not run)" in text  # hdf's consumer (conv) was not measured: no verdict


def test_scaling_chain_judged_by_absolute_goals_and_against_the_hand_written_chain():
    scaling = {"layers": 5000, "nc-tf": side(build=40.0, peak=2500.0), "hand-tf": side(build=100.0, peak=2000.0)}
    text, missed, crashed = report.render(results({}, scaling=scaling))
    assert crashed == []
    # wall 80 s > 60 s, peak 2500 MB > 2 GB; build ratio 0.4 <= 1.2, memory ratio 1.25 > 1.1
    assert missed == ["scaling TF build", "scaling TF memory", "scaling TF memory"]
    assert "5000-layer chain" in text and "ratio 0.40 (<= 1.2: OK)" in text and "ratio 1.25 (<= 1.1: **MISSED**)" in text
    assert "torch" not in text  # not measured: no line


def test_scaling_chain_on_torch_is_judged_beside_tf():
    scaling = {"layers": 5000, "nc-tf": side(build=40.0, peak=2500.0), "hand-tf": side(build=100.0, peak=2000.0),
               "nc-torch": side(build=2.0, peak=700.0), "hand-torch": side(build=1.0, peak=700.0)}
    text, missed, crashed = report.render(results({}, scaling=scaling))
    # torch: wall 4 s, 700 MB within the goals; build ratio 2.0 > 1.2, memory ratio 1.0
    assert missed == ["scaling TF build", "scaling TF memory", "scaling TF memory", "scaling torch build"]
    assert "netcompiler torch: build to first step 4.0 s wall" in text and "hand-written PyTorch: 2.0 s wall" in text


def test_scaling_reference_failure_is_reported_but_not_a_netcompiler_crash():
    scaling = {"layers": 50, "nc-tf": side(build=1.0, peak=900.0), "hand-tf": {"error": "exit -9: killed"}}
    text, missed, crashed = report.render(results({}, scaling=scaling))
    assert crashed == [] and missed == []
    assert "hand-written TF2: exit -9: killed" in text
    scaling["nc-tf"] = {"error": "exit 1: boom"}
    text, missed, crashed = report.render(results({}, scaling=scaling))
    assert crashed == ["scaling TF: exit 1: boom"] and "50-layer chain, netcompiler TF: CRASHED" in text


def test_scaling_chain_runs_rounds_alternating_and_leaves_out_the_long_hand_written_tf_chain(monkeypatch):
    calls = []

    def fake_child(what, which, size, reps, log, check=False):  # builds 1, 5, 2 s in its rounds: median 2
        calls.append((what, which))
        n = sum(1 for _, s in calls if s == which)
        return side(build=[1.0, 5.0, 2.0][n - 1], peak=100.0 * n)

    monkeypatch.setattr(run, "run_child", fake_child)
    monkeypatch.setattr(run, "torch_wanted", lambda args: True)
    args = argparse.Namespace(scaling_layers=run.HAND_TF_SCALING_MAX + 1, rounds=3)
    result = run.scaling_chain(args, "default", log=None)
    assert [s for _, s in calls] == ["nc-tf"] * 3 + ["nc-torch", "hand-torch", "hand-torch", "nc-torch",
                                                      "nc-torch", "hand-torch"]
    assert {w for w, _ in calls} == {f"linear-{run.HAND_TF_SCALING_MAX + 1}"}
    assert result["nc-torch"]["build_cpu"] == 2.0 and result["nc-torch"]["peak_mb"] == 200.0
    assert "not run above" in result["hand-tf"]["skipped"]
    text, missed, crashed = report.render(results({}, scaling=result))
    assert crashed == [] and f"hand-written TF2: not run above {run.HAND_TF_SCALING_MAX} layers" in text
    args.scaling_layers = run.HAND_TF_SCALING_MAX
    calls.clear()
    assert "build_cpu" in run.scaling_chain(args, "default", log=None)["hand-tf"]


def test_the_report_names_the_machine_it_measured():
    meta_run = results({})
    meta_run["meta"]["machine"] = "Some CPU, model 7"
    assert "2 CPUs (Some CPU, model 7) shared" in report.render(meta_run)[0]
    assert "2 CPUs shared" in report.render(results({}))[0]  # a run from before the machine was recorded
    assert run.machine() != ""


def test_a_model_with_a_rounds_factor_runs_more_processes_per_side_and_the_header_says_so(monkeypatch):
    calls = []

    def fake_child(what, which, size, reps, log, check=False):
        calls.append((what, which))
        return side()

    monkeypatch.setattr(run, "run_child", fake_child)
    monkeypatch.setattr(run, "torch_wanted", lambda args: False)
    args = argparse.Namespace(rounds=2, quick=False, no_check=True, reps=1)
    models = {}
    run.benchmark_models(["12ax", "conv"], args, "quick", log=io.StringIO(), results=models, save=lambda: None)
    per_side = {key: calls.count(key) for key in set(calls)}
    assert per_side == {("12ax", "nc-tf"): 6, ("12ax", "hand-tf"): 6, ("conv", "nc-tf"): 2, ("conv", "hand-tf"): 2}
    assert models["12ax"]["rounds"] == 6 and "rounds" not in models["conv"]
    meta_run = results(models)
    meta_run["meta"]["rounds"] = 2
    assert "2 process(es) per side (12ax 6);" in report.render(meta_run)[0]
