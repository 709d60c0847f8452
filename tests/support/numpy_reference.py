"""Convolution and pooling in plain numpy, the independent references for layer tests."""
import numpy as np


def conv_same(x, w, b=0.0):
    """NHWC 'same' convolution (cross-correlation, as TensorFlow) with an odd k x k kernel."""
    k = w.shape[0]
    n, h, wd, _ = x.shape
    p = k // 2
    padded = np.pad(x, [(0, 0), (p, p), (p, p), (0, 0)])
    y = np.zeros((n, h, wd, w.shape[-1]))
    for i in range(k):
        for j in range(k):
            y += np.einsum("nhwc,co->nhwo", padded[:, i:i + h, j:j + wd], w[i, j])
    return y + b


def avg_pool_2x2(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))
