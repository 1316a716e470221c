"""Checks for the `image` group (image editing, GIF, video, PDF). One function per task.

Every check has the signature check(answer: str, output: Path, data: Path) -> None and fails by
raising AssertionError with a short reason. Heavy libraries are imported inside the functions.
"""
import re
from pathlib import Path

from common import assert_number, halfwidth, labelled_numbers, load_image, numbers_in, output_file

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".gif", ".tif", ".tiff"}


# ---------------------------------------------------------------- helpers
def _arr(image):
    import numpy as np

    return np.asarray(image.convert("RGB")).astype(np.float64)


FORMAT_OF_SUFFIX = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".webp": "WEBP", ".gif": "GIF", ".bmp": "BMP"}


def _out(output: Path, name: str):
    """output/name decoded as an RGB float array (via common.load_image: refuses symlinks), its content in the format
    its name says (a .png is a PNG, not a WebP saved under that name)."""
    from PIL import Image

    image = load_image(output, name)
    wanted = FORMAT_OF_SUFFIX.get(Path(name).suffix.lower())
    with Image.open(output / name) as opened:
        found = opened.format
    assert wanted is None or found == wanted, f"./output/{name} holds a {found} image, not the {wanted} its name says"
    return _arr(image)


def _data(data: Path, name: str):
    from PIL import Image

    with Image.open(data / name) as image:
        return _arr(image)


def _mad(a, b) -> float:
    import numpy as np

    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).mean())


def _fit(arr, size):
    """Resize an RGB float array to size=(w, h) (used when an output is off by a pixel or two)."""
    import numpy as np
    from PIL import Image

    if (arr.shape[1], arr.shape[0]) == tuple(size):
        return arr
    image = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    return _arr(image.resize(tuple(size), Image.BILINEAR))


def _size(arr):
    return arr.shape[1], arr.shape[0]


def _assert_size(arr, expected, name, tol=0):
    w, h = _size(arr)
    ew, eh = expected
    assert abs(w - ew) <= tol and abs(h - eh) <= tol, f"./output/{name} is {w}x{h}, expected {ew}x{eh}"


def _natural_key(path: Path):
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", path.name)]


def _folder_images(output: Path, folder: str):
    """Image files in output/folder, in natural order (frame_2 before frame_10); refuses symlinks."""
    path = output / folder
    assert not path.is_symlink(), f"./output/{folder} is a symlink"
    assert path.is_dir(), f"./output/{folder}/ was not created"
    files = [p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES]
    assert all(not p.is_symlink() and p.is_file() for p in files), f"./output/{folder} holds a symlink or odd entry"
    return sorted(files, key=_natural_key)


def _read_any(path: Path, label: str):
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.load()
            return _arr(image)
    except Exception as error:
        raise AssertionError(f"{label} is not a readable image ({type(error).__name__})") from None


def _gif_frames(path: Path):
    from PIL import Image, ImageSequence

    frames, durations = [], []
    with Image.open(path) as image:
        for frame in ImageSequence.Iterator(image):
            frames.append(_arr(frame))
            durations.append(frame.info.get("duration"))
        loop = image.info.get("loop")
    return frames, durations, loop


def _video(output: Path, name: str):
    """(frames as RGB float arrays, fps) of output/name decoded with cv2.VideoCapture."""
    import cv2
    import numpy as np

    path = output_file(output, name)
    capture = cv2.VideoCapture(str(path))
    assert capture.isOpened(), f"./output/{name} cannot be opened by cv2.VideoCapture"
    fps = capture.get(cv2.CAP_PROP_FPS)
    frames = []
    while len(frames) < 2000:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB).astype(np.float64))
    capture.release()
    return frames, fps


def _ints(text: str) -> list[float]:
    """Plain numbers in text, read one by one (no thousands-separator merging: '40,90,190' is three)."""
    return [float(t) for t in re.findall(r"\d+(?:\.\d+)?", text)]


def _gray(arr):
    return arr @ [0.299, 0.587, 0.114]


def _laplacian_var(arr) -> float:
    import cv2
    import numpy as np

    gray = np.clip(_gray(arr), 0, 255).astype(np.uint8)
    return float(cv2.Laplacian(gray, cv2.CV_64F).var())


