"""The trainer: datasets -> batches -> train step -> checkpoints."""
