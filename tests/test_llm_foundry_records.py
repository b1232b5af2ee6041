"""The MPT and MPT-FP8 measured runs are every row of llm-foundry's benchmark tables, transcribed exactly
(the tables are vendored verbatim in tests/data/llm_foundry_benchmarks.md), and predicting them uses
the mechanisms the tables exercise: tokens per second per GPU as the metric, Triton FlashAttention at
its published share of the tensor peak, learned position tables as long as the run's sequence."""

from __future__ import annotations

from pathlib import Path

import pytest

from dtsim.physics.transformer import count_params, get_architecture
from dtsim.validation import predict
from dtsim.validation.records import load_dataset

TABLES = Path(__file__).parent / "data" / "llm_foundry_benchmarks.md"
GPU = {"h100_80gb": "h100-sxm", "a100_80gb": "a100-80gb", "a100_40gb": "a100-40gb"}


def _table_rows():
    rows = []
    for line in TABLES.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 20 or cells[0] in ("Model", "---"):
            continue
        rows.append(cells)
    return rows


@pytest.fixture(scope="module")
def mpt_records():
    data = load_dataset()
    return [r for r in data.records if r.group in ("MPT", "MPT-FP8")]


def _key(model, seq, n, gpu, mbs, gbs, fp8):
    return (model, int(seq), int(n), gpu, int(mbs), int(gbs), fp8)


def test_every_table_row_is_one_record_with_the_tables_numbers(mpt_records):
    rows = _table_rows()
    assert len(rows) == 216
    by_key = {}
    for r in mpt_records:
        key = _key(
            r.model.removeprefix("mpt-"),
            r.seq_len,
            r.cluster["nodes"] * r.cluster["gpus_per_node"],
            r.cluster["gpu"],
            r.layout["mbs"],
            r.layout["gbs"],
            r.precision == "fp8",
        )
        assert key not in by_key, r.id
        by_key[key] = r
    assert len(by_key) == len(rows)
    for c in rows:
        model, seq, n, gpu, _mfu, _hfu, _tf, mbs, ga, gbs, *_ = c
        tpsg, prec, mp, shard, ckpt = c[12], c[14], c[15], c[16], c[17]
        rec = by_key[_key(model, seq, n, GPU[gpu], mbs, gbs, prec == "amp_fp8")]
        assert int(gbs) == int(mbs) * int(ga) * int(n), rec.id  # the table's own arithmetic
        assert rec.measured == int(tpsg), rec.id
        assert rec.metric == "tokens_per_s_per_gpu"
        assert rec.layout["recompute"] == ("full" if ckpt == "True" else "none"), rec.id
        assert rec.layout["zero"] == (2 if shard == "SHARD_GRAD_OP" else 3), rec.id
        assert rec.layout.get("fp32_grad_accumulation") == (False if mp == "PURE" else None), rec.id
        assert rec.layout["attention_kernel"] == "triton"  # the yamls' attn_impl


def test_learned_positions_cover_the_runs_sequence():
    """llm-foundry's parameter counts grow by max_seq_len × d_model with the sequence (MPT-1B: 1,315,950,592
    at 2,048 tokens, 1,445,974,016 at 65,536): step and plan size a learned position table to the run's
    sequence (transformer.at_sequence); rotary and ALiBi models are unchanged."""
    from dtsim.models.datacenter.step import step
    from dtsim.physics.transformer import at_sequence

    rec = next(r for r in load_dataset().records if r.id == "MPT-1B-A100-80-8-s65536")
    base = get_architecture("mpt-1b")
    r = step(predict.datacenter_workload(rec))
    assert r.params_b * 1e9 == pytest.approx(count_params(base).total + (65536 - 2048) * base.hidden)
    assert at_sequence(base, 1024) is base
    llama = get_architecture("llama2-70b")
    assert at_sequence(llama, 8 * llama.seq_len) is llama


def test_tokens_per_second_is_what_the_step_implies(mpt_records):
    from dtsim.models.datacenter.step import step

    rec = next(r for r in mpt_records if r.id == "MPT-7B-H100-8")
    value, details = predict.predict_datacenter(rec)
    r = step(predict.datacenter_workload(rec))
    assert value == pytest.approx(rec.layout["gbs"] * 2048 / (r.step_time_s * 8))
    assert details["step_time_s"] == pytest.approx(r.step_time_s)
    # and the measured rate converts to an MFU between 0 and 1 by exact FLOP counts
    assert 0.2 < predict.measured_model_mfu(rec) < 0.7


def test_flop_metrics_still_need_a_convention(tmp_path):
    f = tmp_path / "runs.yaml"
    f.write_text(
        "groups: {G: {description: mine, role: check}}\n"
        "records:\n"
        "  - {id: X, group: G, kind: datacenter, certainty: user, source: me, unit: TFLOP/s, measured: 100,\n"
        "     metric: tflops_per_gpu, model: gpt2, cluster: {nodes: 1}, layout: {tp: 1}}\n"
    )
    data = load_dataset(tmp_path, bundled=False)
    assert not data.records
    assert any(p.reason.startswith("convention: needed for metric tflops_per_gpu") for p in data.problems)
