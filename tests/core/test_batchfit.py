"""A learner's predictions at many moments, fitted in one batch, equal its own predictions at each moment."""

import numpy as np
import pytest

from memtrial.values import EmpiricalBayesLearner
from memtrial.values.batchfit import predictions_at


@pytest.mark.parametrize("mode", ["auto", "identity", "content"])
@pytest.mark.parametrize("robust", [False, True])
def test_predictions_at_every_moment_equal_the_learners_own_bit_for_bit(mode, robust):
    rng = np.random.default_rng(2)
    experiences = [f"e{i}" for i in range(10)]
    embeddings = {e: rng.normal(size=6) for e in experiences[:8]}  # two experiences without an embedding
    online = EmpiricalBayesLearner(mode, features=embeddings, robust=robust)
    moments, expected = [], []
    for date in range(40):
        asked = tuple(rng.choice(experiences, size=4, replace=False))
        moments.append((online.statistics.snapshot(), asked))
        expected.append(online.predict_modes(asked))
        chosen = rng.choice(experiences, size=int(rng.integers(1, 5)), replace=False)
        online.update(date, {e: float(rng.normal(0.1 * (e == "e3"))) for e in chosen})
    batched = EmpiricalBayesLearner(mode, features=embeddings, robust=robust)
    assert predictions_at(batched, moments) == expected
    assert moments[0][0] is None and expected[0] == dict.fromkeys(expected[0], (0.0,) * 4)  # before any record
