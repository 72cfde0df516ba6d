"""The command-line tools: `dump-net` (templates, no TensorFlow) and `compile-net` (build and train)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Callable, List, Optional

from .builtin import load_builtin_layers
from .errors import NetcompilerError

EXIT_USER_ERROR = 2


def run_tool(main: Callable[[argparse.Namespace], int], parser: argparse.ArgumentParser,
             argv: Optional[List[str]]) -> int:
    """Parses arguments, runs `main`; a user error becomes one message and exit status 2."""
    args, rest = parser.parse_known_args(argv)
    args.overrides = rest
    load_builtin_layers()  # before the config runs: a layer class it defines adds to the built-in ones
    try:
        return main(args)
    except NetcompilerError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _base_parser(prog: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description=description,
        epilog="Config settings can be overridden: ++KEY VALUE (VALUE is a Python literal or a string).")
    parser.add_argument("config", help="the config file (Python)")
    parser.add_argument("--debug", action="store_true", help="show internal tracebacks")
    return parser


def _print_notices(notices) -> None:
    for notice in notices:
        print(f"notice: {notice}", file=sys.stderr)


def _dump(args) -> int:
    """Prints the dump; whatever the config's own code prints (RETURNN's demos greet) goes to stderr, so that
    stdout is just the dump (--json and --dot stay machine-readable)."""
    with contextlib.redirect_stdout(sys.stderr):
        text = _dump_text(args)
    print(text)
    return 0


def _dump_text(args) -> str:
    from .config import load_config
    from .dump import format_dot, format_json, format_text
    from .engine.frontend_model import is_frontend_config
    from .errors import ConfigError
    from .network import build_network

    config = load_config(args.config, args.overrides)
    formatter = format_json if args.json else format_dot if args.dot else format_text
    try:
        if is_frontend_config(config.values):  # a model as Python code: its parameters and the losses it marks
            return _dump_frontend(config, formatter)
        network = build_network(_epoch_config(config, args.epoch))
    except ConfigError as exc:  # about a top-level setting: say where it is set
        config.locate(exc)
        raise
    _print_notices(config.notices + network.notices)
    return formatter(network)


def _epoch_config(config, epoch):
    """The config of epoch `epoch` (dump-net --epoch; default: the final network) when the network changes per
    epoch (pretrain, get_network); else the config itself (the same network in every epoch)."""
    from .engine.epoch_networks import epoch_network_config
    from .errors import InvalidOptionError
    from .network_schedule import NetworkSchedule

    if epoch is not None and epoch < 1:
        raise InvalidOptionError(f"epochs count from 1, got {epoch}", subject="option --epoch",
                                 suggestion="give an epoch >= 1, or leave --epoch out for the final network")
    schedule = NetworkSchedule.from_config(config.values)
    if schedule is None:
        if epoch is not None:
            _print_notices(["--epoch: this config's network is the same in every epoch (no pretrain, get_network)"])
        return config
    chosen, epoch_network = epoch_network_config(config, schedule, epoch)
    kind = "a pretraining epoch; " if epoch_network.is_pretrain else ""
    _print_notices([f"the network of epoch {epoch_network.epoch} ({kind}{schedule.describe()}); dump-net --epoch N "
                    f"shows another epoch's"])
    return chosen


def _dump_frontend(config, formatter) -> str:
    """The model's parameters and marked losses, then the layer dict it becomes (--json/--dot: just the dict)."""
    from .dump import format_text
    from .engine.frontend_dump import format_frontend_text
    from .engine.frontend_layers import LayerDictModel, format_layer_dict
    from .engine.frontend_model import FrontendModel
    from .engine.main import backend_name
    from .errors import ConfigError

    _print_notices(config.notices)
    model = FrontendModel(config, backend_name(config))
    no_dict = "get_model() returns a plain PyTorch module: it has no rf ops to record"
    if formatter is not format_text and model.is_torch_module:
        raise ConfigError(f"--json and --dot show the layer dict of a model, and {no_dict}",
                          subject=f"config {config.path}", suggestion="run dump-net without --json/--dot to see "
                                                                      "its parameters")
    if formatter is not format_text:
        return format_layer_dict(LayerDictModel(config, seed=config.get("random_seed", 42)), formatter)
    lines = [format_frontend_text(model)]
    if model.is_torch_module:
        return "\n".join(lines + [f"layer dict: none ({no_dict})"])
    try:
        layer_model = LayerDictModel(config, seed=config.get("random_seed", 42))
    except ConfigError as exc:
        return "\n".join(lines + [f"layer dict: none ({exc})"])
    return "\n".join(lines + [format_layer_dict(layer_model, formatter)])


def dump_net_main(argv: Optional[List[str]] = None) -> int:
    parser = _base_parser("dump-net", "Show every layer's inferred output template and parameters, "
                                      "without running anything.")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="machine-readable JSON")
    output.add_argument("--dot", action="store_true", help="a Graphviz graph with the shape on each edge")
    parser.add_argument("--epoch", type=int, default=None, help="the network of this epoch, when it changes per "
                                                                "epoch (pretrain, get_network); default: the final one")
    return run_tool(_dump, parser, argv)


def _compile(args) -> int:
    from .engine.main import run_task

    return run_task(args.config, args.overrides, task=args.task)


def compile_net_main(argv: Optional[List[str]] = None) -> int:
    parser = _base_parser("compile-net", "Build the config's network in TensorFlow and train it "
                                         "(or evaluate it, or write its outputs).")
    parser.add_argument("--task", choices=["train", "eval", "forward", "search", "export"], default=None,
                        help="what to do (default: the config's 'task', else train)")
    from .engine.distributed import end_worker_process, torch_groups_started

    groups = torch_groups_started()
    code = run_tool(_compile, parser, argv)
    if torch_groups_started() > groups:  # a torch.distributed worker: see end_worker_process
        end_worker_process(code)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(dump_net_main())
