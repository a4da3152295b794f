"""Seeds and cases: which real traces are mutated, and how one case (a mutated input and the command
that reads it) is made from ``(seed, index)`` alone, so a run is the same whatever the job count."""

from __future__ import annotations

import gzip
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.mutate_ascend import link_tree, mutate_export, mutate_json_file
from tests.fuzz.mutate_json import byte_damage, dumps, mutate_trace_bytes, mutate_value
from tests.fuzz.mutate_sqlite import mutate_sqlite

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "traces"
COMMANDS = ["analyze", "advise", "report", "export", "diff", "sql", "whatif"]
#: the changes ``whatif`` is asked for: each transformation, some together, some on a chosen rank
WHATIF = [["--workers", "4"], ["--drop-syncs", "item|synchronize"], ["--pin-copies"], ["--host-overhead", "0.5"],
          ["--host-in", "^Optimizer=0.5"], ["--scale", "gemm|conv=0.5"], ["--overlap-comm"], ["--fix-rank", "1"],
          ["--batch", "32:64"], ["--workers", "2", "--pin-copies", "--json"], ["--scale", "nccl=0", "--rank", "0"],
          ["--fused-optimizer"], ["--amp", "--bf16"], ["--fill-sms", "--pad-gemms", "--fuse-elementwise"],
          ["--fused-attention", "--set-to-none", "--no-launch-blocking"], ["--move-host-work", "--no-algo-search"],
          ["--unprofiled", "--fuse-elementwise"]]
FORMATS = ["kineto", "kineto_dir", "nsys", "ascend_text", "ascend_db", "saved_doc", "snapshot"]
#: relative share of the inputs each format gets (saved documents are read by ``report`` only)
#: (the Nsight and Ascend text seeds cost ~1.3 s an input, three times a Kineto one: fewer of them)
FORMAT_WEIGHTS = {"kineto": 5, "kineto_dir": 1, "nsys": 1.5, "ascend_text": 1.5, "ascend_db": 2, "saved_doc": 1,
                  "snapshot": 1}
#: the command each format that is not a trace goes to (a trace goes to any of COMMANDS)
COMMAND_OF_FORMAT = {"saved_doc": "report", "snapshot": "memory"}

