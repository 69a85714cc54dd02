# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Assisted generation shaped as Hugging Face transformers runs it, on specsim's libcuda.

  python hf_assisted.py LIBCUDA TRUTH_JSON [--rounds-tokens N] [--same] [--seed S]
                        [--sample] [--warmup] [--mask-check]

Eager forwards on the legacy stream, called from Python so that the syncs carry
the frames a real program's do: the target's generate() runs the assisted loop;
each round the candidate generator calls the assistant's generate(), whose
sampling loop reads each token twice (stopping criteria) and once more (logits
processor); the candidate generator reads the candidates' length; the target's
forward over the candidates; the loop's compare and its second read; the
cache trim reading each layer's length four times; the strategy's update and the
loop's bookkeeping reads. A prefill of the target before the loop, the
assistant's over the prompt in its first round; the draft length follows the
assistant's schedule (+2 after all accepted, -1 after a rejection) and the last
round drafts nothing when no token is left. --mask-check: every forward, the draft's and
the target's, reads whether its attention mask is all ones after its first kernels (the
same model code's sync in both). --same: the assistant has the
target's kernels and layers (the target as its own draft). --sample: the
accept is speculative sampling's, several reads under one statement of the loop
with small kernels between. --warmup: as a program recorded from its start: the models' load (a recursive
apply, a sync per parameter), a warm-up generate() and a sync in main first;
rounds in the truth are both generate()s'.

The truth (rounds: the candidate generator's calls, one draft/verify cycle
each; draft tokens per round) goes to TRUTH_JSON. Prints "done" and sleeps a
second so that the tracer reads the code objects of its stacks.
"""
import argparse
import ctypes
import json
import random
import time

ap = argparse.ArgumentParser()
ap.add_argument("libcuda")
ap.add_argument("truth")
ap.add_argument("--new-tokens", type=int, default=40)
ap.add_argument("--same", action="store_true")
ap.add_argument("--seed", type=int, default=7)
ap.add_argument("--sample", action="store_true")
ap.add_argument("--warmup", action="store_true")
ap.add_argument("--mask-check", action="store_true")
args = ap.parse_args()

lib = ctypes.CDLL(args.libcuda)
P = ctypes.c_void_p
U64 = ctypes.c_uint64


def check(err, what):
    if err:
        raise SystemExit("hf_assisted: %s failed: %d" % (what, err))


def setup():
    dev, ctx, mod = ctypes.c_int(), P(), P()
    check(lib.cuInit(0), "cuInit")
    check(lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    check(lib.cuModuleLoadData(ctypes.byref(mod), b"hf assisted kernels"), "cuModuleLoadData")
    return mod


MODULE = setup()
lib.specsimSetFunctionDurationNs.argtypes = [P, ctypes.c_longlong]


def function(name, ns):
    f = P()
    check(lib.cuModuleGetFunction(ctypes.byref(f), MODULE, name.encode()), "cuModuleGetFunction")
    lib.specsimSetFunctionDurationNs(f, ns)
    return f


def alloc(n):
    d = U64()
    check(lib.cuMemAlloc_v2(ctypes.byref(d), n), "cuMemAlloc")
    return d.value


DEV = alloc(1 << 16)
PINNED = P()
check(lib.cuMemHostAlloc(ctypes.byref(PINNED), 4096, 0), "cuMemHostAlloc")
HOST = ctypes.create_string_buffer(4096)
lib.cuLaunchKernel.argtypes = [P] + [ctypes.c_uint] * 7 + [P, P, P]
lib.cuMemcpyDtoHAsync_v2.argtypes = [P, U64, ctypes.c_size_t, P]
lib.cuMemcpyHtoDAsync_v2.argtypes = [U64, P, ctypes.c_size_t, P]
lib.cuStreamSynchronize.argtypes = [P]
SMALL = [function("small_%d" % i, 3000) for i in range(6)]


def launch(f, grid=1):
    check(lib.cuLaunchKernel(f, grid, 1, 1, 128, 1, 1, 0, None, None, None), "cuLaunchKernel")


def small(n, first=0):
    for i in range(n):
        launch(SMALL[(first + i) % len(SMALL)])


def item():
    """A tensor's .item(): its value copied to pinned memory, then the stream synchronised."""
    check(lib.cuMemcpyDtoHAsync_v2(PINNED, DEV, 8, None), "cuMemcpyDtoHAsync")
    check(lib.cuStreamSynchronize(None), "cuStreamSynchronize")


def to_device():
    """torch.tensor(x, device=...): a host copy, then the stream synchronised."""
    check(lib.cuMemcpyHtoDAsync_v2(DEV, HOST, 8, None), "cuMemcpyHtoDAsync")
    check(lib.cuStreamSynchronize(None), "cuStreamSynchronize")


