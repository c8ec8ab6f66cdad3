"""A child process that lowers exported PyTorch programs with torch-mlir
(torch_mlir_graph.py starts it). torch-mlir can crash the process on a
graph it fails to lower (a segfault after "unimplemented: for conversion to
byte or char type ..." on int8 matmuls): here that kills this helper, not
the user's program.

Protocol, one request per line on stdin: "PROGRAM.pt2<TAB>OUT.mlir"; the
answer, one line on stdout: "pbc-helper ok" (OUT.mlir written) or
"pbc-helper error MESSAGE"."""

import sys

import torch
import torch_mlir.fx as tmfx

# Operator libraries a saved program may call: loading it needs their ops
# registered here as in the parent (PT2E's quantize/dequantize ops,
# torchvision's deform_conv2d, roi_align, ...).
for _lib in ("torch.ao.quantization.fx._decomposed", "torchvision"):
    try:
        __import__(_lib)
    except ImportError:
        pass


def main():
    out = sys.stdout
    sys.stdout = sys.stderr  # torch-mlir's own prints stay off the protocol
    for line in sys.stdin:
        src, dst = line.rstrip("\n").split("\t")
        try:
            ep = torch.export.load(src)
            module = tmfx.export_and_import(ep, output_type="linalg-on-tensors", func_name="main")
            with open(dst, "w") as f:
                f.write(str(module))
            answer = "ok"
        except Exception as e:  # torch-mlir refused the graph
            msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
            answer = "error " + msg.replace("\n", " ")
        out.write("pbc-helper %s\n" % answer)
        out.flush()


if __name__ == "__main__":
    main()
