func.func @groups(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %sym_a_d0 = tcp.symbolic_int "a_d0" {min_val = 0, max_val = 9223372036854775807} : i64
  %sym_a_d1 = tcp.symbolic_int "a_d1" {min_val = 0, max_val = 9223372036854775807} : i64
  tcp.bind_symbolic_shape %a, [%sym_a_d0, %sym_a_d1], affine_map<()[s0, s1] -> (s0, s1)> : tensor<?x?xf32>
  tcp.bind_symbolic_shape %b, [%sym_a_d0, %sym_a_d1], affine_map<()[s0, s1] -> (s0, s1)> : tensor<?x?xf32>
  %0 = tcp.isolated_group %a, %b {
    ^bb0(%b0: tensor<?x?xf32>, %b1: tensor<?x?xf32>):
      %1 = tcp.add %b0, %b1 : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      %2 = tcp.tanh %1 : tensor<?x?xf32> -> tensor<?x?xf32>
      %3 = tcp.mul %2, %b1 : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
      %4 = tcp.sigmoid %3 : tensor<?x?xf32> -> tensor<?x?xf32>
      tcp.yield %4 : tensor<?x?xf32>
  } : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
