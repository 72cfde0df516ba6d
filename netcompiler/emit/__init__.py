"""TensorFlow emission: turning a built network (templates) into TF ops and variables.

`context.EmitContext` is what a layer's `emit(ctx)` gets; `model.CompiledNetwork`
owns the variables and runs the forward pass and the losses.
"""
