"""Classification Accuracy Score: real images reproduce the real-trained ceiling, shuffled
labels fall to chance, and the same recipe gives the same score (small sizes: 200 images a
class for 5 epochs, 2,000 test images; 100 a class for 3 epochs left the model so far from
converged that two real subsets differed by 0.07)."""
import numpy as np
import pytest

from experiments.data import fashion_mnist_images
from experiments.evaluation import cas
from experiments.records import CasRecipe, CasScore, RecordError
from sngan.sampling import balanced_labels

RECIPE = CasRecipe(per_class=200, epochs=5)
CEILING_TOLERANCE = 0.05  # another 1,000 real images vs the ceiling's; measured gap: below


class RealImageSampler:
    """A 'generator' that hands out real training images of the asked-for class, the next
    unused one each time, starting after the ceiling's (first `skip` of each class); with
    `shuffle_labels` it reports a random label instead of the asked-for one."""
    num_classes = 10

    def __init__(self, images, labels, skip: int, shuffle_labels: bool = False):
        self.by_class = [images[np.flatnonzero(labels == c)[skip:]] for c in range(10)]
        self.used = [0] * 10
        self.rng = np.random.default_rng(5) if shuffle_labels else None

    def batches(self, num, seed, bn_mode="batch", batch_size=500, standing_batches=10):
        labels = balanced_labels(num, 10)
        for start in range(0, num, batch_size):
            y = labels[start:start + batch_size]
            x = []
            for c in y:
                x.append(self.by_class[c][self.used[c]])
                self.used[c] += 1
            yield np.stack(x), (self.rng.integers(0, 10, len(y)) if self.rng else y)


@pytest.fixture(scope="module")
def fashion():
    x_train, y_train = fashion_mnist_images("train")
    x_test, y_test = fashion_mnist_images("test")
    return (x_train[:20000], y_train[:20000]), (x_test[:2000], y_test[:2000])


@pytest.fixture(scope="module")
def ceiling(fashion):
    return cas.real_ceiling(*fashion, RECIPE)


def test_first_per_class_takes_the_first_of_each_class_in_order():
    labels = np.array([2, 0, 1, 0, 2, 1, 1, 0, 2])
    np.testing.assert_array_equal(cas.first_per_class(labels, 2, 3), [0, 1, 2, 3, 4, 5])
    with pytest.raises(cas.CasError, match="class 0 has 3 images"):
        cas.first_per_class(labels, 4, 3)


@pytest.mark.slow
def test_ceiling_is_a_record_of_the_recipe(ceiling):
    assert ceiling.trained_on == "train" and ceiling.recipe == RECIPE
    assert ceiling.n_train == 2000 and ceiling.n_test == 2000
    assert 0.6 < ceiling.accuracy < 0.95  # 2,000 real images, 5 epochs
    assert len(ceiling.per_class_accuracy) == 10
    assert CasScore.from_dict(ceiling.to_dict()) == ceiling


@pytest.mark.slow
def test_cas_of_real_images_reproduces_the_ceiling(fashion, ceiling):
    sampler = RealImageSampler(*fashion[0], skip=RECIPE.per_class)
    score = cas.score_generator(sampler, fashion[1], RECIPE, "batch")
    assert score.trained_on == "generated" and score.bn_mode == "batch"
    assert abs(score.accuracy - ceiling.accuracy) <= CEILING_TOLERANCE, (
        score.accuracy, ceiling.accuracy)


@pytest.mark.slow
def test_cas_of_shuffled_labels_is_chance(fashion):
    sampler = RealImageSampler(*fashion[0], skip=0, shuffle_labels=True)
    score = cas.score_generator(sampler, fashion[1], RECIPE, "batch")
    assert abs(score.accuracy - 0.1) <= 0.05, score.accuracy  # 10 balanced classes


@pytest.mark.long
def test_same_recipe_same_score(fashion, ceiling):
    again = cas.real_ceiling(*fashion, RECIPE)
    assert again.accuracy == ceiling.accuracy
    assert again.per_class_accuracy == ceiling.per_class_accuracy


def test_recipe_is_validated_and_keyed():
    with pytest.raises(RecordError, match="per_class must be >= 1"):
        CasRecipe(per_class=0)
    assert CasRecipe().key != CasRecipe(seed=1).key
    assert CasRecipe().key.startswith("cas_1000pc_e3_b128_s0_z1234_")
    with pytest.raises(cas.CasError, match="only the architecture"):
        cas.train_and_test(np.zeros((1, 32, 32, 1)), [0], np.zeros((1, 32, 32, 1)), [0],
                           CasRecipe(architecture="resnet"))


def test_images_of_another_shape_are_refused():
    with pytest.raises(cas.CasError, match=r"shape \[N, 32, 32, 1\]"):
        cas.check_images(np.zeros((4, 28, 28, 1)), [0, 1, 2, 3], "training set")
