"""The reduced grappler pass set of large step graphs (`engine/graph_passes.py`): chosen by the traced op count,
applied to the step's own calls only, and computing what TF's default passes compute."""

import io

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2
from tensorflow.python.eager import context

from netcompiler.engine import graph_passes
from netcompiler.engine.graph_passes import SizedStep
from netcompiler.engine.precision import StepCompute
from test_trainer_updates import batch, make_trainer, state

OFF = rewriter_config_pb2.RewriterConfig.OFF


def rewrite_options():
    config = tf.compat.v1.ConfigProto()
    config.ParseFromString(context.context().function_call_options.config_proto_serialized)
    return config.graph_options.rewrite_options


def recording_step(seen):
    """A tf.function of about 10 ops and a callable running it that records the rewrite options of each call."""
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)], autograph=False)
    def function(x):
        return tf.reduce_sum(tf.nn.relu(x * 2.0 + 1.0))

    def step(x):
        seen.append(rewrite_options())
        return function(x)
    return step, function


def test_large_graph_runs_with_reduced_passes_and_small_with_defaults():
    for threshold, reduced in ((0, True), (10 ** 6, False)):
        seen, large = [], []
        step, function = recording_step(seen)
        sized = SizedStep(step, function, on_large=large.append, threshold=threshold)
        for _ in range(2):
            assert float(sized(np.array([1.0, -3.0], np.float32))) == 3.0
        ops = len(function.get_concrete_function().graph.get_operations())
        assert sized.graph_ops == ops
        assert large == ([ops] if reduced else [])  # reported once
        for options in seen:
            assert (options.dependency_optimization == OFF) == reduced
            assert (options.meta_optimizer_iterations == rewriter_config_pb2.RewriterConfig.ONE) == reduced
            assert options.disable_tfg_optimizer == reduced
            assert (options.remapping == OFF) == reduced
            assert options.common_subgraph_elimination != OFF  # kept in both
    assert rewrite_options().dependency_optimization != OFF  # calls outside the step keep the process's options


def test_reduce_false_keeps_defaults():
    seen = []
    step, function = recording_step(seen)
    sized = SizedStep(step, function, reduce=False, threshold=0)
    sized(np.array([1.0], np.float32))
    assert sized.options is None and seen[0].dependency_optimization != OFF


def test_trainer_with_reduced_passes_trains_as_with_defaults(monkeypatch):
    results = {}
    for threshold in (0, 10 ** 6):
        monkeypatch.setattr(graph_passes, "LARGE_GRAPH_OPS", threshold)
        trainer, optimizer = make_trainer()
        trainer.log = io.StringIO()
        objectives = [float(trainer.train_step(*batch(seed))[1]) for seed in range(3)]
        objectives.append(float(trainer.eval_step(*batch(5))[1]))
        assert (trainer.train_step.options is not None) == (threshold == 0)
        assert ("train step:" in trainer.log.getvalue()) == (threshold == 0)
        results[threshold] = objectives, state(trainer, optimizer)
    np.testing.assert_allclose(results[0][0], results[10 ** 6][0], rtol=1e-5)
    for a, b in zip(results[0][1], results[10 ** 6][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_trainer_amp_and_jit_keep_their_own_options(monkeypatch):
    monkeypatch.setattr(graph_passes, "LARGE_GRAPH_OPS", 0)
    for compute in (StepCompute(amp_dtype="bfloat16"), StepCompute(jit=True)):
        trainer, _ = make_trainer()
        trainer.compute = compute
        step = trainer._compiled(trainer._train_step, "train")
        assert step.reduce is False
