"""Deterministic generator for the audio group's input files (writes files/audio/*).

Every signal is synthesised from fixed seeds: tones, chirps, noise bursts with planted
silences. wav files are written as PCM_16 with soundfile, mp3 files with soundfile's
bundled LAME encoder (gapless: decodes back to exactly the written number of frames).
Run from any cwd.
"""
from pathlib import Path

import numpy as np
import soundfile as sf

OUT = Path(__file__).resolve().parent / "audio"


def t_axis(seconds, sr):
    return np.arange(int(round(seconds * sr))) / sr


def envelope(n, sr, attack=0.02, release=0.05):
    env = np.ones(n)
    a = max(1, int(attack * sr))
    r = max(1, int(release * sr))
    env[:a] = np.linspace(0, 1, a)
    env[-r:] = np.minimum(env[-r:], np.linspace(1, 0, r))
    return env


def note(freq, seconds, sr, amp=0.5, harmonics=(1.0, 0.35, 0.15), attack=0.02, release=0.05):
    t = t_axis(seconds, sr)
    wave = sum(h * np.sin(2 * np.pi * freq * (k + 1) * t) for k, h in enumerate(harmonics))
    wave = wave / sum(harmonics)
    return amp * wave * envelope(len(t), sr, attack, release)


def write_wav(name, data, sr):
    sf.write(OUT / name, np.clip(data, -1, 1), sr, subtype="PCM_16")


def write_mp3(name, data, sr):
    sf.write(OUT / name, np.clip(data, -1, 1).astype(np.float32), sr, format="MP3")


def melody():
    """mono 16 kHz, 6 s: six 1-second notes (C4 E4 G4 C5 A4 F4)."""
    sr = 16000
    rng = np.random.default_rng(101)
    x = np.concatenate([note(f, 1.0, sr, amp=0.5) for f in (262, 330, 392, 523, 440, 349)])
    x += 0.002 * rng.standard_normal(len(x))
    write_wav("melody.wav", x, sr)


def song():
    """stereo 22.05 kHz mp3, 8 s: lead line on the left, bass + hi-hat on the right."""
    sr = 22050
    rng = np.random.default_rng(202)
    lead_notes = [523, 587, 659, 698, 784, 698, 659, 587, 523, 659, 784, 880, 784, 659, 587, 523]
    left = np.concatenate([note(f, 0.5, sr, amp=0.45, harmonics=(1, 0.5, 0.3, 0.2)) for f in lead_notes])
    bass_notes = [131, 131, 175, 175, 196, 196, 131, 131]
    right = np.concatenate([note(f, 1.0, sr, amp=0.4, harmonics=(1, 0.6, 0.3), release=0.1) for f in bass_notes])
    hat = np.zeros_like(right)
    step = int(0.25 * sr)
    burst = 0.12 * rng.standard_normal(int(0.03 * sr)) * np.linspace(1, 0, int(0.03 * sr))
    for start in range(0, len(hat) - len(burst), step):
        hat[start:start + len(burst)] += burst
    right = right + hat
    write_mp3("song.mp3", np.column_stack([left, right]), sr)


def pad():
    """mono 16 kHz, 5 s: a steady A-major chord (constant loudness, no fades)."""
    sr = 16000
    t = t_axis(5.0, sr)
    x = 0.2 * (np.sin(2 * np.pi * 220 * t) + np.sin(2 * np.pi * 277.18 * t) + np.sin(2 * np.pi * 329.63 * t))
    write_wav("pad.wav", x, sr)


def guitar():
    """stereo 22.05 kHz, 4 s: plucked (decaying) notes, quiet (peak about 0.25)."""
    sr = 22050
    left = np.zeros(int(4 * sr))
    right = np.zeros(int(4 * sr))
    for i, f in enumerate([196, 247, 294, 392, 330, 247, 294, 196]):
        t = t_axis(1.0, sr)
        pluck = np.exp(-4 * t) * (np.sin(2 * np.pi * f * t) + 0.4 * np.sin(2 * np.pi * 2 * f * t) + 0.2 * np.sin(2 * np.pi * 3 * f * t))
        pluck *= envelope(len(t), sr, attack=0.003, release=0.02)
        start = int(i * 0.5 * sr)
        end = min(start + len(t), len(left))
        left[start:end] += 0.16 * pluck[: end - start]
        right[start:end] += 0.12 * pluck[: end - start] * (0.6 if i % 2 else 1.0)
    write_wav("guitar.wav", np.column_stack([left, right]), sr)


