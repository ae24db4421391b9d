"""torch (fake) — a pure-Python stand-in for the part of PyTorch that
bench/torch_gpu.py uses, with a simulated GPU stream, so its run path
(torch.compile step, CUDA graph capture and replay, the blocking sleep, the
incremental CSV) runs in tests without PyTorch or a GPU. Used only by
tests/torch_gpu_selftest.sh (PYTHONPATH=tests/torch_fake); it is not PyTorch
and measures nothing real.

The simulated stream: a kernel starts when the stream is free and at least
LAUNCH_S after the host enqueued it, and runs KERNEL_S + bytes / BW_BPS; an
event's time is when the stream reaches it; synchronize waits (really) for
the stream. So events around calls enqueued behind _sleep time the kernels
only, and events around calls on an idle stream include the host's Python
time, as on a GPU.

Knobs (environment, comma-separated names):
  FAKE_TORCH_CAPTURE_FAIL  capture raises in these: 'clone', a compiled
                           function's name, an autograd.Function's class name
  FAKE_TORCH_REPLAY_STALE  these ops are left out of a captured graph
                           (the replay then leaves its output poisoned)
  FAKE_TORCH_COMPILE_FAIL  torch.compile of these functions raises on first call
  FAKE_TORCH_NO_SLEEP=1    torch.cuda._sleep is missing
  FAKE_TORCH_HANG_RAND=K   the K-th torch.rand call sleeps 60 s (to kill the run)
"""
import math
import os
import random
import struct
import time

__version__ = "0.0+fake"

LAUNCH_S = 3e-6
KERNEL_S = 2e-6
BW_BPS = 4e12
CLOCK_HZ = 1.5e9
BIG = 1 << 16  # elements: larger tensors (the flush buffers) are not computed


def _names(var):
    return {s for s in os.environ.get(var, "").split(",") if s}


class _Version:
    cuda = "0.0+fake"


version = _Version()


# ---- dtypes and rounding -------------------------------------------------------

