"""Checks for the audio group (audio-01 .. audio-18): audio editing, conversion, analysis and plots.

Audio is read with soundfile (wav and mp3 alike). mp3 written by other encoders (lameenc) carries an
encoder delay of about 50 ms, so content is compared with a small lag search.
"""
from pathlib import Path

from common import labelled_numbers, numbers_in, output_file, quantities, stated_values
from charts import graded_panel, one_chart
from figures import saved_figure


# ---------------------------------------------------------------- helpers

def _read(path: Path, what: str):
    """(frames x channels float array, sample rate, soundfile format) of an audio file."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
        data, sr = sf.read(str(path), always_2d=True, dtype="float64")
    except Exception as error:
        raise AssertionError(f"{what} is not readable audio ({type(error).__name__})") from None
    assert len(data) > 0, f"{what} holds no audio frames"
    return data, sr, info.format


def _output_audio(output: Path, name: str, fmt: str):
    """./output/name decoded; its container must be fmt ('WAV' or 'MP3')."""
    path = output_file(output, name)
    data, sr, found = _read(path, f"./output/{name}")
    assert found == fmt, f"./output/{name} is a {found} file, not {fmt}"
    if fmt == "MP3":
        from mutagen.mp3 import MP3

        try:
            MP3(str(path))
        except Exception as error:
            raise AssertionError(f"./output/{name} has no valid MPEG audio header ({type(error).__name__})") from None
    if fmt == "WAV":
        with open(path, "rb") as handle:
            head = handle.read(12)
        assert head[:4] in (b"RIFF", b"RF64") and head[8:12] == b"WAVE", f"./output/{name} is not a RIFF/WAVE file"
    return data, sr


def _input_audio(data: Path, name: str):
    path = data / name
    assert path.is_file() and not path.is_symlink(), f"input {name} is missing"
    samples, sr, _ = _read(path, f"input {name}")
    return samples, sr


def _match(y, ref, max_lag: int):
    """Best alignment of y against ref with |lag| <= max_lag samples: (correlation, gain, lag).

    gain is the least-squares factor g with y ~ g * ref on the overlap.
    """
    import numpy as np

    y = np.asarray(y, dtype=float)
    ref = np.asarray(ref, dtype=float)
    size = 1 << int(len(y) + len(ref) - 1).bit_length()
    c = np.fft.irfft(np.fft.rfft(y, size) * np.conj(np.fft.rfft(ref, size)), size)
    c = np.concatenate([c[size - len(ref) + 1:], c[: len(y)]])  # full cross-correlation, lag -(len(ref)-1) .. len(y)-1
    zero = len(ref) - 1
    lo, hi = max(0, zero - max_lag), min(len(c), zero + max_lag + 1)
    k = lo + int(np.argmax(c[lo:hi]))
    lag = k - zero
    if lag >= 0:
        a = y[lag:lag + len(ref)]
        b = ref[: len(a)]
    else:
        b = ref[-lag:]
        a = y[: len(b)]
        b = b[: len(a)]
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0, 0.0, lag
    dot = float(a @ b)
    return dot / (na * nb), dot / (nb * nb), lag


def _duration(samples, sr, expected: float, tol: float, name: str):
    seconds = len(samples) / sr
    assert abs(seconds - expected) <= tol, f"./output/{name} lasts {seconds:.3f} s, expected {expected:g} s"


def _format(y, sr, name: str, rate: int, channels: int | None, seconds: float, tol: float):
    """./output/name has the sample rate, the channel count (None: any) and, within tol, the duration asked for."""
    assert sr == rate, f"sample rate {sr} Hz, expected {rate} Hz"
    if channels is not None:
        assert y.shape[1] == channels, f"{y.shape[1]} channel(s), expected {'mono' if channels == 1 else 'stereo'}"
    _duration(y, sr, seconds, tol, name)


def _rms(x):
    import numpy as np

    return float(np.sqrt(np.mean(np.square(x)))) if len(x) else 0.0


def _tone_amplitude(x, sr, freq):
    """Amplitude of the sinusoid at freq in x (least squares on sin/cos)."""
    import numpy as np

    t = np.arange(len(x)) / sr
    s, c = np.sin(2 * np.pi * freq * t), np.cos(2 * np.pi * freq * t)
    a = 2 * np.mean(x * s)
    b = 2 * np.mean(x * c)
    return float(np.hypot(a, b))


def _dominant_freq(x, sr):
    import numpy as np

    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / sr)[int(np.argmax(spectrum))])


def _numbers_near(answer: str, expected: float, tol: float) -> bool:
    return any(abs(v - expected) <= tol for v in numbers_in(answer))


# ---------------------------------------------------------------- checks

def first_three_seconds(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/melody_first3s.wav is a mono 16 kHz wav lasting 3.0 s whose samples match the first 3 s of melody.wav."""
    src, sr_in = _input_audio(data, "melody.wav")
    y, sr = _output_audio(output, "melody_first3s.wav", "WAV")
    _format(y, sr, "melody_first3s.wav", sr_in, 1, 3.0, 0.01)
    corr, gain, _ = _match(y[:, 0], src[: 3 * sr_in, 0], int(0.01 * sr))
    assert corr > 0.99, f"the clip does not match the first 3 s of the input (correlation {corr:.2f})"
    assert 0.9 < gain < 1.1, f"the clip's level changed (gain {gain:.2f})"


