"""How rnn.onnx and rnn_expected.npz beside this file were made: a two-layer bidirectional
LSTM (8 -> 16 per direction, batch first) feeding a GRU (32 -> 8) whose last step a linear
layer reads, exported by torch 2.14.1's dynamo exporter (onnxscript 0.7.2) with a symbolic
batch, 6 steps of 8 features in; and PyTorch's own outputs for two inputs. Not run by the
tests: run it by hand in an environment with torch, from this folder."""

import numpy as np
import onnx
import torch


class Recurrent(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = torch.nn.GRU(32, 8, batch_first=True)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(x)
        z, _ = self.gru(y)
        return self.head(z[:, -1])


torch.manual_seed(0)
net = Recurrent().eval()
program = torch.onnx.export(net, (torch.randn(2, 6, 8),), dynamo=True,
                            input_names=["tokens"], output_names=["logits"],
                            dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
program.save("rnn.onnx")
saved = onnx.load("rnn.onnx")
for node in saved.graph.node:  # the exporter's stack traces
    del node.metadata_props[:]
    node.doc_string = ""
onnx.save(saved, "rnn.onnx")
inputs = {f"x{b}": torch.randn(b, 6, 8) for b in (1, 3)}
with torch.no_grad():
    outputs = {f"y{k[1:]}": net(v).numpy() for k, v in inputs.items()}
np.savez("rnn_expected.npz", **{k: v.numpy() for k, v in inputs.items()}, **outputs)
print(sorted({n.op_type for n in saved.graph.node}))
