"""The shared answer reader (checks/answers.py, re-exported by checks/common.py): each way of writing a number that a
careful grader accepts is read right, and each misreading the validity sample found is refused."""
import re
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "checks"))
from common import (assert_claim, assert_labelled, assert_number, assert_stated, labelled_numbers, numbers_in,  # noqa: E402
                    quantities, stated_item)


def values(text):
    return [(q.value, q.unit) for q in quantities(text)]


@pytest.mark.parametrize("text, expected", [
    ("total revenue 348,228.46", [(348228.46, "")]),
    ("2,310 ms", [(2310.0, "ms")]),
    ("EUR 6.010.600,00", [(6010600.0, "")]),
    ("6 010 600 EUR", [(6010600.0, "")]),
    ("1'234 Fr.", [(1234.0, "")]),
    ("growth of 16.0%", [(16.0, "%")]),
    ("16 percent", [(16.0, "%")]),
    ("3.2e-4 and 1.5 × 10^3", [(0.00032, ""), (1500.0, "")]),
    ("５４２", [(542.0, "")]),
    ("about 5k users", [(5000.0, "")]),
    ("2万元 和 3亿", [(20000.0, ""), (300000000.0, "")]),
    ("a 4-page PDF", [(4.0, "pages")]),
    ("4 pages", [(4.0, "pages")]),
    ("it starts on p. 3", [(3.0, "page")]),
    ("Risk Factors: page 3", [(3.0, "page")]),
    ("on the third page", [(3.0, "page")]),
    ("共4页，风险因素在第3页", [(4.0, "pages"), (3.0, "page")]),
    ("nine words and three sentences", [(9.0, ""), (3.0, "")]),
    ("twenty-three of one hundred and five", [(23.0, ""), (105.0, "")]),
    ("共有一百九十九个汉字，茶出现了二十五次", [(199.0, ""), (25.0, "")]),
    ("minus sign −4.5 and -2", [(-4.5, ""), (-2.0, "")]),
])
def test_numbers_are_read_as_written(text, expected):
    assert values(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("9,3", [9.0, 3.0]),  # a list, not nine thousand and three
    ("1, 2, 3", [1.0, 2.0, 3.0]),
    ("on 2023-03-05", [2023.0, 3.0, 5.0]),  # a date's dashes are not minus signs
    ("pages 3-5", [3.0, 5.0]),
    ("Q3 2024", [2024.0]),  # a quarter's name is not a number
    ("6.01 million", [6010000.0]),  # the scale word is not a second number
    ("一些人一起来", []),  # 一 in ordinary words is not one
])
def test_misreadings_are_refused(text, expected):
    assert numbers_in(text) == expected


def test_latex_and_sympy_printing():
    assert numbers_in(r"\left( \frac{22}{7}, 3, \frac{11}{7}\right)") == [22, 7, 3, 11, 7]
    assert_number(r"$x = \frac{1}{2}$, i.e. 0.5", 0.5)


def test_rounded_scale_words_match_the_exact_value_but_not_a_wrong_one():
    assert_number("about EUR 6.01 million", 6010600, rel=1e-6)
    assert_number("€6,010.6k", 6010600, rel=1e-6)
    with pytest.raises(AssertionError):
        assert_number("about EUR 6.03 million", 6010600, rel=1e-6)
    with pytest.raises(AssertionError):
        assert_number("about EUR 6 million", 6010600, rel=1e-6)  # one significant digit claims too little
    with pytest.raises(AssertionError):
        assert_number("6,011,000", 6010600, rel=1e-6)  # written exactly, so held exactly


def test_units_of_time_are_converted():
    assert_number("it took 2,310 ms", 2.31, unit="s")
    assert_number("1.5 min", 90, unit="s")
    with pytest.raises(AssertionError):
        assert_number("it took 2,310 ms", 310, unit="s")


def test_shares_match_as_percent_or_fraction():
    assert_number("accuracy 93.3%", 0.933)
    assert_number("R² = 0.93", 93, rel=1e-2)
    assert_number("accuracy 93", 0.93)
    with pytest.raises(AssertionError):  # a hundredfold misreading of a large number is not a share
        assert_number("2,785,342,221 EUR", 27853422.21, rel=1e-4)


