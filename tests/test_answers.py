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


# ---------------------------------------------------------------------------------------------- issue 43: numbers as the world writes them
CITIES = {"Vienna": ["Vienna", "Wien", "Vienne"], "Bergen": ["Bergen"], "Madrid": ["Madrid"]}


@pytest.mark.parametrize("answer", [
    "Im Juli 2022 hatte **Wien** mit 131,1 mm den meisten Niederschlag, vor Bergen (51,7 mm) und Madrid (13,0 mm).",
    "En juillet 2022, c'est **Vienne** qui a reçu le plus de pluie : 131,1 mm au total (Bergen 51,7 mm).",
    "Wien: 131,1 mm Niederschlag im Juli 2022 – die höchste Summe der drei Städte.",
    "2022年7月降水最多的是**维也纳（Vienna）**，共 １３１．１ 毫米。",
])
def test_a_decimal_comma_in_a_german_or_french_answer_is_one_number(answer):
    """Issue 43's refused German answer ('found 2022, 131, 1, 51, 7, 13, 0') and its French and full-width kin."""
    assert_claim(answer, "Vienna", CITIES, "city")
    assert_stated(answer, 131.1, rel=0, abs_tol=0.051, what="the July precipitation")


@pytest.mark.parametrize("text, mark, expected", [
    ("The result is 1,234.", "dot", [1234.0]),  # English: a thousands separator
    ("Das Ergebnis ist 1,234.", "comma, dot groups", [1.234]),  # German: a decimal comma
    ("Le résultat est 1,234 et la moyenne 4,5.", "comma, dot groups", [1.234, 4.5]),
    ("Am meisten wurden Bananen verkauft: 1.240 Stück.", "comma, dot groups", [1240.0]),  # dots group thousands
    ("Das R² beträgt 0.853, der Fehler 1.234 und die Summe 12,5.", "comma", [0.853, 1.234, 12.5]),  # dots are decimals here
    ("Summe: 1.234,5 und 9,3", "comma, dot groups", [1234.5, 9.3]),  # a continental number decides
    ("total 1,234.5 and 9,3", "dot", [1234.5, 9.0, 3.0]),  # an English number decides: 9,3 stays a list
    ("9,3", "dot", [9.0, 3.0]),  # no context: English
    ("共 1,234 个汉字", "dot", [1234.0]),  # Chinese writes the English way
    ("EUR 6.010.600,00", "comma, dot groups", [6010600.0]),
    ("1 234,5 €", "comma, dot groups", [1234.5]),
])
def test_commas_and_dots_are_read_by_the_answers_own_writing(text, mark, expected):
    from common import decimal_mark
    assert decimal_mark(text) == mark
    assert numbers_in(text) == expected


def test_1234_where_1_point_234_was_asked_fails_in_english_and_passes_in_german():
    with pytest.raises(AssertionError):
        assert_number("The value is 1,234.", 1.234)
    assert_number("The value is 1,234.", 1234)
    assert_number("Der Wert beträgt 1,234.", 1.234)
    with pytest.raises(AssertionError):
        assert_number("Der Wert beträgt 1,234.", 1234)


@pytest.mark.parametrize("text, groups", [
    ("about 300 Hz (≈323 Hz)", [[300.0, 323.0]]),  # a value given twice
    ("300–320 Hz", [[300.0, 320.0]]),  # a range
    ("300 – 320 Hz", [[300.0, 320.0]]),  # a range written with spaces: no minus sign
    ("from 300 Hz to 3 kHz", [[300.0], [3000.0]]),  # two values: far apart
    ("from 300 to 3000 Hz", [[300.0], [3000.0]]),  # the unit written once for both
    ("句子数（35），单词数（448）", [[35.0], [448.0]]),  # a bracket after a label, not after a number
    ("7 reviews (29%)", [[7.0], [29.0]]),  # other units
    ("**Start: about 300 Hz** (≈ 323 Hz in the first frame; the fit gives 300.0 Hz at t = 0)", [[300.0, 323.0, 300.0], [1.0], [0.0]]),
    ("the sweep: 300 Hz → 320 Hz", [[300.0, 320.0]]),
])
def test_a_range_or_a_value_given_twice_is_one_value(text, groups):
    from common import stated_values
    assert [[q.value for q in group] for group in stated_values(text)] == groups
    assert all(q.unit == "Hz" for q in stated_values(text)[0]) == ("Hz" in text)


def test_a_bracket_restates_its_value_only_right_after_it_where_a_spray_is_counted():
    from common import stated_values
    assert [[q.value for q in g] for g in stated_values("mean 412 (412.5 exactly; median 380)", brackets=False)] == [[412, 412.5], [380]]
    with pytest.raises(AssertionError, match="other candidate"):
        assert_stated("The mean is 412 (412.5 exactly; the median 380).", 412.5, others=[380.0], max_others=0)


def test_a_value_given_twice_is_no_spray():
    assert_stated("The mean is about 412 (≈412.5), over 40 houses.", 412.5, spray=2)
    with pytest.raises(AssertionError, match="sprays"):
        assert_stated("Means: 398.1, 412.5, 420.0", 412.5, spray=2)


ZH_TABLE = ("| 项目 | 数量 |\n|---|---|\n| 汉字总数（不算标点符号、数字、英文字母和空白） | **1,234** |\n"
            "| “茶”字出现次数[^1] | 25 |\n\n[^1]: 包括“茶叶”“茶馆”中的茶。")


@pytest.mark.parametrize("answer, label, expected", [
    (ZH_TABLE, "汉字", 1234),  # a bracketed note with 和 and commas between the label and the number
    (ZH_TABLE, "茶", 25),  # a footnote mark after the label
    ("| 汉字总数 | “茶”字 |\n| --- | --- |\n| 1234 | 25 |", "茶", 25),  # labels heading columns
    ("| Metric | Value |\n|---|---|\n| words (see note 2) | 448 |", "words", 448),
    ("<table><tr><th>Kennzahl</th><th>Wert</th></tr><tr><td>Wörter<sup>1</sup> (ohne Zahlen)</td><td>448</td></tr></table>",
     "wörter", 448),  # an HTML table
    ("| 1 | Banana | 1,240 |", "banana", 1240),  # a rank before the name
])
def test_numbers_in_tables_belong_to_their_label_past_notes_and_footnote_marks(answer, label, expected):
    assert [q.value for q in labelled_numbers(answer, [label])][:1] == [expected]


@pytest.mark.parametrize("answer", ["Bananas sold the most: 1,240 units.", "Am meisten verkauft: **Bananen** (1.240 Stück).",
                                    "| Frucht | Stück im Jahr |\n|---|---|\n| **Banana** | 1.240 |"])
def test_a_name_next_to_a_grouped_number_is_named(answer):
    fruit = {name: [name] for name in ("Apple", "Banana", "Cherry", "Grape", "Mango", "Orange", "Pear", "Kiwi")}
    assert stated_item(answer, fruit) == "Banana"
    assert_number(answer, 1240)


# ---------------------------------------------------------------------------------------------- issue 44.4
def test_a_reason_never_quotes_the_places_of_a_traceback():
    answer = ('Traceback (most recent call last):\n  File "<cell 1>", line 1, in <module>\n    answer()\n'
              '  Cell In[3], line 2\n----> 2 raise NotImplementedError\nNotImplementedError: write your answer here')
    assert quantities(answer) == []
    with pytest.raises(AssertionError) as refused:
        assert_number(answer, 42, what="the answer")
    assert str(refused.value) == "the answer should contain 42; found no number"
