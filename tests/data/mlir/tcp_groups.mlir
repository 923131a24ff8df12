// mlir-tcp's fusion regions: a tcp.group (inlined) and a tcp.isolated_group (a fused kernel).
func.func @groups(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = tcp.group {
    %1 = tcp.add %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    %2 = tcp.tanh %1 : tensor<?x?xf32> -> tensor<?x?xf32>
    tcp.yield %2 : tensor<?x?xf32>
  } : tensor<?x?xf32>
  %3 = tcp.isolated_group %0, %b {
  ^bb0(%p: tensor<?x?xf32>, %q: tensor<?x?xf32>):
    %4 = tcp.mul %p, %q : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    %5 = tcp.sigmoid %4 : tensor<?x?xf32> -> tensor<?x?xf32>
    tcp.yield %5 : tensor<?x?xf32>
  } : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %3 : tensor<?x?xf32>
}
