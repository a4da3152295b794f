"""The same run read as Kineto JSON and as a Perfetto protobuf trace gives the same views (issue 20).

Each JSON trace is written as a ``.pftrace`` by ``bench/kineto_to_pftrace.py`` (the layout of
PyTorch's CUPTI backend, with the Perfetto protos); then the two are loaded and analysed, and the
model (events per kind, every event's name, ts and dur to the ns, steps, memory, counters, ac2g
flows) and the whole ``analyze --json`` document (steps, breakdown, kernels, operators, findings,
diagnostics ...) must be equal, the input's path aside.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stepscope.cli import cli
from stepscope.ingest import load

pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
SHARED = REPO.parent / "shared" / "traces"


def _converter() -> Any:
    spec = importlib.util.spec_from_file_location("kineto_to_pftrace", REPO / "bench" / "kineto_to_pftrace.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CONVERT = _converter().convert


def _document(path: Path) -> dict[str, Any]:
    res = CliRunner().invoke(cli, ["analyze", "--json", "--no-cache", str(path)])
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(res.output)
    return doc


def _without_sources(x: Any) -> Any:
    """The document with every input path taken out (the two inputs are two files)."""
    if isinstance(x, dict):
        return {k: _without_sources(v) for k, v in x.items() if k not in ("source", "sources", "traceName")}
    if isinstance(x, list):
        return [_without_sources(v) for v in x]
    return x


def _model(path: Path) -> dict[str, Any]:
    tr = load(str(path))
    s, ev = tr.strings.strings, tr.events
    track = [(s[p], s[t]) for p, t in zip(tr.tracks["pid"], tr.tracks["tid"])]
    ac2g = tr.strings.find("ac2g")
    fl = tr.flows
    return {
        "kinds": Counter(ev["kind"].tolist()),
        "events": Counter(zip((s[n] for n in ev["name"]), ev["kind"].tolist(), ev["ts_ns"].tolist(),
                              ev["dur_ns"].tolist(), ev["step"].tolist(), ev["corr"].tolist(), ev["ext_id"].tolist())),
        "steps": [tuple(map(int, r)) for r in zip(tr.steps["rank"], tr.steps["step"], tr.steps["start_ns"],
                                                  tr.steps["end_ns"])],
        "memory": Counter(zip(tr.memory["ts_ns"].tolist(), tr.memory["bytes"].tolist(),
                              tr.memory["total_allocated"].tolist())),
        "counters": Counter(zip(tr.counters["ts_ns"].tolist(), (s[n] for n in tr.counters["name"]),
                                tr.counters["value"].tolist())),
        "ac2g": Counter((int(t), int(i), int(p), track[k]) for t, i, p, k, c in
                        zip(fl["ts_ns"], fl["flow_id"], fl["phase"], fl["track"], fl["cat"]) if c == ac2g),
        "tracks": {(track[i], int(tr.tracks["kind"][i])) for i in range(len(track))},
    }


def _convert_run(src: Path, out: Path) -> Path:
    """One ``.pftrace`` per JSON file (a directory of rank files gives a directory of them)."""
    if src.is_file():
        out.mkdir()
        dst = out / (src.name.split(".")[0] + ".pftrace")
        CONVERT(str(src), str(dst))
        return dst
    out.mkdir()
    for f in sorted(src.glob("*.json.gz")):
        CONVERT(str(f), str(out / (f.name.split(".")[0] + ".pftrace")))
    return out


def _same_views(src: Path, tmp_path: Path) -> None:
    pf = _convert_run(src, tmp_path / "pf")
    a, b = _model(src), _model(pf)
    for key in a:
        if key != "tracks":
            assert a[key] == b[key], key
    # a thread named by text in the JSON ("stream 7", "Spans") gets an integer id in the protos, as
    # the backend gives it: every track with numeric ids is the same, and there are as many
    numeric = {t for t in a["tracks"] if t[0][0].isdigit() and t[0][1].isdigit()}
    assert numeric <= b["tracks"] and len(a["tracks"]) == len(b["tracks"])
    assert sum(a["kinds"].values()) > 0
    assert _without_sources(_document(src)) == _without_sources(_document(pf))


@pytest.mark.parametrize("rel", ["h100_cuda_train/base/h100.1795350142310555823.pt.trace.json.gz",
                                 "cpu_ddp_2rank",
                                 "cpu_pairs/workers/before/1/before.1795598423578205254.pt.trace.json.gz"])
def test_same_views_on_the_repos_traces(rel: str, tmp_path: Path) -> None:
    _same_views(DATA / rel, tmp_path)


@pytest.mark.parametrize("rel", ["kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
                                 "tracelens/h100_qwen1.5_0.5b_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"])
def test_same_views_on_shared_traces(rel: str, tmp_path: Path) -> None:
    if not (SHARED / rel).is_file():
        pytest.skip(f"shared trace not found: {SHARED / rel}")
    _same_views(SHARED / rel, tmp_path)


def test_gzip_and_inline_names_read_the_same(tmp_path: Path) -> None:
    """The backend gzips its output; other writers put names and categories inline, not interned."""
    src = DATA / "h100_cuda_train/fixed/h100.1795350157999692870.pt.trace.json.gz"
    plain, packed = tmp_path / "a.pftrace", tmp_path / "b.pftrace"
    CONVERT(str(src), str(plain), intern=False)
    CONVERT(str(src), str(packed), compress=True)
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    models = [_model(p) for p in (plain, packed, src)]
    assert models[0] == models[1]
    assert {k: v for k, v in models[0].items() if k != "tracks"} == \
        {k: v for k, v in models[2].items() if k != "tracks"}
