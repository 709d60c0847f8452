"""TF-GAN's Inception-v3 (`logits` for IS, `pool_3` for FID), from a local dir or TF-Hub.

Scores are only comparable with published ones when computed by this exact network, so we load
TF-GAN's own module rather than `keras.applications`. Offline machines point
`eval.inception_path` (or $SNGAN_INCEPTION_PATH) at a directory holding the SavedModel; a local
path never touches the network. With only the TF-Hub handle we check once, with a short
timeout, that the host is reachable, and otherwise fail at once with what was tried and how to
provide the model (TF-Hub itself would wait on the network without a limit).
"""
from __future__ import annotations

import hashlib
import os
import socket
import threading
import urllib.parse
from pathlib import Path

import tensorflow as tf

from common.errors import UserError
from common.files import update_hash
from experiments.evaluation.classifiers.base import run_in_batches

NAME = "inception"
ENV_VAR = "SNGAN_INCEPTION_PATH"
DEFAULT_HANDLE = "tensorflow/tfgan/eval/inception/1"
TFHUB_URL = "https://tfhub.dev/"
IMAGE_SIZE = 299
LOGITS, POOL = "logits", "pool_3"
PROBE_TIMEOUT_S = 5.0

HOW_TO_PROVIDE = (
    "Download the module on a machine with network (e.g. `python -c \"import tensorflow_hub as "
    f"hub; print(hub.resolve('{TFHUB_URL}{DEFAULT_HANDLE}'))\"`), copy that directory here and "
    f"set eval.inception_path=DIR (or ${ENV_VAR}=DIR), or use "
    "eval.classifier=fashion_mnist_classifier for Fashion-MNIST.")


class InceptionUnavailable(UserError, RuntimeError):
    """The Inception network could not be loaded; the message says what was tried."""


def is_local_path(source: str) -> bool:
    """Handles look like 'owner/model/...' or URLs; paths are absolute, relative or ~-based."""
    return (source.startswith(("/", "./", "../", "~", "file://"))
            or os.path.isdir(os.path.expanduser(source)))


def handle_url(source: str) -> str:
    return source if "://" in source else TFHUB_URL + source.lstrip("/")


def _reachable(url: str, timeout: float) -> str | None:
    """None if a TCP connection to the URL's host succeeds within `timeout`, else the reason.

    Run in a daemon thread, because DNS lookups ignore socket timeouts.
    """
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    result: list[str | None] = [f"timed out after {timeout:.0f} s"]

    def probe():
        try:
            socket.create_connection((parts.hostname, port), timeout=timeout).close()
            result[0] = None
        except OSError as e:
            result[0] = f"{type(e).__name__}: {e}"

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return result[0]


def resolve(source: str | None = None, probe_timeout: float = PROBE_TIMEOUT_S) -> str:
    """Local directory of the Inception SavedModel, downloading through TF-Hub if needed.

    `source`: a directory, a TF-Hub handle or URL; default $SNGAN_INCEPTION_PATH, then
    TF-GAN's handle.
    """
    source = source or os.environ.get(ENV_VAR) or DEFAULT_HANDLE
    if is_local_path(source):
        path = Path(os.path.expanduser(source.removeprefix("file://"))).resolve()
        if not (path / "saved_model.pb").exists():
            raise InceptionUnavailable(
                f"Inception: no SavedModel at local path {path} (no saved_model.pb found). "
                + HOW_TO_PROVIDE)
        return str(path)

    import tensorflow_hub as hub
    from tensorflow_hub import resolver

    url = handle_url(source)
    cached = Path(resolver.tfhub_cache_dir(use_temp=True)) / hashlib.sha1(
        url.encode("utf8")).hexdigest()
    if (cached / "saved_model.pb").exists():
        return str(cached)  # TF-Hub's own cache: no network needed
    problem = _reachable(url, probe_timeout)
    if problem:
        raise InceptionUnavailable(
            f"Inception: TF-Hub handle {source!r} ({url}) is not in the TF-Hub cache "
            f"({cached}) and the host is unreachable ({problem}). " + HOW_TO_PROVIDE)
    old_timeout = socket.getdefaulttimeout()
    socket.setdefaulttimeout(60.0)  # a stalled download fails instead of hanging
    try:
        return hub.resolve(url)
    except Exception as e:  # noqa: BLE001  (TF-Hub raises many kinds)
        raise InceptionUnavailable(
            f"Inception: downloading {url} failed ({type(e).__name__}: {e}). "
            + HOW_TO_PROVIDE) from e
    finally:
        socket.setdefaulttimeout(old_timeout)


