"""The legacy execution-control calls through pycuda, and a clean exit.

pycuda's current launch path calls cuFuncSetBlockShape before every launch and cuCtxDetach when
a context it made is cleaned up (at exit with pycuda.autoinit). Its Function objects still wrap
the whole stateful interface of CUDA 2.x/3.x, which older programs use: cuFuncSetBlockShape,
cuFuncSetSharedSize, cuParamSetSize, cuParamSeti, cuParamSetf, cuParamSetv, cuLaunch,
cuLaunchGrid and cuLaunchGridAsync; and cuCtxAttach / cuCtxDetach for a context's use count.
This runs each of them with kernels given as PTX and checks the results against NumPy, then
runs a pycuda.autoinit program in a child process and requires that it exits without pycuda's
"clean-up operation failed" warning.

Usage: pycuda_legacy.py CLIENT_KERNELS_PTX
"""
import struct
import subprocess
import sys

import numpy as np
import pycuda.driver as drv

ptx_path = sys.argv[1]
drv.init()
ctx = drv.Device(0).make_context()  # cuCtxCreate; current on this thread


def run_legacy_calls():
    # cuCtxAttach returns the current context with its use count raised; cuCtxDetach lowers it
    # again, and the context stays usable while the count is above zero.
    attached = drv.Context.attach()
    assert attached.handle == ctx.handle, (attached.handle, ctx.handle)
    attached.detach()
    assert drv.Context.get_current().handle == ctx.handle

    module = drv.module_from_file(ptx_path)
    n = 5000
    block = 128
    blocks = (n + block - 1) // block

    # fill_affine(float* out, int n, float step): parameters by offset, then cuLaunchGrid.
    fill = module.get_function("fill_affine")
    out = drv.mem_alloc(n * 4)
    fill._set_block_shape(block, 1, 1)
    fill._param_set_size(16)
    fill._param_setv(0, struct.pack("P", int(out)))
    fill._param_seti(8, n)
    fill._param_setf(12, 0.25)
    fill._launch_grid(blocks, 1)
    ctx.synchronize()
    got = np.empty(n, np.float32)
    drv.memcpy_dtoh(got, out)
    assert np.array_equal(got, 0.25 * np.arange(n, dtype=np.float32)), got[:4]

    # cuLaunch: a grid of one block, with the parameters set before still in place except the step.
    drv.memset_d32(out, 0, n)
    fill._param_setf(12, -1.0)
    fill._launch()
    ctx.synchronize()
    drv.memcpy_dtoh(got, out)
    assert np.array_equal(got[:block], -np.arange(block, dtype=np.float32)) and not got[block:].any(), got[block - 2 : block + 2]

    # block_sum(const float* x, float* partial, int n) with dynamic shared memory from
    # cuFuncSetSharedSize, launched with cuLaunchGridAsync on a stream.
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    dx = drv.to_device(x)
    partial = drv.mem_alloc(blocks * 4)
    block_sum = module.get_function("block_sum")
    block_sum._set_block_shape(block, 1, 1)
    block_sum._set_shared_size(block * 4)
    block_sum._param_set_size(20)
    block_sum._param_setv(0, struct.pack("PP", int(dx), int(partial)))
    block_sum._param_seti(16, n)
    stream = drv.Stream()
    block_sum._launch_grid_async(blocks, 1, stream)
    sums = drv.pagelocked_empty(blocks, np.float32)
    drv.memcpy_dtoh_async(sums, partial, stream)
    stream.synchronize()
    padded = np.zeros(blocks * block, np.float32)
    padded[:n] = x
    assert np.allclose(sums, padded.reshape(blocks, block).sum(axis=1), atol=1e-4), sums[:4]

    # The launch interface of today still works on the same functions afterwards.
    fill(out, np.int32(n), np.float32(2.0), block=(block, 1, 1), grid=(blocks, 1))
    drv.memcpy_dtoh(got, out)
    assert np.array_equal(got, 2.0 * np.arange(n, dtype=np.float32))

    for p in (out, dx, partial):
        p.free()


try:
    run_legacy_calls()
except BaseException:
    ctx.pop()  # so that pycuda exits with the failure, not with its context-stack abort
    raise
ctx.pop()
ctx.detach()  # the last use: cuCtxDetach destroys the context

# A pycuda.autoinit program cleans its context up at exit with cuCtxDetach; pycuda prints a
# warning (and leaks the context) when that fails.
child = subprocess.run(
    [sys.executable, "-c",
     "import numpy as np, pycuda.autoinit, pycuda.gpuarray as g; "
     "assert (g.to_gpu(np.arange(4.0)).get() == np.arange(4.0)).all()"],
    capture_output=True, text=True, timeout=300)
sys.stderr.write(child.stderr)
assert child.returncode == 0, child.returncode
assert "clean-up operation failed" not in child.stderr, child.stderr

print("pycuda legacy execution control (block shape, cuParamSet*, cuLaunch*, attach/detach): OK")
