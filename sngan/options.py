"""The named choices the model library accepts, importable without TensorFlow (configs check
them before TensorFlow starts)."""
LOSSES = ("hinge", "non_saturating")
BN_MODES = ("batch", "moving", "standing")  # generator BN statistics while sampling
