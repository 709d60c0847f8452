"""Running the study: one point (train, score, record) and the sweep over batch sizes."""
