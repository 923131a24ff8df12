// mlir-tcp's binary elementwise ops and clamp, on floats and on integers; the second function
// in MLIR's generic form.
func.func @binary_f32(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %0 = tcp.add %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %1 = tcp.sub %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %2 = tcp.mul %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %3 = tcp.divf %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %4 = tcp.atan2 %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %5 = tcp.clamp %a {min_float = -5.000000e-01 : f32, max_float = 5.000000e-01 : f32} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @binary_i32(%a: tensor<7xi32>, %b: tensor<7xi32>) -> (tensor<7xi32>, tensor<7xi32>, tensor<7xi32>) {
  %0 = "tcp.mul"(%a, %b) : (tensor<7xi32>, tensor<7xi32>) -> tensor<7xi32>
  %1 = "tcp.divsi"(%a, %b) {rounding_mode = #tcp<roundingMode Trunc>} : (tensor<7xi32>, tensor<7xi32>) -> tensor<7xi32>
  %2 = "tcp.clamp"(%a) {min_int = -3 : i64, max_int = 4 : i64} : (tensor<7xi32>) -> tensor<7xi32>
  "func.return"(%0, %1, %2) : (tensor<7xi32>, tensor<7xi32>, tensor<7xi32>) -> ()
}
