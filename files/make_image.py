"""Deterministic generator for the `image` group's input files.

Writes every input file into files/image/ next to this script. Fixed seeds, no network,
no timestamps inside the files. Run from any directory:  python make_image.py
"""
import colorsys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

HERE = Path(__file__).resolve().parent
OUT = HERE / "image"


def hsv(h, s=0.8, v=0.9):
    r, g, b = colorsys.hsv_to_rgb(h % 1.0, s, v)
    return (int(r * 255), int(g * 255), int(b * 255))


def scene(w=320, h=240, seed=0):
    """An asymmetric colourful scene: sky gradient, red sun top-left, green hill bottom-right,
    yellow box, magenta triangle, blue stripe. Asymmetric on both axes so flips/rotations differ."""
    rng = np.random.default_rng(seed)
    y = np.linspace(0, 1, h)[:, None]
    x = np.linspace(0, 1, w)[None, :]
    arr = np.zeros((h, w, 3), dtype=np.float64)
    arr[..., 0] = 40 + 120 * y + 30 * x
    arr[..., 1] = 90 + 100 * y
    arr[..., 2] = 230 - 60 * y - 40 * x
    img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(img)
    sx, sy = int(0.19 * w), int(0.21 * h)
    r = int(0.11 * min(w, h) + 10)
    d.ellipse([sx - r, sy - r, sx + r, sy + r], fill=(235, 40, 30))
    d.polygon([(int(0.45 * w), h), (int(0.8 * w), int(0.55 * h)), (w, int(0.7 * h)), (w, h)], fill=(30, 150, 50))
    d.rectangle([int(0.62 * w), int(0.18 * h), int(0.82 * w), int(0.40 * h)], fill=(250, 220, 40))
    d.polygon([(int(0.05 * w), int(0.95 * h)), (int(0.30 * w), int(0.95 * h)), (int(0.12 * w), int(0.55 * h))], fill=(200, 40, 200))
    d.rectangle([int(0.35 * w), int(0.05 * h), int(0.40 * w), int(0.75 * h)], fill=(20, 30, 160))
    arr = np.asarray(img).astype(np.int16) + rng.integers(-6, 7, size=(h, w, 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.iterdir():
        if old.is_file():
            old.unlink()

    # --- general photos -------------------------------------------------------------------
    scene(320, 240, seed=1).save(OUT / "landscape.jpg", quality=92)
    scene(240, 320, seed=2).save(OUT / "portrait.png")

    # diagram.bmp: white background, asymmetric shapes
    img = Image.new("RGB", (320, 240), (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.rectangle([20, 20, 120, 90], fill=(220, 50, 50))
    d.ellipse([200, 140, 300, 220], fill=(40, 90, 200))
    d.polygon([(150, 200), (190, 120), (230, 200)], fill=(40, 170, 80))
    d.line([(30, 200), (140, 120)], fill=(0, 0, 0), width=6)
    d.rectangle([250, 20, 300, 60], fill=(250, 200, 30))
    img.save(OUT / "diagram.bmp")

    # bordered.png: content 262x188 inside an uneven beige border
    inner = scene(262, 188, seed=3)
    inner = Image.fromarray((np.asarray(inner).astype(np.float64) * 0.8).astype(np.uint8))  # keep it away from beige
    top, bottom, left, right = 14, 22, 30, 8
    canvas = Image.new("RGB", (262 + left + right, 188 + top + bottom), (238, 230, 212))
    canvas.paste(inner, (left, top))
    canvas.save(OUT / "bordered.png")

    scene(320, 240, seed=4).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(OUT / "photo.webp", quality=90)

    dark = np.asarray(scene(320, 240, seed=5)).astype(np.float64) * 0.42
    Image.fromarray(dark.astype(np.uint8)).save(OUT / "dark.jpg", quality=92)

    base = np.asarray(scene(320, 240, seed=6).convert("L").convert("RGB")).astype(np.float64)
    col = np.asarray(scene(320, 240, seed=6)).astype(np.float64)
    low = 0.5 * base + 0.5 * col
    low = 128 + (low - low.mean()) * 0.35
    Image.fromarray(np.clip(low, 0, 255).astype(np.uint8)).save(OUT / "lowcontrast.png")

    rng = np.random.default_rng(7)
    smooth = np.asarray(scene(320, 240, seed=7).filter(ImageFilter.GaussianBlur(4))).astype(np.float64)
    noisy = smooth + rng.normal(0, 28, size=smooth.shape)
    Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(OUT / "noisy.png")

    sharp = Image.new("RGB", (320, 240), (245, 245, 240))
    d = ImageDraw.Draw(sharp)
    for i in range(8):
        d.rectangle([15 + 37 * i, 20, 15 + 37 * i + 18, 110], fill=hsv(i / 8))
    for i in range(6):
        d.ellipse([20 + 50 * i, 140, 20 + 50 * i + 35, 175], outline=(20, 20, 20), width=3)
    for yy in range(190, 235, 6):
        d.line([(10, yy), (310, yy)], fill=(40, 40, 120), width=2)
    sharp.filter(ImageFilter.GaussianBlur(2)).save(OUT / "blurry.png")

    # --- concatenation ----------------------------------------------------------------------
    scene(150, 200, seed=8).save(OUT / "left.png")
    scene(180, 200, seed=9).transpose(Image.Transpose.ROTATE_180).save(OUT / "right.png")
    scene(300, 150, seed=10).save(OUT / "top.jpg", quality=92)
    scene(240, 180, seed=11).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(OUT / "bottom.png")

    # --- GIFs -------------------------------------------------------------------------------
    frames = []
    for i in range(12):
        im = Image.new("RGB", (160, 120), (250, 250, 250))
        d = ImageDraw.Draw(im)
        ang = 2 * np.pi * i / 12
        cx, cy = 80, 60
        ex, ey = cx + 50 * np.cos(ang), cy + 50 * np.sin(ang)
        d.line([(cx, cy), (ex, ey)], fill=hsv(i / 12, 0.9, 0.8), width=9)
        d.ellipse([ex - 8, ey - 8, ex + 8, ey + 8], fill=(30, 30, 30))
        d.rectangle([0, 110, int(160 * (i + 1) / 12), 119], fill=(60, 60, 200))
        frames.append(im)
    frames[0].save(OUT / "spinner.gif", save_all=True, append_images=frames[1:], duration=100, loop=0)

    durations = [60, 80, 100, 120, 140, 160, 180, 200, 220, 200, 180, 160, 140, 120, 100, 80, 70]
    frames = []
    for i in range(17):
        im = Image.new("RGB", (160, 120), (235, 245, 255))
        d = ImageDraw.Draw(im)
        t = i / 16
        bx = 15 + 130 * t
        by = 95 - 320 * t * (1 - t)
        d.rectangle([0, 108, 159, 119], fill=(90, 60, 30))
        d.ellipse([bx - 12, by - 12, bx + 12, by + 12], fill=hsv(0.03 + 0.5 * t, 0.85, 0.9))
        frames.append(im)
    frames[0].save(OUT / "bounce.gif", save_all=True, append_images=frames[1:], duration=durations, loop=0)

    # frame_1.png ... frame_12.png (no zero padding, on purpose)
    for i in range(1, 13):
        im = Image.new("RGB", (120, 90), hsv(i / 12, 0.55, 0.95))
        d = ImageDraw.Draw(im)
        d.rectangle([5, 70, 5 + 9 * i, 84], fill=(20, 20, 20))
        d.ellipse([10 + 6 * i, 15, 40 + 6 * i, 45], fill=hsv(i / 12 + 0.5, 0.9, 0.6))
        im.save(OUT / f"frame_{i}.png")

    # step_00.png ... step_09.png for the video
    for i in range(10):
        im = Image.new("RGB", (160, 120), hsv(i / 10, 0.7, 0.9))
        d = ImageDraw.Draw(im)
        d.rectangle([10 + 12 * i, 30, 40 + 12 * i, 90], fill=(255, 255, 255))
        im.save(OUT / f"step_{i:02d}.png")

    # --- RGBA logo ------------------------------------------------------------------------
    logo = Image.new("RGBA", (96, 96), (0, 0, 0, 0))
    d = ImageDraw.Draw(logo)
    d.ellipse([4, 4, 91, 91], fill=(30, 110, 220, 120))
    d.ellipse([16, 16, 79, 79], fill=(255, 140, 0, 255))
    d.rectangle([36, 28, 46, 66], fill=(255, 255, 255, 255))
    d.rectangle([36, 58, 62, 66], fill=(255, 255, 255, 255))
    logo.save(OUT / "logo.png")

    scene(320, 240, seed=12).save(OUT / "photo.jpg", quality=92)

    # --- pages for the PDF ----------------------------------------------------------------
    for name, size, color, seed in (("page1.png", (200, 300), (200, 50, 50), 13),
                                    ("page2.jpg", (300, 200), (50, 170, 70), 14),
                                    ("page3.bmp", (240, 240), (50, 80, 200), 15)):
        im = Image.new("RGB", size, color)
        d = ImageDraw.Draw(im)
        r = np.random.default_rng(seed)
        for _ in range(5):
            x0, y0 = int(r.integers(0, size[0] - 40)), int(r.integers(0, size[1] - 40))
            d.rectangle([x0, y0, x0 + 30, y0 + 30], fill=(255, 255, 255))
        if name.endswith(".jpg"):
            im.save(OUT / name, quality=92)
        else:
            im.save(OUT / name)

    # --- palette.bmp: dominant colour ------------------------------------------------------
    rng = np.random.default_rng(16)
    arr = np.zeros((240, 320, 3), dtype=np.int16)
    arr[:, :] = (40, 90, 190)                    # steel blue: the dominant one
    arr[:, 230:] = (240, 150, 40)                # orange
    arr[150:, :110] = (200, 200, 200)            # light grey
    arr[20:80, 30:90] = (240, 150, 40)
    arr = arr + rng.integers(-8, 9, size=arr.shape)
    Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8)).save(OUT / "palette.bmp")

    # --- shapes.png: count coloured shapes -------------------------------------------------
    img = Image.new("RGB", (320, 240), (255, 255, 255))
    d = ImageDraw.Draw(img)
    red, blue, green, yellow, purple = (220, 30, 30), (30, 60, 220), (30, 160, 60), (240, 200, 20), (140, 40, 170)
    d.ellipse([15, 15, 70, 70], fill=red)
    d.rectangle([100, 20, 170, 60], fill=blue)
    d.polygon([(210, 70), (250, 10), (290, 70)], fill=red)
    d.ellipse([20, 100, 90, 150], fill=green)
    d.rectangle([120, 95, 160, 160], fill=yellow)
    d.ellipse([200, 100, 250, 150], fill=blue)
    d.rectangle([270, 110, 305, 200], fill=red)
    d.polygon([(30, 220), (70, 175), (110, 220)], fill=purple)
    d.ellipse([150, 180, 220, 230], fill=green)
    img.save(OUT / "shapes.png")

    # --- sprites.png: 4 x 2 grid of 64x64 tiles --------------------------------------------
    sheet = Image.new("RGB", (256, 128), (0, 0, 0))
    for k in range(8):
        row, colm = divmod(k, 4)
        tile = Image.new("RGB", (64, 64), hsv(k / 8, 0.6, 0.9))
        d = ImageDraw.Draw(tile)
        for j in range(k + 1):
            d.ellipse([4 + 7 * j, 26, 4 + 7 * j + 5, 31], fill=(0, 0, 0))
        d.rectangle([0, 0, 63, 63], outline=(255, 255, 255), width=1)
        sheet.paste(tile, (64 * colm, 64 * row))
    sheet.save(OUT / "sprites.png")


if __name__ == "__main__":
    main()
