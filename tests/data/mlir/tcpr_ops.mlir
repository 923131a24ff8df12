// Ops of tcp-rules' table that mlir-tcp lacks, written tcpr.<op> in mlir-tcp's style (what
// tcpr opt --emit mlir prints for them): a softmax over rows, then a matmul.
func.func @softmax_matmul(%x: tensor<?x8xf32>, %w: tensor<8x3xf32>) -> (tensor<?x8xf32>, tensor<?x3xf32>, tensor<3x?xf32>, tensor<?x8xi1>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %0 = tcpr.reduce_max %x {axes = [1], keepdims = false} : tensor<?x8xf32> -> tensor<?xf32>
  %1 = tcpr.broadcast %0 shape(%n, %c8) {dims = [0]} : tensor<?xf32> -> tensor<?x8xf32>
  %2 = tcp.sub %x, %1 : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %3 = tcpr.exp %2 : tensor<?x8xf32> -> tensor<?x8xf32>
  %4 = tcpr.reduce_sum %3 {axes = [1], keepdims = true} : tensor<?x8xf32> -> tensor<?x1xf32>
  %5 = tcp.broadcast %4, %c8 {axes = [1]} : tensor<?x1xf32>, index -> tensor<?x8xf32>
  %6 = tcp.divf %3, %5 : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %7 = tcpr.matmul %6, %w : tensor<?x8xf32>, tensor<8x3xf32> -> tensor<?x3xf32>
  %8 = tcpr.transpose %7 {perm = [1, 0]} : tensor<?x3xf32> -> tensor<3x?xf32>
  %9 = tcpr.gt %6, %1 : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xi1>
  return %6, %7, %8, %9 : tensor<?x8xf32>, tensor<?x3xf32>, tensor<3x?xf32>, tensor<?x8xi1>
}
