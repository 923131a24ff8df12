module @jit_misc attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<2xi32>) -> (tensor<4x4xi32> {jax.result_info = "result[0]"}, tensor<2x2xf32> {jax.result_info = "result[1]"}, tensor<8x4xf32> {jax.result_info = "result[2]"}, tensor<2x4xf32> {jax.result_info = "result[3]"}, tensor<4xi32> {jax.result_info = "result[4]"}, tensor<1x4x4xf32> {jax.result_info = "result[5]"}, tensor<4x4xf32> {jax.result_info = "result[6]"}, tensor<4x4xf32> {jax.result_info = "result[7]"}, tensor<16xf32> {jax.result_info = "result[8]"}, tensor<4x4xf32> {jax.result_info = "result[9]"}) {
    %0 = stablehlo.compare GT, %arg0, %arg1, FLOAT : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
    %1 = call @_where(%0, %arg0, %arg1) : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = stablehlo.convert %1 : (tensor<4x4xf32>) -> tensor<4x4xi32>
    %3 = stablehlo.slice %arg0 [1:3, 0:4:2] : (tensor<4x4xf32>) -> tensor<2x2xf32>
    %4 = stablehlo.concatenate %arg0, %arg1, dim = 0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %5 = call @_take(%arg0, %arg2) : (tensor<4x4xf32>, tensor<2xi32>) -> tensor<2x4xf32>
    %6 = call @argmax(%arg0) : (tensor<4x4xf32>) -> tensor<4xi32>
    %7 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<1x4x4xf32>
    %8 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<1x4x4xf32>
    %9 = stablehlo.dot_general %7, %8, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
    %10 = stablehlo.multiply %arg0, %arg0 : tensor<4x4xf32>
    %11 = stablehlo.multiply %10, %arg0 : tensor<4x4xf32>
    %cst = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %13 = stablehlo.multiply %12, %11 : tensor<4x4xf32>
    %14 = stablehlo.add %arg0, %13 : tensor<4x4xf32>
    %cst_0 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %16 = stablehlo.multiply %15, %14 : tensor<4x4xf32>
    %17 = stablehlo.tanh %16 : tensor<4x4xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %19 = stablehlo.add %18, %17 : tensor<4x4xf32>
    %cst_2 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %21 = stablehlo.multiply %20, %19 : tensor<4x4xf32>
    %22 = stablehlo.multiply %arg0, %21 : tensor<4x4xf32>
    %23 = call @cumsum(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %24 = stablehlo.reshape %arg0 : (tensor<4x4xf32>) -> tensor<16xf32>
    %25 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %2, %3, %4, %5, %6, %9, %22, %23, %24, %25 : tensor<4x4xi32>, tensor<2x2xf32>, tensor<8x4xf32>, tensor<2x4xf32>, tensor<4xi32>, tensor<1x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>
  }
  func.func private @_where(%arg0: tensor<4x4xi1>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<4x4xi1>, tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
  func.func private @_take(%arg0: tensor<4x4xf32>, %arg1: tensor<2xi32>) -> tensor<2x4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %c_0 = stablehlo.constant dense<4> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<2xi32>
    %4 = call @_where_0(%1, %3, %arg1) : (tensor<2xi1>, tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<2xi32>) -> tensor<2x1xi32>
    %c_1 = stablehlo.constant dense<3> : tensor<1xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<2x1xi32>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi1>
    %8 = stablehlo.broadcast_in_dim %c_1, dims = [1] : (tensor<1xi32>) -> tensor<1x1xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x1xi32>) -> tensor<2x1xi32>
    %10 = stablehlo.compare LE, %5, %9, SIGNED : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi1>
    %11 = stablehlo.and %7, %10 : tensor<2x1xi1>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %12 = stablehlo.reduce(%11 init: %c_3) applies stablehlo.and across dimensions = [1] : (tensor<2x1xi1>, tensor<i1>) -> tensor<2xi1>
    %13 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}> : (tensor<4x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
    %14 = stablehlo.broadcast_in_dim %12, dims = [0] : (tensor<2xi1>) -> tensor<2x4xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %16 = stablehlo.select %14, %13, %15 : tensor<2x4xi1>, tensor<2x4xf32>
    return %16 : tensor<2x4xf32>
  }
  func.func private @_where_0(%arg0: tensor<2xi1>, %arg1: tensor<2xi32>, %arg2: tensor<2xi32>) -> tensor<2xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<2xi1>, tensor<2xi32>
    return %0 : tensor<2xi32>
  }
  func.func private @argmax(%arg0: tensor<4x4xf32>) -> tensor<4xi32> {
    %0 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<4x4xf32>, tensor<4x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare GT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<4xi32>
  }
  func.func private @cumsum(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = call @cumsum_1(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
  func.func private @cumsum_1(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{base_dilations = array<i64: 1, 1>, padding = dense<[[3, 0], [0, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 4, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    return %1 : tensor<4x4xf32>
  }
}
