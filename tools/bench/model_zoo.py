#!/usr/bin/python3
"""The model zoo (issue 69): timm and Hugging Face architectures with random
weights through torch.compile(model, backend="pbc"), one process per model
with a timeout. For each model: compiled whole or not (the ATen ops left
eager, by name; Dynamo's graphs: more than one is a graph break), error
against eager PyTorch (and against float64 where float32 eager itself is
ill-conditioned), cold compile seconds (first call: Dynamo, the bridge's
trace and pbc, with a compile cache of its own), and pbc's and eager's time (Inductor's with --inductor).

usage: tools/bench/model_zoo.py [--models a,b,...|--family timm|hf|all]
           [--timeout S] [--runs N] [--inductor] [--threads N] [--json FILE]
           [--markdown]
       tools/bench/model_zoo.py --from-json A.json[,B.json]   (the table of saved runs)
Any python may start it: it runs itself in the frontends' environment
(tools/python-env.sh). Weights come from torch.manual_seed(0): timm's and
transformers' own initialization (variance-preserving), then batch-norm
statistics recalibrated on random inputs (a freshly initialized network's
running mean 0 / var 1 lets activations vanish or explode over depth).
Inputs: batch 1, the model's default resolution (timm's pretrained_cfg);
text models get 128 random token ids and an attention mask whose last 16
positions are padding (one row of a padded batch), seq2seq models also 32
decoder ids. HF models keep their default config's
widths with at most ZOO_HF_LAYERS layers (4), so a decoder's cost stays that
of its architecture, not its depth; the ones whose default width is that of
a multi-billion model (Llama, Mistral, Qwen2, ...) are built at BERT-base's.

A model "matches" when max |pbc - eager| <= 1e-3 * max |eager|; where eager
float32 is itself farther than 1e-4 from float64 (ill-conditioned), pbc is
judged against float64 with the tolerance widened to twice eager's own error.
--markdown prints the table the bench README keeps ("Model zoo").
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from bench_models import frontends_python  # noqa: E402
from timing import median_ms  # noqa: E402
LIBOMP = "/usr/lib/llvm-22/lib/libomp.so.5"
HF_LAYERS = int(os.environ.get("ZOO_HF_LAYERS", "4"))

# timm: one or more architectures of every family, small variants (the
# family's code is what is tested; width adds compile time, not coverage).
TIMM = [
    # CNNs
    "resnet18", "resnet50d", "resnext26ts", "seresnet33ts", "ecaresnet26t", "skresnet18",
    "resnest14d", "res2net50_14w_8s", "resnetv2_50", "densenet121", "dla34", "dpn48b",
    "vgg11", "inception_v3", "xception41", "cspresnet50", "cspdarknet53", "darknet17",
    "regnetx_002", "regnety_002", "regnetz_005", "hrnet_w18_small", "selecsls42b",
    "vovnet39a", "ese_vovnet19b_dw", "gernet_s", "tresnet_m", "nf_resnet26", "dm_nfnet_f0",
    "hgnetv2_b0", "rdnet_tiny", "convnext_atto", "convnextv2_atto", "inception_next_atto",
    "mambaout_femto", "starnet_s1", "bat_resnext26ts", "lambda_resnet26t", "botnet26t_256",
    "halonet26t",
    # mobile nets
    "mobilenetv2_050", "mobilenetv3_small_050", "mobilenetv4_conv_small", "efficientnet_b0",
    "efficientnetv2_rw_t", "tf_efficientnet_lite0", "mnasnet_small", "fbnetc_100",
    "mixnet_s", "ghostnet_050", "ghostnetv2_100", "lcnet_050", "rexnet_100", "tinynet_e",
    "spnasnet_100", "mobileone_s0", "repvit_m0_9", "fastvit_t8", "repghostnet_050",
    # ViTs and hybrids
    "vit_tiny_patch16_224", "vit_small_patch16_224", "deit_tiny_patch16_224",
    "deit3_small_patch16_224", "beit_base_patch16_224", "eva02_tiny_patch14_224",
    "cait_xxs24_224", "xcit_nano_12_p16_224", "crossvit_tiny_240", "pit_ti_224",
    "convit_tiny", "levit_128s", "mobilevit_xxs", "mobilevitv2_050", "edgenext_xx_small",
    "efficientformer_l1", "efficientformerv2_s0", "efficientvit_b0", "tiny_vit_5m_224",
    "visformer_tiny", "coat_tiny", "pvt_v2_b0", "twins_svt_small", "flexivit_small",
    "vit_relpos_small_patch16_224", "vitamin_small_224", "samvit_base_patch16_224",
    # MLP-mixers and friends
    "mixer_s32_224", "resmlp_12_224", "gmlp_ti16_224", "poolformer_s12", "poolformerv2_s12",
    "convmixer_768_32", "sequencer2d_s",
    # hierarchical transformers
    "swin_tiny_patch4_window7_224", "swinv2_cr_tiny_ns_224", "maxvit_nano_rw_256",
    "coatnet_nano_rw_224", "davit_tiny", "gcvit_xxtiny", "focalnet_tiny_srf", "nest_tiny",
    "mvitv2_tiny", "hiera_tiny_224", "nextvit_small", "volo_d1_224",
]

# Hugging Face transformers: (name, config class, model class, kind, config
# overrides). kind: text (input_ids), seq2seq (input_ids and
# decoder_input_ids), image (pixel_values), audio (input_values, raw 16 kHz)
# or speech (input_features, log-mel frames).
SMALL = dict(hidden_size=768, intermediate_size=2048, num_attention_heads=12,
             num_key_value_heads=4)
HF = [
    ("bert", "BertConfig", "BertModel", "text", {}),
    ("roberta", "RobertaConfig", "RobertaModel", "text", {}),
    ("distilbert", "DistilBertConfig", "DistilBertModel", "text", {}),
    ("albert", "AlbertConfig", "AlbertModel", "text", {}),
    ("electra", "ElectraConfig", "ElectraModel", "text", {}),
    ("deberta_v2", "DebertaV2Config", "DebertaV2Model", "text", {}),
    ("mpnet", "MPNetConfig", "MPNetModel", "text", {}),
    ("xlm_roberta", "XLMRobertaConfig", "XLMRobertaModel", "text", {}),
    ("modernbert", "ModernBertConfig", "ModernBertModel", "text", {}),
    ("gpt2", "GPT2Config", "GPT2Model", "text", {}),
    ("gpt_neo", "GPTNeoConfig", "GPTNeoModel", "text", {}),
    ("opt", "OPTConfig", "OPTModel", "text", {}),
    ("bloom", "BloomConfig", "BloomModel", "text", {}),
    ("llama", "LlamaConfig", "LlamaModel", "text", SMALL),
    ("mistral", "MistralConfig", "MistralModel", "text", SMALL),
    ("qwen2", "Qwen2Config", "Qwen2Model", "text", SMALL),
    ("phi", "PhiConfig", "PhiModel", "text", {"hidden_size": 768, "intermediate_size": 2048,
                                              "num_attention_heads": 12,
                                              "num_key_value_heads": 12}),
    ("gemma", "GemmaConfig", "GemmaModel", "text", dict(SMALL, head_dim=64)),
    ("falcon", "FalconConfig", "FalconModel", "text", {"hidden_size": 768,
                                                       "num_attention_heads": 12}),
    ("t5", "T5Config", "T5Model", "seq2seq", {}),
    ("bart", "BartConfig", "BartModel", "seq2seq", {}),
    ("marian", "MarianConfig", "MarianModel", "seq2seq", {}),
    ("vit", "ViTConfig", "ViTModel", "image", {}),
    ("deit", "DeiTConfig", "DeiTModel", "image", {}),
    ("swin", "SwinConfig", "SwinModel", "image", {}),
    ("convnext", "ConvNextConfig", "ConvNextModel", "image", {}),
    ("resnet", "ResNetConfig", "ResNetModel", "image", {}),
    ("segformer", "SegformerConfig", "SegformerModel", "image", {}),
    ("mobilevit", "MobileViTConfig", "MobileViTModel", "image", {}),
    ("dinov2", "Dinov2Config", "Dinov2Model", "image", {}),
    ("wav2vec2", "Wav2Vec2Config", "Wav2Vec2Model", "audio", {}),
    ("whisper_encoder", "WhisperConfig", "WhisperEncoder", "speech", {}),
]
HF_NAMES = [h[0] for h in HF]


# --- one model, in its own process -------------------------------------------

def recalibrate_batch_norms(model, run_batch):
    """Running statistics from random inputs (run_batch(2) runs the model
    on a batch of 2; cumulative averages over two batches), affine
    parameters drawn around 1 and 0."""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
        with torch.no_grad():
            if m.affine:
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
        m.train()
    with torch.no_grad():
        for _ in range(2):
            run_batch(2)
    for m in bns:
        m.eval()


def build_timm(name):
    import timm
    import torch
    m = timm.create_model(name, pretrained=False).eval()
    size = tuple(m.pretrained_cfg.get("input_size", (3, 224, 224)))
    for mod in m.modules():  # zero-initialized heads would hide every error
        if isinstance(mod, torch.nn.Linear) and not mod.weight.abs().max():
            torch.nn.init.normal_(mod.weight, std=0.05)
    recalibrate_batch_norms(m, lambda b: m(torch.randn((b,) + size)))
    return m, (torch.randn((1,) + size),)


def build_hf(name):
    import torch
    import transformers
    _, cfg_cls, model_cls, kind, over = next(h for h in HF if h[0] == name)
    cfg = getattr(transformers, cfg_cls)()
    for k, v in over.items():
        if hasattr(cfg, k):
            setattr(cfg, k, v)
    for k in ("num_hidden_layers", "num_layers", "n_layer", "encoder_layers", "decoder_layers",
              "num_decoder_layers"):
        if isinstance(getattr(cfg, k, None), int) and getattr(cfg, k) > HF_LAYERS:
            setattr(cfg, k, HF_LAYERS)
    if model_cls == "WhisperEncoder":
        from transformers.models.whisper.modeling_whisper import WhisperEncoder
        m = WhisperEncoder(cfg).eval()
    else:
        m = getattr(transformers, model_cls)(cfg).eval()
    vocab = getattr(cfg, "vocab_size", 1000)
    if kind in ("text", "seq2seq"):
        # 128 tokens, the last 16 of them padding (a padded batch's row):
        # the attention mask goes through the model's mask code.
        ids = torch.randint(0, vocab, (1, 128))
        mask = torch.ones(1, 128, dtype=torch.long)
        mask[:, -16:] = 0
        inputs = (ids, mask) + ((torch.randint(0, vocab, (1, 32)),) if kind == "seq2seq" else ())
    elif kind == "image":
        size = getattr(cfg, "image_size", 224)
        size = size if isinstance(size, int) else size[0]
        inputs = (torch.randn(1, getattr(cfg, "num_channels", 3), size, size),)
        recalibrate_batch_norms(m, lambda b: m(torch.randn(b, inputs[0].shape[1], size, size)))
    elif kind == "audio":
        inputs = (torch.randn(1, 16000),)
    else:
        inputs = (torch.randn(1, cfg.num_mel_bins, 2 * cfg.max_source_positions),)
    return m, inputs, kind


def hf_call(model, kind):
    """The model called as its users call it: keyword inputs, the first
    output (last_hidden_state)."""
    import torch

    def call(*inputs):
        if kind == "text":
            y = model(input_ids=inputs[0], attention_mask=inputs[1])
        elif kind == "seq2seq":
            y = model(input_ids=inputs[0], attention_mask=inputs[1], decoder_input_ids=inputs[2])
        else:
            y = model(inputs[0])
        if isinstance(y, torch.Tensor):
            return y
        return y.last_hidden_state if hasattr(y, "last_hidden_state") else y[0]
    return call


def build(name):
    """(callable, inputs, module): the callable takes the inputs and returns
    the tensor compared."""
    import torch
    torch.manual_seed(0)
    if name in HF_NAMES:
        m, inputs, kind = build_hf(name)
        return hf_call(m, kind), inputs, m
    m, inputs = build_timm(name)
    return m, inputs, m


def child(name, runs, inductor, threads):
    import warnings
    import torch
    import torch._dynamo as dynamo
    torch.set_num_threads(threads)
    import pbc
    row = {"model": name}
    fn, inputs, model = build(name)
    row["params_m"] = round(sum(p.numel() for p in model.parameters()) / 1e6, 1)
    with torch.no_grad():
        want = fn(*inputs).float()
        try:  # float64: how well-conditioned the model is in float32
            model.double()
            want64 = fn(*[x.double() if x.is_floating_point() else x for x in inputs])
            row["eager_err"] = ((want.double() - want64).abs().max() /
                                want64.abs().max()).item()
        except Exception as e:  # a model that cannot run in float64: judged in float32
            want64 = None
            row["f64"] = "%s: %s" % (type(e).__name__, str(e)[:100])
        model.float()
        plans = []
        dynamo.reset()
        record, graphs = pbc.recording_backend(plans), []

        def counting(gm, example_inputs):  # Dynamo's graphs (plans: one per size, weights)
            graphs.append(gm)
            return record(gm, example_inputs)
        fast = torch.compile(fn, backend=counting)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = time.perf_counter()
            got = fast(*inputs).float()
            row["compile_s"] = round(time.perf_counter() - t, 2)
        row["graphs"] = len(graphs)
        eager_ops = []
        for p in plans:
            if hasattr(p, "fallbacks"):
                eager_ops += [op for op, _ in p.fallbacks]
            else:
                eager_ops.append("<graph eager: %s>" % getattr(p, "why", "not compiled"))
        row["eager_ops"] = sorted(set(eager_ops))
        row["eager_op_count"] = len(eager_ops)
        row["warnings"] = sorted({str(w.message)[:160] for w in caught if "pbc" in str(w.message)})[:8]
        scale = want.abs().max().item()
        err = (got - want).abs().max().item() / max(scale, 1e-30)
        row["err"] = err
        ill = row.get("eager_err", 0) > 1e-4 and want64 is not None
        if ill:
            err64 = ((got.double() - want64).abs().max() / want64.abs().max()).item()
            row["err64"] = err64
            row["match"] = bool(torch.isfinite(got).all()) and err64 <= max(1e-3, 2 * row["eager_err"])
        else:
            row["match"] = bool(torch.isfinite(got).all()) and err <= 1e-3
        row["whole"] = not eager_ops and len(graphs) == 1
        if runs:
            fast(*inputs)
            row["pbc_ms"] = round(median_ms(lambda: fast(*inputs), runs), 2)
            fn(*inputs)
            row["eager_ms"] = round(median_ms(lambda: fn(*inputs), runs), 2)
            if inductor:
                dynamo.reset()
                ind = torch.compile(fn)
                ind(*inputs)
                row["inductor_ms"] = round(median_ms(lambda: ind(*inputs), runs), 2)
    return row


# --- the driver ----------------------------------------------------------------

def run_one(py, name, args):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), LD_PRELOAD=LIBOMP,
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tools", "torch"),
                                           os.environ.get("PYTHONPATH", "")]))
    env.setdefault("PBC_LIBPBC", os.path.join(ROOT, "build", "bin", "libpbc.so"))
    # A cold compile: a compile cache (programs and kernels) of its own.
    cache = tempfile.mkdtemp(prefix="pbc-zoo-")
    env["PBC_CACHE_DIR"] = cache
    cmd = [py, os.path.abspath(__file__), "--child", name, "--runs", str(args.runs),
           "--threads", str(args.threads)] + (["--inductor"] if args.inductor else [])
    t = time.time()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"model": name, "error": "timeout after %d s" % args.timeout}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    return {"model": name, "error": "crash (exit %d, %.0f s): %s" % (p.returncode, time.time() - t,
                                                                     tail[:200])}


def markdown(rows):
    lines = ["| model | params M | whole | graphs | eager ops | rel. err | compile s | pbc ms "
             "| eager ms | pbc/eager |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append("| %s | | **error** | | %s | | | | | |" % (r["model"], r["error"][:80]))
            continue
        ratio = ("%.2f" % (r["pbc_ms"] / r["eager_ms"])) if r.get("eager_ms") else ""
        err = "%.1e" % r["err"] + ("" if r["match"] else " **mismatch**")
        lines.append("| %s | %s | %s | %d | %s | %s | %.1f | %s | %s | %s |" % (
            r["model"], r["params_m"], "yes" if r["whole"] else "no", r["graphs"],
            ", ".join(r["eager_ops"]) or "", err, r["compile_s"], r.get("pbc_ms", ""),
            r.get("eager_ms", ""), ratio))
    ok = [r for r in rows if "error" not in r]
    whole = sum(r["whole"] for r in ok)
    match = sum(r["match"] for r in ok)
    comp = sorted(r["compile_s"] for r in ok)
    lines.append("")
    lines.append("%d models: %d compiled whole (%.0f %%), %d matching, %d errors; "
                 "cold compile median %.1f s, worst %.1f s" % (
                     len(rows), whole, 100.0 * whole / max(1, len(rows)), match,
                     len(rows) - len(ok), statistics.median(comp) if comp else 0,
                     comp[-1] if comp else 0))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="")
    ap.add_argument("--family", default="all", choices=["timm", "hf", "all"])
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--inductor", action="store_true")
    ap.add_argument("--json", default="")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--from-json", default="",
                    help="print the table of saved --json files (a,b: later rows of a model win)")
    ap.add_argument("--child", default="")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.runs, args.inductor, args.threads)))
        return
    if args.from_json:
        rows = {}
        for path in args.from_json.split(","):
            with open(path) as f:
                for r in json.load(f):
                    rows[r["model"]] = r
        order = [n for n in TIMM + HF_NAMES if n in rows] + [n for n in rows
                                                             if n not in TIMM + HF_NAMES]
        print(markdown([rows[n] for n in order]))
        return
    names = args.models.split(",") if args.models else (
        (TIMM if args.family in ("timm", "all") else []) +
        (HF_NAMES if args.family in ("hf", "all") else []))
    py = os.environ.get("PBC_PYTHON") or frontends_python()
    rows = []
    for name in names:
        r = run_one(py, name, args)
        rows.append(r)
        print(json.dumps(r), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
    if args.markdown:
        print(markdown(rows))
    bad = [r["model"] for r in rows if "error" in r or not r["match"]]
    print("zoo: %d models, %d whole, %d not matching or failed: %s" % (
        len(rows), sum(r.get("whole", False) for r in rows), len(bad), ", ".join(bad)))


if __name__ == "__main__":
    main()
