// A bias, a gate and a clamp, written as mlir-tcp writes it: the first two ops fused by hand
// into a tcp.isolated_group, the bias broadcast with its size from tensor.dim
// (docs/frontends/mlir.md).
func.func @layer(%arg0: tensor<?x4xf32>, %arg1: tensor<?x4xf32>, %arg2: tensor<1x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %0 = tcp.broadcast %arg2, %dim {axes = [0]} : tensor<1x4xf32>, index -> tensor<?x4xf32>
  %1 = tcp.isolated_group %arg0, %0 {
  ^bb0(%x: tensor<?x4xf32>, %b: tensor<?x4xf32>):
    %2 = tcp.add %x, %b : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
    %3 = tcp.tanh %2 : tensor<?x4xf32> -> tensor<?x4xf32>
    tcp.yield %3 : tensor<?x4xf32>
  } : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %4 = tcp.mul %1, %arg1 : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %5 = tcp.clamp %4 {min_float = 0.000000e+00 : f32} : tensor<?x4xf32> -> tensor<?x4xf32>
  return %5 : tensor<?x4xf32>
}
