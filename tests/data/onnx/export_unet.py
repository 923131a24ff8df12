"""How unet.onnx beside this file was made: a small U-Net (two 3x3 convolution blocks down with
max pooling, upsampled back by nearest-neighbour and by bilinear interpolation, the skip
connections concatenated, a 1x1 convolution to two classes), exported by torch 2.14.1's dynamo
exporter (onnxscript 0.7.2) with a symbolic batch, 3x16x16 images in. Not run by the tests: run
it by hand in an environment with torch, from this folder."""

import onnx
import torch
import torch.nn.functional as F


def block(cin: int, cout: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.ReLU())


class UNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.down1, self.down2, self.mid = block(3, 8), block(8, 16), block(16, 16)
        self.up2, self.up1 = block(32, 8), block(16, 8)
        self.head = torch.nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.mid(F.max_pool2d(d2, 2))
        u2 = self.up2(torch.cat([F.interpolate(m, scale_factor=2.0, mode="nearest"), d2], 1))
        u1 = F.interpolate(u2, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.head(self.up1(torch.cat([u1, d1], 1)))


torch.manual_seed(0)
net = UNet().eval()
program = torch.onnx.export(net, (torch.randn(2, 3, 16, 16),), dynamo=True,
                            input_names=["images"], output_names=["masks"],
                            dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
program.save("unet.onnx")
saved = onnx.load("unet.onnx")
for node in saved.graph.node:  # the exporter's stack traces
    del node.metadata_props[:]
    node.doc_string = ""
onnx.save(saved, "unet.onnx")
print(sorted({n.op_type for n in saved.graph.node}))
for node in saved.graph.node:
    if node.op_type == "Resize":
        print(node)
