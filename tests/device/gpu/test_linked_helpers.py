"""Linked quick builds (device/gpu/linked_helpers.py): the headers' helpers reduced to
declarations for the kernel, compiled once into a relocatable library, linked; the kernel
answers as its optimised build does."""

from __future__ import annotations

import textwrap
import uuid

import numpy as np
import pytest

from penstock.codegen.kernel import HEADERS
from penstock.device.kernel_spec import KernelSpec, header_sources
from penstock.device.gpu.linked_helpers import LINKED_OPTIONS, declarations_only, library_source, linked_header_sources
from penstock.device.gpu.nvrtc import nvrtc_compile

HEADER = textwrap.dedent("""\
    XPU_FN int32_t twice(int32_t x) { return 2 * x; }
    // a helper of several lines: its body goes to the library
    XPU_FN int32_t clamp(int32_t x,
                         int32_t hi) {
      const char* brace = "}{";  /* } */
      if (x > hi) return hi;  // {
      return x == '}' ? 0 : x;
    }
    XPU_FN void declared_only(int32_t* err);
    template <class T>
    XPU_FN T thrice(T x) {
      return 3 * x;
    }
    struct Pair { int32_t a, b; };
    """)


def test_a_helper_of_several_lines_becomes_a_declaration() -> None:
    out = declarations_only(HEADER)
    assert "XPU_FN int32_t clamp(int32_t x,\n                     int32_t hi);" in out
    assert "return hi" not in out and "brace" not in out


def test_one_line_helpers_templates_and_types_keep_their_text() -> None:
    out = declarations_only(HEADER)
    assert "XPU_LOCAL_FN int32_t twice(int32_t x) { return 2 * x; }" in out
    assert "template <class T>\nXPU_FN T thrice(T x) {\n  return 3 * x;\n}" in out
    assert "XPU_FN void declared_only(int32_t* err);" in out
    assert "struct Pair { int32_t a, b; };" in out


def test_line_numbers_stay_where_they_were() -> None:
    """NVRTC's messages about a linked build point at the header's own lines."""
    out = declarations_only(HEADER)
    assert out.count("\n") == HEADER.count("\n")
    assert out.split("\n").index("struct Pair { int32_t a, b; };") == HEADER.split("\n").index("struct Pair { int32_t a, b; };")


def test_an_unbalanced_body_is_an_error() -> None:
    with pytest.raises(ValueError, match="unbalanced braces"):
        declarations_only("XPU_FN int32_t f(int32_t x) {\n  return x;\n")


def test_the_real_headers_lose_most_of_their_helper_bodies() -> None:
    full = header_sources()
    linked = linked_header_sources()
    assert set(linked) == set(full)
    for name in ("decimal.h", "dates.h", "reduce.h", "hash_table.h"):
        assert len(linked[name]) < 0.8 * len(full[name]), name
        assert linked[name].count("\n") == full[name].count("\n"), name


KERNEL = "\n".join(f'#include "{h}"' for h in HEADERS) + r"""

XPU_KERNEL void linked_probe(const int64_t* days, int64_t* out, uint64_t* count, int32_t* err, int64_t n) {
  XPU_PARALLEL_BEGIN
  uint64_t kept = 0;
  XPU_FOR(i, n) {
    xpu::int128_t scaled = xpu::check_precision128((xpu::int128_t)days[i] * 100, 20, err);
    out[i] = xpu::add_months(days[i], 13) + (int64_t)(scaled % 7) + xpu::decimal_cmp128(scaled, 2, 5, 0);
    if (!xpu::is_null(nullptr, i)) ++kept;
  }
  xpu::reduce_add(count, kept);
  XPU_PARALLEL_END
}
"""


def test_the_library_and_a_kernel_compile_as_relocatable_code() -> None:
    """Without a GPU: NVRTC accepts both sides (PTX; the GPU suite links cubins)."""
    library = nvrtc_compile(library_source(), "helpers.cu", "compute_90", extra=LINKED_OPTIONS + ("--Ofast-compile=max",))
    assert library.ok, library.log
    kernel = nvrtc_compile(KERNEL, "linked_probe.cu", "compute_90", linked=True)
    assert kernel.ok, kernel.log


