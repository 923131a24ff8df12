func.func @layer(%arg0: tensor<?x4xf32>, %arg1: tensor<?x4xf32>, %arg2: tensor<1x4xf32>) -> tensor<?x4xf32> {
  %sym_arg0_d0 = tcp.symbolic_int "arg0_d0" {min_val = 0, max_val = 9223372036854775807} : i64
  tcp.bind_symbolic_shape %arg0, [%sym_arg0_d0], affine_map<()[s0] -> (s0, 4)> : tensor<?x4xf32>
  tcp.bind_symbolic_shape %arg1, [%sym_arg0_d0], affine_map<()[s0] -> (s0, 4)> : tensor<?x4xf32>
  %c0 = arith.constant 0 : index
  %dim_arg0_d0 = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %0 = tcp.broadcast %arg2, %dim_arg0_d0 {axes = [0]} : tensor<1x4xf32>, index -> tensor<?x4xf32>
  %1 = tcp.isolated_group %arg0, %0, %arg1 {
    ^bb0(%b0: tensor<?x4xf32>, %b1: tensor<?x4xf32>, %b2: tensor<?x4xf32>):
      %2 = tcp.add %b0, %b1 : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
      %3 = tcp.tanh %2 : tensor<?x4xf32> -> tensor<?x4xf32>
      %4 = tcp.mul %3, %b2 : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
      %splat = tcp.const {value = dense<0.0> : tensor<1x1xf32>} : tensor<1x1xf32>
      %c0_1 = arith.constant 0 : index
      %dim_arg0_d0_1 = tensor.dim %b0, %c0_1 : tensor<?x4xf32>
      %c4 = arith.constant 4 : index
      %5 = tcp.broadcast %splat, %dim_arg0_d0_1, %c4 {axes = [0, 1]} : tensor<1x1xf32>, index, index -> tensor<?x4xf32>
      %6 = tcpr.max %4, %5 : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
      tcp.yield %6 : tensor<?x4xf32>
  } : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}
