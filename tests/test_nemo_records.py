"""The NEMO24/NEMO24-AUG and MBRIDGE/MBRIDGE-REF measured runs hold their source tables' numbers and layouts,
and every in-scope row of those tables is recorded (or left out for the reason the YAML header gives).

The tables are vendored verbatim in tests/data: nemo_performance_summary.md (NVIDIA/NeMo
docs/source/performance/performance_summary.md, the Pretraining table at 4c73f77670, 3a8081fef6 and
8e3d65dcfe) and megatron_bridge_performance.md (NVIDIA-NeMo/Megatron-Bridge
docs/performance-summary-archive.md at 067f987df, the dense Llama pre-training tables), with the
blind-check rows (Nemotron, DeepSeek) cut out. So a transcription slip, a dropped row or a record
that names the wrong row fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dtsim.models.datacenter.workload import Cluster, Layout, build
from dtsim.validation.records import load_dataset

DATA = Path(__file__).parent / "data"
NEMO = DATA / "nemo_performance_summary.md"
BRIDGE = DATA / "megatron_bridge_performance.md"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _num(cell: str) -> int | None:
    """The number a cell states: bold (***5***) or a markdown link ([888](url)) unwrapped, and the first of
    'main (other)' (the Bridge tables put another quantization's value in parentheses); None for n/a."""
    if cell == "n/a":
        return None
    m = re.fullmatch(r"\**\[?(\d+)(?:\]\([^)]*\))?\**(?: \(\d+\))?", cell)
    assert m, f"not a table number: {cell!r}"
    return int(m[1])


def _rows(path: Path, *sections: str) -> list[dict[str, str]]:
    """Every data row of the markdown tables in `path` as {column: cell}, plus the named groups of the last
    line that matched each of the `sections` regexes (outermost first: a match clears the inner ones)."""
    keys = [set(re.compile(s).groupindex) for s in sections]
    rows, context, header = [], {}, None
    for line in path.read_text().splitlines():
        for i, pattern in enumerate(sections):
            if m := re.match(pattern, line):
                inner = set().union(*keys[i:])
                context = {k: v for k, v in context.items() if k not in inner}
                context.update({k: v for k, v in m.groupdict().items() if v is not None})
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
        elif not set("".join(cells)) <= set("-: "):
            assert len(cells) == len(header) and not set(header) & set(context), line
            rows.append({**context, **dict(zip(header, cells, strict=True))})
    return rows


@pytest.fixture(scope="module")
def dataset():
    return load_dataset()


def test_the_two_files_load_without_problems(dataset):
    """A record the loader rejects (say, a layout that does not fill its GPUs) would drop out of the
    checks below unseen; the coverage tests would then miss it, this does not."""
    mine = ("nemo.yaml", "mbridge.yaml")
    assert [str(p) for p in dataset.problems if Path(p.file).name in mine] == []
    assert {Path(f).name for f in _record_files()} >= set(mine)


def _record_files():
    from importlib.resources import files

    return [str(p) for p in files("dtsim.catalog").joinpath("measured_runs").iterdir()]


def _resolved(rec):
    """The record's cluster and layout as the predictor builds them (fabric → GPUs per node; defaults)."""
    return build(Cluster, dict(rec.cluster), "cluster."), build(Layout, dict(rec.layout), "layout.")


# ---------------------------------------------------------------- NeMo 24.07 (NEMO24, NEMO24-AUG)

NEMO_SOURCE = (
    r"## Source: NVIDIA/NeMo, docs/source/performance/performance_summary\.md at commit (?P<commit>[0-9a-f]{40}) "
    r"\((?P<date>\d{4}-\d\d-\d\d), "
)


def _nemo():
    """{commit: {(model, #GPUs): row}} with the commits oldest first, and {commit: date}."""
    tables, dates = {}, {}
    for row in _rows(NEMO, NEMO_SOURCE):
        dates[row["commit"]] = row["date"]
        table = tables.setdefault(row["commit"], {})
        key = (row["Model"], int(row["#-GPUs"]))
        assert key not in table, key
        table[key] = row
    assert list(dates.values()) == sorted(dates.values())  # the file is oldest first
    return tables, dates


def _nemo_records(dataset):
    return [r for r in dataset.records if r.group in ("NEMO24", "NEMO24-AUG")]


def _nemo_row_of(rec):
    m = re.fullmatch(
        r"NVIDIA/NeMo docs/source/performance/performance_summary\.md at ([0-9a-f]{40}) \(.*\), "
        r"Pretraining table, row (\S+), #-GPUs (\d+)",
        rec.source,
    )
    assert m, rec.source
    return m[1], (m[2], int(m[3]))


def test_nemo_records_hold_their_rows_number_and_layout(dataset):
    tables, dates = _nemo()
    assert NEMO.read_text().count("\n  - System: DGX-H100\n") == len(tables) == 3
    latest = list(tables)[-1]
    records = _nemo_records(dataset)
    assert records
    for rec in records:
        commit, key = _nemo_row_of(rec)
        row = tables[commit][key]
        assert rec.group == ("NEMO24" if commit == latest else "NEMO24-AUG"), rec.id
        if rec.group == "NEMO24-AUG":  # the id names the table's date
            assert rec.id.endswith(dates[commit][5:7] + dates[commit][8:]), rec.id
        cluster, layout = _resolved(rec)
        gpus, gbs, mbs, seq = (int(row[c]) for c in ("#-GPUs", "GBS", "MBS", "Sequence Length"))
        tp, pp, cp, vp = (int(row[c]) for c in ("TP", "PP", "CP", "VP"))
        assert rec.measured == _num(row["Tokens / sec / GPU"]), rec.id
        assert rec.metric == "tokens_per_s_per_gpu", rec.id
        assert rec.precision == "fp8", rec.id  # "pre-training performance ... at FP8 precision"
        assert (cluster.fabric, cluster.gpu) == ("dgx-h100-ndr", "h100-sxm"), rec.id  # System: DGX-H100
        assert cluster.nodes * cluster.gpus_per_node == gpus, rec.id
        assert (layout.gbs, layout.mbs, rec.seq_len) == (gbs, mbs, seq), rec.id
        assert (layout.tp, layout.pp, layout.cp, layout.vpp) == (tp, pp, cp, vp), rec.id
        assert layout.schedule == ("interleaved" if vp > 1 else "1f1b"), rec.id
        assert layout.dp in (None, gpus // (tp * pp * cp)) and gpus % (tp * pp * cp) == 0, rec.id
        # the table's other columns, kept in the notes
        tflops = _num(row["Model TFLOP / sec / GPU"])
        days = _num(row["***Est. time to train in days (10T tokens, 1K GPUs)***"])
        assert rec.notes.startswith(
            f"table: GBS {gbs}, MBS {mbs}, seq {seq}, TP {tp}, PP {pp}, CP {cp}, VP {vp}; "
            f"Model TFLOP/sec/GPU {tflops}"
        ), rec.id
        assert f"est. time to train in days (10T tokens, 1K GPUs) {days};" in rec.notes, rec.id


def test_every_nemo_pretraining_row_is_recorded_or_repeats_a_later_one(dataset):
    """The latest table (8e3d65dcfe) is NEMO24, row for row; a row of an earlier version is a NEMO24-AUG
    record exactly when its tokens/s differs from that row in every later version (nemo.yaml: 'a number
    repeated unchanged is one measurement, recorded once')."""
    tables, _ = _nemo()
    commits = list(tables)
    assert len(commits) == 3
    for t in tables.values():  # 12 rows less the 3 Nemotron rows cut from the vendored copy
        assert len(t) == 9
    by_row = {}
    for rec in _nemo_records(dataset):
        key = _nemo_row_of(rec)
        assert key not in by_row, (rec.id, by_row.get(key))
        by_row[key] = rec
    expected = set()
    for i, commit in enumerate(commits):
        for key, row in tables[commit].items():
            later = [tables[c][key]["Tokens / sec / GPU"] for c in commits[i + 1 :] if key in tables[c]]
            if row["Tokens / sec / GPU"] not in later:
                expected.add((commit, key))
    assert set(by_row) == expected
    assert sum(r.group == "NEMO24" for r in by_row.values()) == 9
    assert sum(r.group == "NEMO24-AUG" for r in by_row.values()) == len(expected) - 9 == 16


# ---------------------------------------------------------------- Megatron-Bridge (MBRIDGE, MBRIDGE-REF)

MODELS = {"LLAMA3_8B": "llama3.1-8b", "LLAMA3_70B": "llama3.1-70b", "LLAMA3.1_405B": "llama3.1-405b"}
FABRICS = {"DGX-H100": "dgx-h100-ndr", "DGX-B200": "dgx-b200-ndr", "DGX-GB200": "gb200-nvl72"}
SYSTEMS = {"H100": "DGX-H100", "B200": "DGX-B200", "GB200": "DGX-GB200"}
ID_MODELS = {"8B": "LLAMA3_8B", "70B": "LLAMA3_70B", "405B": "LLAMA3.1_405B"}
LAYOUT_COLUMNS = ("#-GPUs", "GBS", "MBS", "Sequence Length", "FSDP", "TP", "PP", "CP", "VP", "EP", "GA")


def _bridge_rows():
    """Every pre-training row of the vendored archive as {release, System, Model, Precision, ...}: the
    26.x tables are per model ('#### Model: X', a System column), 25.11 and 25.09 per system."""
    return _rows(
        BRIDGE,
        r"## (?P<release>\S+) NeMo Container$",
        r"#### (?:Model: (?P<Model>\S+)|System: (?P<System>\S+))$",
    )


def _scope(row) -> str:
    """'check' for a dense Llama FP8 row on DGX-H100/B200/GB200, else why mbridge.yaml leaves it out."""
    precision = row.get("Precision", "FP8").split(" (")[0]  # 25.09 has no precision column (FP8 CS)
    if row["Model"] not in MODELS:
        return "other model"
    if row["System"] in ("DGX-GB300", "DGX-B300"):
        return "no such GPU in the catalog"
    assert row["System"] in FABRICS, row
    if precision in ("MXFP8", "FP8-MX", "NVFP4"):
        return "other precision"
    assert precision in ("FP8", "FP8-CS"), row  # nothing else is named as left out
    return "check"


def _bridge_key(rec):
    m = re.fullmatch(r"MBRIDGE-(\d+)-(H100|B200|GB200)-(8B|70B|405B)", rec.id)
    assert m, rec.id
    release = ".".join(m[1][i : i + 2] for i in range(0, len(m[1]), 2))
    assert rec.source.startswith(
        f"Megatron-Bridge docs/performance-summary-archive.md at 067f987df, {release} table, "
    ), rec.id
    return release, SYSTEMS[m[2]], ID_MODELS[m[3]]


def _in_scope():
    rows = {}
    for row in _bridge_rows():
        if _scope(row) == "check":
            key = (row["release"], row["System"], row["Model"])
            assert key not in rows, key
            rows[key] = row
    return rows


def _layout(row) -> dict[str, int | None]:
    return {c: _num(row[c]) for c in LAYOUT_COLUMNS if c in row}


def test_bridge_records_hold_their_rows_number_and_layout(dataset):
    rows = _in_scope()
    records = [r for r in dataset.records if r.group == "MBRIDGE"]
    assert records
    for rec in records:
        row = rows[_bridge_key(rec)]
        lay = _layout(row)
        cluster, layout = _resolved(rec)
        gpus, tp, pp, cp = lay["#-GPUs"], lay["TP"], lay["PP"], lay["CP"]
        vp = lay["VP"] or 1  # n/a: no virtual stages
        dp = gpus // (tp * pp * cp)
        assert rec.measured == _num(row["Tokens / sec / GPU"]), rec.id
        assert rec.metric == "tokens_per_s_per_gpu" and rec.precision == "fp8", rec.id
        assert rec.model == MODELS[row["Model"]], rec.id
        assert cluster.fabric == FABRICS[row["System"]], rec.id
        assert cluster.nodes * cluster.gpus_per_node == gpus, rec.id
        assert (layout.gbs, layout.mbs, rec.seq_len) == (lay["GBS"], lay["MBS"], lay["Sequence Length"]), (
            rec.id
        )
        assert (layout.tp, layout.pp, layout.cp, layout.vpp) == (tp, pp, cp, vp), rec.id
        assert layout.schedule == ("interleaved" if vp > 1 else "1f1b"), rec.id
        assert layout.dp in (None, dp) and dp * tp * pp * cp == gpus, rec.id
        assert lay["EP"] in (None, 1) and layout.ep == 1, rec.id
        if lay.get("FSDP"):  # FSDP > 0: sharding group #GPUs/(TP×PP) (the archive's nomenclature) = ZeRO-3
            assert lay["FSDP"] == gpus // (tp * pp) and layout.zero == 3, rec.id
            assert layout.shard_group in (None, lay["FSDP"]), rec.id
        else:  # FSDP 0 (DDP with the distributed optimizer) or no FSDP column
            assert layout.zero == 1, rec.id
        assert f"Model TFLOP/s/GPU {_num(row['Model TFLOP / sec / GPU'])};" in rec.notes, rec.id
        ga = layout.gbs // (layout.mbs * dp)
        assert ga * layout.mbs * dp == layout.gbs, rec.id
        if "GA" in lay:  # the table's own arithmetic, and the notes keep its GA
            assert lay["GA"] == ga and f"GA {ga};" in rec.notes, rec.id
        else:
            assert f"GA {ga} (derived" in rec.notes, rec.id


def test_bridge_reference_records_state_their_rows_numbers(dataset):
    rows = _in_scope()
    refs = [r for r in dataset.records if r.group == "MBRIDGE-REF"]
    assert refs
    for rec in refs:
        assert rec.kind == "reference" and rec.reason, rec.id
        _, system, model = key = _bridge_key(rec)
        row = rows[key]
        m = re.match(r"(\d+) tokens/s/GPU, (\d+) Model TFLOP/s/GPU \((.*)\)$", rec.measured_text)
        assert m, rec.measured_text
        assert int(m[1]) == _num(row["Tokens / sec / GPU"]), rec.id
        assert int(m[2]) == _num(row["Model TFLOP / sec / GPU"]), rec.id
        if same := re.match(r"same layout as (\S+?)[;)]", m[3] + ")"):
            earlier = rows[(same[1], system, model)]
            assert _layout(row) == _layout(earlier), rec.id
            continue
        stated = {"#-GPUs": re.search(r"(\d+) GPUs", m[3])[1]}
        for col in ("GBS", "MBS", "FSDP", "TP", "PP", "CP", "GA"):
            if f := re.search(rf"\b{col} (\d+)", m[3]):  # the first mention: the row's own value
                stated[col] = f[1]
        assert len(stated) >= 7, rec.id
        lay = _layout(row)
        assert {c: int(v) for c, v in stated.items()} == {c: lay[c] for c in stated}, rec.id


def test_every_in_scope_bridge_row_is_a_check_or_reference_record(dataset):
    """Every dense Llama FP8 pre-training row on DGX-H100, DGX-B200 or DGX-GB200 of every release is one
    MBRIDGE or MBRIDGE-REF record; the rows mbridge.yaml leaves out are those its header names (MXFP8 and
    NVFP4 values, DGX-GB300/B300, other models): _scope fails on any other kind of row."""
    rows = _in_scope()
    keys = {}
    for rec in dataset.records:
        if rec.group in ("MBRIDGE", "MBRIDGE-REF"):
            key = _bridge_key(rec)
            assert key not in keys, (rec.id, keys.get(key))
            keys[key] = rec.group
    assert set(keys) == set(rows)
    assert sorted({r for r, _, _ in rows}) == [
        "25.09",
        "25.11",
        "26.02",
        "26.02.01",
        "26.04",
        "26.04.01",
        "26.06",
    ]
    assert list(keys.values()).count("MBRIDGE") == 24
    assert list(keys.values()).count("MBRIDGE-REF") == 8
