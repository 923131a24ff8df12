// mlir-tcp's data movement and constants: broadcast (sizes from tensor.dim and arith.constant),
// slice, cast, gather (rank 1: torch.gather and numpy.take agree), const (splat and dense).
func.func @movement(%x: tensor<?x1xf32>, %y: tensor<?x6xf32>, %v: tensor<10xf32>, %i: tensor<4xi64>) -> (tensor<?x6xf32>, tensor<?x3xf32>, tensor<?x6xi32>, tensor<4xf32>, tensor<2x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %n = tensor.dim %y, %c0 : tensor<?x6xf32>
  %0 = tcp.broadcast %x, %c6 {axes = [1]} : tensor<?x1xf32>, index -> tensor<?x6xf32>
  %1 = tcp.mul %0, %y : tensor<?x6xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  %2 = tcp.slice %1 starts(%c0, %c1) sizes(%n, %c3) strides(%c1, %c2) : tensor<?x6xf32> -> tensor<?x3xf32>
  %3 = tcp.cast %1 {out_int_signedness = #tcp<signedness Signed>} : tensor<?x6xf32> -> tensor<?x6xi32>
  %4 = tcp.gather %v, %i {dim = 0 : index} : tensor<10xf32>, tensor<4xi64> -> tensor<4xf32>
  %5 = tcp.const {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %6 = tcp.const {value = dense<0.5> : tensor<2x3xf32>} : tensor<2x3xf32>
  %7 = tcp.add %5, %6 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %1, %2, %3, %4, %7 : tensor<?x6xf32>, tensor<?x3xf32>, tensor<?x6xi32>, tensor<4xf32>, tensor<2x3xf32>
}
