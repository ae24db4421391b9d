"""membound_trace.py — `membound trace`'s PyTorch half: runs one function of a
user's script on meta tensors (shapes and dtypes, no data) under a
TorchFunctionMode, which sees the calls the user's code makes (torch.sin,
Tensor.__mul__, F.rms_norm) before PyTorch decomposes them per device, and
writes them as a variant in membound's language. An operation the language
does not express stops the trace, naming it, the user's file:line and what
is written instead. torch.autograd.Function.apply is traced through its
forward (its backward is membound's own, from the forward's operations).

Run by the membound binary (cli/cmd_trace.c), never imported:
  python3 -I -B membound_trace.py SCRIPT FUNCTION OUT [--backward] [--name N]
          --input NAME=SHAPE[:DTYPE][:nograd] ...
SHAPE is sizes joined by 'x', each a number or NAME=number (4096x1024,
batch=2xheads=4xseq=128xseq=128). Exit: 0 written; 2 bad input or an
unsupported operation (one 'membound: error:' line); 3 no torch here; 1 the
user's code raised."""
import importlib.util
import inspect
import re
import os
import sys
import traceback

EXIT_NO_TORCH = 3


def fail(msg, code=2):
    sys.stderr.write("membound: error: " + msg + "\n")
    sys.exit(code)


QUIET_NO_TORCH = "--quiet-no-torch" in sys.argv  # the binary tries another python next
if QUIET_NO_TORCH:
    sys.argv.remove("--quiet-no-torch")

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    if QUIET_NO_TORCH:
        sys.exit(EXIT_NO_TORCH)
    fail(f"this python ({sys.executable}) cannot import torch ({e}); install PyTorch "
         "(Debian: apt-get install python3-torch) or name another python with --python", EXIT_NO_TORCH)

try:
    from torch.overrides import TorchFunctionMode
except ImportError:
    fail(f"torch {torch.__version__} has no torch.overrides.TorchFunctionMode (torch 1.13 or later "
         "is needed to trace)", EXIT_NO_TORCH)

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
MB_DTYPE = {v: k for k, v in DTYPES.items()}
SUPPORTED = ("supported: + - * / ** and unary minus; sin cos tan exp log tanh sigmoid relu sqrt rsqrt abs "
             "erf gelu silu softplus; sum mean amax (over the last dimension, or every element); "
             "softmax log_softmax layer_norm rms_norm over the last dimension; .to(dtype), .float(), "
             ".half(), .bfloat16(), .detach() of an input, .clone(); @ (matmul, mm, bmm), F.linear and "
             "torch.addmm, the right operand of @ transposed (.T, .mT, .t(), .transpose(-2, -1)) or not; "
             ".view() or .reshape() to the same shape; dropout in eval mode")
HERE = os.path.abspath(__file__)


class Unsupported(Exception):
    pass


def user_site():
    """The innermost frame of the user's code (not torch's, not this file's)."""
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    for fr in reversed(traceback.extract_stack()):
        f = os.path.abspath(fr.filename)
        if f == HERE or f.startswith(torch_dir + os.sep) or fr.filename.startswith("<"):
            continue
        return f"{fr.filename}:{fr.lineno}"
    return "?"


def fmt_num(v):
    if isinstance(v, bool):
        raise Unsupported("a boolean operand")
    if isinstance(v, int):
        return str(v)
    r = repr(float(v))
    if r in ("inf", "-inf", "nan"):
        raise Unsupported(f"the number {r}")
    return r


def fname(func):
    n = getattr(func, "__name__", None) or repr(func)
    return n


# Tensor methods and torch functions of one tensor the language has, by name
UNARY = {"sin", "cos", "tan", "exp", "log", "tanh", "sigmoid", "relu", "sqrt", "rsqrt", "abs", "erf", "silu",
         "softplus"}
BINARY = {"add": "+", "__add__": "+", "__radd__": "+", "sub": "-", "__sub__": "-", "__rsub__": "-",
          "mul": "*", "__mul__": "*", "__rmul__": "*", "div": "/", "__truediv__": "/", "__rtruediv__": "/",
          "true_divide": "/", "__rdiv__": "/", "__div__": "/", "pow": "**", "__pow__": "**", "__rpow__": "**"}
