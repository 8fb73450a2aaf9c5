"""The CPU report and the run-time choices made from it, per CPU kind (issues 27, 28)."""

from __future__ import annotations

from ratio.retrieval.cpu import cpu_info, cpu_summary, encode_backend, int8_reduce_range

AMD_EPYC = {"avx2", "fma", "f16c", "sse4_2"}  # the AVX2-only sessions
XEON_AMX = AMD_EPYC | {"avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16"}


def test_encode_backend_by_cpu_kind():
    assert encode_backend(AMD_EPYC) == "torch"
    assert encode_backend(XEON_AMX) == "torch-bf16"
    assert encode_backend(AMD_EPYC | {"avx512f", "avx512_vnni"}) == "torch"  # no bf16 units


def test_summary_names_this_cpu_and_each_feature():
    model, flags = cpu_info()
    line = cpu_summary()
    assert line.startswith(model)
    if flags:
        for label in ("AVX2", "AVX-512", "VNNI", "AMX", "bf16"):
            assert f"+{label}" in line or f"-{label}" in line
        assert line.endswith(encode_backend(flags))


def test_int8_weights_lose_a_bit_only_where_vnni_is_missing_on_x86():
    assert int8_reduce_range(AMD_EPYC, "x86_64")  # vpmaddubsw's int16 sums saturate
    assert not int8_reduce_range(XEON_AMX, "x86_64")
    assert not int8_reduce_range(AMD_EPYC | {"avx_vnni"}, "x86_64")
    assert not int8_reduce_range(frozenset(), "aarch64")  # its own int8 kernels