@pytest.mark.gpu
def test_a_linked_quick_build_answers_as_the_optimised_build(tmp_path, monkeypatch) -> None:
    from penstock.device.registry import get_backend

    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path / "cache"))
    backend = get_backend("gpu")
    backend.prepare_quick_builds(None)
    assert backend.helpers.get() is not None, backend.helpers.failure
    name = f"linked_probe_{uuid.uuid4().hex[:8]}"
    spec = KernelSpec(name, KERNEL.replace("linked_probe", name), ("ptr", "ptr", "ptr", "ptr", "i64"))
    days = np.arange(-40_000, 40_000, 7, dtype=np.int64)
    answers = []
    linked_before = backend.linked_builds
    for quick in (True, False):
        path = tmp_path / f"{quick}.cubin"
        backend.build(spec, path, quick=quick)
        kernel = backend.load(spec, path)
        out, count, err = backend.zeros(len(days), np.int64), backend.zeros(1, np.uint64), backend.zeros(1, np.int32)
        backend.launch(kernel, len(days), [backend.to_device(days), out, count, err, len(days)])
        backend.synchronize()
        answers.append((backend.to_host(out), int(backend.to_host(count)[0]), int(backend.to_host(err)[0])))
    assert backend.linked_builds == linked_before + 1  # the quick build was linked, the optimised one not
    (quick_out, quick_count, quick_err), (full_out, full_count, full_err) = answers
    assert np.array_equal(quick_out, full_out) and quick_count == full_count == len(days) and quick_err == full_err == 0


def test_the_declarations_are_kept_with_the_installation(tmp_path, monkeypatch) -> None:
    """Made once per installation (a new process reads them rather than spend 0.2 s of its
    first query making them); a damaged file is made again."""
    from penstock.device.gpu import linked_helpers

    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(tmp_path))
    monkeypatch.setattr(linked_helpers, "_LINKED_HEADERS", [])
    made = linked_header_sources()
    (kept,) = tmp_path.glob("linked-headers-*.json")
    assert made["decimal.h"] == declarations_only(header_sources()["decimal.h"])
    monkeypatch.setattr(linked_helpers, "_LINKED_HEADERS", [])
    kept.write_text("{not json")
    assert linked_header_sources() == made
    monkeypatch.setattr(linked_helpers, "_LINKED_HEADERS", [])
    assert linked_header_sources() == made  # read back from the file written again


def test_the_library_is_made_once_and_kept_with_the_installation(tmp_path, monkeypatch) -> None:
    """Without a GPU: NVRTC makes the sm_90 library, a second backend reads it from disk."""
    from penstock.device.gpu import linked_helpers
    from penstock.device.gpu.linked_helpers import HelperLibrary

    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(tmp_path))
    first = HelperLibrary("sm_90")
    image = first.get(wait=True)
    assert image is not None and image[:4] == b"\x7fELF", first.failure
    assert first.path().read_bytes() == image
    monkeypatch.setattr(linked_helpers, "library_source", lambda: "this does not compile")
    assert HelperLibrary("sm_90").get(wait=True) == image  # found on disk, not compiled again


def test_without_a_library_quick_builds_stay_unlinked(tmp_path, monkeypatch) -> None:
    """A library that cannot be made, or PENSTOCK_LINKED=0: get() answers None, and says why."""
    from penstock.device.gpu import linked_helpers
    from penstock.device.gpu.linked_helpers import HelperLibrary

    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(tmp_path))
    monkeypatch.setattr(linked_helpers, "library_source", lambda: "this does not compile")
    broken = HelperLibrary("sm_90")
    assert broken.get(wait=True) is None and "error" in broken.failure
    assert not broken.path().exists()
    monkeypatch.setenv("PENSTOCK_LINKED", "0")
    assert HelperLibrary("sm_90").get(wait=True) is None


def test_an_installation_that_cannot_be_written_still_links(tmp_path, monkeypatch) -> None:
    """Declarations and library are made and kept by the process when no file can be written."""
    from penstock.device.gpu import linked_helpers

    blocked = tmp_path / "file"
    blocked.write_text("a file where the installation's folder would be")
    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(blocked / "install"))
    monkeypatch.setattr(linked_helpers, "_LINKED_HEADERS", [])
    assert linked_header_sources()["decimal.h"] == declarations_only(header_sources()["decimal.h"])
    library = linked_helpers.HelperLibrary("sm_90")
    assert library.get(wait=True) is not None and not library.path().exists()  # kept by the process
