"""Records what RETURNN makes of the corpus networks: the fixtures of `tests/test_returnn_fidelity.py`.

For every case of `tests/returnn_corpus/cases.py` this builds the network with RETURNN's TF backend
(`TFNetwork.construct_from_dict` in graph mode, the case's `behavior_version`) and records, per layer: the
output template (batch_shape, dtype, sparse, dim, batch/time/feature axis, and per dim its kind, static size,
whether it is dynamic and which of the case's distinct dims it is), the layer's parameters (key -> shape), all
trainable variables of the graph, the error RETURNN raises when it refuses the network (or its loss), and for
the cases marked `numeric` the output values of the layer `output` and every loss (sum, error sum, frames)
for fixed inputs (ragged lengths, padding filled with garbage) and fixed parameters (`tests/returnn_corpus/fixed_values.py`), with the inputs and
parameter values themselves, so that the test needs nothing from RETURNN.

RETURNN is never a dependency of netcompiler. Run this only in a scratch virtualenv outside the repository,
one that sees the machine's TensorFlow:

    python -m venv --system-site-packages /tmp/returnn_venv
    /tmp/returnn_venv/bin/pip install returnn dm-tree      # TF 2.21.0 (the machine's) + numpy, h5py
    /tmp/returnn_venv/bin/python tools/record_returnn_templates.py            # all cases
    /tmp/returnn_venv/bin/python tools/record_returnn_templates.py --only 'conv/*'   # re-record some

Recorded with returnn 1.20261022.211313 on the machine's tensorflow 2.21.0, seen through
`--system-site-packages` (so no second TensorFlow is downloaded; `pip install tensorflow-cpu==2.21.0` in a venv
without it is the same version, not tried here). RETURNN imports and builds with this combination; it needs
`dm-tree` (import name `tree`), which its PyPI package does not declare. The first run compiles RETURNN's
native ops (LSTM, CTC, chunking, ...) into /var/tmp/$USER/returnn_tf_cache, a few minutes; later runs take
about 3 minutes for the whole corpus. RETURNN allows one `behavior_version` per process, so each version's cases run in a
worker process of their own (`--worker`).

Output: `tests/fixtures/returnn/corpus.json` (one object per case, sorted by name). With `--only`, the
matching cases are replaced, the others kept, and records of cases no longer in the corpus dropped.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS_DIR = os.path.join(ROOT, "tests", "returnn_corpus")
OUT_FILE = os.path.join(ROOT, "tests", "fixtures", "returnn", "corpus.json")


def _load_module(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(CORPUS_DIR, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- the worker: runs inside the RETURNN venv ----------------------------------------------------------------

def _kind(dim) -> str:
    if dim.is_batch_dim():
        return "batch"
    if dim.is_feature_dim():
        return "feature"
    return "spatial"


class _DimTable:
    """The distinct dims of one case (by RETURNN's dim identity), numbered in order of appearance."""

    def __init__(self):
        self.dims: List[Any] = []

    def index(self, dim) -> int:
        base = dim.get_same_base()
        for i, known in enumerate(self.dims):
            if known is base or known == base:
                return i
        self.dims.append(base)
        return len(self.dims) - 1


def _template_record(data, table: _DimTable) -> Dict[str, Any]:
    return {
        "dims": [{"kind": _kind(d), "size": d.dimension, "dynamic": bool(d.is_dynamic()),
                  "id": table.index(d), "description": d.description} for d in data.dim_tags],
        "batch_shape": list(data.batch_shape),
        "dtype": data.dtype,
        "sparse": bool(data.sparse),
        "dim": data.dim,
        "batch_dim_axis": data.batch_dim_axis,
        "time_dim_axis": data.time_dim_axis,
        "feature_dim_axis": data.feature_dim_axis,
    }


def _as_json(value) -> Any:
    """A NumPy array as nested lists; float32 values written by their shortest round-trip text."""
    import numpy as np

    value = np.asarray(value)
    if value.dtype == np.bool_:
        value = value.astype(np.int32)
    if value.dtype == np.float32:
        return np.vectorize(lambda x: float(str(np.float32(x))), otypes=[object])(value).tolist() if value.size else []
    return value.tolist()


def _error_text(exc: BaseException) -> str:
    """The first line of the error; for a bare assertion, the asserting line and where it is."""
    message = str(exc).strip()
    if not message:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        message = f"{frame.line} ({os.path.basename(frame.filename)}:{frame.lineno} in {frame.name})"
    first = re.sub(r" at 0x[0-9a-f]+", "", message.splitlines()[0])  # no memory addresses: stable fixtures
    return f"{type(exc).__name__}: {first}"[:400]


def _feed_inputs(net, fixed) -> (Dict[Any, Any], Dict[str, Any]):
    """A feed dict with fixed values for every extern data key, and their record."""
    feed, record = {}, {}
    lengths = fixed.lengths_for()
    for key, data in net.extern_data.data.items():
        shape, dynamic_axes = [], []
        for axis, dim in enumerate(data.dim_tags):
            if dim.is_batch_dim():
                shape.append(fixed.BATCH)
            elif dim.dimension is None:
                shape.append(int(max(lengths)))
                dynamic_axes.append(axis)
            else:
                shape.append(dim.dimension)
        value = fixed.input_value(key, shape, data.dtype, data.dim if data.sparse else None)
        garbage = 0 if data.sparse or data.dtype.startswith("int") else fixed.GARBAGE
        if data.batch_dim_axis is not None:
            value = fixed.fill_padding(value, dynamic_axes, data.batch_dim_axis, lengths, garbage)
        feed[data.placeholder] = value
        for axis in dynamic_axes:
            feed[data.dim_tags[axis].dyn_size_ext.placeholder] = lengths
        record[key] = {"value": _as_json(value), "dtype": data.dtype, "lengths": lengths.tolist(),
                       "dynamic_axes": dynamic_axes}
    return feed, record


def _var_name(var) -> str:
    """A variable's checkpoint name ("lstm/rec/W")."""
    return var.name[:-2] if var.name.endswith(":0") else var.name


def _assign_params(net, session, fixed) -> (Dict[str, Any], Dict[str, str]):
    """Every trainable variable set to its fixed value; returns checkpoint name -> value, and the aliases
    "<layer>/<param key>" -> checkpoint name of the top-level layers' parameters."""
    assigned, aliases = {}, {}
    for var in net.get_params_list():
        name = _var_name(var)
        value = fixed.param_value(name, var.shape.as_list(), var.dtype.base_dtype.name)
        var.load(value, session)
        assigned[name] = _as_json(value)
    for layer_name, layer in net.layers.items():
        for key, var in layer.params.items():
            if _var_name(var) in assigned:
                aliases[f"{layer_name}/{key}"] = _var_name(var)
    return assigned, aliases


def _loss_fetches(net) -> Dict[str, Dict[str, Any]]:
    """Per loss (by layer name): its sum over the batch ("loss"), its error sum ("error"), and the number of
    frames it is normalised by ("frames", 1 / RETURNN's norm factor)."""
    import tensorflow as tf

    fetches = {}
    for name, holder in net.losses_dict.items():
        values = {"loss": holder.get_loss_value(), "error": holder.get_error_value()}
        norm = holder.get_norm_factor()
        if norm is not None:
            values["frames"] = 1.0 / tf.cast(norm, tf.float64)
        fetches[name] = {key: value for key, value in values.items() if value is not None}
    return fetches


def _numbers(net, fixed) -> Dict[str, Any]:
    import numpy as np
    import tensorflow as tf

    layer = net.layers["output"]
    out = layer.output
    feed, inputs = _feed_inputs(net, fixed)
    with tf.compat.v1.Session(graph=tf.compat.v1.get_default_graph()) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        params, aliases = _assign_params(net, session, fixed)
        fetch = {"value": out.placeholder}
        sizes = {}
        for axis, dim in enumerate(out.dim_tags):
            if not dim.is_batch_dim() and dim.is_dynamic() and dim.dyn_size_ext is not None:
                sizes[str(axis)] = dim.dyn_size_ext.placeholder
        fetch["sizes"] = sizes
        fetch["losses"] = _loss_fetches(net)
        result = session.run(fetch, feed_dict=feed)
    losses = {name: {key: float(value) for key, value in values.items()}
              for name, values in result["losses"].items()}
    return {"inputs": inputs, "params": params, "param_aliases": aliases, "losses": losses, "output": {
        "value": _as_json(result["value"]), "dtype": out.dtype,
        "sizes": {axis: np.asarray(s).tolist() for axis, s in result["sizes"].items()}}}


def record_case(case: Dict[str, Any], fixed) -> Dict[str, Any]:
    """What RETURNN makes of one case (in a fresh graph)."""
    import tensorflow as tf
    from returnn.config import Config
    from returnn.tf.network import TFNetwork

    record: Dict[str, Any] = {key: case[key] for key in ("name", "extern_data", "network", "behavior_version",
                                                           "numeric")}
    values = {"extern_data": case["extern_data"]}
    if case["behavior_version"] is not None:
        values["behavior_version"] = case["behavior_version"]
    with tf.Graph().as_default():
        table = _DimTable()
        try:
            net = TFNetwork(config=Config(values), train_flag=False, eval_flag=True, search_flag=False)
            net.construct_from_dict(json.loads(json.dumps(case["network"])))
        except Exception as exc:  # RETURNN refuses the network: that is the record
            record["error"] = _error_text(exc)
            return record
        layers = {}
        for name, layer in net.layers.items():
            layers[name] = {"class": layer.layer_class, "template": _template_record(layer.output, table),
                            "params": {key: var.shape.as_list() for key, var in layer.params.items()}}
        record["layers"] = layers
        record["variables"] = {_var_name(var): var.shape.as_list() for var in net.get_params_list()}
        try:
            net.maybe_construct_objective()
            losses = net.losses_dict
            record["losses"] = sorted(losses)
        except Exception as exc:
            record["loss_error"] = _error_text(exc)
        if case["numeric"] and "output" in net.layers:
            try:
                record["numbers"] = _numbers(net, fixed)
            except Exception as exc:
                record["numeric_error"] = _error_text(exc)
    return record


def worker(cases_file: str, result_file: str) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    fixed = _load_module("fixed_values")
    with open(cases_file) as f:
        cases = json.load(f)
    if cases and cases[0]["behavior_version"] is not None:
        from returnn.util.basic import BehaviorVersion

        BehaviorVersion.set(cases[0]["behavior_version"])
    results = []
    for case in cases:
        try:
            results.append(record_case(case, fixed))
        except Exception:  # a bug of this tool, not RETURNN's verdict: say so loudly
            traceback.print_exc()
            raise
        print(f"recorded {case['name']}: {results[-1].get('error') or 'ok'}", file=sys.stderr, flush=True)
    with open(result_file, "w") as f:
        json.dump(results, f)


# ---- the driver ----------------------------------------------------------------------------------------------

def _select(cases: List[Dict[str, Any]], patterns: Optional[List[str]]) -> List[Dict[str, Any]]:
    if not patterns:
        return cases
    chosen = [c for c in cases if any(fnmatch.fnmatchcase(c["name"], p) for p in patterns)]
    if not chosen:
        raise SystemExit(f"error: no corpus case matches {patterns}; names look like 'conv/1d/same/dense'")
    return chosen


def record_all(patterns: Optional[List[str]] = None, out_file: str = OUT_FILE) -> List[Dict[str, Any]]:
    every = _load_module("cases").all_cases()
    cases = _select(every, patterns)
    by_version: Dict[Any, List[Dict[str, Any]]] = {}
    for case in cases:
        by_version.setdefault(case["behavior_version"], []).append(case)
    results: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for version, group in by_version.items():
            cases_file, result_file = os.path.join(tmp, f"cases_{version}.json"), os.path.join(tmp, f"out_{version}.json")
            with open(cases_file, "w") as f:
                json.dump(group, f)
            subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", cases_file, result_file],
                           check=True, cwd=tmp)
            with open(result_file) as f:
                results.extend(json.load(f))
    kept = []
    if patterns and os.path.exists(out_file):
        names = {r["name"] for r in results}
        with open(out_file) as f:
            defined = {c["name"] for c in every}  # a case no longer in the corpus is dropped
            kept = [r for r in json.load(f)["cases"] if r["name"] not in names and r["name"] in defined]
    import returnn
    import tensorflow as tf

    merged = sorted(kept + results, key=lambda r: r["name"])
    os.makedirs(os.path.dirname(out_file), exist_ok=True)
    with open(out_file, "w") as f:
        json.dump({"recorded_with": {"returnn": returnn.__version__, "tensorflow": tf.__version__},
                   "cases": merged}, f, indent=None, separators=(",", ":"))
        f.write("\n")
    return merged


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="record only the cases whose name matches (fnmatch patterns)")
    parser.add_argument("--out", default=OUT_FILE, help="the fixture file to write")
    parser.add_argument("--worker", nargs=2, metavar=("CASES_JSON", "RESULT_JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    try:
        import returnn  # noqa: F401
    except ImportError:
        print("error: returnn is not importable here; run this tool in the scratch venv (see its docstring)",
              file=sys.stderr)
        return 2
    merged = record_all(args.only, args.out)
    refused = sum(1 for r in merged if "error" in r)
    numeric = sum(1 for r in merged if "numbers" in r)
    print(f"{len(merged)} cases in {os.path.relpath(args.out, ROOT)}: {refused} refused by RETURNN, "
          f"{numeric} with numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
