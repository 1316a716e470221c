"""Reading classes found by solutions written blind (issue 21: writers who had read only the queries and input files;
docs/checks.md). Fast: the checks' own readers on answers as those writers wrote them, English and Chinese."""
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "checks"))
from charts import _slice_label, assert_names  # noqa: E402
from common import assert_stated, labelled_numbers, quantities  # noqa: E402


def read(answer, aliases, **options):
    return [q.value for q in labelled_numbers(answer, aliases, **options)]


@pytest.mark.parametrize("answer, aliases, expected", [
    ("| colour | shapes |\n|---|---|\n| red | 3 |\n| blue | 2 |\n| **total** | **9** |", ["red"], 3),  # a table row
    ("| colour | shapes |\n|---|---|\n| red | 3 |\n| blue | 2 |\n| **total** | **9** |", ["total"], 9),
    ("| 颜色 | 数量 |\n|---|---|\n| 红色 | 3 |\n| 合计 | 9 |", ["合计"], 9),
    ("So the picture contains 9 coloured shapes, 3 of which are red.", ["red"], 3),  # 'red' is not in 'coloured'
    ("Total shapes: 9 (red: 3)", ["red"], 3),  # the number after 'label:'
    ("The dominant eigenvalue, the one with the largest absolute value, is −9.993769.", ["dominant"], -9.993769),
    ("The largest one, which one wins: the dominant eigenvalue is -9.99.", ["dominant"], -9.99),
])
def test_a_number_belongs_to_its_label_in_tables_appositives_and_after_a_colon(answer, aliases, expected):
    assert read(answer, aliases)[:1] == [expected]


def test_the_one_as_a_pronoun_is_no_number():
    assert [q.value for q in quantities("the one with the largest absolute value; this one; one of 5; one review")] == [1, 5, 1]


@pytest.mark.parametrize("answer, passes", [
    ('The most frequent word is "battery" (69 times), followed by "phone".', True),
    ("After leaving out stopwords, battery is the most frequent word.", True),  # 'the' in prose is no claim
    ('The most frequent word is "the" (97 times), followed by "battery" (69).', False),
    ("最常见的词是 **the**（97 次），其次是 battery。", False),
])
def test_a_stopword_put_forward_as_the_top_word_fails(answer, passes):
    def check():
        assert_names(answer, "battery", ["battery", "phone", "life"], "most frequent word", marked=["the", "and", "is"])
    if passes:
        check()
    else:
        with pytest.raises(AssertionError):
            check()


@pytest.mark.parametrize("answer, passes", [
    ("平均评分最高的产品是 **VoltGo Power Bank**：共有 **6 条**评论，平均分 **4.33**。其他产品：TrailBuds 3.86、AeroBlend 3.83、Lumo 2.60。", True),
    ("| 产品 | 平均分 |\n|---|---|\n| **VoltGo** | **4.33** |\n| TrailBuds | 3.86 |\n| AeroBlend | 3.83 |", True),
    ("VoltGo 4.33, TrailBuds 3.86, AeroBlend 3.83, Lumo 2.60.", False),  # a spray: nothing put forward
    ("The average is **4.33**, **3.86** or **3.83**, depending on the parse.", False),  # several put forward
])
def test_a_bold_result_with_a_ranking_beside_it_is_no_spray(answer, passes):
    def check():
        assert_stated(answer, 26 / 6, rel=0, abs_tol=0.006, what="the average", others=[3.857, 3.833, 2.6], max_others=1)
    if passes:
        check()
    else:
        with pytest.raises(AssertionError):
            check()


@pytest.mark.parametrize("label, expected", [
    ("Windows\n38.1%", "windows"), ("iOS (13)", "ios"), ("macOS: 28.1 %", "macos"),
    ("Windows 11", "windows 11"),  # itself a category: kept whole
])
def test_a_pie_label_with_its_share_is_its_category(label, expected):
    assert _slice_label(label, {"windows", "ios", "macos", "windows 11"}) == expected


@pytest.mark.parametrize("answer, passes", [
    ("| x | y | z |\n|---|---|---|\n| 1 | 2 | 3 |\n| 22/7 | 9/7 | 11/7 |", True),
    ("(1, 2, 3) and (22/7, 9/7, 11/7) ≈ (3.142857, 1.285714, 1.571429)", True),
    ("The real solutions are (1.0, 2.0, 3.0) and (3.1429, 1.2857, 1.5714).", False),  # exact values were asked
    ("| x | y | z |\n|---|---|---|\n| 1 | 2 | 3 |", False),
])
def test_the_solutions_are_read_from_a_table_and_must_be_exact(answer, passes):
    import maths

    if passes:
        maths.system_solutions(answer, ROOT, ROOT)
    else:
        with pytest.raises(AssertionError):
            maths.system_solutions(answer, ROOT, ROOT)


def test_a_formula_ends_at_a_comma_before_words_and_at_a_sentence_end():
    import maths

    pieces = maths._expression_candidates("The integral is ∫₀³ x²·e^(−x) dx = 2 − 17·e^(−3), about 1.153620. The bound b = 2.674060.")
    assert "2 - 17·e^(-3)" in pieces, pieces
