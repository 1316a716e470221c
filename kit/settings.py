"""settings: a run's settings, parsed once from the command line into a frozen Settings that nothing changes.

Each flag of a run is one field below, with its default, its help and two marks: `verdict` (a resumed run must share
it, and the run folder's name is a digest of it: a sampling flag, the context) and `selection` (which tasks run). A
new flag is one field here and its use where it acts; `--help`, the resume keys, the run folder's name and
docs/runs.md's table follow from the field (tests/test_cli.py holds the table to it). A benchmark's defaults for the
flags left out (an original checkout's sampling, ML-Bench's samples) are applied once, with_defaults, giving a new
Settings. Subcommands parse their own flags with OneLineParser, taking shared flags (`--memory`) from here.
"""

import argparse
import dataclasses
import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from kit.sandbox import ROOT, JailLimits
from kit.untrusted import ERROR_KEEP, for_terminal

__all__ = ["OneLineParser", "Settings", "run_parser", "parse", "check", "add_flags", "resume_keys", "RESUME_FACTS", "PAPER_DEFAULTS"]


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser, but a mistake on the command line is one line, exit status 2: what is wrong, the flag an
    unknown one is closest to, and where the flags are listed (argparse's own usage is 20 lines for a run)."""

    def error(self, message: str):
        flags = [option for action in self._actions for option in action.option_strings]
        unknown = re.findall(r"(?<!\S)(--?[A-Za-z][\w-]*)", message.split(":", 1)[1]) if message.startswith("unrecognized") else []
        near = [close for word in unknown for close in difflib.get_close_matches(word, flags, n=1)]
        self.exit(2, for_terminal(f"error: {self.prog}: {message}{f' (did you mean {chr(44).join(near)}?)' if near else ''}; "
                                  f"`{self.prog} --help` lists them", ERROR_KEEP) + "\n")


def flag(default, help: str, *, verdict: bool | str = False, selection: bool = False, group: str = "", least: float | None = None,
         **argparse_options):
    """A field of Settings: its default and help; verdict: a resumed run must share it (a benchmark's name: only in that
    benchmark's runs); selection: it chooses the tasks; least: the smallest value allowed (0 excluded: positive)."""
    return field(default=default, metadata={"help": help, "verdict": verdict, "selection": selection, "group": group,
                                            "least": least, "argparse": argparse_options})


MLBENCH = "ML-Bench (with --tasks SPLIT.parquet|.jsonl)"

# The paper's sampling and turns (PyBench, arXiv 2407.16732): a benchmark's defaults for the flags left out, unless its
# own files say otherwise (an original checkout's config)
PAPER_DEFAULTS = {"temperature": 0.2, "top_p": 0.85, "max_tokens": 1000, "samples": 1, "max_turns": 10}


@dataclass(frozen=True)
class Settings:
    """The flags of a run (pybench.py without a subcommand), as given or defaulted; frozen."""
    model: Path | None = flag(None, "a GGUF model file (default: the embedded SmolLM2-135M-Instruct)", group="source", type=Path)
    replay: Path | None = flag(None, 'JSONL of {"id": TASK_ID, "replies": [...]} played instead of a model', group="source", type=Path)
    tasks: Path = flag(ROOT / "tasks.jsonl", "tasks.jsonl with files/ and checks/ beside it, a checkout of the original PyBench, "
                       "or an ML-Bench split (.parquet or .jsonl)", type=Path)
    pybench_config: str = flag("config/llama3.yaml", "with an original checkout: its config yaml (system prompt, code tokens, "
                               "turns, sampling)")
    only: str | None = flag(None, "comma-separated task ids", selection=True)
    category: str | None = flag(None, "only the tasks of this category; our suite's are the paper's five: chart (Chart Analysis: "
                                "data analysis, plots and tables, its charts-* and tables-* tasks), text (Text Analysis), image_audio "
                                "(Image & Audio Editing), math (Complex Math), software (Software & Website Development)",
                                selection=True, metavar="NAME")
    limit: int | None = flag(None, "run at most N tasks", selection=True, least=1, type=int)
    out: Path | None = flag(None, "run directory (default runs/<model>-<digest of the model, suite, settings and selection>: the "
                            "same command resumes it)", type=Path)
    threads: int | None = flag(None, "CPU threads for llama.cpp, the jails' BLAS/OpenMP (at most 4) and, on a CPU, the most "
                               "attempts --parallel auto runs at once (default: the CPUs this process may use: its affinity, its "
                               "cgroup's CPU quota, SLURM_CPUS_PER_TASK; with a model, less those other processes keep busy)", least=1, type=int)
    n_gpu_layers: int = flag(-1, "layers offloaded to the GPU (-1: all; ignored by CPU-only builds)", type=int)
    temperature: float | None = flag(None, f"default {PAPER_DEFAULTS['temperature']:g}, or an original checkout's config", verdict=True,
                                      type=float)
    top_p: float | None = flag(None, f"default {PAPER_DEFAULTS['top_p']:g}, or an original checkout's config", verdict=True, type=float)
    max_tokens: int | None = flag(None, f"new tokens per reply (default {PAPER_DEFAULTS['max_tokens']}, or an original checkout's "
                                  "config)", verdict=True, least=1, type=int)
    max_turns: int | None = flag(None, f"assistant replies per task (default {PAPER_DEFAULTS['max_turns']}, or an original "
                                 "checkout's config)", verdict=True, least=1, type=int)
    seed: int = flag(0, "the first attempt's seed (sample k: seed + k)", verdict=True, type=int)
    samples: int | None = flag(None, "attempts per task, with seeds seed..seed+K-1 (pass@k; default 1, ML-Bench 5)", verdict=True,
                               least=1, type=int)
    ctx: int = flag(8192, "context window in tokens (at most the model's own)", verdict=True, least=1, type=int)
    memory: float = flag(JailLimits.memory_gib, f"GiB of memory for the agent's jail (default {JailLimits.memory_gib:g})",
                         least=0, type=float)
    cell_timeout: float = flag(JailLimits.cell_timeout, f"wall seconds per code cell (default {JailLimits.cell_timeout:g})",
                               least=0, type=float)
    far: str | None = flag(None, 'run the jails on a Linux far side through this command, e.g. "ssh HOST" or "limactl shell NAME" '
                           "(docs/macos.md; default: here)", metavar="COMMAND")
    parallel: str = flag("auto", "attempts in flight at once on the one model (default auto: as many KV caches of --ctx tokens "
                         "as fit in half the free GPU memory or RAM, at most 16 on a GPU, 8 on a CPU)")
    no_shared_prefix: bool = flag(False, "evaluate every attempt's whole prompt, instead of the prefix attempts share (system "
                                  "prompt; with the query, for a task's samples) once (for measuring)", action="store_true")
    shard: str | None = flag(None, "K/N: run the K-th of N deterministic slices of the tasks (for a cluster)", selection=True)
    force: bool = flag(False, "resume into --out even if its manifest differs", action="store_true")
    no_report: bool = flag(False, "do not build the HTML report (DIR/report) at the end of the run", action="store_true")
    mlbench_setting: str = flag("oracle", "what the prompt gives beside the instruction (bm25 and readme need --repos)",
                                verdict="mlbench", group=MLBENCH, choices=("oracle", "instruction", "bm25", "readme"))
    mlbench_checkout: Path | None = flag(None, "your checkout of ML-Bench: its prompt templates are used", group=MLBENCH, type=Path)
    repos: Path | None = flag(None, "the folder holding your checkouts of the repositories (ML-Bench's repos/)", group=MLBENCH,
                              type=Path)
    repo_python: tuple[str, ...] | None = flag(None, "the interpreter for repository NAME's code, e.g. "
                                               "esm=/opt/envs/esm/bin/python (repeatable)", group=MLBENCH, action="append",
                                               metavar="NAME=PATH")
    model_cache: Path | None = flag(None, "your ~/.cache with the weights the repositories download (huggingface, torch): the "
                                    "jail's ~/.cache, read-only", group=MLBENCH, type=Path)
    execute: bool = flag(False, "run each statically passing answer in a jail over --repos", verdict="mlbench", group=MLBENCH,
                         action="store_true")
    mlbench_agent: bool = flag(False, "ML-Agent-Bench: the agent must leave run.sh in the task folder", verdict="mlbench",
                               group=MLBENCH, action="store_true")
    as_openhands: bool = flag(False, "with --mlbench-agent: asked and answered as OpenHands' ML-Bench harness does (prefix_code "
                              "shown, a reply without code told to go on)", verdict="mlbench", group=MLBENCH, action="store_true")
    mlbench_tmp: int | None = flag(None, "the size of /tmp in ML-Bench's jails (default 2048)", group=MLBENCH, type=int, metavar="MIB")

    def with_defaults(self, defaults: dict) -> "Settings":
        """These settings with a benchmark's defaults for the flags left out (None); a flag given wins."""
        return dataclasses.replace(self, **{name: value for name, value in defaults.items() if getattr(self, name) is None})

    def selection(self) -> dict:
        """The flags that choose the tasks, by name."""
        return {item.name: getattr(self, item.name) for item in dataclasses.fields(self) if item.metadata["selection"]}


# What a resumed run must share beyond its flags: the model's and the suite's digests (the manifest's own keys).
RESUME_FACTS = ("model_sha256", "suite_sha256")


def resume_keys(benchmark: str) -> tuple[str, ...]:
    """The manifest keys a resumed run must share: the digests, then the flags marked verdict (the benchmark's own too)."""
    return RESUME_FACTS + tuple(item.name for item in dataclasses.fields(Settings) if item.metadata["verdict"] in (True, benchmark))


def add_flags(parser: argparse.ArgumentParser, *names: str, container=None) -> None:
    """Settings' fields as flags of parser (or of container, a group of it): a subcommand's --memory is the run's."""
    fields = {item.name: item for item in dataclasses.fields(Settings)}
    for name in names:
        item = fields[name]
        (container or parser).add_argument(f"--{name.replace('_', '-')}", default=item.default, help=item.metadata["help"],
                                           **item.metadata["argparse"])


def run_parser(**options) -> OneLineParser:
    """The run's parser, a flag per field of Settings, in their order; the source flags exclusive, ML-Bench's grouped."""
    parser = OneLineParser(prog="pybench.py", **options)
    source, groups = parser.add_mutually_exclusive_group(), {}
    for item in dataclasses.fields(Settings):
        group = item.metadata["group"]
        container = source if group == "source" else groups.setdefault(group, parser.add_argument_group(group)) if group else parser
        add_flags(parser, item.name, container=container)
    return parser


def parse(argv: list[str], parser: argparse.ArgumentParser) -> Settings:
    """The command line as Settings, each value checked (one line, exit 2, if wrong)."""
    values = vars(parser.parse_args(argv))
    check(parser, values)
    values["repo_python"] = tuple(values["repo_python"]) if values["repo_python"] else None
    return Settings(**values)


def check(parser: argparse.ArgumentParser, values: dict) -> None:
    """The values of Settings' fields among values (a run's, or a subcommand's that took some with add_flags) held to
    their field's least, and --parallel to auto or a number: parser.error (one line, exit 2) if one is not."""
    for item in dataclasses.fields(Settings):
        least, value = item.metadata["least"], values.get(item.name)
        if least is not None and value is not None and (value < least if least else value <= 0):
            parser.error(f"--{item.name.replace('_', '-')} must be {f'at least {least}' if least else 'positive'}")
    if values.get("parallel", "auto") != "auto" and not (values["parallel"].isdigit() and int(values["parallel"]) >= 1):
        parser.error(f"--parallel must be auto or a number of attempts of at least 1, not {values['parallel']!r}")