def _magic(output: Path, name: str) -> bytes:
    with open(output_file(output, name), "rb") as handle:
        return handle.read(16)


# ---------------------------------------------------------------- geometry
def resize_exact(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/resized-01.png is landscape.jpg stretched to exactly 224x224 (size exact, content MAD < 8)."""
    from PIL import Image

    out = _out(output, "resized-01.png")
    _assert_size(out, (224, 224), "resized-01.png")
    with Image.open(data / "landscape.jpg") as image:
        expected = _arr(image.convert("RGB").resize((224, 224), Image.BILINEAR))
    assert _mad(out, expected) < 8, "resized-01.png does not look like the resized landscape"


def resize_keep_aspect(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/small-02.png is portrait.png (240x320) scaled so its longer side is 160: 120x160 (+-1 px), content
    matches, and the answer states the size the file has (width, then height)."""
    from PIL import Image

    out = _out(output, "small-02.png")
    _assert_size(out, (120, 160), "small-02.png", tol=1)
    with Image.open(data / "portrait.png") as image:
        expected = _arr(image.convert("RGB").resize((120, 160), Image.BILINEAR))
    assert _mad(_fit(out, (120, 160)), expected) < 8, "small-02.png does not look like the scaled portrait"
    w, h = _size(out)
    assert re.search(rf"(?<!\d){w}\s*(?:x|×|by|\*|,)\s*{h}(?!\d)", answer) or re.search(rf"(?<!\d){w}\b.*\b{h}(?!\d)", answer), \
        f"the answer should state the new size {w}x{h}"


def rotate_cw(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/rotated-03.png is landscape.jpg rotated 90 degrees clockwise (240x320; closer to the clockwise
    than to the counter-clockwise rotation)."""
    import numpy as np

    out = _out(output, "rotated-03.png")
    _assert_size(out, (240, 320), "rotated-03.png")
    src = _data(data, "landscape.jpg")

    cw = np.rot90(src, k=-1)
    ccw = np.rot90(src, k=1)
    right, wrong = _mad(out, cw), _mad(out, ccw)
    assert right < 10 and right < 0.5 * wrong, f"rotated-03.png is not a clockwise rotation (MAD {right:.1f} vs ccw {wrong:.1f})"


def rotate_180(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/rotated-04.jpg is a JPEG of diagram.bmp turned 180 degrees (not merely flipped)."""
    assert _magic(output, "rotated-04.jpg")[:3] == b"\xff\xd8\xff", "rotated-04.jpg is not a JPEG file"
    out = _out(output, "rotated-04.jpg")
    _assert_size(out, (320, 240), "rotated-04.jpg")
    src = _data(data, "diagram.bmp")
    right = _mad(out, src[::-1, ::-1])
    others = min(_mad(out, src[::-1]), _mad(out, src[:, ::-1]), _mad(out, src))
    assert right < 8 and right < 0.5 * others, f"rotated-04.jpg is not the 180-degree rotation (MAD {right:.1f} vs {others:.1f})"


def rotate_30(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/tilted-05.png is landscape.jpg rotated 30 degrees counter-clockwise on an expanded canvas
    (~398x368, +-3 px) with white corners; it matches the +30 rotation better than the -30 one."""
    from PIL import Image

    out = _out(output, "tilted-05.png")
    with Image.open(data / "landscape.jpg") as image:
        src = image.convert("RGB")
        ccw = src.rotate(30, resample=Image.BICUBIC, expand=True, fillcolor=(255, 255, 255))
        cw = src.rotate(-30, resample=Image.BICUBIC, expand=True, fillcolor=(255, 255, 255))
    _assert_size(out, ccw.size, "tilted-05.png", tol=3)
    fitted = _fit(out, ccw.size)
    for x, y in ((0, 0), (ccw.width - 6, 0), (0, ccw.height - 6), (ccw.width - 6, ccw.height - 6)):
        assert fitted[y:y + 6, x:x + 6].mean() > 225, "tilted-05.png corners are not white"
    right, wrong = _mad(fitted, _arr(ccw)), _mad(fitted, _arr(cw))
    assert right < 15 and right < 0.6 * wrong, f"tilted-05.png is not a 30-degree counter-clockwise rotation (MAD {right:.1f} vs {wrong:.1f})"


def crop_region(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/crop-06.png is the region x 40..200, y 30..150 of landscape.jpg (160x120, content matches)."""
    out = _out(output, "crop-06.png")
    _assert_size(out, (160, 120), "crop-06.png", tol=1)
    src = _data(data, "landscape.jpg")
    assert _mad(_fit(out, (160, 120)), src[30:150, 40:200]) < 6, "crop-06.png is not the requested region"


def crop_center(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/center-07.png is the central 160x160 square of landscape.jpg (x 80..240, y 40..200, +-1 px)."""
    out = _out(output, "center-07.png")
    _assert_size(out, (160, 160), "center-07.png")
    src = _data(data, "landscape.jpg")
    best = min(_mad(out, src[40 + dy:200 + dy, 80 + dx:240 + dx]) for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    assert best < 6, f"center-07.png is not the centred square (MAD {best:.1f})"


def remove_border(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/trimmed-08.png is bordered.png without its beige frame: the 262x188 content (+-2 px) that
    sits at x=30, y=14, with no beige rows/columns left at its edges."""
    import numpy as np

    out = _out(output, "trimmed-08.png")
    _assert_size(out, (262, 188), "trimmed-08.png", tol=2)
    src = _data(data, "bordered.png")
    h, w = out.shape[:2]
    best = 1e9
    for oy in range(12, 17):
        for ox in range(28, 33):
            window = src[oy:oy + h, ox:ox + w]
            if window.shape == out.shape:
                best = min(best, _mad(out, window))
    assert best < 4, f"trimmed-08.png is not the image inside the border (MAD {best:.1f})"
    beige = np.array([238, 230, 212])
    for edge in (out[0], out[-1], out[:, 0], out[:, -1]):
        share = (np.abs(edge - beige).max(axis=1) < 15).mean()
        assert share < 0.5, "trimmed-08.png still has border-coloured edges"


def flip_horizontal(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/mirror-09.png is diagram.bmp mirrored left-right (not top-bottom)."""
    out = _out(output, "mirror-09.png")
    _assert_size(out, (320, 240), "mirror-09.png")
    src = _data(data, "diagram.bmp")
    right, wrong = _mad(out, src[:, ::-1]), min(_mad(out, src[::-1]), _mad(out, src[::-1, ::-1]), _mad(out, src))
    assert right < 5 and right < 0.5 * wrong, f"mirror-09.png is not a left-right mirror (MAD {right:.1f} vs {wrong:.1f})"


def flip_vertical(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/flipped-10.png is photo.webp flipped upside down (top-bottom mirror, not a 180-degree turn)."""
    out = _out(output, "flipped-10.png")
    _assert_size(out, (320, 240), "flipped-10.png")
    src = _data(data, "photo.webp")
    right, wrong = _mad(out, src[::-1]), min(_mad(out, src[::-1, ::-1]), _mad(out, src[:, ::-1]), _mad(out, src))
    assert right < 6 and right < 0.5 * wrong, f"flipped-10.png is not a top-bottom flip (MAD {right:.1f} vs {wrong:.1f})"


# ---------------------------------------------------------------- tone and filters
def brighten(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/brighter-11.jpg is dark.jpg with brightness multiplied by 1.5: same size, mean within 6% of
    the expected clipped 1.5x mean (~79.9), content correlated with the input (r > 0.95)."""
    import numpy as np

    out = _out(output, "brighter-11.jpg")
    src = _data(data, "dark.jpg")
    _assert_size(out, _size(src), "brighter-11.jpg")
    expected = np.clip(src * 1.5, 0, 255).mean()
    got = out.mean()
    assert abs(got - expected) < 0.06 * expected, f"brighter-11.jpg mean is {got:.1f}, expected about {expected:.1f} (1.5x of {src.mean():.1f})"
    r = np.corrcoef(out.ravel(), src.ravel())[0, 1]
    assert r > 0.95, f"brighter-11.jpg does not keep the picture (r={r:.2f})"


def contrast(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/contrast-12.png is lowcontrast.png with doubled contrast: mean brightness kept (+-8),
    grey-level standard deviation 1.7x-2.3x the input's, content correlated (r > 0.95)."""
    import numpy as np

    out = _out(output, "contrast-12.png")
    src = _data(data, "lowcontrast.png")
    _assert_size(out, _size(src), "contrast-12.png")
    assert abs(out.mean() - src.mean()) < 8, f"contrast-12.png mean moved from {src.mean():.1f} to {out.mean():.1f}"
    ratio = _gray(out).std() / _gray(src).std()
    assert 1.7 <= ratio <= 2.3, f"contrast-12.png spread grew {ratio:.2f}x, expected about 2x"
    r = np.corrcoef(out.ravel(), src.ravel())[0, 1]
    assert r > 0.95, f"contrast-12.png does not keep the picture (r={r:.2f})"


def grayscale(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/gray-13.png is grayscale (one channel or R=G=B) and matches a standard grayscale of
    landscape.jpg (Rec.601 or Rec.709 luma, or the channel mean; MAD < 4)."""
    import numpy as np

    out = _out(output, "gray-13.png")
    src = _data(data, "landscape.jpg")
    _assert_size(out, _size(src), "gray-13.png")
    spread = np.abs(out - out.mean(axis=2, keepdims=True)).max(axis=2).mean()
    assert spread < 1.5, "gray-13.png is not grayscale (its channels differ)"
    gray = out[..., 0]
    candidates = (src @ [0.299, 0.587, 0.114], src @ [0.2126, 0.7152, 0.0722], src.mean(axis=2))
    best = min(_mad(gray, c) for c in candidates)
    assert best < 4, f"gray-13.png does not match the grayscale of the input (MAD {best:.1f})"


def gaussian_blur(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/blur-14.png is noisy.png blurred with a Gaussian of sigma 3 (MAD < 3 against Pillow's
    GaussianBlur(3) or OpenCV's GaussianBlur(sigma=3)), and nearer to that than to a box blur, a sigma-2 or sigma-4
    Gaussian or a median filter."""
    import cv2
    import numpy as np
    from PIL import Image, ImageFilter

    out = _out(output, "blur-14.png")
    with Image.open(data / "noisy.png") as image:
        src = image.convert("RGB")
        pil = _arr(src.filter(ImageFilter.GaussianBlur(3)))
        ocv = cv2.GaussianBlur(np.asarray(src), (0, 0), 3).astype(np.float64)
    _assert_size(out, _size(pil), "blur-14.png")
    best = min(_mad(out, pil), _mad(out, ocv))
    assert best < 3, f"blur-14.png is not a sigma-3 Gaussian blur of the input (MAD {best:.1f})"
    # Other smoothings come close too: the output must be nearer the sigma-3 Gaussian than to any of them.
    for label, other in (("a box blur", _arr(src.filter(ImageFilter.BoxBlur(3)))),
                         ("a sigma-2 Gaussian", cv2.GaussianBlur(np.asarray(src), (0, 0), 2).astype(np.float64)),
                         ("a sigma-4 Gaussian", cv2.GaussianBlur(np.asarray(src), (0, 0), 4).astype(np.float64)),
                         ("a median filter", cv2.medianBlur(np.asarray(src), 7).astype(np.float64))):
        assert best < _mad(out, other), f"blur-14.png is closer to {label} than to a sigma-3 Gaussian blur"


def sharpen(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/sharp-15.png is blurry.png sharpened: still colour, overall mean kept (+-8), edge energy
    (Laplacian variance) at least 1.1x the input's, content correlated (r > 0.9)."""
    import numpy as np

    out = _out(output, "sharp-15.png")
    src = _data(data, "blurry.png")
    _assert_size(out, _size(src), "sharp-15.png")
    assert np.abs(out - out.mean(axis=2, keepdims=True)).max(axis=2).mean() > 5, "sharp-15.png lost its colours"
    assert abs(out.mean() - src.mean()) < 8, f"sharp-15.png mean moved from {src.mean():.1f} to {out.mean():.1f}"
    ratio = _laplacian_var(out) / _laplacian_var(src)
    assert ratio >= 1.1, f"sharp-15.png is not sharper than the input (edge energy x{ratio:.2f})"
    r = np.corrcoef(out.ravel(), src.ravel())[0, 1]
    assert r > 0.9, f"sharp-15.png does not keep the picture (r={r:.2f})"


# ---------------------------------------------------------------- combining
def concat_horizontal(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/pair-16.png is left.png (150x200) then right.png (180x200) side by side: 330x200, each half matches."""
    out = _out(output, "pair-16.png")
    _assert_size(out, (330, 200), "pair-16.png")
    left, right = _data(data, "left.png"), _data(data, "right.png")
    assert _mad(out[:, :150], left) < 5, "the left part of pair-16.png is not left.png"
    assert _mad(out[:, 150:], right) < 5, "the right part of pair-16.png is not right.png"


def concat_vertical(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/stack-17.png is top.jpg (300x150) above bottom.png scaled to width 300 keeping aspect (300x225):
    300 wide, 375 (+-1) high, both parts match."""
    from PIL import Image

    out = _out(output, "stack-17.png")
    w, h = _size(out)
    assert w == 300 and abs(h - 375) <= 1, f"stack-17.png is {w}x{h}, expected 300x375"
    top = _data(data, "top.jpg")
    with Image.open(data / "bottom.png") as image:
        bottom = _arr(image.convert("RGB").resize((300, 225), Image.BILINEAR))
    assert _mad(out[:150], top) < 6, "the top part of stack-17.png is not top.jpg"
    assert _mad(_fit(out[h - 225:], (300, 225)), bottom) < 8, "the lower part of stack-17.png is not the scaled bottom.png"


def watermark(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/watermarked-29.png is landscape.jpg with logo.png (96x96, alpha respected) pasted at
    x=214, y=134 (10 px from the bottom-right corner); the rest of the picture is unchanged."""
    import numpy as np
    from PIL import Image

    out = _out(output, "watermarked-29.png")
    _assert_size(out, (320, 240), "watermarked-29.png")
    with Image.open(data / "landscape.jpg") as base, Image.open(data / "logo.png") as logo:
        expected = base.convert("RGBA")
        expected.alpha_composite(logo.convert("RGBA"), (214, 134))
        expected = _arr(expected)
    box = (slice(134, 230), slice(214, 310))
    inside = _mad(out[box], expected[box])
    mask = np.ones(expected.shape[:2], dtype=bool)
    mask[box] = False
    outside = _mad(out[mask], expected[mask])
    assert outside < 5, "watermarked-29.png changed the picture outside the logo area"
    assert inside < 8, f"the bottom-right logo area does not match the logo over the photo (MAD {inside:.1f})"


def add_border(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/border-28.png is landscape.jpg inside a 20-pixel pure red border: 360x280, border strips red,
    interior unchanged."""
    import numpy as np

    out = _out(output, "border-28.png")
    _assert_size(out, (360, 280), "border-28.png")
    strips = np.concatenate([out[:18].reshape(-1, 3), out[-18:].reshape(-1, 3),
                             out[:, :18].reshape(-1, 3), out[:, -18:].reshape(-1, 3)])
    r, g, b = strips.mean(axis=0)
    assert r > 220 and g < 40 and b < 40, f"the border of border-28.png is not red (mean RGB {r:.0f},{g:.0f},{b:.0f})"
    src = _data(data, "landscape.jpg")
    assert _mad(out[20:260, 20:340], src) < 6, "the inside of border-28.png is not the original picture"


# ---------------------------------------------------------------- GIF, frames, video
def gif_all_frames(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/frames-18/ holds all 12 frames of spinner.gif as images, in order, named so that they sort in
    frame order as the query asks: a plain sort of the names (ls, sorted()) is their natural order, so frame_1 ..
    frame_12 (frame_10 sorts before frame_2) fails and frame_01 .. frame_12 passes."""
    frames, _, _ = _gif_frames(data / "spinner.gif")
    files = _folder_images(output, "frames-18")
    assert len(files) == len(frames), f"./output/frames-18 has {len(files)} images, the GIF has {len(frames)} frames"
    names = [path.name for path in files]
    assert sorted(names) == names, f"the frames' names do not sort in frame order ({', '.join(sorted(names)[:4])}, ...)"
    for i, (path, frame) in enumerate(zip(files, frames)):
        got = _read_any(path, path.name)
        assert got.shape == frame.shape and _mad(got, frame) < 6, f"{path.name} is not frame {i} of the GIF"


def gif_even_frames(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/frames-19/ holds frames 0,2,...,16 of bounce.gif (9 images, in order) and the answer states
    the GIF has 17 frames and one loop lasts 2.31 s (2310 ms)."""
    frames, durations, _ = _gif_frames(data / "bounce.gif")
    wanted = frames[::2]
    files = _folder_images(output, "frames-19")
    assert len(files) == len(wanted), f"./output/frames-19 has {len(files)} images, expected {len(wanted)}"
    for k, (path, frame) in enumerate(zip(files, wanted)):
        got = _read_any(path, path.name)
        assert got.shape == frame.shape and _mad(got, frame) < 6, f"{path.name} is not frame {2 * k} of the GIF"
    assert_number(answer, len(frames), what="the frame count")
    total = sum(durations)
    numbers = _ints(answer) + numbers_in(answer)  # "2,310 ms" is 2310, "2.31 s" is 2.31
    assert any(abs(v - total / 1000) < 0.006 or abs(v - total) < 6 for v in numbers), \
        f"the answer should give the loop duration {total / 1000:.2f} s"


def make_gif(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/anim-20.gif has 12 frames in numeric order frame_1..frame_12, 200 ms each, looping forever."""
    path = output_file(output, "anim-20.gif")
    try:
        frames, durations, loop = _gif_frames(path)
    except Exception as error:
        raise AssertionError(f"anim-20.gif is not a readable GIF ({type(error).__name__})") from None
    assert len(frames) == 12, f"anim-20.gif has {len(frames)} frames, expected 12"
    assert all(d is not None and abs(d - 200) <= 10 for d in durations), f"frame durations are {durations[:4]}..., expected 200 ms"
    assert loop == 0, f"anim-20.gif does not loop forever (loop={loop})"
    for i, frame in enumerate(frames, start=1):
        src = _data(data, f"frame_{i}.png")
        assert frame.shape == src.shape and _mad(frame, src) < 12, f"frame {i} of anim-20.gif is not frame_{i}.png"


def video_from_images(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/video-24.mp4 decodes with cv2 to 50 (+-1) frames at 10 fps, 160x120, each step_XX.png shown
    for 5 consecutive frames in order."""
    frames, fps = _video(output, "video-24.mp4")
    assert abs(len(frames) - 50) <= 1, f"video-24.mp4 has {len(frames)} frames, expected 50"
    assert abs(fps - 10) < 0.5, f"video-24.mp4 runs at {fps:g} fps, expected 10"
    assert frames[0].shape == (120, 160, 3), f"video-24.mp4 frames are {frames[0].shape[1]}x{frames[0].shape[0]}"
    steps = [_data(data, f"step_{k:02d}.png") for k in range(10)]
    for k in range(10):
        got = frames[5 * k + 2]
        dists = [_mad(got, s) for s in steps]
        assert min(range(10), key=dists.__getitem__) == k and dists[k] < 20, f"second {k / 2:g} of the video does not show step_{k:02d}.png"


def gif_to_video(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/spinner-25.mp4 decodes with cv2 to the 12 frames of spinner.gif, in order, at 10 fps, 160x120."""
    frames, fps = _video(output, "spinner-25.mp4")
    gif, _, _ = _gif_frames(data / "spinner.gif")
    assert len(frames) == len(gif), f"spinner-25.mp4 has {len(frames)} readable frames, expected {len(gif)}"
    assert abs(fps - 10) < 0.5, f"spinner-25.mp4 runs at {fps:g} fps, expected 10 (100 ms per GIF frame)"
    assert frames[0].shape == gif[0].shape, f"spinner-25.mp4 frames are {frames[0].shape[1]}x{frames[0].shape[0]}, expected 160x120"
    for i, got in enumerate(frames):
        dists = [_mad(got, g) for g in gif]
        assert min(range(len(gif)), key=dists.__getitem__) == i, f"frame {i} of spinner-25.mp4 is not GIF frame {i}"


def sprite_tiles(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/tiles-30/tile_1.png .. tile_8.png are the 64x64 tiles of sprites.png numbered row by row."""
    src = _data(data, "sprites.png")
    folder = output / "tiles-30"
    assert folder.is_dir() and not folder.is_symlink(), "./output/tiles-30/ was not created"
    for k in range(8):
        name = f"tile_{k + 1}.png"
        got = _out(folder, name)
        row, col = divmod(k, 4)
        expected = src[64 * row:64 * row + 64, 64 * col:64 * col + 64]
        assert got.shape == expected.shape and _mad(got, expected) < 3, f"{name} is not tile {k + 1} (row {row + 1}, column {col + 1})"


# ---------------------------------------------------------------- conversions
def png_to_jpeg(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/logo-21.jpg is a JPEG of logo.png composited on white (transparent corners white, not black)."""
    from PIL import Image

    assert _magic(output, "logo-21.jpg")[:3] == b"\xff\xd8\xff", "logo-21.jpg is not a JPEG file"
    out = _out(output, "logo-21.jpg")
    _assert_size(out, (96, 96), "logo-21.jpg")
    with Image.open(data / "logo.png") as logo:
        white = Image.new("RGBA", logo.size, (255, 255, 255, 255))
        white.alpha_composite(logo.convert("RGBA"))
        expected = _arr(white)
    assert out[:4, :4].mean() > 235, "the transparent corners of the logo did not become white"
    assert _mad(out, expected) < 8, "logo-21.jpg does not match the logo on a white background"


def jpg_to_webp(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/photo-22.webp is a WebP file of photo.jpg, same size, same colours (MAD < 6)."""
    head = _magic(output, "photo-22.webp")
    assert head[:4] == b"RIFF" and head[8:12] == b"WEBP", "photo-22.webp is not a WebP file"
    out = _out(output, "photo-22.webp")
    src = _data(data, "photo.jpg")
    _assert_size(out, _size(src), "photo-22.webp")
    assert _mad(out, src) < 6, f"photo-22.webp does not match photo.jpg (MAD {_mad(out, src):.1f}; swapped channels?)"


def images_to_pdf(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/album-23.pdf has 3 pages holding page1.png, page2.jpg, page3.bmp in that order (each page's
    image has the input's aspect ratio and mean colour, and is drawn on the page without being stretched)."""
    from pypdf import PdfReader

    path = output_file(output, "album-23.pdf")
    try:
        reader = PdfReader(str(path))
        pages = list(reader.pages)
    except Exception as error:
        raise AssertionError(f"album-23.pdf is not a readable PDF ({type(error).__name__})") from None
    assert len(pages) == 3, f"album-23.pdf has {len(pages)} page(s), expected 3"
    for i, (page, name) in enumerate(zip(pages, ("page1.png", "page2.jpg", "page3.bmp")), start=1):
        try:
            images = [_arr(img.image) for img in page.images]
        except Exception as error:
            raise AssertionError(f"page {i} of album-23.pdf: its image cannot be read ({type(error).__name__})") from None
        assert images, f"page {i} of album-23.pdf holds no image"
        got = max(images, key=lambda a: a.shape[0] * a.shape[1])
        src = _data(data, name)
        aspect, want = got.shape[1] / got.shape[0], src.shape[1] / src.shape[0]
        assert abs(aspect / want - 1) < 0.03, f"page {i} image has aspect {aspect:.2f}, {name} has {want:.2f}"
        for drawn in _drawn_aspects(page):
            assert abs(drawn / want - 1) < 0.03, f"page {i} draws its image stretched (aspect {drawn:.2f}, {name} has {want:.2f})"
        diff = abs(got.reshape(-1, 3).mean(axis=0) - src.reshape(-1, 3).mean(axis=0)).max()
        assert diff < 20, f"page {i} of album-23.pdf does not show {name}"


def _drawn_aspects(page) -> list[float]:
    """Width/height of every image XObject as the page draws it (the current transformation matrix at each Do)."""
    from pypdf.generic import ContentStream

    try:
        contents = page.get_contents()
        operations = ContentStream(contents, page.pdf).operations if contents is not None else []
    except Exception:
        return []
    matrix, stack, aspects = [1, 0, 0, 1, 0, 0], [], []
    for operands, operator in operations:
        if operator == b"q":
            stack.append(matrix)
        elif operator == b"Q" and stack:
            matrix = stack.pop()
        elif operator == b"cm" and len(operands) == 6:
            a, b, c, d, e, f = (float(v) for v in operands)
            m = matrix
            matrix = [a * m[0] + b * m[2], a * m[1] + b * m[3], c * m[0] + d * m[2], c * m[1] + d * m[3],
                      e * m[0] + f * m[2] + m[4], e * m[1] + f * m[3] + m[5]]
        elif operator == b"Do":
            width, height = (matrix[0] ** 2 + matrix[1] ** 2) ** 0.5, (matrix[2] ** 2 + matrix[3] ** 2) ** 0.5
            if width > 0 and height > 0:
                aspects.append(width / height)
    return aspects


# ---------------------------------------------------------------- answers
def dominant_color(answer: str, output: Path, data: Path) -> None:
    """Verifies: the colour the answer gives as the dominant one (an RGB triple like (40, 90, 190), （40，90，190） or
    40/90/190, or a hex code) is the dominant colour of palette.bmp (the mean of the largest cluster of similar pixels),
    within 15 per channel: the first colour after the first word that claims it ('dominant', main, most common, 主色,
    最多) in that sentence, else the answer's first colour, so a context colour before it (the background) is not the answer; an answer
    listing several candidate colours is judged by the first one."""
    import numpy as np

    pixels = _data(data, "palette.bmp").reshape(-1, 3)
    bins = (pixels // 32).astype(int) @ [64, 8, 1]
    best = (0, None)
    keys, sizes = np.unique(bins, return_counts=True)
    for key in keys[sizes.argsort()[::-1][:8]]:  # a noisy colour spreads over neighbouring bins: re-centre each
        centre = pixels[bins == key].mean(axis=0)
        for _ in range(3):
            near = np.abs(pixels - centre).max(axis=1) < 40
            centre = pixels[near].mean(axis=0)
        best = max(best, (int(near.sum()), tuple(centre)), key=lambda t: t[0])
    target = best[1]
    answer = halfwidth(answer)
    found = [(m.start(), [int(m.group(k)) for k in (1, 2, 3)])
             for m in re.finditer(r"(?<![\d.])(\d{1,3})\s*[,/ ]\s*(\d{1,3})\s*[,/ ]\s*(\d{1,3})(?![\d.])", answer)]
    found += [(m.start(), [int(m.group(1)[j:j + 2], 16) for j in (0, 2, 4)]) for m in re.finditer(r"#([0-9a-fA-F]{6})\b", answer)]
    assert found, "the answer gives no colour as RGB numbers or a hex code"
    claims = [(start + said.start(), end) for start, end in _sentences(answer)
              for said in [re.search(r"dominant|\bmain\b|most common|most frequent|主色|主要颜色|最多", answer[start:end], re.I)]
              if said and any(start <= at < end for at, _ in found)]
    if claims:  # the first colour after the word that claims it, else the first of that sentence
        said, end = claims[0]
        start = next(s for s, e in _sentences(answer) if s <= said < e)
        found = [c for c in found if said <= c[0] < end] or [c for c in found if start <= c[0] < end]
    first = min(found)[1]
    assert all(abs(a - b) <= 15 for a, b in zip(first, target)), \
        f"the answer's colour {tuple(first)} is not the dominant colour (about RGB {tuple(int(v) for v in target)})"


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of the text's sentences: split at line ends, ';', '。' and sentence-ending dots."""
    bounds, start = [], 0
    for m in re.finditer(r"\n|[;。]|\.(?=\s|$)", text):
        bounds.append((start, m.start()))
        start = m.end()
    return bounds + [(start, len(text))]


def count_shapes(answer: str, output: Path, data: Path) -> None:
    """Verifies: the count that belongs to "red" (see answers.labelled_numbers: '3 of them are red', 'red: 3', a table
    row '| red | 3 |') is the number of red shapes in shapes.png (3), and the count that belongs to the shapes or the
    total, other than the red count, is the number of shapes (9); a list of candidates is judged by its first."""
    red = labelled_numbers(answer, ["red", "红"])
    assert red, "the answer does not say how many shapes are red"
    assert red[0].value == 3, f"the answer gives {red[0].value:g} red shapes; 3 are red"
    total = [q for q in labelled_numbers(answer, ["shape", "total", "in all", "altogether", "objects", "形状", "图形", "共"])
             if q != red[0]]
    assert total and total[0].value == 9, f"the answer gives {f'{total[0].value:g}' if total else 'no'} shapes in all; shapes.png has 9"