def intro_outro():
    """intro.wav: mono 16 kHz 2 s at 440 Hz with vibrato; outro.wav: mono 16 kHz 3 s, 660 Hz chime."""
    sr = 16000
    t = t_axis(2.0, sr)
    phase = 2 * np.pi * 440 * t + 3 * np.sin(2 * np.pi * 5 * t)
    intro = 0.45 * np.sin(phase) * envelope(len(t), sr, 0.05, 0.05)
    write_wav("intro.wav", intro, sr)
    t = t_axis(3.0, sr)
    outro = 0.45 * np.exp(-0.8 * t) * (np.sin(2 * np.pi * 660 * t) + 0.3 * np.sin(2 * np.pi * 1320 * t)) / 1.3
    outro *= envelope(len(t), sr, 0.01, 0.1)
    write_wav("outro.wav", outro, sr)


def voice_background():
    """voice.wav: mono 16 kHz 4 s, syllable-like tones 600-1800 Hz; background.wav: mono 8 kHz 6 s hum (150 + 230 Hz)."""
    sr = 16000
    rng = np.random.default_rng(303)
    freqs = [700, 900, 1200, 800, 1500, 1000, 650, 1100]
    parts = []
    for f in freqs:
        t = t_axis(0.5, sr)
        syl = np.sin(2 * np.pi * f * t) * (0.55 + 0.45 * np.sin(2 * np.pi * 4 * t - np.pi / 2)) * envelope(len(t), sr, 0.02, 0.04)
        parts.append(0.5 * syl)
    voice = np.concatenate(parts) + 0.001 * rng.standard_normal(4 * sr)
    write_wav("voice.wav", voice, sr)
    sr = 8000
    t = t_axis(6.0, sr)
    bg = 0.3 * np.sin(2 * np.pi * 150 * t) + 0.2 * np.sin(2 * np.pi * 230 * t + 1.0)
    bg += 0.005 * rng.standard_normal(len(t))
    write_wav("background.wav", bg, sr)


def interview():
    """stereo 22.05 kHz 5 s: host on the left talks 0-2.5 s, guest on the right talks 2.5-5 s; faint room tone."""
    sr = 22050
    rng = np.random.default_rng(404)
    n = 5 * sr
    left = 0.003 * rng.standard_normal(n)
    right = 0.003 * rng.standard_normal(n)

    def talk(freqs, seed):
        r = np.random.default_rng(seed)
        out = []
        for f in freqs:
            t = t_axis(0.3125, sr)
            vib = f * (1 + 0.02 * np.sin(2 * np.pi * 6 * t))
            syl = np.sin(2 * np.pi * np.cumsum(vib) / sr) + 0.3 * r.standard_normal(len(t)) * 0.2
            out.append(0.5 * syl * envelope(len(t), sr, 0.02, 0.05))
        return np.concatenate(out)

    host = talk([300, 360, 280, 420, 330, 390, 310, 350], 5)
    guest = talk([520, 610, 480, 700, 560, 650, 500, 590], 6)
    half = n // 2
    left[:half] += host[:half]
    right[half:] += guest[: n - half]
    write_wav("interview.wav", np.column_stack([left, right]), sr)


def chirp():
    """mono 22.05 kHz 4 s: linear chirp 300 Hz -> 3000 Hz."""
    sr = 22050
    t = t_axis(4.0, sr)
    f0, f1, dur = 300.0, 3000.0, 4.0
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t ** 2 / (2 * dur))
    x = 0.5 * np.sin(phase) * envelope(len(t), sr, 0.01, 0.01)
    write_wav("chirp.wav", x, sr)


