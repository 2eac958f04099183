"""Grids of the GPU backend (device/gpu/backend.py grid_for): enough blocks for the rows, at most one
full wave of resident blocks as the driver's occupancy calculator counts them for each kernel.
(Until this test existed a failing call fell back to 4 blocks per SM for every kernel.)"""

from __future__ import annotations

import pytest

from penstock.device.kernel_spec import KernelSpec

pytestmark = pytest.mark.gpu

LIGHT = 'extern "C" __global__ void light(long long n, int* out) { if (n < 0) out[threadIdx.x] = 1; }'
# 40 KiB of shared memory per block: five blocks fit the H100's 228 KiB, four under 200 KiB
HEAVY = ('extern "C" __global__ void heavy(long long n, int* out) {\n'
         '  __shared__ int s[10240];\n  s[threadIdx.x * 40] = (int)n;\n  __syncthreads();\n'
         '  if (n < 0) out[threadIdx.x] = s[(threadIdx.x * 7) % 10240];\n}\n')


def test_a_light_kernel_fills_every_sm_with_eight_blocks() -> None:
    from penstock.device import get_backend

    be = get_backend("gpu")
    kernel = be.compile(KernelSpec("light", LIGHT, ("i64", "ptr")))
    assert be.grid_for(kernel, 10**9) == be.sms * 2048 // 256  # 2048 threads per SM
    assert be.grid_for(kernel, 1000) == 4  # no more blocks than rows need
    assert be.grid_for(kernel, 0) == 1


def test_shared_memory_limits_the_wave() -> None:
    from penstock.device import get_backend

    be = get_backend("gpu")
    kernel = be.compile(KernelSpec("heavy", HEAVY, ("i64", "ptr")))
    per_sm = be.grid_for(kernel, 10**9) // be.sms
    assert 1 <= per_sm < 8 and be.grid_for(kernel, 10**9) == be.sms * per_sm
    out = be.cp.zeros(256, dtype=be.cp.int32)
    be.launch(kernel, 10**6, [5, out])  # the wave it chose launches
    be.cp.cuda.runtime.deviceSynchronize()
