"""ConsecutiveParts: the corpus index -> (part, local index) lookup that HDFDataset (files) and CombinedDataset
(sub-datasets) share, against a plain walk over the parts."""

import pytest

from netcompiler.engine.datasets.consecutive import ConsecutiveParts


def _walk(sizes):
    """Every corpus index's (part, local index), by enumerating the parts one after another."""
    return [(position, local) for position, size in enumerate(sizes) for local in range(size)]


@pytest.mark.parametrize("sizes", [[5], [3, 4], [0, 2, 0, 0, 3], [1, 1, 1], [2, 0], [7, 0, 1]])
def test_locate_matches_walking_the_parts(sizes):
    parts = ConsecutiveParts(sizes)
    expected = _walk(sizes)
    assert parts.total == len(expected)
    assert [parts.locate(i) for i in range(parts.total)] == expected
    for position, size in enumerate(sizes):
        if size:
            assert parts.locate(parts.start(position)) == (position, 0)


@pytest.mark.parametrize("index", [-1, 5, 6])
def test_an_index_outside_the_parts_is_an_index_error(index):
    with pytest.raises(IndexError, match=f"corpus index {index} is outside the 5 sequences"):
        ConsecutiveParts([2, 3]).locate(index)
