// Constructs the generic syntax layer reads (tests/test_mlir_syntax.py): generic-form ops with
// regions, block labels, a reduce with its reducer region on the next line, aliases, dialect
// types and attributes, multi-line ops, and multi-result definitions.
#map = affine_map<(d0, d1) -> (d1, d0)>
module {
  func.func @forms(%arg0 : tensor<?x4xf32>,
                   %arg1 : tensor<?x4xf32> {tcp.note = "second"}) -> (tensor<?x4xf32>, tensor<?xf32>) {
    %0 = "tcp.group" () ({
      ^bb0() :
        %1 = tcp.add %arg0, %arg1 : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
        "tcp.yield" (%1) : (tensor<?x4xf32>) -> ()
    }) : () -> tensor<?x4xf32>
    %2 = tcp.clamp %0 {min_float = -1.5e+00 : f32, max_float = 0x7F800000 : f32} :
           tensor<?x4xf32> -> tensor<?x4xf32>
    %cst = stablehlo.constant dense<[1.0, -2.0]> : tensor<2xf32>
    %3 = stablehlo.reduce(%2 init: %cst) across dimensions = [1] : (tensor<?x4xf32>, tensor<f32>) -> tensor<?xf32>
     reducer(%a: tensor<f32>, %b: tensor<f32>)  {
      %4 = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %4 : tensor<f32>
    }
    %5:2 = "test.pair"(%3) {attr = #map, kind = #tcp<signedness Signed>} : (tensor<?xf32>) -> (!test.t<[?, 4], f32>, tensor<*xf32>)
    return %2, %5#1 : tensor<?x4xf32>, tensor<?xf32>
  }
}
