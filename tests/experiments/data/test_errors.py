"""The data layer's one error type: a user error (the command line prints it as one line and
exits 2) that library callers can also catch as the builtin RuntimeError."""
import pytest

from common.errors import UserError
from experiments import data
from experiments.data.errors import DatasetError


@pytest.mark.parametrize("caught_as", [UserError, RuntimeError, DatasetError])
def test_missing_data_raises_the_one_dataset_error(tmp_path, caught_as):
    with pytest.raises(caught_as) as err:
        data.load_fashion_mnist_arrays("train", data_dir=str(tmp_path))
    assert type(err.value) is DatasetError and data.DatasetError is DatasetError
    assert str(tmp_path) in str(err.value)  # the path that was tried