def song_clip(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/song_clip.mp3 is a stereo mp3 of about 3 s whose channels match song.mp3 from 2 s to 5 s."""
    src, sr_in = _input_audio(data, "song.mp3")
    y, sr = _output_audio(output, "song_clip.mp3", "MP3")
    _format(y, sr, "song_clip.mp3", sr_in, 2, 3.0, 0.15)
    ref = src[2 * sr_in: 5 * sr_in]
    for ch, side in enumerate(("left", "right")):
        corr, gain, _ = _match(y[:, ch], ref[:, ch], int(0.15 * sr))
        assert corr > 0.9, f"the {side} channel does not match 0:02-0:05 of the song (correlation {corr:.2f})"
        assert 0.8 < gain < 1.2, f"the {side} channel's level changed (gain {gain:.2f})"


def pad_fades(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/pad_faded.wav keeps pad.wav's 5 s / 16 kHz / mono; it rises from near silence over the first second,
    is untouched from 1 s to 3 s, and falls over the last 2 s to near silence (RMS ratios against the input per window)."""
    src, sr_in = _input_audio(data, "pad.wav")
    y, sr = _output_audio(output, "pad_faded.wav", "WAV")
    _format(y, sr, "pad_faded.wav", sr_in, 1, 5.0, 0.01)
    x, y = src[:, 0], y[:, 0]

    def ratio(t0, t1):
        a, b = int(t0 * sr), int(t1 * sr)
        return _rms(y[a:b]) / _rms(x[a:b])

    start, fade_in_mid, fade_in_end = ratio(0, 0.1), ratio(0.4, 0.6), ratio(0.95, 1.0)
    steady = ratio(1.05, 2.95)
    out_early, out_mid, end = ratio(3.0, 4.0), ratio(4.0, 4.2), ratio(4.9, 5.0)
    assert start < 0.3, f"the start is not faded in (level {start:.2f} of the original in the first 0.1 s)"
    assert start < fade_in_mid < 0.9, f"no gradual fade-in over the first second (level {fade_in_mid:.2f} at 0.5 s)"
    assert fade_in_end > 0.7, f"the fade-in is not finished by 1 s (level {fade_in_end:.2f})"
    assert 0.95 < steady < 1.05, f"the middle (1-3 s) was changed (level {steady:.2f} of the original)"
    assert out_early < 0.96, f"the fade-out does not begin at 3 s (level {out_early:.2f} at 3-4 s)"
    assert end < out_mid < out_early, "the level does not fall steadily over the last 2 s"
    assert end < 0.3, f"the end is not faded out (level {end:.2f} in the last 0.1 s)"


def guitar_louder(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/guitar_louder.mp3 is a stereo mp3 of guitar.wav (4 s, same rate) with both channels 6 dB louder (gain ~2.0)."""
    src, sr_in = _input_audio(data, "guitar.wav")
    y, sr = _output_audio(output, "guitar_louder.mp3", "MP3")
    _format(y, sr, "guitar_louder.mp3", sr_in, 2, 4.0, 0.15)
    expected = 10 ** (6 / 20)
    for ch, side in enumerate(("left", "right")):
        corr, gain, _ = _match(y[:, ch], src[:, ch], int(0.15 * sr))
        assert corr > 0.95, f"the {side} channel does not match the input (correlation {corr:.2f})"
        assert abs(gain / expected - 1) < 0.08, f"the {side} channel's gain is {gain:.2f}x, expected {expected:.2f}x (+6 dB)"


def melody_quieter(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/melody_quieter.wav is melody.wav (mono, 16 kHz, 6 s) scaled by 10^(-10/20) = 0.316 (-10 dB)."""
    src, sr_in = _input_audio(data, "melody.wav")
    y, sr = _output_audio(output, "melody_quieter.wav", "WAV")
    _format(y, sr, "melody_quieter.wav", sr_in, 1, 6.0, 0.01)
    corr, gain, _ = _match(y[:, 0], src[:, 0], int(0.01 * sr))
    expected = 10 ** (-10 / 20)
    assert corr > 0.99, f"the output does not match the input (correlation {corr:.2f})"
    assert abs(gain / expected - 1) < 0.05, f"gain {gain:.3f}x, expected {expected:.3f}x (-10 dB)"


def combined(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/combined.mp3 is an mp3 of about 5 s at 16 kHz that plays intro.wav then outro.wav (correlation with the concatenation)."""
    import numpy as np

    intro, sr_in = _input_audio(data, "intro.wav")
    outro, _ = _input_audio(data, "outro.wav")
    y, sr = _output_audio(output, "combined.mp3", "MP3")
    _format(y, sr, "combined.mp3", sr_in, None, 5.0, 0.15)
    mono = y.mean(axis=1)
    ref = np.concatenate([intro[:, 0], outro[:, 0]])
    corr, gain, _ = _match(mono, ref, int(0.15 * sr))
    assert corr > 0.9, f"the output is not intro followed by outro (correlation {corr:.2f})"
    assert 0.8 < gain < 1.2, f"the level changed (gain {gain:.2f})"


def voice_mix(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/mix.wav is 16 kHz mono and 4.0 s long (the voice's length), holds voice.wav at unit gain and the
    background hum at -12 dB (its 150 Hz and 230 Hz components at 0.251x their original amplitude)."""
    voice, sr_v = _input_audio(data, "voice.wav")
    bg, sr_b = _input_audio(data, "background.wav")
    y, sr = _output_audio(output, "mix.wav", "WAV")
    _format(y, sr, "mix.wav", sr_v, 1, len(voice) / sr_v, 0.02)
    y = y[:, 0]
    corr, gain, _ = _match(y, voice[:, 0], int(0.005 * sr))
    assert 0.9 < gain < 1.1, f"the voice's level changed (gain {gain:.2f})"
    factor = 10 ** (-12 / 20)
    for freq in (150, 230):
        want = _tone_amplitude(bg[:, 0], sr_b, freq) * factor
        got = _tone_amplitude(y, sr, freq)
        assert abs(got / want - 1) < 0.15, f"the background's {freq} Hz hum is at {got:.3f}, expected {want:.3f} (-12 dB)"


def song_to_wav(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/song.wav is a real RIFF/WAVE file, stereo at 22.05 kHz, 8 s, whose samples match decoded song.mp3."""
    src, sr_in = _input_audio(data, "song.mp3")
    y, sr = _output_audio(output, "song.wav", "WAV")
    _format(y, sr, "song.wav", sr_in, 2, len(src) / sr_in, 0.06)
    for ch, side in enumerate(("left", "right")):
        corr, gain, _ = _match(y[:, ch], src[:, ch], int(0.06 * sr))
        assert corr > 0.99 and 0.9 < gain < 1.1, f"the {side} channel does not match the mp3 (correlation {corr:.2f})"


def interview_mono(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/interview_mono.mp3 is a one-channel mp3 (22.05 kHz, ~5 s) matching the average of interview.wav's channels."""
    src, sr_in = _input_audio(data, "interview.wav")
    y, sr = _output_audio(output, "interview_mono.mp3", "MP3")
    _format(y, sr, "interview_mono.mp3", sr_in, 1, 5.0, 0.15)
    corr, gain, _ = _match(y[:, 0], src.mean(axis=1), int(0.15 * sr))
    assert corr > 0.95, f"the output is not the average of both channels (correlation {corr:.2f})"
    assert 0.85 < gain < 1.15, f"the level is {gain:.2f}x the channel average"


def chirp_8k(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/chirp_8k.wav is 8000 Hz mono, still 4.0 s long, and matches chirp.wav properly resampled (FFT band-limited reference)."""
    import numpy as np

    src, sr_in = _input_audio(data, "chirp.wav")
    y, sr = _output_audio(output, "chirp_8k.wav", "WAV")
    _format(y, sr, "chirp_8k.wav", 8000, 1, 4.0, 0.002)
    n_out = int(round(len(src) * 8000 / sr_in))
    spectrum = np.fft.rfft(src[:, 0])[: n_out // 2 + 1]
    ref = np.fft.irfft(spectrum, n_out) * n_out / len(src)
    corr, gain, _ = _match(y[:, 0], ref, int(0.005 * sr))
    assert corr > 0.98, f"the output is not the resampled chirp (correlation {corr:.2f})"
    assert 0.85 < gain < 1.15, f"the level changed (gain {gain:.2f})"


DURATION_LABELS = ["duration", "long", "length", "lasts", "runs for", "时长", "长度", "长"]


def _stated_seconds(answer: str) -> tuple[float | None, str]:
    """The duration an answer states and its unit: the number that belongs to a duration label ('7.2 s long',
    'duration: 7.2 seconds', '时长 7.2 秒'; see labelled_numbers), the first if it names several; else its first number
    in seconds; else its first number. A context time stated before it (how long decoding took) is not the duration."""
    found = labelled_numbers(answer, DURATION_LABELS, unit="s") or [q for q in quantities(answer) if q.unit == "s"] \
        or quantities(answer)
    return (found[0].value, found[0].unit) if found else (None, "")


def podcast_info(answer: str, output: Path, data: Path) -> None:
    """Verifies: the duration the answer states (the number of its duration label, else its first number in seconds,
    else its first number; see _stated_seconds) is podcast.mp3's 7.2 s (+-0.05 s) written in seconds as asked, and
    its first frequency (Hz or kHz) is the sample rate, 24000 Hz; a list of candidates is judged by its first."""
    x, sr = _input_audio(data, "podcast.mp3")
    stated, unit = _stated_seconds(answer)
    assert stated is not None and unit in ("s", "") and abs(stated - len(x) / sr) <= 0.05, \
        f"the answer gives {stated} {unit or ''} as the duration, not {len(x) / sr:.1f} s"
    rates = [q.value for q in quantities(answer) if q.unit == "Hz"]  # 24 kHz, 24,000 Hz, 24 000 Hz, 24.000 Hz (German)
    assert rates and abs(rates[0] - sr) < 0.5, f"the answer gives {rates[0] if rates else 'no'} Hz as the sample rate, not {sr} Hz"


@graded_panel
def loudest_second(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer names the 1-second window starting at 6 s as the loudest by RMS (the first window start it
    states), and from the figure record ./output/loudness.png is a bar chart with one bar per window, in time order, each
    the window's RMS (linear, or in dB: any increasing scale that keeps the order of every window). The bars are proven
    by the picture (figures.assert_picture_shows), as are waveform_plot's lines and chirp_spectrogram's grid (its order)."""
    import numpy as np

    x, sr = _input_audio(data, "noise_bursts.wav")
    windows = x[: len(x) // sr * sr, 0].reshape(-1, sr)
    rms = np.sqrt((windows ** 2).mean(axis=1))
    best = int(np.argmax(rms))  # 6
    assert _numbers_near(answer, best, 1e-9), f"the answer does not give {best} s as the loudest window's start"
    _, ax = one_chart(output, "loudness.png", "bar chart")
    bars = ax.bars_in_display_order()  # left to right, or top to bottom
    assert len(bars) in (len(rms), len(rms) + (len(x) % sr > 0)), f"./output/loudness.png has {len(bars)} bars, expected one per 1-second window ({len(rms)})"

    def levels(shown) -> bool:
        shown = np.array([ax.bar_value(b) for b in shown[:len(rms)]])
        linear = np.allclose(shown, rms, rtol=0.02, atol=1e-4)
        return linear or np.array_equal(np.argsort(shown, kind="stable"), np.argsort(rms, kind="stable")) \
            and np.corrcoef(shown, 20 * np.log10(rms + 1e-12))[0, 1] > 0.99

    # horizontal bars may run in time from the top down or from the bottom up
    assert levels(bars) or ax.horizontal and levels(bars[::-1]), "./output/loudness.png's bars are not the windows' RMS levels in time order"


def trailing_silence(answer: str, output: Path, data: Path) -> None:
    """Verifies: the time the answer gives for the start of recording.wav's trailing silence is 4.35 s (+-0.06 s, or the
    same in ms): the number that belongs to 'silence' (静音, silent, quiet; see labelled_numbers), the first if it names
    several, else the answer's first number. A context time stated before it (the file's length) is not the answer;
    an answer that lists several candidate times is judged by the first."""
    labelled = labelled_numbers(answer, ["silence", "silent", "quiet", "静音", "无声", "安静"], unit="s")
    found = labelled or quantities(answer)
    assert found, "the answer gives no time"
    stated = found[0].value / 1000 if found[0].unit == "ms" else found[0].value
    ok = abs(stated - 4.35) <= 0.06 or abs(stated - 4350) <= 60
    assert ok, f"the answer gives {stated:g}, not 4.35 s (about 4.3-4.4 s), as the start of the final silence"


def normalized(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/quiet_normalized.wav is quiet.wav (8 kHz mono, same length) scaled so its peak is -1 dBFS (0.891 +-0.01)."""
    import numpy as np

    src, sr_in = _input_audio(data, "quiet.wav")
    y, sr = _output_audio(output, "quiet_normalized.wav", "WAV")
    _format(y, sr, "quiet_normalized.wav", sr_in, 1, len(src) / sr_in, 0.002)
    corr, _, _ = _match(y[:, 0], src[:, 0], int(0.002 * sr))
    assert corr > 0.999, f"the waveform changed shape (correlation {corr:.3f})"
    peak = float(np.max(np.abs(y)))
    target = 10 ** (-1 / 20)
    assert abs(peak - target) < 0.01, f"peak is {peak:.3f} ({20 * np.log10(peak):.2f} dBFS), expected {target:.3f} (-1 dBFS)"


def song_reversed(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/song_reversed.mp3 is a stereo mp3 (~8 s, 22.05 kHz) whose left/right channels are song.mp3's left/right played backwards."""
    src, sr_in = _input_audio(data, "song.mp3")
    y, sr = _output_audio(output, "song_reversed.mp3", "MP3")
    _format(y, sr, "song_reversed.mp3", sr_in, 2, 8.0, 0.15)
    rev = src[::-1]
    for ch, side in enumerate(("left", "right")):
        corr, gain, _ = _match(y[:, ch], rev[:, ch], int(0.15 * sr))
        assert corr > 0.9, f"the {side} channel is not the {side} input reversed (correlation {corr:.2f})"
        assert 0.8 < gain < 1.2, f"the {side} channel's level changed (gain {gain:.2f})"


def _waveform_fit(line: dict, channel, sr: int) -> float:
    """Correlation of a plotted line with the channel, reading its x as seconds (each point at sample round(x * sr))."""
    import numpy as np

    points = [(x, y) for x, y in zip(line["x"], line["y"]) if x is not None and y is not None and np.isfinite(x) and np.isfinite(y)]
    if len(points) < 50:
        return 0.0
    xs, ys = np.array(points).T
    index = np.round(xs * sr).astype(int)
    if index.min() < 0 or index.max() >= len(channel) or np.ptp(index) < 10:
        return 0.0
    ref = channel[index]
    if np.std(ref) == 0 or np.std(ys) == 0:
        return 0.0
    return float(np.corrcoef(ref, ys)[0, 1])


def _envelope_fit(area: dict, channel, sr: int) -> float:
    """Correlation of a filled min/max envelope (fill_between of each time bin's lowest and highest sample) with the
    channel's own lowest and highest samples in the bins its outline's times mark, reading x as seconds."""
    import numpy as np

    points = np.array([p for path in area.get("paths", []) for p in path
                       if isinstance(p, list) and len(p) == 2 and all(isinstance(v, (int, float)) and np.isfinite(v) for v in p)], dtype=float)
    if len(points) < 100:
        return 0.0
    times = np.unique(points[:, 0])
    if len(times) < 50:
        return 0.0
    at = [points[points[:, 0] == t, 1] for t in times]
    both = np.array([len(ys) >= 2 for ys in at])  # a long outline is recorded in part: its first edge only, further on
    upper, lower = np.array([ys.max() for ys in at]), np.array([ys.min() for ys in at])
    step = float(np.median(np.diff(times)))
    best = 0.0
    for start in (times, times - step / 2):  # a bin starting at its time, or centred on it
        edges = np.clip(np.round(np.append(start, start[-1] + step) * sr).astype(int), 0, len(channel))
        spans = [channel[a:b] for a, b in zip(edges[:-1], edges[1:])]
        if any(len(span) == 0 for span in spans):
            continue
        highs, lows = np.array([s.max() for s in spans]), np.array([s.min() for s in spans])
        for first in (lows, highs):  # where only the first edge is recorded, it is the lows' or the highs'
            seen = np.concatenate([upper[both], lower[both], upper[~both]])
            wanted = np.concatenate([highs[both], lows[both], first[~both]])
            if np.std(seen) > 0 and np.std(wanted) > 0:
                best = max(best, float(np.corrcoef(seen, wanted)[0, 1]))
    return best


def waveform_plot(answer: str, output: Path, data: Path) -> None:
    """Verifies from the figure record: ./output/waveform.png has two subplots, one above the other; the top one draws the left
    channel of interview.wav and the bottom one the right channel, with time in seconds on the x axis (each plotted point
    at time t is the sample at t * rate, in any amplitude scale, or a filled min/max envelope of the samples per time bin) and
    the axis spanning the recording's 5 s, not its samples."""
    x, sr = _input_audio(data, "interview.wav")
    figure = saved_figure(output, "waveform.png")
    plots = [ax for ax in figure.axes if ax.lines or ax.areas()]
    assert len(plots) == 2, f"./output/waveform.png has {len(plots)} subplots with a waveform, expected 2"
    top, bottom = sorted(plots, key=lambda ax: -ax.record["position"][1])
    assert top.record["position"][1] > bottom.record["position"][1] + bottom.record["position"][3] * 0.5, \
        "the two waveforms are not one above the other"
    seconds = len(x) / sr
    for ax, channel, side in ((top, 0, "top"), (bottom, 1, "bottom")):
        fits = [_waveform_fit(line, x[:, channel], sr) for line in ax.lines] + [_envelope_fit(area, x[:, channel], sr) for area in ax.areas()]
        other = [_waveform_fit(line, x[:, 1 - channel], sr) for line in ax.lines] + [_envelope_fit(area, x[:, 1 - channel], sr) for area in ax.areas()]
        assert max(fits) > 0.99 and max(fits) > max(other), \
            f"the {side} subplot does not draw the {'left' if channel == 0 else 'right'} channel against time in seconds"
        low, high = sorted(ax.record["xlim"][:2])
        assert high <= seconds * 1.25 and high >= seconds * 0.9, f"the {side} subplot's time axis runs to {high:g}, not about {seconds:g} s"


def _spectrogram_rows(figure) -> tuple[list[list[float]], list[float], list[float]] | None:
    """(coarse values by displayed row, row centre frequencies, column centre times) of the figure's spectrogram grid."""
    import numpy as np

    for ax in figure.axes:
        for image in ax.record.get("images", []):
            grid = image.get("coarse") or ({"shape": image["shape"][:2], "block": [1, 1], "values": image["array"]} if image.get("array") else None)
            if not grid or len(image["shape"]) != 2:
                continue
            rows, columns = grid["shape"]
            values = np.array(grid["values"], dtype=float).reshape(rows, columns)
            left, right, bottom, top = image["extent"]
            start, stop = (top, bottom) if image.get("origin", "upper") == "upper" else (bottom, top)
            used = rows * grid["block"][0] / image["shape"][0]
            freqs = [start + (stop - start) * used * (i + 0.5) / rows for i in range(rows)]
            times = [left + (right - left) * (j + 0.5) / columns for j in range(columns)]
            return values, freqs, times, ax
        for mesh in ax.collections("QuadMesh"):
            grid = mesh.get("coarse") or ({"shape": mesh["array_shape"], "block": [1, 1], "values": mesh["array"]} if mesh.get("array") else None)
            if not grid or len(grid["shape"]) != 2 or not mesh.get("ycoords"):
                continue
            rows, columns = grid["shape"]
            fy, fx = grid["block"]
            ys, xs = mesh["ycoords"], mesh["xcoords"]
            values = np.array(grid["values"], dtype=float).reshape(rows, columns)
            freqs = [(ys[i * fy] + ys[min((i + 1) * fy, len(ys) - 1)]) / 2 for i in range(rows)]
            times = [(xs[j * fx] + xs[min((j + 1) * fx, len(xs) - 1)]) / 2 for j in range(columns)]
            return values, freqs, times, ax
    return None


def chirp_spectrogram(answer: str, output: Path, data: Path) -> None:
    """Verifies from the figure record: ./output/chirp_spectrogram.png draws a spectrogram (an image or mesh of values) whose
    frequency axis is in Hz and runs upwards: the loudest frequency of its first columns is near the sweep's start (~300 Hz)
    and of its last columns near its end (~3000 Hz), read in the axis' own units; time runs along x in seconds; and the
    answer gives the sweep's start and then its end frequency (the first two frequencies it states, a range or a value
    given twice being one, all of it) within 15 %."""
    import numpy as np

    x, sr = _input_audio(data, "chirp.wav")
    figure = saved_figure(output, "chirp_spectrogram.png")
    found = _spectrogram_rows(figure)
    assert found, "./output/chirp_spectrogram.png draws no spectrogram (no image or mesh of values)"
    values, freqs, times, ax = found
    columns = values.shape[1]
    edge = max(1, columns // 8)
    peak = [freqs[int(np.nanargmax(values[:, j]))] for j in range(columns)]
    start, end = float(np.median(peak[:edge])), float(np.median(peak[-edge:]))
    assert 150 <= start <= 800 and 2200 <= end <= 3800, \
        f"the spectrogram's loudest frequency runs from {start:.0f} to {end:.0f} on its y axis, not from about 300 Hz to 3000 Hz (bins for Hz, or upside down?)"
    low, high = ax.record["ylim"][:2]
    assert low < high, "the spectrogram's frequency axis is inverted (high frequencies at the bottom)"
    seconds = len(x) / sr
    assert max(times) <= seconds * 1.1 and max(times) >= seconds * 0.7, f"the spectrogram's time axis reaches {max(times):g}, not about {seconds:g} s"
    said = [group for group in stated_values(answer) if all(q.unit == "Hz" for q in group)]
    assert len(said) >= 2, "the answer does not give the sweep's start and end frequencies"
    for group, (low, high), which, near in ((said[0], (255, 345), "start", 300), (said[1], (2550, 3450), "end", 3000)):
        shown = "-".join(f"{q.value:g}" for q in group)
        assert all(low <= q.value <= high for q in group), \
            f"the answer's {'first' if which == 'start' else 'second'} frequency is {shown} Hz, not the {which} of the sweep (about {near} Hz)"


def split_takes(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/clips/ holds exactly clip_1.wav .. clip_4.wav, one per take of takes.wav in order: each at 16 kHz,
    lasting its take's length (0.8, 1.5, 0.6, 1.2 s; up to 0.45 s of kept silence allowed) with the take's pitch (300/500/700/900 Hz)."""
    import re

    folder = output / "clips"
    assert not folder.is_symlink() and folder.is_dir(), "./output/clips/ was not created"
    names = sorted((p.name for p in folder.iterdir() if re.fullmatch(r"clip_\d+\.wav", p.name)),
                   key=lambda n: int(re.findall(r"\d+", n)[0]))
    expected = [(0.8, 300), (1.5, 500), (0.6, 700), (1.2, 900)]
    assert len(names) == len(expected), f"found {len(names)} clip_N.wav files, expected {len(expected)}"
    assert names == [f"clip_{i}.wav" for i in range(1, len(expected) + 1)], f"clips are named {names}"
    for name, (seconds, freq) in zip(names, expected):
        y, sr = _output_audio(folder, name, "WAV")
        assert sr == 16000, f"{name}: sample rate {sr} Hz, expected 16000 Hz"
        got = len(y) / sr
        assert seconds - 0.08 <= got <= seconds + 0.45, f"{name} lasts {got:.2f} s, the take lasts {seconds} s"
        pitch = _dominant_freq(y.mean(axis=1), sr)
        assert abs(pitch - freq) < 20, f"{name} has its main pitch at {pitch:.0f} Hz, expected the {freq} Hz take"
