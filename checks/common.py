"""Helpers shared by the checks: reading numbers out of answers, opening outputs safely.

Every check has the signature check(answer: str, output: Path, data: Path) -> None and fails
by raising AssertionError with a short reason. Checks run in a fresh jail after the agent has
finished; the helpers here only keep them short and make their reasons read alike.
"""
from pathlib import Path

from answers import (Quantity, assert_claim, assert_date, assert_labelled, assert_number, assert_rounded, assert_stated, dates_in,  # noqa: F401
                     decimal_mark, decimals_written, halfwidth, labelled_numbers, numbers_in, quantities, stated_item, stated_values)

# What the check modules take from here: the answer reader's names (re-exported) and the helpers below.
__all__ = ["Quantity", "assert_claim", "assert_date", "assert_labelled", "assert_number", "assert_rounded", "assert_stated", "dates_in",
           "decimal_mark", "decimals_written", "halfwidth", "labelled_numbers", "numbers_in", "quantities", "stated_item", "stated_values",
           "assert_words", "output_file", "load_image", "assert_chart", "read_table", "Parts", "award"]


def assert_words(answer: str, *words: str) -> None:
    """Every word appears in the answer (case-insensitive)."""
    lowered = answer.lower()
    missing = [w for w in words if w.lower() not in lowered]
    assert not missing, f"the answer does not mention {', '.join(missing)}"


def output_file(output: Path, name: str, max_bytes: int = 200 * 1024 * 1024) -> Path:
    """output/name as a regular, non-empty file no bigger than max_bytes (never a symlink)."""
    path = output / name
    assert not path.is_symlink(), f"./output/{name} is a symlink, not a file"
    assert path.is_file(), f"./output/{name} was not written"
    size = path.stat().st_size
    assert size > 0, f"./output/{name} is empty"
    assert size <= max_bytes, f"./output/{name} is {size} bytes, more than {max_bytes}"
    return path


def load_image(output: Path, name: str):
    """output/name decoded with Pillow as an RGB image; fails if it does not decode."""
    from PIL import Image

    path = output_file(output, name)
    try:
        with Image.open(path) as image:
            image.load()
            return image.convert("RGB")
    except Exception as error:  # any decoder error means "not an image"
        raise AssertionError(f"./output/{name} is not a readable image ({type(error).__name__})") from None


def assert_chart(output: Path, name: str, min_colors: int = 3):
    """output/name is a decodable image that is not blank: several colours, not one flat fill."""
    import numpy as np

    image = load_image(output, name)
    assert image.width >= 100 and image.height >= 100, f"./output/{name} is only {image.width}x{image.height} pixels"
    pixels = np.asarray(image.resize((200, 200)))
    colors = len(np.unique(pixels.reshape(-1, 3) // 16, axis=0))
    assert colors >= min_colors, f"./output/{name} looks blank ({colors} colour(s))"
    return image


def read_table(output: Path, name: str):
    """output/name read with pandas (csv or xlsx by extension)."""
    import pandas as pd

    path = output_file(output, name)
    try:
        if path.suffix.lower() in (".xlsx", ".xls"):
            return pd.read_excel(path)
        return pd.read_csv(path)
    except Exception as error:
        raise AssertionError(f"./output/{name} is not a readable table ({type(error).__name__}: {error})") from None


class Parts(AssertionError):
    """A partial-credit check's verdict: its parts as values, (name, earned, possible, why) each, which the check jail
    carries to the grader as they are (kit/jailed.py's check); its message is for a reader only, never parsed."""

    def __init__(self, parts: list[tuple[str, float, float, str]]):
        self.parts = parts
        super().__init__("parts: " + "; ".join(f"{name} {earned:g}/{possible:g}" + (f" ({why})" if why else "")
                                                for name, earned, possible, why in parts))


def award(**parts) -> None:
    """Partial credit: each part is (points, test), test a function of no arguments that raises AssertionError when
    the part is wrong. Passes when every part passes; otherwise raises Parts, which names every part with the points
    it earned and could earn, and `grade` gives the task the earned share of its points (a run or validate counts the
    task as failed)."""
    awarded = []
    for name, (points, test) in parts.items():
        try:
            test()
            awarded.append((name, points, points, ""))
        except AssertionError as error:
            awarded.append((name, 0, points, str(error)))
    if any(earned < possible for _, earned, possible, _ in awarded):
        raise Parts(awarded)