def test_dates_in_the_usual_formats():
    from common import dates_in
    assert (2, 2, 2023) in dates_in("the window ending on 2 February 2023")
    assert (2, 2, 2023) in dates_in("ends 2023-02-02") and (2, 2, 2023) in dates_in("ends 02/02/2023")
    assert (5, 9, None) in dates_in("next meeting May 9")


def test_the_stated_item_is_the_first_in_bold_else_the_first_named():
    options = {"Berlin": ["Berlin"], "Vienna": ["Vienna", "Wien"], "Paris": ["Paris"], "Rome": ["Rome"]}
    assert stated_item("Vienna had the most rain, well ahead of Berlin.", options) == "Vienna"
    assert stated_item("Berlin had 95 mm, but **Wien** topped the list with 120 mm.", options) == "Vienna"
    assert_claim("**Vienna**: 120 mm (Berlin second).", "Vienna", options, "city")
    with pytest.raises(AssertionError, match="names Berlin"):
        assert_claim("Berlin had the most rain; Vienna had less.", "Vienna", options, "city")
    with pytest.raises(AssertionError, match="candidates"):
        assert_claim("Vienna 120, Berlin 95, Paris 80, Rome 60", "Vienna", options, "city")


def test_number_spray_fails():
    assert_stated("The mean is 412.5 (over 40 houses).", 412.5)
    with pytest.raises(AssertionError, match="sprays"):
        assert_stated("Means: 398.1, 405.2, 412.5, 420.0, 433.9", 412.5)
    with pytest.raises(AssertionError, match="other candidate"):
        assert_stated("Either 412.5 or 380.0 or 350.5", 412.5, others=[380.0, 350.5, 300.0])


def test_labelled_numbers_bind_each_count_to_its_label():
    answer = "The story has 448 words and 35 sentences."
    assert_labelled(answer, ["words"], 448, what="word count")
    assert_labelled(answer, ["sentence"], 35, what="sentence count")
    assert_labelled("Words: 448\nSentences: 35", ["sentence"], 35)
    assert_labelled("共有199个汉字，“茶”字出现了25次。", ["茶"], 25)
    assert_labelled("共有199个汉字，“茶”字出现了25次。", ["汉字"], 199)
    with pytest.raises(AssertionError):
        assert_labelled("The story has 35 words and 448 sentences.", ["words"], 448)
    with pytest.raises(AssertionError):
        assert_labelled("nine words and three sentences", ["words"], 3)


# ---------------------------------------------------------------------------------------------- classes of issue 21
@pytest.mark.parametrize("text, expected", [
    ("The dominant eigenvalue is **−9.99377**.", -9.99377),  # Unicode minus inside Markdown bold
    ("The dominant eigenvalue is **-9.99377**.", -9.99377),
    ("dominant: -**9.99377**", -9.99377),  # the sign outside the bold
    ("主特征值为 **−9.99377**。", -9.99377),
    ("the limit is `-0.1667`", -0.1667),
    ("the limit is *−1/6 ≈ -0.16667*", -0.16667),
    (r"$\lambda_{max} = \mathbf{-9.99377}$", -9.99377),
    (r"\boxed{-4}", -4.0),
    ("| eigenvalue | **-9.99** |", -9.99),
    ("最小值为 －3.729", -3.729),  # full-width minus
])
def test_a_minus_sign_next_to_markup_is_a_sign(text, expected):
    assert any(abs(q.value - expected) < 1e-9 for q in quantities(text)), values(text)
    assert_number(text, expected, rel=0, abs_tol=1e-9)


@pytest.mark.parametrize("text", ["2023-03-05", "pages 3-5", "x-3", "**x**-3", "y=2x+1"])
def test_markup_does_not_make_a_dash_into_a_sign(text):
    assert all(q.value >= 0 for q in quantities(text)), values(text)


FIVE_STARS = ["5 star", "5-star", "five star", "five-star", "5 stars", "5星", "五星"]


@pytest.mark.parametrize("text", [
    "7 of the 24 reviews gave 5 stars.",
    "7 out of 24 reviews gave 5 stars.",
    "7/24 reviews gave 5 stars.",
    "The 24 reviews include 7 with 5 stars.",
    "There are 7 five-star reviews out of 24.",
    "24条评论中有7条是5星。",
    "5星评论共7条（共24条）。",
    "7 reviews (29%) gave 5 stars.",
])
def test_a_number_belongs_to_the_noun_it_counts(text):
    assert_labelled(text, FIVE_STARS, 7)
    with pytest.raises(AssertionError):
        assert_labelled(text, FIVE_STARS, 24)


