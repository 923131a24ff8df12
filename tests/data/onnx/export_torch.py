"""How the PyTorch-exported fixtures beside this file were made (torch 2.13.0 CPU, onnxscript
0.7.2, the dynamo exporter). Not run by the tests: run it by hand in an environment with torch,
from this folder, to regenerate them."""

import torch

torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                         dropout=0.0, activation="gelu", batch_first=True).eval()
x = torch.randn(2, 10, 64)
batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
onnx_program = torch.onnx.export(layer, (x,), dynamo=True, input_names=["x"], output_names=["y"],
                                 dynamic_shapes={"src": {0: batch, 1: seq}})
onnx_program.save("encoder_layer.onnx")
mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32),
                          torch.nn.Linear(32, 4), torch.nn.Softmax(dim=-1)).eval()
torch.onnx.export(mlp, (torch.randn(3, 16),), "mlp.onnx", dynamo=True, input_names=["x"],
                  output_names=["probs"], dynamic_shapes={"input": {0: torch.export.Dim("batch")}})
print("ok")
