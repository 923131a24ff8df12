"""How cnn.onnx beside this file was made: a small convolutional network in the style of
MobileNet (a 3x3 convolution with batch normalization and ReLU, max pooling, a depthwise 3x3
convolution with stride 2, a pointwise 1x1 convolution with ReLU6, global average pooling and
a linear classifier), exported by torch 2.14.1's dynamo exporter (onnxscript 0.7.2) with a
symbolic batch, 3x16x16 images in. Not run by the tests: run it by hand in an environment with
torch, from this folder."""

import onnx
import torch

torch.manual_seed(0)
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
    torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), torch.nn.ReLU6(),
    torch.nn.Conv2d(8, 16, 1), torch.nn.ReLU6(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10))
with torch.no_grad():  # batch statistics other than the defaults, as a trained model has
    net[1].running_mean.uniform_(-0.5, 0.5)
    net[1].running_var.uniform_(0.5, 2.0)
net.eval()
program = torch.onnx.export(net, (torch.randn(2, 3, 16, 16),), dynamo=True,
                            input_names=["images"], output_names=["logits"],
                            dynamic_shapes={"input": {0: torch.export.Dim("batch")}})
program.save("cnn.onnx")
saved = onnx.load("cnn.onnx")
for node in saved.graph.node:  # the exporter's stack traces
    del node.metadata_props[:]
    node.doc_string = ""
onnx.save(saved, "cnn.onnx")
print(sorted({n.op_type for n in saved.graph.node}))