#: (format, path) of the seeds: small real traces; paths under SHARED are used when that folder exists
SEEDS = [
    ("kineto", "tests/data/cpu_ddp_2rank/worker0.1795348259631591090.pt.trace.json.gz"),
    ("kineto", "tests/data/h100_cuda_train/base/h100.1795350142310555823.pt.trace.json.gz"),
    ("kineto_dir", "tests/data/cpu_ddp_2rank"),
    ("kineto", "@hta/triton_example_a100/triton_example.json.gz"),
    ("kineto", "@hta/cpu_only_gloo_rank34_of300/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),
    ("kineto", "@hta/amd_mi250_minitoy/mi250_minitoy_train_ROCm6_2_kineto.json.gz"),
    ("kineto", "@param_dlrm/dlrm_8rank_v100/worker5_step_12.1694128201549.pt.trace.json.gz"),
    ("kineto", "@tracelens/h100_bert_small_inference/gaunernst_bert-small-uncased__1016001.json.gz"),
    ("kineto", "@ascend_mstt/advisor_ut_snippets/trace_view.json"),
    ("nsys", "@nsys_pipit/cloverleaf_cuda_a100/perlmutter-cloverleaf-cuda.sqlite"),
    ("ascend_text", "@ascend_msinsight/small_cnn_2rank_hccl_level1/text/rank0_ascend_pt"),
    ("ascend_text", "@ascend_mstt/advisor_ut_snippets"),
    ("ascend_db", "@ascend_msinsight/small_cnn_2rank_hccl_level1/db/rank0_ascend_pt"),
    ("ascend_db", "@ascend_msinsight/small_cnn_2rank_hccl_level1/db/rank1_ascend_pt"),
    ("snapshot", "@decomfl/zo_fl_training_memory_snapshot/memory.pickle"),
]
SQL = ["SELECT count(*), sum(dur_ns), min(ts_ns), max(ts_ns + dur_ns) FROM events",
       "SELECT name_str, count(*) n, sum(dur_ns) FROM ev GROUP BY 1 ORDER BY 3 DESC LIMIT 5",
       "SELECT * FROM kernels LIMIT 5", "SELECT * FROM steps", "SELECT * FROM memory LIMIT 3",
       "SELECT * FROM tracks", "SELECT count(*) FROM strings", "SELECT * FROM flows LIMIT 3"]


@dataclass(frozen=True)
class Seed:
    fmt: str
    path: Path  # the seed's copy in the run's seed folder

    @property
    def name(self) -> str:
        return self.path.name


def available_seeds(formats: list[str] | None = None) -> list[tuple[str, Path]]:
    """The seeds present on this machine (the shared traces are absent in a bare CI clone)."""
    out = []
    for fmt, rel in SEEDS:
        path = SHARED / rel[1:] if rel.startswith("@") else REPO / rel
        if path.exists() and (formats is None or fmt in formats):
            out.append((fmt, path))
    return out


def prepare_seeds(seed_dir: Path, formats: list[str] | None = None) -> list[Seed]:
    """Copy the seeds into ``seed_dir`` (never into the repository) and make the saved documents
    (``analyze --json`` and ``diff --json`` of a small trace) that ``report`` reads back."""
    seeds = []
    for i, (fmt, src) in enumerate(available_seeds(formats)):
        dst = seed_dir / f"{i:02d}" / src.name
        dst.parent.mkdir(parents=True)
        if src.is_dir():
            for f in sorted(p for p in src.rglob("*") if p.is_file()):
                (dst / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dst / f.relative_to(src))
        else:
            shutil.copyfile(src, dst)
        seeds.append(Seed(fmt, dst))
    if formats is None or "saved_doc" in formats:
        seeds += _saved_documents(seed_dir, [s for s in seeds if s.fmt == "kineto"][:2])
    return seeds


def _saved_documents(seed_dir: Path, traces: list[Seed]) -> list[Seed]:
    if not traces:
        return []
    out = seed_dir / "docs"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "STEPSCOPE_CACHE_DIR": str(seed_dir / "cache")}
    jobs = [("analyze.json", ["analyze", str(traces[0].path), "--json", "-o"])]
    if len(traces) > 1:
        jobs.append(("diff.json", ["diff", str(traces[0].path), str(traces[1].path), "--json", "-o"]))
    seeds = []
    for name, argv in jobs:
        subprocess.run([sys.executable, "-m", "stepscope", *argv, str(out / name)], env=env, check=True,
                       capture_output=True, timeout=300)
        seeds.append(Seed("saved_doc", out / name))
    return seeds


@dataclass
class Case:
    index: int
    fmt: str
    seed: str
    command: str
    argv: list[str]  # "{case}" stands for the case folder
    mutation: str


def _mutate_input(rng: random.Random, seed: Seed, dst: Path) -> str:
    src = seed.path
    if seed.fmt == "kineto":
        raw = src.read_bytes()
        gz = raw[:2] == b"\x1f\x8b"
        data, what = mutate_trace_bytes(rng, gzip.decompress(raw) if gz else raw, gz)
        dst.write_bytes(data)
        return what
    if seed.fmt == "kineto_dir":
        link_tree(src, dst)
        target = rng.choice(sorted(p for p in dst.iterdir() if p.is_file()))
        raw = target.read_bytes()
        target.unlink()
        gz = raw[:2] == b"\x1f\x8b"
        data, what = mutate_trace_bytes(rng, gzip.decompress(raw) if gz else raw, gz)
        target.write_bytes(data)
        return f"{target.name}:{what}"
    if seed.fmt == "nsys":
        return mutate_sqlite(rng, src, dst)
    if seed.fmt in ("ascend_text", "ascend_db"):
        return mutate_export(rng, src, dst)
    if seed.fmt == "snapshot":
        return _mutate_snapshot(rng, src, dst)
    return _mutate_document(rng, src, dst)


