"""The image as JSON values and back (schemas/state/codec.py): every image a history folds to decodes to
itself after a trip through json, and values that are not an image are refused in one line."""
from __future__ import annotations

import json

import pytest

from schemas.state.codec import KEYS, ImageCodecError, decode, encode
from schemas.state.delta import fold
from schemas.state.image import EMPTY
from services.simulator import SimConfig, simulate


def trip(image):
    return decode(json.loads(json.dumps(encode(image))))


@pytest.mark.parametrize("zookeeper", [False, True])
def test_a_folded_history_decodes_to_the_same_image(zookeeper):
    image = fold(simulate(SimConfig(seed=11, events=2000, zookeeper=zookeeper)))
    assert image.partitions and image.brokers
    assert list(encode(image)) == list(KEYS)
    assert trip(image) == image


def test_the_empty_image():
    assert trip(EMPTY) == EMPTY


@pytest.mark.parametrize("damage", [
    lambda d: d["states"]["leader"].__setitem__(0, 1.5),
    lambda d: d["partitions"]["s"].__setitem__(0, -1),
    lambda d: d.pop("brokers"),
    lambda d: d["brokers"][0].__setitem__(2, 1),
])
def test_values_that_are_not_an_image_are_refused(damage):
    d = json.loads(json.dumps(encode(fold(simulate(SimConfig(seed=3, events=300))))))
    damage(d)
    with pytest.raises(ImageCodecError, match=r"^malformed payload \("):
        decode(d)
