// positions of tests/stablehlo_models.py, its shapes ['b, 3']: jax.jit(f).lower(*jax.export.symbolic_args_specs(args, shapes)).as_text(), jax 0.12.0.1
module @jit_positions attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32> {jax.global_constant = "b"}, %arg1: tensor<?x3xf32>) -> (tensor<?x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %1 = stablehlo.dynamic_iota %0, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %3 = stablehlo.dynamic_broadcast_in_dim %cst, %2, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32>
    %4 = stablehlo.multiply %3, %1 : tensor<?xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %6 = stablehlo.dynamic_broadcast_in_dim %cst_0, %5, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32>
    %7 = stablehlo.add %6, %4 : tensor<?xf32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %8 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_1 = stablehlo.constant dense<1> : tensor<1xi32>
    %9 = stablehlo.concatenate %8, %c_1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %10 = stablehlo.dynamic_broadcast_in_dim %7, %9, dims = [0] : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x1xf32>
    %c_2 = stablehlo.constant dense<3> : tensor<i32>
    %11 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_3 = stablehlo.constant dense<3> : tensor<1xi32>
    %12 = stablehlo.concatenate %11, %c_3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %13 = stablehlo.dynamic_broadcast_in_dim %10, %12, dims = [0, 1] : (tensor<?x1xf32>, tensor<2xi32>) -> tensor<?x3xf32>
    %14 = stablehlo.add %arg1, %13 : tensor<?x3xf32>
    return %14 : tensor<?x3xf32>
  }
}
