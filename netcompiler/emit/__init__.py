"""Running a built network on a backend: `model.CompiledNetwork` owns the parameters and runs the forward pass
and the losses; `context.EmitContext` holds the layers' outputs (Tensors) of one pass, nested networks and loop
steps included. Layers compute through the op layer (`netcompiler.frontend`), so nothing here names a framework.
"""
