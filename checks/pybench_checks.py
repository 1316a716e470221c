"""The kit's check library under one name, for a suite of your own (docs/suite.md): in a check module,
`from pybench_checks import assert_number, output_file, saved_figure, ...`. It is checks/common.py (reading answers,
output files, tables and images) and checks/figures.py (charts: the figure records a saved or shown figure leaves);
the check jail mounts them, and what they import, beside a suite's own checks.
"""
from common import (assert_chart, assert_claim, assert_date, assert_labelled, assert_number, assert_rounded,
                    assert_stated, assert_words, award, dates_in, halfwidth, labelled_numbers, load_image,
                    numbers_in, output_file, quantities, Quantity, read_table, stated_item)
from figures import (alpha, assert_picture_shows, Axes, close, DIGITS, Figure, GRID_VALUE, hue, is_date_axis,
                     is_green, is_hue, is_red, keep_shown_texts, LEGEND_FACE, LINE_COVER, line_points,
                     LINE_SHARE, match_series, Picture, PRESENT_SHARE, RECORD_BYTES, records, rgb,
                     SAME_COLOUR, same_numbers, saved_figure, TEXT_CORRELATION, TEXT_SHIFT, text_shown,
                     TEXT_SIZE, TEXT_VISIBLE, TOLERANCE, UNEXPLAINED_SHARE, Unseen)

# what a suite's checks may import from here
__all__ = ["Quantity", "assert_claim", "assert_date", "assert_labelled", "assert_number", "assert_rounded",
           "assert_stated", "dates_in", "halfwidth", "labelled_numbers", "numbers_in", "quantities", "stated_item",
           "assert_words", "output_file", "load_image", "assert_chart", "read_table", "records", "saved_figure",
           "rgb", "alpha", "hue", "is_hue", "is_red", "is_green", "close", "same_numbers", "Axes", "Figure",
           "match_series", "line_points", "is_date_axis", "Picture", "assert_picture_shows", "text_shown",
           "keep_shown_texts", "RECORD_BYTES", "Unseen", "TOLERANCE", "PRESENT_SHARE", "LEGEND_FACE", "LINE_COVER",
           "LINE_SHARE", "UNEXPLAINED_SHARE", "GRID_VALUE", "SAME_COLOUR", "TEXT_CORRELATION", "TEXT_SIZE",
           "TEXT_VISIBLE", "TEXT_SHIFT", "DIGITS", "award"]

