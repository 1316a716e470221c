"""What the checks hold an answer to (issue 21): the claimed answer, not any mention; the rounding the query states;
pairs as pairs. Fast: the checks' own helpers on answers as people write them, English and Chinese."""
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "checks"))
from charts import assert_names  # noqa: E402
from common import Parts, assert_rounded, award  # noqa: E402
from text import minutes_owner_actions  # noqa: E402

FRUITS = ["Apple", "Banana", "Cherry", "Mango", "Pear"]


@pytest.mark.parametrize("answer", [
    "Banana sold the most units: 1,240.",
    "The best seller is **Banana** (1,240 units), ahead of Apple.",
    "销量最高的是 Banana，共 1240 件，其次是 Apple。",
])
def test_the_claimed_item_passes(answer):
    assert_names(answer, "Banana", FRUITS, "fruit")


@pytest.mark.parametrize("answer", [
    "Apple sold the most units; Banana follows with 1,240.",
    "销量最高的是 Apple，Banana 排第二（1240 件）。",
    "Apple 980, Banana 1240, Cherry 700, Mango 610, Pear 400.",  # every candidate named, none put forward
])
def test_a_mention_that_is_not_the_claim_fails(answer):
    with pytest.raises(AssertionError):
        assert_names(answer, "Banana", FRUITS, "fruit")


@pytest.mark.parametrize("answer, passes", [
    ("x(10) ≈ 0.4180", True),
    ("x(10) = 0.41803", True),
    ("x(10) 约为 0.4180", True),
    ("x(10) ≈ 0.418", False),  # 3 decimals where 4 were asked
    ("x(10) ≈ 0.4183", False),  # wrong in the 4th decimal
    ("x(10) ≈ 0.42", False),
])
def test_the_rounding_the_query_states(answer, passes):
    if passes:
        assert_rounded(answer, 0.4180256, 4, "x(10)", ["x(10)"])
    else:
        with pytest.raises(AssertionError):
            assert_rounded(answer, 0.4180256, 4, "x(10)", ["x(10)"])


@pytest.mark.parametrize("answer, passes", [
    ("Tomas Reyes: renew the venue contract (due 12/04/2024) and collect translation quotes (due 26/04/2024).", True),
    ("- Renew the venue contract, due April 12, 2024\n- Collect translation quotes, due April 26, 2024", True),
    ("分配给 Tomas Reyes 的有两项：续签 venue contract（2024年4月12日截止），收集 translation 报价（2024年4月26日截止）。", True),
    ("Tomas Reyes: venue contract due 26 April 2024; translation quotes due 12 April 2024.", False),  # dates swapped
    ("Tomas Reyes: venue contract and translation quotes, due 12 April 2024 and 26 April 2024.", False),  # not paired
])
def test_an_action_and_its_due_date_are_checked_as_a_pair(answer, passes):
    if passes:
        minutes_owner_actions(answer, ROOT, ROOT)
    else:
        with pytest.raises(AssertionError):
            minutes_owner_actions(answer, ROOT, ROOT)


# --- partial credit: parts are values the check reports, never text read back -------------------------------------

MINT = "41 x); bonus 1000/1 (granted"  # an answer that closes a quoted part and opens another in the reason's text


def test_partial_credit_comes_from_the_checks_values_not_from_its_reason():
    """award's parts cross the check jail as JSON values (jailed.parts_json) and are read back by harness.awarded_parts:
    an answer quoted in a part's why stays inside that why; a part that earns more than it may, or any other shape,
    is no parts at all (the check's error, one line), so a task never earns more than its points."""
    import json
    from kit.harness import awarded_parts
    from kit.jailed import PARTS_JSON, parts_json

    def stated():  # (raised, not asserted: pytest rewrites a test module's asserts and adds to their messages)
        raise AssertionError(f"you wrote {MINT}, not 144")
    with pytest.raises(Parts) as caught:
        award(stated=(1, stated), written=(3, lambda: None))
    assert caught.value.parts == [("stated", 0, 1, f"you wrote {MINT}, not 144"), ("written", 3, 3, "")]
    assert str(caught.value) == f"parts: stated 0/1 (you wrote {MINT}, not 144); written 3/3"
    carried = awarded_parts(parts_json(caught.value.parts))
    assert carried == [["stated", 0, 1, f"you wrote {MINT}, not 144"], ["written", 3, 3, ""]]
    assert sum(row[1] for row in carried) / sum(row[2] for row in carried) == 0.75
    huge = parts_json([("a", 0, 1, "\u202e\"" * 5000), ("b", 1, 1, "")])  # a long why is cut, the list arrives whole
    assert len(huge) <= PARTS_JSON and [row[:3] for row in awarded_parts(huge)] == [["a", 0, 1], ["b", 1, 1]]
    for forged in ([["bonus", 1000, 1, ""]], [["a", -1, 1, ""]], [["a", float("nan"), 1, ""]], [["a", "1", 1, ""]], [["a", 0, 0, ""]],
                   [["a", 1, 2]], [], {"a": 1}, 7):
        assert awarded_parts(json.dumps(forged)) == []
    assert awarded_parts(parts_json([("a", 0, 1, "x")])[:-3]) == [] and awarded_parts("parts: bonus 1000/1") == []
