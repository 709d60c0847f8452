"""Data for the study: every dataset as float32 images in [-1, 1] with int labels.

    fashion_mnist            embedded default, read offline from its IDX files (60k/10k,
                             28x28x1, 10 classes), padded to 32x32 (why: see preprocess.py)
    cifar10                  TFDS
    imagenet2012             TFDS, manual download; 128x128 by resizing the shorter side and
                             centre-cropping (DataConfig.resize_method)
    imagenet_resized/32x32   TFDS
    imagenet_resized/64x64   TFDS
    image_folder             one sub-folder per class (see image_folder.py)

Nothing here downloads: TFDS datasets must be prepared beforehand (`tfds build ...` or
`prepare_dataset`); a missing or corrupt dataset raises DatasetError naming the path and
how to get the data. Training code uses `make_input_fn`; evaluation code may use the numpy
helpers (`fashion_mnist_images`, `to_model_images`), which apply the same transform.
"""
from common.lazy_exports import lazy_exports

# Re-exported lazily (PEP 562), as in `replication`: the command line reads split sizes from
# IDX headers (fashion_mnist.py) before TensorFlow starts, which an eager import of the
# pipeline here would defeat.
_EXPORTS = {
    "errors": ["DatasetError"],
    "fashion_mnist": ["DEFAULT_FASHION_MNIST_DIR", "fashion_mnist_images",
                      "load_fashion_mnist_arrays"],
    "image_folder": ["image_folder_classes"],
    "pipeline": ["dataset_size", "make_input_fn", "prepare_dataset"],
    "preprocess": ["preprocess_images", "to_model_images"],
}
__getattr__, __dir__, __all__ = lazy_exports("experiments.data", _EXPORTS, globals())