def podcast():
    """mono 24 kHz mp3, 7.2 s: spoken-word-like tone bursts."""
    sr = 24000
    rng = np.random.default_rng(505)
    n = int(7.2 * sr)
    x = 0.002 * rng.standard_normal(n)
    pos = 0
    while pos < n:
        dur = rng.uniform(0.15, 0.4)
        f = rng.uniform(180, 400)
        seg = note(f, dur, sr, amp=0.4, harmonics=(1, 0.5, 0.25))
        end = min(pos + len(seg), n)
        x[pos:end] += seg[: end - pos]
        pos = end + int(rng.uniform(0.05, 0.2) * sr)
    write_mp3("podcast.mp3", x, sr)


def noise_bursts():
    """mono 8 kHz 10 s: one noise burst per second at varying loudness; second 6 is the loudest by RMS
    (a 0.5-amplitude tone), second 2 is quiet but holds the biggest single peak (a click)."""
    sr = 8000
    rng = np.random.default_rng(606)
    rms = [0.05, 0.12, 0.03, 0.15, 0.08, 0.10, None, 0.14, 0.06, 0.04]
    parts = []
    for sec, level in enumerate(rms):
        if level is None:
            t = t_axis(1.0, sr)
            seg = 0.5 * np.sin(2 * np.pi * 500 * t) * envelope(len(t), sr, 0.05, 0.05)
        else:
            seg = np.clip(level * rng.standard_normal(sr), -0.8, 0.8)
        parts.append(seg)
    x = np.concatenate(parts)
    click = int(2.4 * sr)
    x[click:click + 4] = [0.95, -0.9, 0.6, -0.3]
    write_wav("noise_bursts.wav", x, sr)


def recording():
    """mono 16 kHz 6.5 s: phrases with short pauses (0.3 s at 1.2 s and 2.9 s), sound ends at 4.35 s, then silence."""
    sr = 16000
    rng = np.random.default_rng(707)
    n = int(6.5 * sr)
    x = 0.0005 * rng.standard_normal(n)
    phrases = [(0.0, 1.2, 330), (1.5, 2.9, 392), (3.2, 4.35, 294)]
    for start, end, f in phrases:
        seg = note(f, end - start, sr, amp=0.45, attack=0.01, release=0.02)
        s = int(round(start * sr))
        x[s:s + len(seg)] += seg
    write_wav("recording.wav", x, sr)


def quiet():
    """mono 8 kHz 3 s: quiet two-tone signal, peak exactly 0.12."""
    sr = 8000
    t = t_axis(3.0, sr)
    x = np.sin(2 * np.pi * 200 * t) * 0.7 + np.sin(2 * np.pi * 310 * t) * 0.3 * np.sin(2 * np.pi * 0.5 * t)
    x = x * envelope(len(t), sr, 0.1, 0.1)
    x = 0.12 * x / np.max(np.abs(x))
    write_wav("quiet.wav", x, sr)


def takes():
    """mono 16 kHz 6.3 s: four takes (0.8, 1.5, 0.6, 1.2 s at 300/500/700/900 Hz) separated by 0.5 s silences."""
    sr = 16000
    rng = np.random.default_rng(808)
    n = int(6.3 * sr)
    x = 0.0005 * rng.standard_normal(n)
    pos = 0.3
    for dur, f in [(0.8, 300), (1.5, 500), (0.6, 700), (1.2, 900)]:
        seg = note(f, dur, sr, amp=0.4, attack=0.01, release=0.02)
        s = int(round(pos * sr))
        x[s:s + len(seg)] += seg
        pos += dur + 0.5
    write_wav("takes.wav", x, sr)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for make in (melody, song, pad, guitar, intro_outro, voice_background, interview, chirp, podcast,
                 noise_bursts, recording, quiet, takes):
        make()
    for path in sorted(OUT.iterdir()):
        info = sf.info(path)
        print(f"{path.name:18s} {info.samplerate:6d} Hz {info.channels} ch {info.frames / info.samplerate:6.3f} s {path.stat().st_size:8d} B")


if __name__ == "__main__":
    main()
