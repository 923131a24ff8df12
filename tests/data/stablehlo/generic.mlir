// Hand-written: StableHLO's generic forms, a reduce with a region body, an init value that is
// not the identity, and a dynamic batch dim (?), which imports as the symbol arg0_d0.
// NumPy: see test_generic_forms_and_dynamic_dims in tests/test_stablehlo_import.py.
module @generic {
  func.func public @main(%arg0: tensor<?x8xf32>, %arg1: tensor<8x3xf32>, %arg2: tensor<3xi32>)
      -> (tensor<?x3xf32>, tensor<?xf32>, tensor<3x?xf32>, tensor<2x16xf32>, tensor<3xf32>) {
    %zero = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %ten = stablehlo.constant dense<1.000000e+01> : tensor<f32>
    %sum = stablehlo.reduce(%arg0 init: %ten) across dimensions = [1] : (tensor<?x8xf32>, tensor<f32>) -> tensor<?xf32>
     reducer(%a: tensor<f32>, %b: tensor<f32>)  {
      %s = stablehlo.add %b, %a : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
    %max = "stablehlo.reduce"(%arg0, %zero) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %r = "stablehlo.maximum"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%r) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?xf32>
    %row = stablehlo.subtract %sum, %max : tensor<?xf32>
    %wide = "stablehlo.broadcast_in_dim"(%row) <{broadcast_dimensions = array<i64: 0>}> : (tensor<?xf32>) -> tensor<?x8xf32>
    %scaled = "stablehlo.multiply"(%wide, %arg0) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
    %mm = "stablehlo.dot_general"(%scaled, %arg1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}> : (tensor<?x8xf32>, tensor<8x3xf32>) -> tensor<?x3xf32>
    %flat = stablehlo.reshape %mm : (tensor<?x3xf32>) -> tensor<?xf32>
    %back = stablehlo.reshape %flat : (tensor<?xf32>) -> tensor<?x3xf32>
    %lt = "stablehlo.compare"(%back, %mm) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xi1>
    %sel = stablehlo.select %lt, %back, %mm : tensor<?x3xi1>, tensor<?x3xf32>
    %t = "stablehlo.transpose"(%sel) <{permutation = array<i64: 1, 0>}> : (tensor<?x3xf32>) -> tensor<3x?xf32>
    %cut = "stablehlo.slice"(%t) <{start_indices = array<i64: 0, 0>, limit_indices = array<i64: 3, 1>, strides = array<i64: 2, 1>}> : (tensor<3x?xf32>) -> tensor<2x1xf32>
    %cutw = stablehlo.broadcast_in_dim %cut, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x8xf32>
    %ids = "stablehlo.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<8xf32>
    %idw = stablehlo.broadcast_in_dim %ids, dims = [1] : (tensor<8xf32>) -> tensor<2x8xf32>
    %cat = "stablehlo.concatenate"(%cutw, %idw) <{dimension = 1 : i64}> : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
    %v = stablehlo.convert %arg2 : (tensor<3xi32>) -> tensor<3xf32>
    %col = "stablehlo.dot"(%arg1, %v) : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8xf32>
    %y = stablehlo.dot_general %col, %arg1, contracting_dims = [0] x [0] : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
    %n = stablehlo.reshape %cat : (tensor<2x16xf32>) -> tensor<2x16xf32>
    func.return %mm, %row, %t, %n, %y : tensor<?x3xf32>, tensor<?xf32>, tensor<3x?xf32>, tensor<2x16xf32>, tensor<3xf32>
  }
}
