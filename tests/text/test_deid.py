"""De-identification placeholders (radaudit.text.deid): what is and is not one."""

from radaudit.text.deid import is_placeholder, strip_placeholders


def test_placeholder_forms():
    assert [is_placeholder(t) for t in ("XXXX", "xx", "XXXXXXXX", "<XXXX>", "___", "<DATE_1>", "[**2101-3-4**]")] == [True] * 7
    assert [is_placeholder(t) for t in ("x", "xray", "xxiv", "taxxxi", "<b>", "_")] == [False] * 6
    assert strip_placeholders("PICC XXXX catheter").split() == ["PICC", "catheter"]