def test_a_number_counting_another_noun_is_not_the_labels():
    answer = "7 reviews gave 5 stars within 3 days."  # 3 counts days; 7 counts reviews, what a 5-star count counts
    assert_labelled(answer, FIVE_STARS, 7, nouns=("review",))
    assert [q.value for q in labelled_numbers(answer, ["days"])] == [3]


def test_labelled_numbers_read_each_noun_phrase_apart():
    answer = "7 of the 24 reviews gave 5 stars"
    assert [q.value for q in labelled_numbers(answer, ["stars"])] == [5]
    assert [q.value for q in labelled_numbers(answer, ["reviews"])] == [24]
    assert [q.value for q in labelled_numbers("共24条评论，其中5星的有7条", ["评论"])] == [24]


@pytest.mark.parametrize("text, expected", [
    ("句子：35；单词：448", [("句子", 35), ("单词", 448)]),
    ("句子数（35），单词数（448）", [("句子", 35), ("单词", 448)]),
    ("The count (sentences：35；words：448)", [("sentences", 35), ("words", 448)]),
])
def test_full_width_punctuation_splits_like_ascii(text, expected):
    for label, number in expected:
        assert_labelled(text, [label], number)


@pytest.mark.parametrize("answer", [
    "泰勒展开：1 + x + x^2/2 - x^4/8 - x^5/15；",
    "泰勒多项式为 1 + x + x²/2 − x⁴/8 − x⁵/15（到五次项）",
    "Taylor: 1 + x + x^2/2 - x^4/8 - x^5/15 (up to x^5)",
    "f(x) = 1 + x + x^2/2 - x^4/8 - x^5/15；（已省略 O(x^6)）",
])
def test_a_formula_followed_by_full_width_punctuation_or_a_note_parses(answer):
    import maths  # what sympy will parse (sympy itself lives in the jail's environment only)

    written = {re.sub(r"[\s()]", "", maths._normalise(piece) or "") for piece in maths._expression_candidates(answer)}
    assert "1+x+x**2/2-x**4/8-x**5/15" in written, written


@pytest.mark.parametrize("answer, passes", [
    ("The recording is 6.5 s long; its trailing silence starts at 4.35 s.", True),
    ("录音总长 6.5 秒，结尾静音从 4.35 秒开始。", True),
    ("Duration 6.50 s. Final silence: from 4350 ms to the end.", True),
    ("The trailing silence starts at 4.35 s.", True),
    ("录音总长 4.35 秒，结尾静音从 6.5 秒开始。", False),
    ("Quiet stretches start at 1.20 s, 2.90 s and 4.35 s; the last is the trailing silence.", False),
])
def test_the_asked_time_is_found_by_its_label_not_its_position(answer, passes):
    import audio

    if passes:
        audio.trailing_silence(answer, ROOT, ROOT)
    else:
        with pytest.raises(AssertionError):
            audio.trailing_silence(answer, ROOT, ROOT)


@pytest.mark.parametrize("answer, passes", [
    ("Decoding took 0.35 s. podcast.mp3 is 7.2 seconds long; sample rate 24000 Hz.", True),
    ("处理耗时 0.3 秒。podcast.mp3 时长 7.2 秒，采样率 24000 Hz。", True),
    ("Read in 0.02 s: duration 7.20 s, 24 kHz.", True),
    ("It is 7.2 s long, sampled at 24 kHz.", True),
    ("Length: 7.2 s (172800 samples at 24000 Hz)", True),
    ("It took 7.2 s to decode; the podcast is 3.9 s long, at 24000 Hz.", False),
    ("解码用了 7.2 秒；音频时长 3.9 秒，采样率 24000 Hz。", False),
    ("It lasts 0.12 minutes and its sample rate is 24000 Hz.", False),  # asked in seconds
])
def test_the_duration_is_read_by_its_label_not_as_the_first_time(answer, passes):
    import audio  # the sample rate and the decoding of podcast.mp3 are proven in the jail (checks/solutions/audio.jsonl)

    stated, unit = audio._stated_seconds(answer)
    assert (unit in ("s", "") and abs(stated - 7.2) <= 0.05) == passes, (stated, unit)
