"""Programs without a device (the CPU captures in tests/data, the shared gloo rank): nothing said about them
names a GPU, CUDA, a kernel, Tensor Cores, SMs, pinned memory or a GPU vendor's page — the advice, the views,
the what-if and the reports are for the machine the program ran on — in every front end: each terminal view,
``advise``, ``whatif``, the Markdown summary, the prose of the JSON document (its keys may name devices) and
the HTML report's text (tests/e2e/test_cpu_only_html.py).

Before the platform-aware views (this file's history) a CPU job showed a ranks table of kernel columns all
0.000, a critical path with ``compute 0.0 %`` beside ``host 100 %`` where its verdict said "the model's CPU
work", 21 remedies with cuDNN, SM and CUDA_LAUNCH_BLOCKING rows at 0.000 ms, "the kernels it launches" in its
optimizer gain and Tensor-Core jargon for ``whatif --amp`` with 0.00 ms saved: every run below failed here.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stepscope import load
from stepscope.advisor.engine import Advice, advise, run_advisor
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.analysis.platform import NO_DEVICE
from stepscope.analysis.whatif.remedies import REMEDIES
from stepscope.analysis.whatif.transforms import device_part
from stepscope.cli import cli
from stepscope.cli.analyze_cmd import view_names
from stepscope.report import terminal, texts
from stepscope.report.advice_json import finding_dict
from stepscope.report.console import terminal_console
from stepscope.report.findings_view import render_findings
from stepscope.report.json_out import to_json
from stepscope.report.markdown import render_markdown
from stepscope.report.terminal import DEVICE_VIEWS

DATA = Path(__file__).resolve().parents[1] / "data"
SHARED_GLOO = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "hta" / "cpu_only_gloo_rank34_of300"
RUNS = [*(p.relative_to(DATA).as_posix() for p in sorted(DATA.glob("cpu_pairs/*/*/1"))), "cpu_ddp_2rank",
        *(p.relative_to(DATA).as_posix() for p in sorted(DATA.glob("cpu_cases/*/"))),
        *(p.relative_to(DATA).as_posix() for p in sorted(DATA.glob("cpu_jobs/*/")))]
#: the multi-rank CPU jobs (gloo): the ranks table, the arrivals and the job's replays
JOBS = ["cpu_ddp_2rank", *(r for r in RUNS if r.startswith("cpu_jobs/") or "/ddp_gloo" in r)]
#: every run the front ends are rendered on: the repo's, and the shared gloo rank where the trace set is beside it
ALL = [*RUNS, *([str(SHARED_GLOO)] if SHARED_GLOO.is_dir() else [])]

GPU_WORDS = re.compile(r"\bGPUs?\b|CUDA|cuDNN|Tensor[- ]Cores?|\bSMs?\b|\bTF32\b|\bNCCL\b|pin_memory|DALI|"
                       r"nvidia\.com|amd\.com|\bkernels?\b|\blaunch(?:es|ed|ing)?\b", re.IGNORECASE)
#: the only GPU-ish words a CPU-only run may show, each a name rather than a claim about the hardware
ALLOWED = {
    # a rule's id: the name `advise --set`, its docs page (docs/rules/small-kernel-optimizer.md) and the JSON's
    # `rule` give; renaming it would break the configs that name it. Its title says "The optimizer steps tensor
    # by tensor".
    "small-kernel-optimizer": re.compile(r"small-kernel-optimizer"),
    # PyTorch's own name of a gloo collective's host-side wait (an op the trace records): the trace's words
    "trace op names": re.compile(r"\bc10d::\S+|record_param_comms|cudaStreamSynchronize(?=\s*\()"),
}


def bad_words(text: str) -> list[str]:
    """The lines of ``text`` that name a GPU, CUDA, kernels ... once the ALLOWED names are taken out."""
    out = []
    for line in text.splitlines():
        kept = line
        for rx in ALLOWED.values():
            kept = rx.sub("", kept)
        if GPU_WORDS.search(kept):
            out.append(line.strip())
    return out


def path_of(run: str) -> Path:
    return Path(run) if os.path.isabs(run) else DATA / run


@cache
def advice(run: str) -> Advice:
    return run_advisor(analyze(load(path_of(run))))


@cache
def analysed(run: str) -> tuple[Bundle, tuple[Any, ...]]:
    bundle = analyze(load(path_of(run)))
    return bundle, tuple(advise(bundle))


def said(adv: Advice) -> list[str]:
    out = [texts.verdict_text(v) for v in adv.verdicts]
    for f in adv.findings:
        out += [texts.title_text(f), texts.advice_text(f), texts.basis_text(f), *texts.links(f.rule, f.platform)]
    return out


def test_the_cpu_runs_are_found() -> None:
    assert len(RUNS) >= 20 and all((DATA / r).is_dir() for r in RUNS)
    assert len(JOBS) >= 6


@pytest.mark.parametrize("run", RUNS)
def test_no_gpu_words_for_a_cpu_program(run: str) -> None:
    adv = advice(run)
    assert {f.platform for f in adv.findings} <= {"cpu"}
    bad = [t for t in said(adv) if bad_words(t)]
    assert not bad, bad


def test_the_loader_advice_sizes_workers_to_the_free_cores() -> None:
    (f,) = [f for f in advice("cpu_pairs/workers/before/1").findings if f.rule == "dataloader-bound"]
    assert f.change.key == "set-num-workers"
    assert "cores the model's ops leave free" in texts.change_text(f)


def _terminal(bundle: Bundle, findings: tuple[Any, ...], views: list[str] | None) -> str:
    out = io.StringIO()
    console = terminal_console(file=out, width=250)
    terminal.render(bundle, console, views, 10,
                    findings_renderer=(lambda c: render_findings(list(findings), c, 10)) if findings else None)
    return out.getvalue()


@pytest.mark.parametrize("run", ALL)
def test_every_terminal_view_of_a_cpu_program_is_in_its_words(run: str) -> None:
    """`stepscope analyze` (every view at once, then each `--view` alone): a device view the user names gets
    the one line saying there is no device (its name is the user's own word); nothing else names GPU parts."""
    bundle, findings = analysed(run)
    with bundle.memo.active():
        bad = bad_words(_terminal(bundle, findings, None))
        for name in view_names():
            text = _terminal(bundle, (), [name])
            if name in DEVICE_VIEWS:  # asked for by name: "kernels (rank 0): no device on this rank (a CPU-only run)"
                text = "\n".join(line for line in text.splitlines()
                                 if not re.fullmatch(rf"{name} \(rank \d+\): {re.escape(NO_DEVICE)}", line.strip()))
            bad += [f"--view {name}: {line}" for line in bad_words(text)]
    assert not bad, bad


def _prose(obj: Any, key: str = "") -> Iterator[str]:
    """The document's prose: verdict and finding texts, bases, reasons a section did not run, the parts' and
    bounds' words — not its keys, nor the names the trace itself records (ops, threads)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("part_words", "skipped") and isinstance(v, dict):
                yield from (str(x) for x in v.values())
            elif k not in ("evidence", "operators", "annotations", "modules", "memory", "compilation", "host_ops"):
                yield from _prose(v, k)
    elif isinstance(obj, list):
        for v in obj:
            yield from _prose(v, key)
    elif isinstance(obj, str) and key in ("text", "title", "advice", "basis", "bound_text", "imbalance_words",
                                          "reason", "whatif_basis", "changes", "caveats"):
        yield obj


@pytest.mark.parametrize("run", ALL)
def test_the_markdown_and_the_json_prose_of_a_cpu_program_are_in_its_words(run: str) -> None:
    bundle, findings = analysed(run)
    with bundle.memo.active():
        doc = to_json(bundle, [finding_dict(f) for f in findings])
    md = render_markdown(doc)
    bad = [f"md: {line}" for line in bad_words(md)]
    bad += [f"json: {t}" for t in _prose(doc) if bad_words(t)]
    assert not bad, bad
    assert all(r["platform"] == "cpu" for r in doc["ranks"])
    # no remedy that acts on a device's work alone is listed, here or for the job
    device_only = {n for n, t in REMEDIES.items() if device_part(t) is not None}
    listed = {x["remedy"] for r in doc["ranks"] for x in (r.get("remedies") or {}).get("remedies", [])}
    listed |= {x["remedy"] for x in ((doc.get("cluster") or {}).get("job_whatif") or {}).get("remedies", [])}
    assert not listed & device_only, listed & device_only


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args), env={"COLUMNS": "250"})
    err = str(res.exception) if res.exception is not None and not isinstance(res.exception, SystemExit) else ""
    return (res.exit_code if not err else 2), res.output + err


#: the replays a CPU-only program can take, beside each standard remedy it can take (`--remedy NAME`)
CPU_OPTIONS = [["--overlap-comm"], ["--unprofiled", "0.5"], ["--host-in", "^Optimizer=0.5"],
               ["--fused-optimizer", "--move-loop-code"]]


@pytest.mark.parametrize("run", ALL)
def test_advise_and_whatif_on_a_cpu_program_are_in_its_words(run: str) -> None:
    """`stepscope advise`, and `stepscope whatif` with each change a CPU-only program can take; a change to a
    device's work alone (Tensor Cores, kernel grids, copies to the device, launches) is refused in one line
    that says it models a GPU and that the trace ran on the CPU alone."""
    path = str(path_of(run))
    rc, text = _cli("advise", path)
    assert rc == 0, text
    bad = [f"advise: {line}" for line in bad_words(text)]
    for name, t in REMEDIES.items():  # a handful
        rc, text = _cli("whatif", path, "--remedy", name)
        if device_part(t) is not None:
            assert rc == 2 and "GPU" in text and "ran on the CPU alone" in text and len(text.strip().splitlines()) == 1
            continue
        assert rc == 0, text
        bad += [f"whatif --remedy {name}: {line}" for line in bad_words(text)]
    for option in CPU_OPTIONS:
        rc, text = _cli("whatif", path, *option)
        assert rc == 0, text
        bad += [f"whatif {' '.join(option)}: {line}" for line in bad_words(text)]
    for option in ("--amp", "--bf16", "--fill-sms", "--pin-copies", "--host-overhead=0"):
        rc, text = _cli("whatif", path, option)
        assert rc == 2 and "ran on the CPU alone" in text, (option, text)
    rc, text = _cli("whatif", path, "--unprofiled")  # the calibrated cost is a CUDA host's: refused, one line
    assert rc == 2 and "CPU-only run measured none" in text and len(text.strip().splitlines()) == 1
    rc, text = _cli("whatif", path, "--fused-optimizer", "--json")
    bad += [f"whatif --json: {t}" for t in _prose(json.loads(text)) if bad_words(t)]
    assert not bad, bad


def test_a_gemm_bound_cpu_step_is_bound_by_the_models_cpu_work_in_every_front_end() -> None:
    """matmul_chain (its step all GEMMs on the CPU): the verdict, the critical path, the JSON's bound and the
    what-if all say "the model's CPU work" — one wording, not "host" beside "compute 0 %"."""
    run = "cpu_cases/matmul_chain"
    assert "bound by the model's CPU work" in texts.verdict_text(advice(run).verdicts[0])
    bundle, findings = analysed(run)
    with bundle.memo.active():
        view = _terminal(bundle, (), ["critical_path"])
        doc = to_json(bundle, [finding_dict(f) for f in findings])
    assert "bound by: the model's CPU work" in view and "compute" not in view and "copy" not in view
    cp = doc["ranks"][0]["critical_path"]
    assert cp["bound_text"] == "the model's CPU work" and set(cp["part_words"]) == {"communication", "input", "host"}
    rc, text = _cli("whatif", str(DATA / run), "--remedy", "move-loop-code")
    assert rc == 0 and "bound by the model's CPU work now" in text and "compute" not in text


@pytest.mark.parametrize("run", JOBS)
def test_a_cpu_jobs_ranks_table_leaves_the_device_columns_out(run: str) -> None:
    bundle, _ = analysed(run)
    with bundle.memo.active():
        text = _terminal(bundle, (), ["cluster", "job_whatif"])
    assert "the model's CPU work ms" in text and "ranks with more work (step time)" in text
    assert "comm kernels" not in text and "compute ms" not in text
    assert "amp" not in text.split() and "cudnn-benchmark" not in text


def test_a_gpu_trace_keeps_its_device_words_columns_and_remedies() -> None:
    """No regression on a GPU trace (the H100 capture): its critical path has compute and copy, its host is
    "host", its remedies include the device's, and `whatif --amp` replays in Tensor-Core terms."""
    run = str(DATA / "h100_cuda_train" / "base")
    bundle = analyze(load(run))
    with bundle.memo.active():
        view = _terminal(bundle, (), ["critical_path", "remedies"])
        doc = to_json(bundle, [])
    assert re.search(r"step\s+┃\s+step\s+┃\s+compute\s+┃\s+communication\s+┃\s+copy\s+┃\s+input\s+┃\s+host", view)
    assert "device busy" in view
    r = doc["ranks"][0]
    assert r["platform"] == "cuda" and set(r["critical_path"]["part_words"]) == {"compute", "communication", "copy",
                                                                                "input", "host"}
    assert {"amp", "bf16", "fill-sms", "cudnn-benchmark"} <= {x["remedy"] for x in r["remedies"]["remedies"]}
    rc, text = _cli("whatif", run, "--amp")
    assert rc == 0 and "Tensor Cores" in text and "compute" in text
