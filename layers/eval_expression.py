"""The `eval` expression of `combine`/`eval`: the builtins it sees, the dtype it obviously gives, and
`EvalExpression`, the mixin that compiles it at template time (with `out_type`) and evaluates it at emission on
the backend's raw values."""

import ast
import builtins
from typing import Optional, Sequence

from netcompiler import frontend as rf
from netcompiler.tensor import DTYPES, FEATURE, FLOAT_DTYPES, Data

from .broadcast import aligned_sources, broadcast_templates, source_inputs

# Python builtins an `eval` expression sees by name (besides the backend's names, `source`, `self` and
# `eval_locals`). This keeps typos from resolving to surprising builtins; it is no sandbox: configs are trusted code.
EVAL_BUILTINS = ("abs", "all", "any", "bool", "dict", "enumerate", "float", "int", "isinstance", "len", "list",
                 "max", "min", "pow", "range", "round", "sum", "tuple", "zip", "True", "False", "None")


_BOOL_FUNCTIONS = frozenset({
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_not", "logical_xor", "is_nan", "is_inf", "is_finite", "isnan", "isinf", "isfinite", "eq", "ne", "lt",
    "le", "gt", "ge",
})


def eval_result_dtype(expression: str, input_dtypes: Sequence[str]) -> Optional[str]:
    """The dtype an `eval` expression obviously gives, or None if that is not obvious: a comparison or a
    comparing function of the backend's module (equal, logical_and, math.is_nan, ...) gives bool, a cast
    (cast(x, 'int32'), cast(x, <module>.int32), cast(x, dtype=...)) its dtype, `source(i)` alone the i-th
    input's dtype."""
    try:
        tree = ast.parse(expression, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if isinstance(tree, ast.Compare):
        return "bool"
    if not isinstance(tree, ast.Call):
        return None
    func = tree.func.attr if isinstance(tree.func, ast.Attribute) else \
        tree.func.id if isinstance(tree.func, ast.Name) else None
    if func in _BOOL_FUNCTIONS:
        return "bool"
    if func == "cast":
        dtype = tree.args[1] if len(tree.args) > 1 else next((kw.value for kw in tree.keywords if kw.arg == "dtype"),
                                                              None)
        name = dtype.value if isinstance(dtype, ast.Constant) else dtype.attr if isinstance(dtype, ast.Attribute) \
            else None
        return name if name in DTYPES else None
    if func == "source" and len(tree.args) == 1 and not tree.keywords and isinstance(tree.args[0], ast.Constant):
        index = tree.args[0].value
        if isinstance(index, int) and not isinstance(index, bool) and -len(input_dtypes) <= index < len(input_dtypes):
            return input_dtypes[index]
    return None


class EvalExpression:
    """For a layer with options `eval`, `eval_locals` and `out_type` (`combine` with kind "eval", `eval`): its
    output template (`_eval_output`) and its value (`_emit_eval`); see `CombineLayer` for what an expression sees."""

    def _eval_output(self, inputs) -> Data:
        if not self.opts["eval"]:
            raise self.error("kind 'eval' needs the option 'eval' (an expression over source(i))", option="eval",
                             suggestion="e.g. 'eval': 'source(0) * 2'")
        self._compiled_eval()
        out = self._apply_out_type(broadcast_templates(self, inputs))
        gives = eval_result_dtype(self.opts["eval"], [data.dtype for _, data in inputs]) \
            if isinstance(self.opts["eval"], str) else None
        if gives is not None and gives != out.dtype:
            raise self.error(f"option 'eval': {self.opts['eval']!r} gives {gives} values, but the output dtype is "
                             f"{out.dtype}", option="eval",
                             suggestion=f"set 'out_type': {{'dtype': '{gives}'}}, or cast the result in the expression")
        return out

    def _compiled_eval(self):
        expression = self.opts["eval"]
        if callable(expression):  # RETURNN's `"eval": f`: called with the names an expression sees, as keywords
            return expression
        try:
            return compile(expression, f"<eval of layer '{self.name}'>", "eval")
        except SyntaxError as exc:
            raise self.error(f"option 'eval': {expression!r} is not valid Python: {exc.msg}",
                             option="eval") from None

    def _apply_out_type(self, out: Data) -> Data:
        """`out` with the `dtype`, `sparse` and `dim` that `out_type` gives (other keys are checked later)."""
        out_type = self.opts["out_type"] or {}
        if "dtype" in out_type:
            if out_type["dtype"] not in DTYPES:
                raise self.error(f"'out_type' dtype {out_type['dtype']!r} is not a known dtype", option="out_type",
                                 suggestion=f"one of: {', '.join(sorted(DTYPES))}")
            out = out.copy(dtype=out_type["dtype"])
        dim = out_type.get("dim")
        if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0):
            raise self.error(f"'out_type' dim must be a positive int, not {dim!r}", option="out_type",
                             suggestion="e.g. 'out_type': {'dim': 10}")
        sparse = out_type.get("sparse", out.sparse)
        if sparse:
            return self._sparse_out(out, dim, "dtype" in out_type)
        if out.sparse:
            out = out.copy(sparse_dim=None)
        if dim is not None and dim != out.dim:
            if out.feature_dim is None:
                raise self.error(f"'out_type' sets dim={dim}, but the output {out.describe()} has no feature dim",
                                 option="out_type")
            out = out.copy_replace_dim(out.feature_dim, self.new_feature_dim(dim))
        return out

    def _sparse_out(self, out: Data, dim: Optional[int], dtype_given: bool) -> Data:
        if dim is None and not out.sparse:
            raise self.error("'out_type' sets sparse=True, but gives no 'dim' (the number of classes)",
                             option="out_type")
        sparse_dim = out.sparse_dim if dim is None or dim == out.dim else self.new_dim(dim, FEATURE, f"{self.name}:sparse")
        dtype = out.dtype if dtype_given or out.dtype not in FLOAT_DTYPES + ("bool",) else "int32"
        return out.copy(sparse_dim=sparse_dim, dtype=dtype)

    def _emit_eval(self, inputs) -> rf.Tensor:
        layout = broadcast_templates(self, source_inputs(self))  # the output before `out_type`
        values = aligned_sources(inputs, self, layout)
        raws = [rf.raw_for_user_code(v, layout.dims) for v in values]

        def source(i, auto_convert=True, enforce_batch_major=False, as_data=False):
            """The i-th input; `auto_convert` and `enforce_batch_major` are accepted for RETURNN configs and change
            nothing (the layout is always the output's); `as_data` gives it as `rf.UserData` (RETURNN's Data:
            `placeholder`, `time_dim_axis`, `get_sequence_lengths()`, ...)."""
            if not -len(raws) <= i < len(raws):
                raise IndexError(f"source({i}): the layer has {len(raws)} input(s)")
            return rf.user_data(values[i], layout.dims, layout) if as_data else raws[i]

        namespace = {name: getattr(builtins, name) for name in EVAL_BUILTINS}
        namespace = {"__builtins__": namespace, **rf.user_code_globals(), "source": source, "self": self,
                     **(self.opts["eval_locals"] or {})}
        expression, out = self.opts["eval"], self.output
        # out_type gave a new feature dim: the expression makes its size, else size-1 axes take the inputs' lengths
        like = values if layout.dims == out.dims else ()
        try:
            compiled = self._compiled_eval()
            y = compiled(**{k: v for k, v in namespace.items() if k != "__builtins__"}) if callable(compiled) \
                else eval(compiled, namespace)  # noqa: S307 - a config's expression
            return rf.tensor_from_user_code(y, out, broadcast_like=like)
        except rf.UserCodeResultError as exc:
            raise self.error(f"option 'eval': {expression!r} gives {exc}, but the output is {out.describe()} "
                             f"{out.dtype}", option="eval",
                             suggestion="set 'out_type' (e.g. {'dtype': ...}) or cast in the expression") from None
        except Exception as exc:  # any failure of the user's expression is a config error
            raise self.error(f"option 'eval': {expression!r} failed: {type(exc).__name__}: {exc}",
                             option="eval") from None