def _mutate_document(rng: random.Random, src: Path, dst: Path) -> str:
    import json

    doc = json.loads(src.read_bytes())
    for _ in range(rng.randint(1, 4)):
        doc = mutate_value(rng, doc)
    data = dumps(doc, rng)
    if rng.random() < 0.1:
        data = byte_damage(rng, data)
    dst.write_bytes(data)
    if rng.random() < 0.1:
        shutil.copyfile(src, dst) if rng.random() < 0.5 else mutate_json_file(rng, dst)
    return "document"


def _mutate_snapshot(rng: random.Random, src: Path, dst: Path) -> str:
    """An allocator snapshot: read with stepscope's own restricted unpickler (never ``pickle.load``),
    one to four values anywhere replaced or deleted, pickled again (protocol 2, 4 or 5); or the
    file's bytes damaged."""
    import pickle

    from stepscope.ingest.snapshot import load_plain

    if rng.random() < 0.35:
        dst.write_bytes(byte_damage(rng, src.read_bytes()))
        return "bytes"
    doc = load_plain(src)
    for _ in range(rng.randint(1, 4)):
        doc = mutate_value(rng, doc)
    data = pickle.dumps(doc, protocol=rng.choice([2, 4, 5]))
    if rng.random() < 0.1:
        data = byte_damage(rng, data)
        dst.write_bytes(data)
        return "structure+bytes"
    dst.write_bytes(data)
    return "structure"


def _argv(rng: random.Random, command: str, inp: str, base: str) -> list[str]:
    if command == "memory":  # no cache to bypass
        return ["memory", inp, *rng.choice([[], ["--json"], ["--top", "3"]])]
    if command == "analyze":
        argv = ["analyze", inp, *rng.choice([[], ["--json"], ["--md"], ["--view", "kernels", "--top", "3"]])]
    elif command == "advise":
        argv = ["advise", inp, *rng.choice([[], ["--json"]])]
    elif command == "report":
        argv = ["report", inp, *rng.choice([["-o", "{case}/out.html"], ["--md"]])]
    elif command == "export":
        argv = ["export", inp, "-o", rng.choice(["{case}/out.json", "{case}/out.json.gz"])]
    elif command == "diff":
        sides = [base, inp] if rng.random() < 0.5 else [inp, base]
        argv = ["diff", *sides, *rng.choice([[], ["--json"]])]
    elif command == "whatif":
        argv = ["whatif", inp, *rng.choice(WHATIF)]
    else:
        argv = ["sql", inp, rng.choice(SQL), *rng.choice([[], ["--csv"]])]
    return argv + (["--no-cache"] if rng.random() < 0.5 else [])


def make_case(run_seed: int, index: int, seeds: list[Seed], case_dir: Path,
              commands: list[str] | None = None) -> Case:
    """The case ``index`` of the run ``run_seed``: its input written under ``case_dir/in``, its
    argv (``{case}`` for ``case_dir``); for ``diff``, ``case_dir/base`` holds the unmutated seed."""
    rng = random.Random(f"{run_seed}/{index}")
    fmts = sorted({s.fmt for s in seeds})
    fmt = rng.choices(fmts, [FORMAT_WEIGHTS[f] for f in fmts])[0]
    seed = rng.choice([s for s in seeds if s.fmt == fmt])
    command = COMMAND_OF_FORMAT.get(fmt) or rng.choice(commands or COMMANDS)
    (case_dir / "in").mkdir(parents=True)
    mutation = _mutate_input(rng, seed, case_dir / "in" / seed.name)
    inp = "{case}/in/" + seed.name
    base = ""
    if command == "diff":
        (case_dir / "base").mkdir()
        dst = case_dir / "base" / seed.name
        if seed.path.is_dir():
            link_tree(seed.path, dst)
        else:
            try:
                os.link(seed.path, dst)
            except OSError:
                shutil.copyfile(seed.path, dst)
        base = "{case}/base/" + seed.name
    return Case(index, fmt, f"{seed.path.parent.name}/{seed.name}", command, _argv(rng, command, inp, base), mutation)