REDUCE = {"sum": "sum", "mean": "mean", "amax": "amax"}
MATMUL = {"matmul", "__matmul__", "__rmatmul__", "mm", "bmm"}
TRANSPOSE_PROPS = {"T", "mT"}
# calls that return no tensor and change nothing: shapes, dtypes, flags
META = {"size", "dim", "numel", "__len__", "__get__", "is_floating_point", "is_contiguous", "element_size",
        "__format__", "__repr__", "__bool__", "__hash__", "ndimension", "nelement", "requires_grad_",
        "save_for_backward", "get_device"}


class Tracer(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.names = {}   # id(tensor) -> its name in the variant
        self.keep = []    # the tensors named, kept alive so their ids stay theirs
        self.exprs = {}   # name -> (text, is_atom)
        self.order = []   # computed names, in evaluation order
        self.uses = {}    # name -> times read
        self.inputs = {}  # input name -> requires_grad
        self.detached = set()
        self.n = 0
        self.prefix = "t"
        self.views = {}   # id(view) -> (the tensor's name, its text: k.transpose(-2, -1))
        self.products = 0

    def name_of(self, t):
        return self.names.get(id(t))

    def operand(self, a, op):
        """Text of one operand: a named tensor or a number."""
        if isinstance(a, torch.Tensor):
            if id(a) in self.views:
                raise Unsupported(f"a transposed view as an operand of {op}: membound models a transpose as the "
                                  "right operand of @ only")
            nm = self.name_of(a)
            if nm is None:
                if a.dim() == 0:
                    raise Unsupported(f"a 0-d tensor made inside the function as an operand of {op} "
                                      "(write the number itself)")
                raise Unsupported(f"a tensor made inside the function (torch.ones, torch.full, ...: not an input "
                                  f"nor computed from one) as an operand of {op}; make it an --input")
            self.uses[nm] = self.uses.get(nm, 0) + 1
            return nm
        if isinstance(a, (int, float)):
            return fmt_num(a)
        raise Unsupported(f"an operand of type {type(a).__name__} to {op}")

    def view(self, x, out, suffix):
        """A transposed view of x, kept for the right operand of @."""
        nm = self.name_of(x)
        if nm is None or id(x) in self.views:
            raise Unsupported("a transpose of a tensor made inside the function, or of a view")
        self.views[id(out)] = (nm, nm + suffix)
        self.keep.append(out)
        return out

    def view_text(self, b, op):
        if id(b) in self.views:
            nm, text = self.views[id(b)]
            self.uses[nm] = self.uses.get(nm, 0) + 1
            return text
        return self.operand(b, op)

    def define(self, out, text, atom=False):
        if not isinstance(out, torch.Tensor):
            raise Unsupported("an operation that returns no single tensor")
        self.n += 1
        nm = f"{self.prefix}{self.n}"
        self.names[id(out)] = nm
        self.keep.append(out)
        self.exprs[nm] = (text, atom)
        self.order.append(nm)
        return out

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = fname(func)
        try:
            return self.handle(func, name, args, kwargs)
        except Unsupported as e:
            what = "" if name == "__get__" else f"{qual(func)}: "  # a property names itself
            raise Unsupported(f"{user_site()}: {what}{e}") from None

    def handle(self, func, name, args, kwargs):
        if name == "__get__":  # a property: x.shape, x.dtype pass; x.T, x.mT, x.data are views
            out = func(*args, **kwargs)
            if isinstance(out, torch.Tensor):
                prop = getattr(getattr(func, "__self__", None), "__name__", "?")
                if prop in TRANSPOSE_PROPS and isinstance(args[0], torch.Tensor) and args[0].dim() >= 2:
                    return self.view(args[0], out, ".T" if args[0].dim() == 2 else ".mT")
                raise Unsupported(f"Tensor.{prop}, a view membound does not model; {SUPPORTED}")
            return out
        if name in META:
            return func(*args, **kwargs)
        if name == "apply" or name == "_apply_forward":  # autograd.Function: its forward's ops are seen
            return func(*args, **kwargs)
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        if not tensors:  # torch.ones(...), torch.tensor(...): made inside, refused when read
            return func(*args, **kwargs)
        out = None
        if name in ("transpose", "t", "swapaxes", "swapdims"):
            x = args[0]
            dims = [d % x.dim() for d in args[1:3]] if len(args) >= 3 else [0, 1]
            if x.dim() < 2 or sorted(dims) != [x.dim() - 2, x.dim() - 1]:
                raise Unsupported(f"a transpose of other dimensions than the last two; {SUPPORTED}")
            return self.view(x, func(*args, **kwargs), ".transpose(-2, -1)")
        if name in MATMUL:
            a, b = (args[1], args[0]) if name == "__rmatmul__" else (args[0], args[1])
            if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dim() < 2 or b.dim() < 2:
                raise Unsupported("a product of a vector (membound multiplies tensors of two or more dimensions)")
            ta = self.operand(a, name)
            tb = self.view_text(b, name)
            self.products += 1
            return self.define(func(*args, **kwargs), f"{ta} @ {tb}")
        if name == "addmm":  # torch.addmm(bias, x, w), GPT-2's Conv1D: one addmm
            bias, x, w = (list(args) + [None, None, None])[:3]
            if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1 or len(args) != 3:
                raise Unsupported("addmm with beta or alpha other than 1, or without its three tensors")
            parts = [self.operand(bias, name), self.operand(x, name), self.operand(w, name)]
            self.products += 1
            return self.define(func(*args, **kwargs), f"addmm({', '.join(parts)})", atom=True)
        if name in ("view", "reshape"):  # to the tensor's own shape: itself, no kernel
            out = func(*args, **kwargs)
            x = args[0]
            nm = self.name_of(x)
            if nm is None or id(x) in self.views or tuple(out.shape) != tuple(x.shape):
                raise Unsupported(f"Tensor.{name} to another shape, {tuple(out.shape)} (a view that reshapes; "
                                  f"{SUPPORTED})")
            self.names[id(out)] = nm
            self.keep.append(out)
            return out
        if name == "dropout":  # in eval mode (training=False) or p = 0: the tensor itself
            p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
            training = args[2] if len(args) > 2 else kwargs.get("training", True)
            if training and p != 0:
                raise Unsupported("dropout in training mode (its random mask is not modelled): trace the module "
                                  "in eval mode (module.eval())")
            out = func(*args, **kwargs)
            nm = self.name_of(args[0])
            if nm is None:
                self.operand(args[0], name)
            self.names[id(out)] = nm
            self.keep.append(out)
            return out
        if name == "linear":
            x, w = args[0], args[1] if len(args) > 1 else kwargs.get("weight")
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            parts = [self.operand(x, name), self.operand(w, name)] + ([self.operand(bias, name)] if bias is not None else [])
            self.products += 1
            return self.define(func(*args, **kwargs), f"linear({', '.join(parts)})", atom=True)
        if name in BINARY:
            op = BINARY[name]
            if kwargs.get("alpha", 1) != 1:
                raise Unsupported("alpha other than 1 (write a * b)")
            extra = {k: v for k, v in kwargs.items() if k not in ("alpha",)}
            if extra or len(args) != 2:
                raise Unsupported(f"arguments {sorted(extra)} (two operands only)")
            a, b = args
            if name.startswith("__r"):
                a, b = b, a
            ta, tb = self.operand(a, name), self.operand(b, name)
            out = func(*args, **kwargs)
            return self.define(out, f"{ta} {op} {tb}")
        if name == "__neg__" or name == "neg":
            t = self.operand(args[0], name)
            return self.define(func(*args, **kwargs), f"-{t}")
        if name in UNARY or name == "gelu":
            x = self.operand(args[0], name)
            rest = dict(kwargs)
            if len(args) > 1:
                raise Unsupported("positional arguments after the tensor")
            if name == "gelu":
                appr = rest.pop("approximate", "none")
                if appr != "none":
                    raise Unsupported(f"approximate='{appr}' (membound's gelu is the exact erf form; write "
                                      "the tanh form out as 0.5 * x * (1 + tanh(...)))")
            if name == "softplus" and (rest.pop("beta", 1) != 1 or rest.pop("threshold", 20) != 20):
                raise Unsupported("beta or threshold other than 1 and 20")
            if rest.pop("inplace", False):
                raise Unsupported("inplace=True (membound's operations write new tensors)")
            if rest:
                raise Unsupported(f"arguments {sorted(rest)}")
            return self.define(func(*args, **kwargs), f"{name}({x})", atom=True)
        if name in REDUCE:
            x = self.operand(args[0], name)
            dim = args[1] if len(args) > 1 else kwargs.get("dim", None)
            keep = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
            rest = {k for k in kwargs if k not in ("dim", "keepdim")}
            if rest:
                raise Unsupported(f"arguments {sorted(rest)}")
            out = func(*args, **kwargs)
            if dim is None or dim == () or dim == []:
                return self.define(out, f"{REDUCE[name]}({x})", atom=True)
            d = dim[0] if isinstance(dim, (tuple, list)) and len(dim) == 1 else dim
            nd = args[0].dim()
            if not isinstance(d, int) or d not in (-1, nd - 1):
                raise Unsupported(f"dim={dim}: membound reduces the last dimension (dim=-1) or every element")
            return self.define(out, f"{REDUCE[name]}({x}, -1{', keepdim=True' if keep else ''})", atom=True)
        if name in ("softmax", "log_softmax"):
            x = self.operand(args[0], name)
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            if kwargs.get("dtype") is not None or (len(args) > 3 and args[3] is not None):
                raise Unsupported("dtype= (cast with .to first)")
            if dim not in (-1, args[0].dim() - 1):
                raise Unsupported(f"dim={dim}: over the last dimension only (dim=-1)")
            return self.define(func(*args, **kwargs), f"{name}({x}, -1)", atom=True)
        if name in ("layer_norm", "rms_norm"):
            return self.norm(func, name, args, kwargs)
        if name in ("to", "float", "half", "bfloat16", "type"):
            return self.cast(func, name, args, kwargs)
        if name in ("detach",):
            t = args[0]
            nm = self.name_of(t)
            if nm is None or nm not in self.inputs:
                raise Unsupported("detach of a computed tensor (it cuts the graph in two): declare the "
                                  "tensor an input with :nograd instead")
            out = func(*args, **kwargs)
            self.names[id(out)] = f"detach({nm})"
            self.keep.append(out)
            self.detached.add(nm)
            return out
        if name in ("clone", "contiguous"):
            x = self.operand(args[0], name)
            out = func(*args, **kwargs)
            if name == "contiguous":  # a contiguous tensor's .contiguous() is itself, no kernel
                self.uses[x] -= 1
                self.names[id(out)] = x
                self.keep.append(out)
                return out
            return self.define(out, f"copy({x})", atom=True)
        raise Unsupported(f"not expressible in membound's variant language; {SUPPORTED}")

    def norm(self, func, name, args, kwargs):
        x = args[0]
        xs = self.operand(x, name)
        shape = args[1] if len(args) > 1 else kwargs.get("normalized_shape")
        w = args[2] if len(args) > 2 else kwargs.get("weight")
        b = args[3] if name == "layer_norm" and len(args) > 3 else kwargs.get("bias")
        eps_i = 4 if name == "layer_norm" else 3
        eps = args[eps_i] if len(args) > eps_i else kwargs.get("eps")
        if tuple(shape) != (x.shape[-1],):
            raise Unsupported(f"normalized_shape {tuple(shape)}: the last dimension only ({x.shape[-1]},)")
        parts = [xs]
        if w is not None:
            parts.append(self.operand(w, name))
        if b is not None:
            parts.append(self.operand(b, name))
        if eps is not None:
            parts.append(f"eps={fmt_num(eps)}")
        elif name == "rms_norm":
            raise Unsupported("eps=None (torch's default is the dtype's epsilon; give eps)")
        return self.define(func(*args, **kwargs), f"{name}({', '.join(parts)})", atom=True)

    def cast(self, func, name, args, kwargs):
        x = args[0]
        if name == "to":
            dt = None
            for a in list(args[1:]) + list(kwargs.values()):
                if isinstance(a, torch.dtype):
                    dt = a
                elif isinstance(a, torch.Tensor):
                    dt = a.dtype
                elif isinstance(a, (str, torch.device)) and str(a) != "meta":
                    raise Unsupported(f"a move to device {a} (the function runs on meta tensors)")
        elif name == "type":
            raise Unsupported("Tensor.type (write .to(torch.float32))")
        else:
            dt = {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16}[name]
        out = func(*args, **kwargs)
        if dt is None or dt == x.dtype:  # to its own dtype: x itself, no kernel
            nm = self.name_of(x)
            if nm is None:
                self.operand(x, name)
            self.names[id(out)] = nm
            self.keep.append(out)
            return out
        if dt not in MB_DTYPE:
            raise Unsupported(f"a cast to {dt} (membound's dtypes: f32 bf16 f16)")
        xs = self.operand(x, name)
        return self.define(out, f"{xs}.to({MB_DTYPE[dt]})", atom=True)


def qual(func):
    mod = getattr(func, "__module__", None) or ""
    q = getattr(func, "__qualname__", None) or fname(func)
    if q.startswith("_TensorBase.") or q.startswith("TensorBase."):
        q = "Tensor." + q.split(".", 1)[1]
    if mod in ("torch.nn.functional",):
        return "torch.nn.functional." + q
    if mod.startswith("torch") and not q.startswith("Tensor"):
        return "torch." + q
    return q


def parse_size(v):
    """A size as the other commands read one: 4096, 2^12 or 4K (binary K, M, G); None if not."""
    base, _, exp = v.partition("^")
    if exp:
        return int(base) ** int(exp) if base.isdigit() and exp.isdigit() and int(exp) <= 62 else None
    if v[-1:] in ("K", "M", "G") and v[:-1].isdigit():
        return int(v[:-1]) << (10 * ("KMG".index(v[-1]) + 1))
    return int(v) if v.isdigit() else None


def parse_input(spec):
    """NAME=SHAPE[:DTYPE][:nograd] -> (name, [(dimname|None, size)], dtype, grad)."""
    if "=" not in spec:
        fail(f"--input '{spec}': expected NAME=SHAPE[:DTYPE][:nograd] (x=4096x1024:bf16)")
    name, rest = spec.split("=", 1)
    if not name.isidentifier():
        fail(f"--input '{spec}': '{name}' is not a name")
    parts = rest.split(":")
    dims = []
    for d in parts[0].split("x"):
        dn, _, v = d.rpartition("=")
        if dn and not dn.isidentifier():
            fail(f"--input '{spec}': '{dn}' is not a dimension name")
        n = parse_size(v)
        if n is None or n < 1:
            fail(f"--input '{spec}': size '{d}' is not a positive number, 2^k or 4K/16M/1G (or NAME=size)")
        dims.append((dn or None, n))
    dt, grad = "f32", True
    for p in parts[1:]:
        if p == "nograd":
            grad = False
        elif p in DTYPES:
            dt = p
        else:
            fail(f"--input '{spec}': '{p}' is neither a dtype (f32 bf16 f16) nor nograd")
    return name, dims, dt, grad


DEFERRED = []


def dim_names(inputs):
    """Names for every input's dimensions: the longest input's from the
    user or by rank, the others aligned from the right (1 stays 1)."""
    full = max(inputs, key=lambda i: len(i[1]))
    n = len(full[1])
    default = {1: ["n"], 2: ["rows", "cols"], 3: ["batch", "seq", "hidden"],
               4: ["batch", "heads", "seq", "head_dim"]}.get(n, [f"d{k}" for k in range(n)])
    fnames, fsizes = [], []
    for k, (dn, v) in enumerate(full[1]):
        fsizes.append(v)
        fnames.append(dn or default[k])
    by_size = {}
    for k, v in enumerate(fsizes):  # a size repeated: one name (named dimensions where sizes repeat)
        if fnames[k] not in ("rows", "cols", "n") and full[1][k][0] is None and v in by_size:
            fnames[k] = by_size[v]
        by_size.setdefault(v, fnames[k])
    sizes = {}
    for nm, v in zip(fnames, fsizes):
        if sizes.setdefault(nm, v) != v:
            fail(f"dimension '{nm}' is given two sizes, {sizes[nm]} and {v}")
    out = {}
    for name, dims, _, _ in inputs:
        m = len(dims)
        names = []
        for j, (dn, v) in enumerate(dims):
            k = n - m + j
            if dn:
                nm = dn
            elif v == 1 and fsizes[k] != 1:
                nm = "1"
            elif v == fsizes[k]:
                nm = fnames[k]
            else:  # said after the trace: an operation the function runs may be what is missing
                DEFERRED.append(f"input '{name}' {[d[1] for d in dims]} does not broadcast against "
                                f"'{full[0]}' {fsizes} as membound models it (shapes align from the right)")
                nm = "1"
            if nm != "1" and sizes.setdefault(nm, v) != v:
                fail(f"dimension '{nm}' is given two sizes, {sizes[nm]} and {v}")
            names.append(nm)
        out[name] = names
    return out, sizes, n


def mm_dim_names(inputs):
    """A layer's dimensions (a function with @): each input's own, the
    user's names, else the name the user gave that size elsewhere, else one
    name per size (d1024: a product pairs dimensions of one size), and a
    dims line."""
    sizes, out, by_size = {}, {}, {}
    for _, dims, _, _ in inputs:
        for dn, v in dims:
            if dn:
                by_size.setdefault(v, set()).add(dn)
    for name, dims, _, _ in inputs:
        names = []
        for dn, v in dims:
            nm = dn or (next(iter(by_size[v])) if len(by_size.get(v, ())) == 1 else f"d{v}")
            if sizes.setdefault(nm, v) != v:
                fail(f"dimension '{nm}' is given two sizes, {sizes[nm]} and {v}")
            names.append(nm)
        out[name] = names
    return out, sizes, 0


def main(argv):
    if len(argv) < 3:
        fail("usage: membound_trace.py SCRIPT FUNCTION OUT [--backward] [--name N] --input ...")
    script, func_name, out_path = argv[:3]
    backward, vname, specs = False, None, []
    i = 3
    while i < len(argv):
        a = argv[i]
        if a == "--backward":
            backward = True
        elif a in ("--input", "--name") and i + 1 < len(argv):
            if a == "--input":
                specs.append(argv[i + 1])
            else:
                vname = argv[i + 1]
            i += 1
        else:
            fail(f"unknown argument '{a}'")
        i += 1
    if not specs:
        fail("no --input given: one per tensor argument of the function (x=4096x1024:bf16)")
    inputs = [parse_input(s) for s in specs]
    if len({i[0] for i in inputs}) != len(inputs):
        fail("an input is given twice")

    spec = importlib.util.spec_from_file_location("membound_traced_script", script)
    if spec is None:
        fail(f"{script}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        spec.loader.exec_module(mod)
    except SystemExit:
        fail(f"{script}: exited while being imported (guard its main with if __name__ == '__main__')")
    except Exception:
        sys.stderr.write(traceback.format_exc())
        fail(f"{script}: raised while being imported", 1)
    fn = mod
    for part in func_name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            fail(f"{script} has no '{func_name}'")
    if isinstance(fn, type) and issubclass(fn, torch.autograd.Function):
        fn = fn.apply
    if not callable(fn):
        fail(f"{script}: '{func_name}' is not callable")
    params = {}  # a module's parameters: inputs named as they are (. as _), their shape, dtype and requires_grad
    if isinstance(fn, torch.nn.Module):
        given = {i[0] for i in inputs}
        for pname, p in fn.named_parameters():
            mbname = pname.replace(".", "_")
            params[mbname] = pname
            if mbname in given:  # --input weight=1024:bf16 says otherwise
                continue
            if p.dtype not in MB_DTYPE:
                fail(f"parameter '{pname}' of {func_name} is {p.dtype} (membound's dtypes: f32 bf16 f16)")
            inputs.append((mbname, [(None, int(v)) for v in p.shape], MB_DTYPE[p.dtype], p.requires_grad))
    elif isinstance(fn, type) and issubclass(fn, torch.nn.Module):
        fail(f"{script}: '{func_name}' is a Module class: trace an instance made at the top level of the "
             f"script (norm = {func_name}(1024)), or a function")
    tr = Tracer()
    while any(n.startswith(tr.prefix) and n[len(tr.prefix):].isdigit() for n, _, _, _ in inputs):
        tr.prefix += "_"  # temporaries named apart from the inputs
    args = {}
    for name, dims, dt, grad in inputs:
        t = torch.empty([v for _, v in dims], dtype=DTYPES[dt], device="meta").requires_grad_(grad)
        tr.names[id(t)] = name
        tr.keep.append(t)
        tr.inputs[name] = grad
        args[name] = t
    pvals = {params[k]: args.pop(k) for k in list(args) if k in params}
    call = fn
    if params:
        try:
            from torch.func import functional_call
        except ImportError:  # torch 1.13
            from torch.nn.utils.stateless import functional_call

        def call(*a, **kw):
            return functional_call(fn, pvals, tuple(a), kw)
    call_args, call_kwargs = list(args.values()), {}
    try:  # by parameter name where the names match, else in the order given
        sig = inspect.signature(fn.forward if params else fn)
        if all(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
            sig.bind(**args)
            call_args, call_kwargs = [], args
    except (TypeError, ValueError):
        pass
    if int(torch.__version__.split(".")[0]) < 2:  # torch 1.x shows no indexing to a TorchFunctionMode
        def refuse(what):
            def f(self, *a):
                raise Unsupported(f"{user_site()}: Tensor.{what}: indexing; {SUPPORTED}")
            return f
        torch.Tensor.__getitem__ = refuse("__getitem__")
        torch.Tensor.__setitem__ = refuse("__setitem__")
    try:
        with tr:
            y = call(*call_args, **call_kwargs)
    except Unsupported as e:
        fail(f"cannot trace {func_name}: {e}")
    except NotImplementedError as e:
        fail(f"cannot trace {func_name}: PyTorch {torch.__version__} runs an operation of it not on meta "
             f"tensors: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    except Exception as e:
        sys.stderr.write(traceback.format_exc())
        fail(f"{func_name} raised {type(e).__name__} under torch {torch.__version__}: {e}", 1)
    if tr.products:  # a layer: every dimension named, each input its own
        names, sizes, rank = mm_dim_names(inputs)
    else:
        names, sizes, rank = dim_names(inputs)
    if DEFERRED:
        fail(DEFERRED[0])
    outs = list(y) if isinstance(y, (tuple, list)) else [y]
    out_names = []
    for o in outs:
        nm = tr.name_of(o) if isinstance(o, torch.Tensor) else None
        if nm is None:
            fail(f"{func_name} returns {type(o).__name__}, not a tensor computed from its inputs")
        if nm in tr.inputs or nm.startswith("detach("):
            fail(f"{func_name} returns its input '{nm}' unchanged: nothing to model")
        out_names.append(nm)
    if len(out_names) != 1:
        fail(f"{func_name} returns {len(out_names)} tensors; membound models one output")
    write(out_path, script, func_name, vname, inputs, names, sizes, rank, tr, out_names[0], backward)


def write(path, script, func_name, vname, inputs, names, sizes, rank, tr, out, backward):
    lines = [f"# traced by membound trace from {os.path.basename(script)}:{func_name} "
             f"(torch {torch.__version__})"]
    if vname:
        lines.append(f"name {vname}")
    for name, dims, dt, grad in inputs:
        if name not in tr.uses and name not in tr.detached:
            continue  # an argument the function does not read
        lines.append(f"input {name} [{', '.join(names[name])}] {dt}{'' if grad else ' nograd'}")
    if rank == 2:
        lines.append(f"shape {sizes['rows']}x{sizes['cols']}")
    elif rank == 1:
        lines.append(f"size {sizes['n']}")
    else:
        lines.append("dims " + ", ".join(f"{k}={v}" for k, v in sizes.items()))
    final_name = "y" if "y" not in tr.inputs else "out"
    body = statements(tr, out, inline=True)
    if body is None:  # inlined, membound would run the operations in another order: one statement each
        body = statements(tr, out, inline=False)
    for nm, joined in body:
        lines.append(f"{final_name if nm == out else nm} = {joined}")
    lines.append(f"output {final_name}")
    if backward:
        lines.append("backward")
    data = "\n".join(lines) + "\n"
    if path == "-":
        sys.stdout.write(data)
        return
    with open(path, "w", encoding="utf-8") as f:  # run by hand; the binary takes "-" and writes the file itself
        f.write(data)


def statements(tr, out, inline):
    """(name, text) per statement, a temporary read once written inside its
    reader when inline; None when that would change the order in which
    membound, reading operands left to right, runs the operations."""
    text, ev = {}, {}  # name -> (text, atom); name -> the operations its text runs, in order
    pat = re.compile(r"-?\b" + re.escape(tr.prefix) + r"[0-9]+\b")

    def inlined(nm):
        return inline and nm in text and tr.uses.get(nm, 0) == 1 and nm != out

    body, order = [], []
    for nm in tr.order:
        expr, atom = tr.exprs[nm]
        runs = []

        def rep(m):
            tok = m.group(0)
            neg = tok.startswith("-")
            core = tok[1:] if neg else tok
            if not inlined(core):
                return tok
            runs.extend(ev[core])
            t, a = text[core]
            s = m.string
            whole_arg = atom and s[m.start() - 1:m.start()] in ("(", " ") and s[m.end():m.end() + 1] in (",", ")")
            body_text = t if a or whole_arg else f"({t})"
            return ("-" if neg else "") + body_text
        joined = pat.sub(rep, expr)
        text[nm] = (joined, atom)
        ev[nm] = runs + [nm]
        if not inlined(nm):
            body.append((nm, joined))
            order.extend(ev[nm])
    return body if order == tr.order else None


if __name__ == "__main__":
    main(sys.argv[1:])