def _callable(module):
    """The module's forward function: `__call__` (TF2) or a signature (TF1 Hub format)."""
    if callable(module):
        return module
    signatures = getattr(module, "signatures", {})
    for key in ("default", "serving_default"):
        if key in signatures:
            fn = signatures[key]
            inputs = list(fn.structured_input_signature[1])  # signatures take keywords only
            if len(inputs) != 1:
                raise InceptionUnavailable(f"Inception signature {key!r} takes {inputs}; "
                                           "expected one image input")
            return lambda images: fn(**{inputs[0]: images})
    raise InceptionUnavailable("Inception SavedModel has neither __call__ nor a 'default' "
                               f"signature (signatures: {list(signatures)})")


def _version(path: str) -> str:
    """sha256 over the graph and variable files: identical modules score identically wherever
    they are stored, and any change of the weights changes the version (and the cache key)."""
    h = hashlib.sha256()
    root = Path(path)
    files = [root / "saved_model.pb"] + sorted((root / "variables").glob("*"))
    for file in files:
        h.update(file.relative_to(root).as_posix().encode() + b"\0")
        update_hash(h, file)
    return h.hexdigest()


class InceptionClassifier:
    """`Classifier` over TF-GAN's Inception: bilinear resize to 299, grey -> RGB, [-1, 1]."""

    name = NAME
    feature_layer = POOL
    # TF-GAN's Inception: logit 0 is 'background', imagenet2012 label l is logit l + 1.
    # imagenet_resized numbers its classes in another order, so it is not listed.
    label_datasets = ("imagenet2012",)
    label_offset = 1
    resize_method = f"bilinear to {IMAGE_SIZE}x{IMAGE_SIZE} (tf.image.resize), grey tiled to RGB"

    def __init__(self, path: str, source: str | None = None):
        self.path = path
        self.source = source or path
        self.version = _version(path)
        try:
            self.module = tf.saved_model.load(path, tags=_tags(path))
        except Exception as e:  # noqa: BLE001
            raise InceptionUnavailable(f"Inception: loading the SavedModel at {path} failed "
                                       f"({type(e).__name__}: {e}). " + HOW_TO_PROVIDE) from e
        forward = _callable(self.module)

        def fn(images):
            images = tf.image.resize(images, [IMAGE_SIZE, IMAGE_SIZE], method="bilinear")
            out = forward(images)
            missing = {LOGITS, POOL} - set(out)
            if missing:
                raise InceptionUnavailable(f"Inception module at {path} lacks outputs "
                                           f"{sorted(missing)} (has {sorted(out)})")
            return (tf.cast(out[LOGITS], tf.float32),
                    tf.reshape(tf.cast(out[POOL], tf.float32), [tf.shape(images)[0], -1]))

        self._rgb_fn = tf.function(fn, input_signature=[
            tf.TensorSpec([None, None, None, 3], tf.float32)])
        logits, features = self._fn(tf.zeros([1, IMAGE_SIZE, IMAGE_SIZE, 3]))
        self.num_classes = int(logits.shape[-1])
        self.feature_dim = int(features.shape[-1])

    def _fn(self, images: tf.Tensor):
        if images.shape[-1] == 1:
            images = tf.image.grayscale_to_rgb(images)
        elif images.shape[-1] != 3:
            raise ValueError(f"inception expects 1 or 3 channels, got {images.shape[-1]}")
        return self._rgb_fn(images)

    def activations(self, images, batch_size: int = 500):
        return run_in_batches(self._fn, images, batch_size, (None, None, None), self.name)


def _tags(path: str):
    """TF1 Hub modules (tfhub_module.pb present) are saved with the empty tag set."""
    return [] if Path(path, "tfhub_module.pb").exists() else None


def load(source: str | None = None) -> InceptionClassifier:
    source = source or os.environ.get(ENV_VAR) or DEFAULT_HANDLE
    return InceptionClassifier(resolve(source), source)

