// layernorm of tests/stablehlo_models.py, its shapes ['b, 16', '16', '16']: jax.jit(f).lower(*jax.export.symbolic_args_specs(args, shapes)).as_text(), jax 0.12.0.1
module @jit_layernorm attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32> {jax.global_constant = "b"}, %arg1: tensor<?x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<16xf32>) -> (tensor<?x16xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg1 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<?x16xf32>, tensor<f32>) -> tensor<?xf32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_0 = stablehlo.constant dense<1> : tensor<1xi32>
    %2 = stablehlo.concatenate %1, %c_0, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %3 = stablehlo.dynamic_broadcast_in_dim %0, %2, dims = [0] : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x1xf32>
    %cst_1 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %c_2 = stablehlo.constant dense<1> : tensor<i32>
    %4 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_3 = stablehlo.constant dense<1> : tensor<1xi32>
    %5 = stablehlo.concatenate %4, %c_3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %6 = stablehlo.dynamic_broadcast_in_dim %cst_1, %5, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x1xf32>
    %7 = stablehlo.divide %3, %6 : tensor<?x1xf32>
    %c_4 = stablehlo.constant dense<16> : tensor<i32>
    %8 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_5 = stablehlo.constant dense<16> : tensor<1xi32>
    %9 = stablehlo.concatenate %8, %c_5, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %10 = stablehlo.dynamic_broadcast_in_dim %7, %9, dims = [0, 1] : (tensor<?x1xf32>, tensor<2xi32>) -> tensor<?x16xf32>
    %11 = stablehlo.subtract %arg1, %10 : tensor<?x16xf32>
    %12 = stablehlo.multiply %11, %11 : tensor<?x16xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %13 = stablehlo.reduce(%12 init: %cst_6) applies stablehlo.add across dimensions = [1] : (tensor<?x16xf32>, tensor<f32>) -> tensor<?xf32>
    %c_7 = stablehlo.constant dense<1> : tensor<i32>
    %14 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_8 = stablehlo.constant dense<1> : tensor<1xi32>
    %15 = stablehlo.concatenate %14, %c_8, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %16 = stablehlo.dynamic_broadcast_in_dim %13, %15, dims = [0] : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x1xf32>
    %cst_9 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %c_10 = stablehlo.constant dense<1> : tensor<i32>
    %17 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_11 = stablehlo.constant dense<1> : tensor<1xi32>
    %18 = stablehlo.concatenate %17, %c_11, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %19 = stablehlo.dynamic_broadcast_in_dim %cst_9, %18, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x1xf32>
    %20 = stablehlo.divide %16, %19 : tensor<?x1xf32>
    %c_12 = stablehlo.constant dense<16> : tensor<i32>
    %21 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_13 = stablehlo.constant dense<16> : tensor<1xi32>
    %22 = stablehlo.concatenate %21, %c_13, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %23 = stablehlo.dynamic_broadcast_in_dim %7, %22, dims = [0, 1] : (tensor<?x1xf32>, tensor<2xi32>) -> tensor<?x16xf32>
    %24 = stablehlo.subtract %arg1, %23 : tensor<?x16xf32>
    %cst_14 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %c_15 = stablehlo.constant dense<1> : tensor<i32>
    %25 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_16 = stablehlo.constant dense<1> : tensor<1xi32>
    %26 = stablehlo.concatenate %25, %c_16, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %27 = stablehlo.dynamic_broadcast_in_dim %cst_14, %26, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x1xf32>
    %28 = stablehlo.add %20, %27 : tensor<?x1xf32>
    %29 = stablehlo.sqrt %28 : tensor<?x1xf32>
    %c_17 = stablehlo.constant dense<16> : tensor<i32>
    %30 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_18 = stablehlo.constant dense<16> : tensor<1xi32>
    %31 = stablehlo.concatenate %30, %c_18, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %32 = stablehlo.dynamic_broadcast_in_dim %29, %31, dims = [0, 1] : (tensor<?x1xf32>, tensor<2xi32>) -> tensor<?x16xf32>
    %33 = stablehlo.divide %24, %32 : tensor<?x16xf32>
    %34 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<16xf32>) -> tensor<1x16xf32>
    %c_19 = stablehlo.constant dense<16> : tensor<i32>
    %35 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_20 = stablehlo.constant dense<16> : tensor<1xi32>
    %36 = stablehlo.concatenate %35, %c_20, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %37 = stablehlo.dynamic_broadcast_in_dim %34, %36, dims = [0, 1] : (tensor<1x16xf32>, tensor<2xi32>) -> tensor<?x16xf32>
    %38 = stablehlo.multiply %33, %37 : tensor<?x16xf32>
    %39 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<16xf32>) -> tensor<1x16xf32>
    %c_21 = stablehlo.constant dense<16> : tensor<i32>
    %40 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %c_22 = stablehlo.constant dense<16> : tensor<1xi32>
    %41 = stablehlo.concatenate %40, %c_22, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %42 = stablehlo.dynamic_broadcast_in_dim %39, %41, dims = [0, 1] : (tensor<1x16xf32>, tensor<2xi32>) -> tensor<?x16xf32>
    %43 = stablehlo.add %38, %42 : tensor<?x16xf32>
    return %43 : tensor<?x16xf32>
  }
}
