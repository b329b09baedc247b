#!/usr/bin/env python3
"""PyTorch eager reference for the CUDA backend's training-step benchmark (tests/gpu/check.sh):
the same GPT-2 model shapes (pre-LN, GELU-tanh MLP, tied embeddings, learned positions), the same
batch (micro-batch x sequence, gradient accumulation), bf16 autocast with fp32 master weights and
AdamW, causal attention through F.scaled_dot_product_attention. Prints and writes tokens/s, step
time and MFU (6N + attention FLOPs per token over the bf16 peak)."""
import argparse, json, math, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

MODELS = {  # layers, hidden, heads, vocab, seq: strategies/models/presets.cpp
    "gpt-tiny": (2, 64, 4, 256, 32),
    "gpt2-124m": (12, 768, 12, 50257, 1024),
    "gpt2-1.5b": (48, 1600, 25, 50257, 1024),
}


class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.up, self.down = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, h, heads, vocab, seq):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, h), nn.Embedding(seq, h)
        self.blocks = nn.ModuleList(Block(h, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(h)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.ln(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="gpt2-124m", choices=MODELS)
    p.add_argument("--micro-batch", type=int, default=16)
    p.add_argument("--accumulation", type=int, default=1)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--peak-tflops", type=float, default=989.0)  # H200 bf16 dense
    p.add_argument("--json")
    p.add_argument("--trace", help="after the timed steps, profile one more step (torch.profiler) and write its "
                   "Chrome trace here: every CUDA kernel with its duration, for a kernel-by-kernel comparison")
    a = p.parse_args()
    layers, h, heads, vocab, seq = MODELS[a.model]
    torch.manual_seed(0)
    model = GPT(layers, h, heads, vocab, seq).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    n_params = sum(t.numel() for t in model.parameters()) - model.wpe.weight.numel()
    idx = torch.randint(0, vocab, (a.micro_batch, seq + 1), device="cuda")
    x, y = idx[:, :-1].contiguous(), idx[:, 1:].contiguous()
    def train_step():
        for _ in range(a.accumulation):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x, y) / a.accumulation
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    times = []
    for step in range(a.warmup + a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = train_step()
        torch.cuda.synchronize()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
    if a.trace:
        # One more step under the profiler; a failure here must not cost the measurement above.
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                train_step()
                torch.cuda.synchronize()
            prof.export_chrome_trace(a.trace)
        except Exception as e:  # noqa: BLE001 (any profiler failure)
            print(f"profiling failed: {e}", file=sys.stderr)
    step_s = sum(times) / len(times)
    tokens = a.micro_batch * a.accumulation * seq
    flops_per_token = 6 * n_params + 12 * layers * h * seq  # 6N + attention (fwd+bwd)
    result = {"model": a.model, "tokens_per_step": tokens, "step_s": step_s, "tokens_per_s": tokens / step_s,
              "mfu": flops_per_token * tokens / step_s / (a.peak_tflops * 1e12), "parameters": n_params,
              "loss": float(loss) * a.accumulation, "torch": torch.__version__,
              "device": torch.cuda.get_device_name()}
    print(json.dumps(result))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
