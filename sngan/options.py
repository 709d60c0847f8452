"""The named choices the model library accepts, and the names it gives files, importable
without TensorFlow (configs and run directories use them before TensorFlow starts)."""
LOSSES = ("hinge", "non_saturating")
BN_MODES = ("batch", "moving", "standing")  # generator BN statistics while sampling
CHECKPOINTS = "checkpoints"  # the folder under a trainer's workdir that holds its checkpoints
