// mlir-tcp's unary elementwise ops, as mlir-tcp prints them (tests/test_mlir_frontend.py).
func.func @unary(%x: tensor<?x5xf32>) -> (tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>) {
  %0 = tcp.tanh %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %1 = tcp.sigmoid %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %2 = tcp.abs %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %3 = tcp.sqrt %2 : tensor<?x5xf32> -> tensor<?x5xf32>
  %4 = tcp.log %2 : tensor<?x5xf32> -> tensor<?x5xf32>
  %5 = tcp.ceil %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %6 = tcp.floor %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %7 = tcp.round %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %8 = tcp.round_even %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %9 = tcp.sin %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %10 = tcp.cos %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %11 = tcp.neg %x : tensor<?x5xf32> -> tensor<?x5xf32>
  %12 = tcp.atan %x : tensor<?x5xf32> -> tensor<?x5xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12 : tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x5xf32>
}
