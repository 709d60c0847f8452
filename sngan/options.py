"""The named choices the model library accepts, and the names it gives files, importable
without TensorFlow (configs and run directories use them before TensorFlow starts)."""
RESOLUTIONS = (32, 64, 128)  # image sizes sngan.models has an architecture for
LOSSES = ("hinge", "non_saturating")
BN_MODES = ("batch", "moving", "standing")  # generator BN statistics while sampling
CHECKPOINTS = "checkpoints"  # the folder under a trainer's workdir that holds its checkpoints
# train.precision (sngan/precision.py); names refused with the reason why
PRECISIONS = ("float32", "bfloat16")
REFUSED_PRECISIONS = {
    "mixed_float16": "float16 needs dynamic loss scaling (keras.optimizers.LossScaleOptimizer) "
                     "around the step's gradient accumulation, and a GPU to verify it; neither "
                     "is implemented or tested in this suite: use train.precision=bfloat16 "
                     "(float32's exponent range, no loss scaling)",
}
