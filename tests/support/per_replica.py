"""Reading a variable created under a tf.distribute strategy, one copy per replica."""


def replica_copies(variable):
    """The per-replica copies of a Keras variable created under a strategy (one off it)."""
    return getattr(variable.value, "values", (variable.value,))
