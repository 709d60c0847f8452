"""The in-memory input pipeline: the batch contract, sharding, epochs, determinism, resuming,
and data that is missing only when the pipeline is built."""
import numpy as np
import pytest
import tensorflow as tf
from dataset_helpers import N_SYNTH, ctx, decode_index, take

from experiments import data
from experiments.config import DataConfig


def test_missing_data_fails_when_the_pipeline_is_built(tmp_path):
    input_fn = data.make_input_fn(DataConfig(data_dir=str(tmp_path)), 64, "train", seed=0)
    with pytest.raises(data.DatasetError, match=str(tmp_path)):
        input_fn(None)


def test_real_fashion_mnist_batches_follow_the_contract():
    ds = data.make_input_fn(DataConfig(), 64, "train", seed=0)(ctx(0, pipelines=1))
    images_spec, labels_spec = ds.element_spec
    assert images_spec == tf.TensorSpec([32, 32, 32, 1], tf.float32)  # 64 over 2 replicas
    assert labels_spec == tf.TensorSpec([32], tf.int32)
    images, labels = take(ds, 4)
    assert -1.0 <= images.min() and images.max() <= 1.0 and images.max() > 0.9
    assert set(labels.tolist()) <= set(range(10))


def test_two_input_pipelines_get_disjoint_shards(synth_dir):
    cfg = DataConfig(data_dir=synth_dir)
    seen = []
    for pipeline_id in (0, 1):
        ds = data.make_input_fn(cfg, 20, "train", seed=3, repeat=False)(ctx(pipeline_id))
        images, labels = take(ds, -1)
        index = decode_index(images)
        assert len(index) == N_SYNTH // 2
        np.testing.assert_array_equal(np.sort(index), np.arange(pipeline_id, N_SYNTH, 2))
        np.testing.assert_array_equal(labels, index % 10)  # images and labels stay paired
        seen.append(index)
    assert not set(seen[0]) & set(seen[1])


def test_each_epoch_is_a_fresh_permutation_and_order_is_seeded(synth_dir):
    cfg = DataConfig(data_dir=synth_dir)
    images, _ = take(data.make_input_fn(cfg, 100, "train", seed=7)(None), 20)
    first, second = decode_index(images[:N_SYNTH]), decode_index(images[N_SYNTH:])
    np.testing.assert_array_equal(np.sort(first), np.arange(N_SYNTH))
    np.testing.assert_array_equal(np.sort(second), np.arange(N_SYNTH))
    assert (first != second).mean() > 0.9 and (first != np.arange(N_SYNTH)).mean() > 0.9
    again, _ = take(data.make_input_fn(cfg, 100, "train", seed=7)(None), 20)
    np.testing.assert_array_equal(images, again)
    other, _ = take(data.make_input_fn(cfg, 100, "train", seed=8)(None), 10)
    assert (decode_index(other) != first).mean() > 0.9


def test_skip_batches_resumes_exactly_across_an_epoch_boundary(synth_dir):
    # One pipeline feeding 2 replicas: a global batch of 20 is two pipeline batches of 10, so
    # 47 global batches = 940 of the 1000 examples; the next 13 batches cross into epoch 2.
    cfg = DataConfig(data_dir=synth_dir)
    context = ctx(0, pipelines=1, replicas=2)
    full, full_labels = take(data.make_input_fn(cfg, 20, "train", seed=5)(context), 107)
    resumed, labels = take(data.make_input_fn(cfg, 20, "train", seed=5, skip_batches=47)(context),
                           13)
    np.testing.assert_array_equal(resumed, full[940:])
    np.testing.assert_array_equal(labels, full_labels[940:])


def test_unshuffled_pipeline_reads_in_file_order_with_the_numpy_transform(synth_dir):
    cfg = DataConfig(data_dir=synth_dir)
    ds = data.make_input_fn(cfg, 50, "test", seed=0, repeat=False, shuffle=False)(None)
    images, labels = take(ds, -1)
    reference, ref_labels = data.fashion_mnist_images("test", data_dir=synth_dir)
    np.testing.assert_array_equal(images, reference)
    np.testing.assert_array_equal(labels, ref_labels)