class Model:
    def __init__(self, name, layers, per_layer_ns):
        self.layers = layers
        self.fn = [function("%s_%s" % (name, k), per_layer_ns) for k in
                   ("norm", "qkv", "attn", "proj", "mlp_up", "mlp_down")]
        self.head = function(name + "_head", per_layer_ns)

    def forward(self, tokens, past):
        """Every layer's kernels, grids by the tokens run and the cache before them."""
        small(2)
        if args.mask_check:
            self._ignore_causal_mask()
        for _ in range(self.layers):
            for k, f in enumerate(self.fn):
                launch(f, tokens if k != 2 else tokens * 64 + past)
        launch(self.head, tokens)


    def _ignore_causal_mask(self):
        """The attention mask checked for all ones: a read inside every forward, either model's."""
        small(1)
        item()


class Module:
    """A model's load: each child applied in turn, a parameter copied and synchronised."""

    def __init__(self, depth):
        self.children = [Module(depth - 1) for _ in range(2)] if depth else []

    def _apply(self):
        for child in self.children:
            child._apply()
        to_device()


class StoppingCriteria:
    def __call__(self):
        item()  # is the token an end of sequence
        item()  # is the length reached


class LogitsProcessor:
    def __call__(self):
        small(2)
        item()


class DynamicLayer:
    def crop(self):
        item()  # the layer's length
        small(1)
        item()  # against the new length
        small(2)
        item()
        small(2)
        item()


class Cache:
    def __init__(self, layers):
        self.layers = [DynamicLayer() for _ in range(layers)]

    def crop(self):
        for layer in self.layers:
            layer.crop()


class GenerationMixin:
    def __init__(self, model):
        self.model = model
        self.cache = Cache(model.layers)
        self.length = 0

    def _prepare_special_tokens(self):
        to_device()
        to_device()
        small(3)
        item()
        small(1)
        item()

    def generate(self, tokens, assistant=None, new_tokens=0):
        self._prepare_special_tokens()
        if assistant is not None:
            return self._assisted_decoding(tokens, assistant, new_tokens)
        return self._sample(tokens, new_tokens)

    def _sample(self, tokens, new_tokens):
        """The assistant's tokens: a forward each, its reads after it."""
        stopping, logits = StoppingCriteria(), LogitsProcessor()
        made = 0
        while made < new_tokens:
            self.model.forward(tokens, self.length)
            self.length += tokens
            tokens = 1
            stopping()
            logits()
            made += 1
        return made

    def _has_unfinished_sequences(self):
        small(3)
        item()

    def _assisted_decoding(self, prompt, assistant, new_tokens):
        generator = self.generator = AssistedCandidateGenerator(assistant, prompt)
        self.model.forward(prompt, 0)   # the target's prefill
        self.length = prompt
        made = 0
        while made < new_tokens:
            self._has_unfinished_sequences()
            k = generator.get_candidates(new_tokens - made - 1)
            self.model.forward(k + 1, self.length)
            if args.sample:
                self._speculative_sampling()
            else:
                item()  # the compare: how many candidates match
                small(1)
                item()  # is the last one an end of sequence
            accepted = generator.accepted(k)
            small(2)
            self.cache.crop()
            generator.update_candidate_strategy(accepted, k)
            self._update_model_kwargs_for_generation()
            self.length += accepted + 1
            made += accepted + 1
        return made

    def _speculative_sampling(self):
        """The sampled accept: probabilities, the coin, the count, each read back."""
        small(3)
        item()
        small(2)
        item()
        small(4)
        item()
        small(1)
        item()

    def _update_model_kwargs_for_generation(self):
        item()
        small(4)
        item()
        small(8)


class AssistedCandidateGenerator:
    def __init__(self, assistant, prompt):
        self.assistant = assistant
        self.prompt = prompt
        self.num_assistant_tokens = 3
        self.rng = random.Random(args.seed)
        self.calls = 0
        self.drafted = []

    def get_candidates(self, left):
        self.calls += 1
        k = min(self.num_assistant_tokens, left)
        if k <= 0:
            self.drafted.append(0)
            return 0
        k = self._generate_candidates(k)
        self.drafted.append(k)
        return k

    def _generate_candidates(self, k):
        small(2)
        tokens = self.prompt if self.calls == 1 else 1
        made = self.assistant.generate(tokens, new_tokens=k)
        to_device()
        item()
        return made

    def accepted(self, k):
        return k if args.same else self.rng.choice([0, 0, 1, k])

    def update_candidate_strategy(self, accepted, k):
        item()
        if accepted == k:
            self.num_assistant_tokens += 2
        else:
            self.num_assistant_tokens = max(1, self.num_assistant_tokens - 1)


def main():
    target = Model("target", 6, 4000)
    draft = target if args.same else Model("draft", 2, 2000)
    rounds = 0
    if args.warmup:
        Module(3)._apply()
        warm = GenerationMixin(target)
        warm.generate(16, assistant=GenerationMixin(draft), new_tokens=args.new_tokens)
        rounds = warm.generator.calls
        to_device()  # main's synchronize
    gen = GenerationMixin(target)
    assistant = GenerationMixin(draft)
    made = gen.generate(16, assistant=assistant, new_tokens=args.new_tokens)
    with open(args.truth, "w") as out:
        json.dump({"rounds": rounds + gen.generator.calls, "drafted": gen.generator.drafted,
                   "new_tokens": made}, out)


main()
print("done", flush=True)
time.sleep(1)
