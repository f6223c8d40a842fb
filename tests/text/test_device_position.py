"""device_position: malpositioned / appropriate / unknown, from the tip and the words after the device."""

from __future__ import annotations

import pytest

from radaudit.text.attributes import extract_devices
from radaudit.text.device_position import device_position


def verdict(sentence):
    return device_position(extract_devices(sentence)[0], sentence)


@pytest.mark.parametrize("sentence, expected", [
    ("Endotracheal tube tip is in the right mainstem bronchus.", "malpositioned"),
    ("ETT tip at the carina.", "malpositioned"),
    ("ETT tip 1 cm above the carina.", "malpositioned"),
    ("ETT tip 10 cm above the carina.", "malpositioned"),
    ("ETT terminates 4 cm above the carina.", "appropriate"),
    ("Endotracheal tube in standard position.", "appropriate"),
    ("Nasogastric tube is coiled in the esophagus.", "malpositioned"),
    ("The feeding tube courses into the right lower lobe bronchus.", "malpositioned"),
    ("Enteric tube side port at the GE junction, recommend advancing.", "malpositioned"),
    ("NG tube tip is in the stomach.", "appropriate"),
    ("Right PICC terminates in the right internal jugular vein.", "malpositioned"),
    ("Left IJ central line tip in the mid SVC.", "appropriate"),
    ("Right IJ catheter tip at the cavoatrial junction.", "appropriate"),
    ("Swan-Ganz catheter tip in the right interlobar pulmonary artery.", "malpositioned"),
    ("Swan-Ganz catheter tip in the main pulmonary artery.", "appropriate"),
    ("The endotracheal tube is malpositioned.", "malpositioned"),
    ("Endotracheal tube present.", None),
    ("Right chest tube in place.", None),
])
def test_verdicts(sentence, expected):
    assert verdict(sentence) == expected


def test_a_past_repositioning_is_not_a_recommendation():
    assert verdict("The nasogastric tube has been advanced and now terminates in the stomach.") == "appropriate"
