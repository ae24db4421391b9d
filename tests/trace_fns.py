"""Functions for tests/torch_oracle_trace.py to trace, written as their
authors write them (the lecture's, Hugging Face's LlamaRMSNorm.forward, a
loss, an attention softmax, Hugging Face's LlamaMLP), and ones with an operation
membound lacks."""
import math

import torch
import torch.nn.functional as F


def sin2_plus_cos2(x):
    return torch.sin(x) ** 2 + torch.cos(x) ** 2


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


class ThreeSigmoidsStore(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s1 = torch.sigmoid(x)
        s2 = torch.sigmoid(s1)
        s3 = torch.sigmoid(s2)
        ctx.save_for_backward(s1, s2, s3)
        return s3

    @staticmethod
    def backward(ctx, grad_out):
        s1, s2, s3 = ctx.saved_tensors
        g = grad_out * s3 * (1 - s3)
        g = g * s2 * (1 - s2)
        return g * s1 * (1 - s1)


class ThreeSigmoidsRecompute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sigmoid(torch.sigmoid(torch.sigmoid(x)))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        s1 = torch.sigmoid(x)
        s2 = torch.sigmoid(s1)
        s3 = torch.sigmoid(s2)
        g = grad_out * s3 * (1 - s3)
        g = g * s2 * (1 - s2)
        return g * s1 * (1 - s1)


def llama_rmsnorm(hidden_states, weight):
    """LlamaRMSNorm.forward (transformers, modeling_llama.py), self.weight as an argument."""
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + 1e-6)
    return weight * hidden_states.to(input_dtype)


class LlamaRMSNorm(torch.nn.Module):
    """transformers' LlamaRMSNorm, as written there."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


llama_norm = LlamaRMSNorm(16)  # a module instance: its weight an input of the variant


def masked_loss(pred, target, mask):
    d = (pred - target) * mask
    return (d * d).mean()


def masked_softmax(scores, mask):
    """Attention probabilities under a padding mask [batch, 1, 1, seq]."""
    return F.softmax(scores * 0.125 + mask * -1e4, dim=-1)


def swish_scale(x, w):
    """A function not built in: x sigmoid(x), scaled by a frozen weight, then a layer norm."""
    h = F.silu(x) * w.detach()
    return F.layer_norm(h, (h.shape[-1],), eps=1e-5) + torch.exp(-x)


def projected(x, w):
    y = torch.tanh(x)
    return y @ w  # a layer: membound mlp --variant models it


class LlamaMLP(torch.nn.Module):
    """transformers' LlamaMLP (modeling_llama.py), SiLU, no biases."""

    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = torch.nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


llama_mlp = LlamaMLP(32, 80)


class Conv1D(torch.nn.Module):
    """transformers' Conv1D (pytorch_utils.py): a linear layer, its weight [in, out]."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = torch.nn.Parameter(torch.empty(nx, nf))
        self.bias = torch.nn.Parameter(torch.zeros(nf))
        torch.nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class NewGELUActivation(torch.nn.Module):
    """transformers' NewGELUActivation (activations.py), GPT-2's gelu_new."""

    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class GPT2MLP(torch.nn.Module):
    """transformers' GPT2MLP (modeling_gpt2.py)."""

    def __init__(self, intermediate_size, embed_dim):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = NewGELUActivation()
        self.dropout = torch.nn.Dropout(0.1)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


gpt2_mlp = GPT2MLP(80, 32).eval()  # dropout as in inference; in training mode the trace refuses it


def reshaped(x):
    return torch.tanh(x).reshape(-1)  # a reshape: refused with this line


def indexed(x):
    return torch.sin(x)[0]  # indexing: refused with this line (torch 1.x shows it to no mode: caught apart)


def reordered(x):
    """Read in another order than computed: inlined, membound would run cos first."""
    a = torch.sin(x)
    b = torch.cos(x)
    return b * torch.exp(-a)