def _r32(v):
    if math.isnan(v) or math.isinf(v):
        return v
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _r16(v):
    if math.isnan(v) or math.isinf(v):
        return v
    try:
        return struct.unpack("e", struct.pack("e", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _rbf16(v):
    if math.isnan(v) or math.isinf(v):
        return v
    b = struct.unpack("I", struct.pack("f", _r32(v)))[0]
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000  # round to nearest even
    return struct.unpack("f", struct.pack("I", b))[0]


class dtype:
    def __init__(self, name, size, rnd):
        self.name, self.itemsize, self.rnd = name, size, rnd

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", 4, _r32)
float64 = dtype("float64", 8, lambda v: v)
bfloat16 = dtype("bfloat16", 2, _rbf16)
float16 = dtype("float16", 2, _r16)


# ---- the simulated stream -----------------------------------------------------------

class _Gpu:
    ready = 0.0        # perf_counter time at which the stream's queued work ends
    capture = None     # the graph being captured, or None
    no_grad = 0
    rand_calls = 0


def _launch(dur, latency=LAUNCH_S):
    start = max(_Gpu.ready, time.perf_counter() + latency)
    _Gpu.ready = start + dur


def _wait():
    left = _Gpu.ready - time.perf_counter()
    if left > 0:
        time.sleep(left)


def _kernel(name, compute, nbytes):
    """Runs compute() now and enqueues its kernel; while capturing, records it."""
    compute()
    dur = KERNEL_S + nbytes / BW_BPS
    g = _Gpu.capture
    if g is not None:
        if name in _names("FAKE_TORCH_CAPTURE_FAIL"):
            raise RuntimeError(f"fake: operation '{name}' not permitted when stream is capturing")
        if name not in _names("FAKE_TORCH_REPLAY_STALE"):
            g._nodes.append((compute, dur))
    else:
        _launch(dur)


# ---- tensors ------------------------------------------------------------------------

class Tensor:
    def __init__(self, data, dt, requires_grad=False):
        self.data, self.dtype = data, dt
        self.requires_grad = requires_grad
        self.grad = None
        self._grad_fn = None  # (parent, function of the incoming gradient)

    def __len__(self):
        return len(self.data)

    # elementwise ops: out[i] = f(a[i], b[i], ...) rounded to the tensor dtype
    def _map(self, name, f, *others, grad=None):
        ts = [self] + [o for o in others if isinstance(o, Tensor)]
        n = max(len(t.data) for t in ts)
        out = Tensor([0.0] * n, self.dtype)
        rnd = self.dtype.rnd
        args = [self] + list(others)

        def compute():
            cols = [a.data if isinstance(a, Tensor) else [a] * n for a in args]
            out.data[:] = [rnd(f(*vals)) for vals in zip(*cols)]

        _kernel(name, compute, n * self.dtype.itemsize * (len(ts) + 1))
        needs = [t for t in ts if t.requires_grad] if not _Gpu.no_grad else []
        if needs:
            if grad is None or len(needs) > 1 or needs[0] is not self:
                raise NotImplementedError(f"fake torch: no autograd for '{name}'")
            out.requires_grad = True
            out._grad_fn = (self, grad(out))
        return out

    def __add__(self, o):
        return self._map("add", lambda a, b: a + b, o)

    __radd__ = __add__

    def __sub__(self, o):
        return self._map("sub", lambda a, b: a - b, o)

    def __rsub__(self, o):
        return self._map("rsub", lambda a, b: b - a, o)

    def __mul__(self, o):
        return self._map("mul", lambda a, b: a * b, o)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._map("div", lambda a, b: a / b if b else math.copysign(math.inf, a), o)

    def __pow__(self, p):
        return self._map("pow", lambda a, b: a ** b, p)

    def abs(self):
        return self._map("abs", abs)

    def clone(self):
        return self._map("clone", lambda a: a)

    def to(self, dt):
        out = Tensor([0.0] * len(self.data), dt)
        src = self

        def compute():
            out.data[:] = [dt.rnd(v) for v in src.data]

        _kernel("to", compute, len(self.data) * (self.dtype.itemsize + dt.itemsize))
        return out

    def double(self):
        return self.detach().to(float64)

    def detach(self):
        t = Tensor(self.data, self.dtype)  # shares the data, as PyTorch's detach
        return t

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    def fill_(self, v):
        v = self.dtype.rnd(float(v))

        def compute():
            # the flush buffers (1 MiB and up) are never read back: only
            # their kernel's time is simulated, the Python work is skipped
            if len(self.data) <= BIG:
                self.data[:] = [v] * len(self.data)

        _kernel("fill", compute, len(self.data) * self.dtype.itemsize)
        return self

    def sum(self):
        out = Tensor([0.0], self.dtype)

        def compute():
            out.data[0] = self.dtype.rnd(sum(self.data)) if len(self.data) <= BIG else math.nan

        _kernel("sum", compute, len(self.data) * self.dtype.itemsize)
        return out

    def max(self):
        out = Tensor([0.0], self.dtype)

        def compute():
            out.data[0] = math.nan if any(math.isnan(v) for v in self.data) else max(self.data)

        _kernel("max", compute, len(self.data) * self.dtype.itemsize)
        return out

    def item(self):
        if _Gpu.capture is not None:
            raise RuntimeError("fake: item() while capturing")
        _wait()
        return self.data[0]

    def _chain(self, grad):
        """(leaf, gradient at the leaf): the backward pass down the chain of single-input ops."""
        t, g = self, grad
        while t._grad_fn is not None:
            parent, f = t._grad_fn
            _Gpu.no_grad += 1
            try:
                g = f(g)
            finally:
                _Gpu.no_grad -= 1
            t = parent
        if not t.requires_grad:
            raise RuntimeError("fake: element 0 of tensors does not require grad")
        return t, g

    def backward(self, grad):
        t, g = self._chain(grad)
        t.grad = g if t.grad is None else t.grad + g


def _unary(name, f, grad=None):
    def op(x):
        return x._map(name, f, grad=grad)

    op.__name__ = name
    return op


def _sigmoid(a):
    return 1.0 / (1.0 + math.exp(-a)) if a >= 0 else math.exp(a) / (1.0 + math.exp(a))


sin = _unary("sin", math.sin)
cos = _unary("cos", math.cos)
tanh = _unary("tanh", math.tanh)
sigmoid = _unary("sigmoid", _sigmoid, grad=lambda out: lambda g: g * out * (1 - out))


def clamp(t, min=None):
    return t._map("clamp", lambda a: a if min is None or a >= min else min)


class Generator:
    def __init__(self, device=None):
        self.rng = random.Random(0)

    def manual_seed(self, seed):
        self.rng.seed(seed)
        return self


def rand(n, device=None, generator=None, dtype=float32):
    _Gpu.rand_calls += 1
    if str(_Gpu.rand_calls) == os.environ.get("FAKE_TORCH_HANG_RAND", ""):
        time.sleep(60)
    rng = generator.rng if generator is not None else random
    t = Tensor([dtype.rnd(rng.random()) for _ in range(n)], dtype)
    _launch(KERNEL_S)
    return t


def empty(n, dtype=float32, device=None):
    return Tensor([0.0] * n, dtype)


def ones(n, dtype=float32, device=None):
    return Tensor([1.0] * n, dtype)


# ---- autograd.Function --------------------------------------------------------

class _Ctx:
    def save_for_backward(self, *ts):
        self.saved_tensors = ts


class _FunctionMeta(type):
    @property
    def apply(cls):
        def apply(x):
            if _Gpu.capture is not None and cls.__name__ in _names("FAKE_TORCH_CAPTURE_FAIL"):
                raise RuntimeError(f"fake: {cls.__name__} not permitted when stream is capturing")
            ctx = _Ctx()
            _Gpu.no_grad += 1
            try:
                out = cls.forward(ctx, x)
            finally:
                _Gpu.no_grad -= 1
            if x.requires_grad and not _Gpu.no_grad:
                out.requires_grad = True
                out._grad_fn = (x, lambda g: cls.backward(ctx, g))
            return out

        return apply


class _Autograd:
    class Function(metaclass=_FunctionMeta):
        pass

    @staticmethod
    def grad(output, inp, grad_output):
        leaf, g = output._chain(grad_output)
        if leaf is not inp:
            raise RuntimeError("fake: the input is not the output's leaf")
        return (g,)


autograd = _Autograd()


# ---- torch.compile ------------------------------------------------------------

def compile(fn, dynamic=None, **_kw):
    seen = set()

    def compiled(x):
        if _Gpu.capture is not None and fn.__name__ in _names("FAKE_TORCH_CAPTURE_FAIL"):
            raise RuntimeError(f"fake: compiled {fn.__name__} not permitted when stream is capturing")
        if x.dtype not in seen:
            if _Gpu.capture is not None:
                raise RuntimeError("fake: compiling while capturing")
            time.sleep(0.05)  # "compiling"
            if fn.__name__ in _names("FAKE_TORCH_COMPILE_FAIL"):
                raise RuntimeError(f"fake: BackendCompilerFailed for {fn.__name__}\nsecond line")
            seen.add(x.dtype)
        return fn(x)

    return compiled


# ---- torch.cuda ---------------------------------------------------------------

class _Props:
    name = "Fake GPU (torch stand-in)"
    multi_processor_count = 4
    L2_cache_size = 64 << 10


class _Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        if _Gpu.capture is not None:
            raise RuntimeError("fake: timing event recorded while capturing")
        self.t = max(_Gpu.ready, time.perf_counter())

    def synchronize(self):
        _wait()

    def elapsed_time(self, other):
        if self.t is None or other.t is None:
            raise RuntimeError("fake: event not recorded")
        return (other.t - self.t) * 1e3


class _Stream:
    def wait_stream(self, other):
        pass


class _StreamCtx:
    def __init__(self, s):
        self.s = s

    def __enter__(self):
        return self.s

    def __exit__(self, *exc):
        return False


class _CUDAGraph:
    def __init__(self):
        self._nodes = None

    def replay(self):
        if self._nodes is None:
            raise RuntimeError("fake: replay of a graph never captured")
        for compute, _ in self._nodes:
            compute()
        _launch(sum(d for _, d in self._nodes), latency=5e-6)


class _GraphCtx:
    def __init__(self, g):
        self.g = g

    def __enter__(self):
        _wait()
        self.g._nodes = []
        _Gpu.capture = self.g
        return self.g

    def __exit__(self, exc_type, *exc):
        _Gpu.capture = None
        if exc_type is not None:
            self.g._nodes = None
        return False


class _Cuda:
    Event = _Event
    Stream = _Stream
    CUDAGraph = _CUDAGraph

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_properties(i):
        return _Props()

    @staticmethod
    def synchronize():
        if _Gpu.capture is not None:
            raise RuntimeError("fake: synchronize while capturing")
        _wait()

    @staticmethod
    def current_stream():
        return _Stream()

    @staticmethod
    def stream(s):
        return _StreamCtx(s)

    @staticmethod
    def graph(g, pool=None, stream=None, capture_error_mode="global"):
        return _GraphCtx(g)

    @staticmethod
    def empty_cache():
        pass


class _Nvtx:
    """torch.cuda.nvtx: the ranges pushed, one name a line into
    $FAKE_TORCH_NVTX_LOG when set (lecture_demos' profile mode)."""

    depth = 0

    @staticmethod
    def range_push(name):
        _Nvtx.depth += 1
        log = os.environ.get("FAKE_TORCH_NVTX_LOG")
        if log:
            with open(log, "a") as f:
                f.write(f"push {name}\n")

    @staticmethod
    def range_pop():
        _Nvtx.depth -= 1
        log = os.environ.get("FAKE_TORCH_NVTX_LOG")
        if log:
            with open(log, "a") as f:
                f.write("pop\n")


_Cuda.nvtx = _Nvtx
cuda = _Cuda()
if os.environ.get("FAKE_TORCH_NO_SLEEP") != "1":
    def _sleep(cycles):
        _launch(cycles / CLOCK_HZ)

    cuda._sleep = _sleep
