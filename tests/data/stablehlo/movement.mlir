// movement of tests/stablehlo_models.py: jax.jit(f).lower(*args).as_text(), jax 0.12.0.1
module @jit_movement attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<5xi32>) -> (tensor<2x4xf32> {jax.result_info = "result[0]"}, tensor<8x8xf32> {jax.result_info = "result[1]"}, tensor<2x16xf32> {jax.result_info = "result[2]"}, tensor<4x8xf32> {jax.result_info = "result[3]"}, tensor<4x8xf32> {jax.result_info = "result[4]"}, tensor<4x8xf32> {jax.result_info = "result[5]"}, tensor<4x8xf32> {jax.result_info = "result[6]"}, tensor<4x8xf32> {jax.result_info = "result[7]"}, tensor<8xf32> {jax.result_info = "result[8]"}, tensor<4xi1> {jax.result_info = "result[9]"}, tensor<4x5xf32> {jax.result_info = "result[10]"}, tensor<4xf32> {jax.result_info = "result[11]"}, tensor<f32> {jax.result_info = "result[12]"}, tensor<8xf32> {jax.result_info = "result[13]"}, tensor<8xi32> {jax.result_info = "result[14]"}, tensor<7x11xf32> {jax.result_info = "result[15]"}) {
    %0 = stablehlo.slice %arg0 [1:3, 0:8:2] : (tensor<4x8xf32>) -> tensor<2x4xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %2 = stablehlo.multiply %1, %arg0 : tensor<4x8xf32>
    %3 = stablehlo.concatenate %arg0, %2, dim = 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %4 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %5 = stablehlo.reshape %4 : (tensor<8x4xf32>) -> tensor<2x16xf32>
    %cst_0 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %7 = stablehlo.compare GT, %arg0, %6, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %8 = stablehlo.negate %arg0 : tensor<4x8xf32>
    %9 = call @_where(%7, %arg0, %8) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %cst_1 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %cst_2 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %10 = call @clip(%arg0, %cst_1, %cst_2) : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
    %11 = stablehlo.iota dim = 0 : tensor<8xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [1] : (tensor<8xf32>) -> tensor<1x8xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<4x8xf32>
    %14 = stablehlo.add %13, %arg0 : tensor<4x8xf32>
    %15 = stablehlo.sign %arg0 : tensor<4x8xf32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %17 = stablehlo.multiply %arg0, %16 : tensor<4x8xf32>
    %18 = call @round(%17) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %19 = stablehlo.reduce(%arg0 init: %cst_4) applies stablehlo.multiply across dimensions = [0] : (tensor<4x8xf32>, tensor<f32>) -> tensor<8xf32>
    %cst_5 = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %21 = stablehlo.compare GT, %arg0, %20, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %22 = stablehlo.reduce(%21 init: %c) applies stablehlo.and across dimensions = [1] : (tensor<4x8xi1>, tensor<i1>) -> tensor<4xi1>
    %23 = call @_take(%arg0, %arg1) : (tensor<4x8xf32>, tensor<5xi32>) -> tensor<4x5xf32>
    %24 = stablehlo.slice %arg0 [0:1, 0:8] : (tensor<4x8xf32>) -> tensor<1x8xf32>
    %25 = stablehlo.reshape %24 : (tensor<1x8xf32>) -> tensor<8xf32>
    %26 = stablehlo.dot_general %arg0, %25, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %27 = stablehlo.reduce(%arg0 init: %cst_6) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32>
    %cst_7 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %28 = stablehlo.reduce(%arg0 init: %cst_7) applies stablehlo.minimum across dimensions = [0] : (tensor<4x8xf32>, tensor<f32>) -> tensor<8xf32>
    %29 = stablehlo.convert %arg0 : (tensor<4x8xf32>) -> tensor<4x8xi32>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %30 = stablehlo.reduce(%29 init: %c_8) applies stablehlo.add across dimensions = [0] : (tensor<4x8xi32>, tensor<i32>) -> tensor<8xi32>
    %cst_9 = stablehlo.constant dense<1.500000e+00> : tensor<f32>
    %31 = call @_pad(%arg0, %cst_9) : (tensor<4x8xf32>, tensor<f32>) -> tensor<7x11xf32>
    return %0, %3, %5, %9, %10, %14, %15, %18, %19, %22, %23, %26, %27, %28, %30, %31 : tensor<2x4xf32>, tensor<8x8xf32>, tensor<2x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4xi1>, tensor<4x5xf32>, tensor<4xf32>, tensor<f32>, tensor<8xf32>, tensor<8xi32>, tensor<7x11xf32>
  }
  func.func private @_where(%arg0: tensor<4x8xi1>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<4x8xi1>, tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  func.func private @clip(%arg0: tensor<4x8xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<4x8xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<4x8xf32>
    %3 = stablehlo.convert %arg2 : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %5 = stablehlo.minimum %4, %2 : tensor<4x8xf32>
    return %5 : tensor<4x8xf32>
  }
  func.func private @round(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  func.func private @_take(%arg0: tensor<4x8xf32>, %arg1: tensor<5xi32>) -> tensor<4x5xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %1 = "stablehlo.gather"(%arg0, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 4, 1>}> : (tensor<4x8xf32>, tensor<5x1xi32>) -> tensor<4x5xf32>
    return %1 : tensor<4x5xf32>
  }
  func.func private @_pad(%arg0: tensor<4x8xf32>, %arg1: tensor<f32>) -> tensor<7x11xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [2, 3], interior = [0, 0] : (tensor<4x8xf32>, tensor<f32>) -> tensor<7x11xf32>
    return %1 : tensor<7x11xf32>
  }
}
